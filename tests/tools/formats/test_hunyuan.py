"""``hunyuan_a13b`` on vLLM's ``tool_chat_template_hunyuan_a13b.jinja``."""

from __future__ import annotations

import pytest

from .rendered import ONE, TWO, Case, check_case, parse, takes

_T = "vllm/tool_chat_template_hunyuan_a13b.jinja"
CASES = {
    "one": Case(
        _T,
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]'
        "</tool_calls><|eos|>",
        "<|eos|>",
        ONE,
    ),
    "two": Case(
        _T,
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, '
        '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}]</tool_calls><|eos|>',
        "<|eos|>",
        TWO,
        special=frozenset({"<tool_calls>", "</tool_calls>"}),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("hunyuan_a13b", CASES[name])


def test_think_then_calls() -> None:
    reply = "<think>\nThe user wants the weather.\n</think>\n" + CASES["one"].reply
    case = Case(_T, reply, "", ONE)
    assert takes("hunyuan_a13b", case, reply)
    got = parse("hunyuan_a13b", case, reply)
    assert got.reasoning == "The user wants the weather." and len(got.calls) == 1
