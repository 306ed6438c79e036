"""``functionary_v2`` on Functionary small v2.2's chat template
(``llama-cpp-examples/meetkai-functionary-small-v2.2.jinja``): ``<|from|>`` / ``<|recipient|>`` /
``<|content|>`` messages, which no other format reads."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS

from .rendered import ONE, TIME, TWO, Case, check_case, check_stays_in_content, parse, stream, takes

_T = "llama-cpp-examples/meetkai-functionary-small-v2.2.jinja"
_FROM = "<|from|>assistant\n<|recipient|>"
_END = "<|stop|>\n"
#: rendered with the arguments as JSON text and a null content (the template adds the arguments
#: to a string, and renders an empty text message for a content of ""); the generation prompt
#: ends with _FROM, so the reply starts with the first recipient
_W = 'get_weather\n<|content|>{"city": "Paris", "days": 3}'
_Z = 'get_time\n<|content|>{"zone": "Europe/Paris"}'
_SPECIAL = frozenset({"<|from|>", "<|recipient|>", "<|content|>"})
CASES = {
    "one": Case(_T, _W + _END, _END, ONE, special=_SPECIAL),
    "two": Case(_T, _W + "\n" + _FROM + _Z + _END, _END, TWO, special=_SPECIAL),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("functionary_v2", CASES[name])


def test_the_first_message_opened_by_the_reply() -> None:
    """A prompt that does not open the message (toolmask's own): the reply writes the header
    first; the same grammar and reader take it, and the renderer writes it."""
    case = CASES["one"]
    for choice, reply in (
        ("required", _FROM + _W),
        ("auto", _FROM + "all\n<|content|>Let me check.\n" + _FROM + _W),
    ):
        assert takes("functionary_v2", case, reply, choice), reply
        got = parse("functionary_v2", case, reply)
        assert [(c.name, c.arguments) for c in got.calls] == ONE and not got.malformed
        assert stream("functionary_v2", case, reply, size=1) == got
    text = FORMATS["functionary_v2"].render_calls(TWO)
    assert text == "\n" + _FROM + _W + "\n" + _FROM + _Z
    assert takes("functionary_v2", CASES["two"], text)


def test_a_text_message_then_calls_under_auto_only() -> None:
    case = CASES["one"]
    # the template's own rendering of a content of "": an empty text message, then the call
    reply = "all\n<|content|>\n" + _FROM + _W
    assert takes("functionary_v2", case, reply, "auto")
    assert not takes("functionary_v2", case, reply)
    got = parse("functionary_v2", case, reply)
    assert (got.content, [(c.name, c.arguments) for c in got.calls]) == ("", ONE)
    reply = "all\n<|content|>Let me check.\n" + _FROM + _W
    got = parse("functionary_v2", case, reply)
    assert (got.content, [(c.name, c.arguments) for c in got.calls]) == ("Let me check.", ONE)
    assert parse("functionary_v2", case, "all\n<|content|>Hello.").content == "Hello."
    assert takes("functionary_v2", case, "all\n<|content|>Hello.", "none")


def test_only_its_own_headers() -> None:
    case = CASES["one"]
    # Functionary v3.2's messages are not this format's, nor the reverse
    v32 = 'get_weather\n{"city": "Paris", "days": 3}'
    assert not takes("functionary_v2", case, v32) and takes("functionary_v32", case, v32)
    assert not takes("functionary_v32", case, case.reply)
    for text in ("Hello there.", "get_weather\n\nnot json", "get_weather\n<|content|>x", "all"):
        got = parse("functionary_v2", case, text)
        assert (got.content, got.calls, got.malformed) == (text, (), ()), text


def test_a_malformed_message_ends_at_the_next() -> None:
    bad = "\n" + _FROM + "get_weather\n<|content|>not json"
    text = "all\n<|content|>x" + bad + "\n" + _FROM + _Z
    got = parse("functionary_v2", CASES["one"], text)
    assert [(c.name, c.arguments) for c in got.calls] == [TIME]
    assert [m.text for m in got.malformed] == [bad]
    assert got.content == "x" + bad
    assert stream("functionary_v2", CASES["one"], text, size=1) == got


def test_malformed_block_stays_in_content() -> None:
    check_stays_in_content(
        "functionary_v2",
        CASES["one"],
        (
            _FROM + "get_weather\n<|content|>not json",  # not JSON
            _FROM + "\n<|content|>{}",  # no name
            _FROM + _W[: _W.index('"days"')],  # cut off
        ),
    )
