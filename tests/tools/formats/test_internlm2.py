"""``internlm2`` on vLLM's ``tool_chat_template_internlm2_tool.jinja``."""

from __future__ import annotations

import pytest

from .rendered import ONE, TWO, Case, check_case, takes

_T = "vllm/tool_chat_template_internlm2_tool.jinja"
_W = '<|action_start|><|plugin|>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}<|action_end|>'  # noqa: E501
_Z = '<|action_start|><|plugin|>\n{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}<|action_end|>'  # noqa: E501
_S = frozenset({"<|action_start|>", "<|plugin|>", "<|action_end|>"})
CASES = {
    "one": Case(_T, _W + "<|im_end|>\n", "<|im_end|>\n", ONE, special=_S),
    "two": Case(_T, _W + _Z + "<|im_end|>\n", "<|im_end|>\n", TWO, special=_S),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("internlm2", CASES[name])


def test_prose_then_an_action() -> None:
    reply = "Let me check." + _W
    assert takes("internlm2", CASES["one"], reply, "auto")
    assert not takes("internlm2", CASES["one"], reply, "required")
