"""``solar_open`` on llama.cpp's ``upstage-Solar-Open-100B.jinja``."""

from __future__ import annotations

import pytest

from toolmask.tools import ToolTurn

from .rendered import ONE, TOOLS, TWO, Case, check_case, parse, takes

_T = "llama.cpp/upstage-Solar-Open-100B.jinja"
_W = (
    "<|tool_call:begin|>call0AbC1<|tool_call:name|>get_weather<|tool_call:args|>"
    '{"city": "Paris", "days": 3}<|tool_call:end|>'
)
_Z = (
    "<|tool_call:begin|>call1XyZ2<|tool_call:name|>get_time<|tool_call:args|>"
    '{"zone": "Europe/Paris"}<|tool_call:end|>'
)
_S = frozenset(
    {
        "<|tool_calls|>",
        "<|calls|>",
        "<|tool_call:begin|>",
        "<|tool_call:name|>",
        "<|tool_call:args|>",
        "<|tool_call:end|>",
    }
)
CASES = {
    # the turn after the generation prompt "<|begin|>assistant", through "<|calls|>"; an engine
    # that stops at <|calls|> (an end-of-turn token) cuts it, one that keeps it leaves it
    "one": Case(_T, f"<|tool_calls|>{_W}<|calls|>", "<|calls|>", ONE, ids=("call0AbC1",)),
    "two": Case(
        _T, f"<|tool_calls|>{_W}{_Z}<|calls|>", "<|calls|>", TWO, ids=("call0AbC1", "call1XyZ2")
    ),
    "one-kept": Case(_T, f"<|tool_calls|>{_W}<|calls|>", "", ONE, special=_S),
    "two-kept": Case(_T, f"<|tool_calls|>{_W}{_Z}<|calls|>", "", TWO, special=_S),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("solar_open", CASES[name])


def test_messages() -> None:
    case = CASES["one"]
    think = "<|think|>The user wants the weather.<|end|><|begin|>assistant"
    reply = think + case.reply
    assert takes("solar_open", case, reply)
    got = parse("solar_open", case, reply)
    assert got.reasoning == "The user wants the weather." and len(got.calls) == 1
    prose = "<|content|>It is sunny.<|end|>"
    for text in (prose, think + prose, "<|content|>It is sunny."):
        assert takes("solar_open", case, text, "auto") and takes("solar_open", case, text, "none")
        assert parse("solar_open", case, text).content == "It is sunny."
    assert not takes("solar_open", case, prose, "required")
    assert not takes("solar_open", case, "It is sunny.", "auto")


def test_ids_are_tokens() -> None:
    case = CASES["one"]
    assert not takes("solar_open", case, case.reply.replace("call0AbC1", ""))
    assert not takes("solar_open", case, case.reply.replace("call0AbC1", "call 0"))
    got = ToolTurn(TOOLS, "solar_open").parse(case.reply.replace("call0AbC1", ""))
    assert got.calls[0].id  # an empty id is replaced
