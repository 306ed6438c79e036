"""``llama4_json`` on vLLM's ``tool_chat_template_llama4_json.jinja``."""

from __future__ import annotations

import pytest

from toolmask.tools import ToolTurn

from .rendered import ONE, TOOLS, TWO, Case, check_case, takes

_T = "vllm/tool_chat_template_llama4_json.jinja"
_W = '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}'
_Z = '{"name": "get_time", "parameters": {"zone": "Europe/Paris"}}'
CASES = {
    # the calls back to back, then "\n<|eot|>"
    "one": Case(_T, _W + "\n<|eot|>", "<|eot|>", ONE),
    "two": Case(_T, _W + _Z + "\n<|eot|>", "<|eot|>", TWO),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("llama4_json", CASES[name])


def test_tagged_calls_after_prose() -> None:
    case = CASES["two"]
    reply = "Checking.\n<|python_start|>" + _W + _Z + "<|python_end|>"
    assert takes("llama4_json", case, reply, "auto")
    got = ToolTurn(TOOLS, "llama4_json").parse(reply)
    assert got.content == "Checking." and [c.name for c in got.calls] == ["get_weather", "get_time"]
    # "arguments" is llama3_json's spelling, not this template's
    assert not takes("llama4_json", case, _W.replace("parameters", "arguments"))
