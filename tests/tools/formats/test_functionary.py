"""``functionary_v31`` and ``functionary_v32`` on llama.cpp's
``meetkai-functionary-medium-v3.1.jinja`` and ``meetkai-functionary-medium-v3.2.jinja``."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS, ToolTurn

from .checks import check_prefixes, check_rendered, check_truncated
from .rendered import ONE, TIME, TOOLS, TWO, Case, check_case, parse, stream, takes
from .xml_rendered import cases_for

_T = "llama.cpp/meetkai-functionary-medium-v3.1.jinja"
_W = '<function=get_weather>{"city": "Paris", "days": 3}</function>'
_Z = '<function=get_time>{"zone": "Europe/Paris"}</function>'
CASES = {
    "one": Case(_T, _W + "<|eom_id|>", "<|eom_id|>", ONE),
    "two": Case(_T, _W + _Z + "<|eom_id|>", "<|eom_id|>", TWO),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("functionary_v31", CASES[name])


def test_a_close_marker_inside_a_string_does_not_end_the_call() -> None:
    case = CASES["one"]
    reply = '<function=get_time>{"zone": "</function>"}</function>'
    assert takes("functionary_v31", case, reply)
    got = ToolTurn(TOOLS, "functionary_v31").parse(reply)
    assert [(c.name, c.arguments) for c in got.calls] == [("get_time", {"zone": "</function>"})]


# -- functionary_v32 ----------------------------------------------------------------------------

_T32 = "llama.cpp/meetkai-functionary-medium-v3.2.jinja"
_W32 = 'get_weather\n{"city": "Paris", "days": 3}'
_Z32 = 'get_time\n{"zone": "Europe/Paris"}'
#: rendered with the arguments as JSON text (the template prints them as given); the
#: generation prompt ends with ``>>>``, so the reply starts with the first recipient
CASES32 = {
    "one": Case(_T32, _W32 + "<|eot_id|>", "<|eot_id|>", ONE),
    "two": Case(_T32, _W32 + ">>>" + _Z32 + "<|eot_id|>", "<|eot_id|>", TWO),
}


@pytest.mark.parametrize("name", sorted(CASES32))
def test_v32_rendered_turns(name: str) -> None:
    check_case("functionary_v32", CASES32[name])


@pytest.mark.parametrize("key", cases_for("functionary_v32"), ids="-".join)
def test_v32_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("functionary_v32"), ids="-".join)
def test_v32_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


def test_v32_truncated() -> None:
    check_truncated(_T32)


def test_v32_the_first_message_opened_by_the_reply() -> None:
    """A prompt that does not open the message (toolmask's own): the reply writes ``>>>``
    first; the same grammar and reader take it."""
    for choice, reply in (
        ("required", ">>>" + _W32),
        ("auto", ">>>all\nLet me check.>>>" + _W32),
    ):
        assert takes("functionary_v32", CASES32["one"], reply, choice), reply
        got = ToolTurn(TOOLS, "functionary_v32").parse(reply)
        assert [(c.name, c.arguments) for c in got.calls] == ONE and not got.malformed
    got = ToolTurn(TOOLS, "functionary_v32").parse(">>>all\nHello.")
    assert (got.content, got.calls) == ("Hello.", ())
    assert FORMATS["functionary_v32"].render_calls(TWO) == ">>>" + _W32 + ">>>" + _Z32


def test_v32_text_before_a_call_cannot_end_with_the_markers_start() -> None:
    """``>`` before ``>>>`` would make the reader find ``>>>`` one byte early: refused."""
    case = CASES32["one"]
    good = "all\nsee -> >>>" + _W32
    bad = "all\nsee ->>>>" + _W32
    assert takes("functionary_v32", case, good, "auto")
    assert not takes("functionary_v32", case, bad, "auto")
    got = ToolTurn(TOOLS, "functionary_v32").parse(bad)
    assert got.calls == () and got.malformed  # what the grammar refuses is not a call
    # text ending with '>' is fine where no call follows
    assert takes("functionary_v32", case, "all\nsee ->", "auto")
    assert not takes("functionary_v32", case, "all\nsee ->", "required")


def test_v32_replies_that_ignore_the_format_stay_prose() -> None:
    for text in ("Hello there.", "python\nprint(1)", "get_weather\n\nnot json", "all"):
        got = parse("functionary_v32", CASES32["one"], text)
        assert (got.content, got.calls, got.malformed) == (text, (), ()), text
        assert stream("functionary_v32", CASES32["one"], text) == got
    assert not takes("functionary_v32", CASES32["one"], "Hello there.", "auto")


def test_v32_a_malformed_message_ends_at_the_next() -> None:
    text = "all\nx>>>get_weather\nnot json>>>" + _Z32
    got = parse("functionary_v32", CASES32["one"], text)
    assert [(c.name, c.arguments) for c in got.calls] == [TIME]
    assert [m.text for m in got.malformed] == [">>>get_weather\nnot json"]
    assert got.content == "x>>>get_weather\nnot json"
    assert stream("functionary_v32", CASES32["one"], text, size=1) == got
