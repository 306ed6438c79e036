"""``gigachat3`` / ``gigachat31`` on llama.cpp's ``GigaChat3-10B-A1.8B.jinja`` and
``GigaChat3.1-10B-A1.8B.jinja``: one call per turn (both templates render ``tool_calls[0]``
only: the two-call render is the one-call render)."""

from __future__ import annotations

import pytest

from toolmask.tools import ToolTurn

from .rendered import ONE, TIME, TOOLS, Case, check_case, takes

_W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
_Z = '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}'
G3 = "llama.cpp/GigaChat3-10B-A1.8B.jinja"
G31 = "llama.cpp/GigaChat3.1-10B-A1.8B.jinja"
_OPEN3 = "<|message_sep|>\n\nfunction call<|role_sep|>\n"
CASES = {
    "gigachat3": Case(
        G3,
        _OPEN3 + _W + "<|message_sep|>\n\n",
        "<|message_sep|>\n\n",
        ONE,
        special=frozenset({"<|message_sep|>", "<|role_sep|>"}),
    ),
    "gigachat31": Case(
        G31,
        "<|function_call|>" + _W + "<|message_sep|>\n\n",
        "<|message_sep|>\n\n",
        ONE,
        special=frozenset({"<|function_call|>"}),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case(name, CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_call_per_turn(name: str) -> None:
    case = CASES[name]
    opener = _OPEN3 if name == "gigachat3" else "<|function_call|>"
    two = case.reply + opener + _Z
    for choice in ("required", "auto"):
        assert not takes(name, case, two, choice)
    # the parser still reads what an unconstrained model writes
    got = ToolTurn(TOOLS, name).parse(two)
    assert [(c.name, c.arguments) for c in got.calls] == [*ONE, TIME]


def test_the_assistants_text_comes_first() -> None:
    case = CASES["gigachat3"]
    reply = "Checking the weather." + case.reply
    assert takes("gigachat3", case, reply, "auto")
    got = ToolTurn(TOOLS, "gigachat3").parse(reply)
    assert got.content == "Checking the weather." and len(got.calls) == 1
    reply31 = "Checking." + CASES["gigachat31"].reply
    assert takes("gigachat31", CASES["gigachat31"], reply31, "auto")


def test_the_role_header_without_the_message_separator_is_read() -> None:
    reply = "function call<|role_sep|>\n" + _W
    got = ToolTurn(TOOLS, "gigachat3").parse(reply)
    assert [(c.name, c.arguments) for c in got.calls] == ONE and got.content == ""
    assert not takes("gigachat3", CASES["gigachat3"], reply)  # the model writes the separator
