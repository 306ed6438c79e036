"""``granite_20b_fc`` on vLLM's ``tool_chat_template_granite_20b_fc.jinja``."""

from __future__ import annotations

import pytest

from .rendered import ONE, TWO, Case, check_case

_T = "vllm/tool_chat_template_granite_20b_fc.jinja"
_W = '<function_call> {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
_Z = '<function_call> {"name": "get_time", "arguments": {"zone": "Europe/Paris"}}'
CASES = {
    # the turn after "ASSISTANT:" (history renders no space after the colon)
    "one": Case(_T, f"\n{_W}\n<|endoftext|>\n", "<|endoftext|>\n", ONE),
    "two": Case(_T, f"\n{_W}\n{_Z}\n<|endoftext|>\n", "<|endoftext|>\n", TWO),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("granite_20b_fc", CASES[name])
