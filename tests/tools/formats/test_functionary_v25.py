"""``functionary_v25`` on Functionary v2.5's chat template
(``openvino-genai/meetkai-functionary-small-v2.5.jinja``, the ``v2.llama3`` prompt template): the
name and JSON arguments after ``<|reserved_special_token_249|>``, which no other format reads."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS

from .rendered import ONE, TIME, TWO, Case, check_case, check_stays_in_content, parse, takes

_T = "openvino-genai/meetkai-functionary-small-v2.5.jinja"
_CALL = "<|reserved_special_token_249|>"
_END = "<|eot_id|>"
#: rendered with the arguments as JSON text (the template adds them to a string)
_W = _CALL + 'get_weather\n{"city": "Paris", "days": 3}'
_Z = _CALL + 'get_time\n{"zone": "Europe/Paris"}'
_SPECIAL = frozenset({_CALL})
CASES = {
    "one": Case(_T, _W + _END, _END, ONE, special=_SPECIAL),
    "two": Case(_T, _W + _Z + _END, _END, TWO, special=_SPECIAL),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("functionary_v25", CASES[name])


def test_the_renderer_writes_what_the_grammar_takes() -> None:
    text = FORMATS["functionary_v25"].render_calls(TWO)
    assert text == _W + _Z
    assert takes("functionary_v25", CASES["two"], text)
    got = parse("functionary_v25", CASES["two"], text)
    assert [(c.name, c.arguments) for c in got.calls] == TWO


def test_text_before_the_calls_under_auto_only() -> None:
    case = CASES["one"]
    reply = "Let me check." + case.reply
    assert takes("functionary_v25", case, reply, "auto")
    assert not takes("functionary_v25", case, reply)
    got = parse("functionary_v25", case, reply)
    assert (got.content, [(c.name, c.arguments) for c in got.calls]) == ("Let me check.", ONE)
    # nothing after the last call: the turn ends there
    assert not takes("functionary_v25", case, case.reply + " Done.", "auto")


def test_only_its_own_token() -> None:
    case = CASES["one"]
    # Functionary v3.1's <function=NAME> calls are not this format's, nor the reverse
    v31 = '<function=get_weather>{"city": "Paris", "days": 3}</function>'
    assert not takes("functionary_v25", case, v31) and takes("functionary_v31", case, v31)
    assert not takes("functionary_v31", case, case.reply)
    assert parse("functionary_v25", case, v31).calls == ()
    # another reserved token is not the call token
    other = case.reply.replace("_249|>", "_248|>")
    assert not takes("functionary_v25", case, other)
    assert parse("functionary_v25", case, other).calls == ()


def test_a_call_token_inside_a_string_does_not_start_a_call() -> None:
    case = CASES["one"]
    reply = _CALL + 'get_time\n{"zone": "' + _CALL + 'x"}'
    assert takes("functionary_v25", case, reply)
    got = parse("functionary_v25", case, reply)
    assert [(c.name, c.arguments) for c in got.calls] == [(TIME[0], {"zone": _CALL + "x"})]


def test_malformed_block_stays_in_content() -> None:
    check_stays_in_content(
        "functionary_v25",
        CASES["one"],
        (
            _CALL + 'get_weather {"city": "Paris"}',  # no newline after the name
            _CALL + "get_weather\nnot json",  # not JSON
            _CALL + '\n{"city": "Paris"}',  # no name
            _W[: _W.index('"days"')],  # cut off
        ),
    )
