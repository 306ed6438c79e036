"""``granite`` on vLLM's ``tool_chat_template_granite.jinja`` (indented JSON) and the one-line
list Granite 3.x writes (llama.cpp's ``ibm-granite-granite-3.3-2B-Instruct.jinja`` renders no
calls: its assistant turns are their content only)."""

from __future__ import annotations

import pytest

from .rendered import ONE, TWO, Case, check_case, takes

_T = "vllm/tool_chat_template_granite.jinja"
_W = (
    '{\n        "name": "get_weather",\n        "arguments": {\n            "city": "Paris",'
    '\n            "days": 3\n        }\n    }'
)
_Z = (
    '{\n        "name": "get_time",\n        "arguments": {\n            "zone": "Europe/Paris"'
    "\n        }\n    }"
)
_FLAT = '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]'
CASES = {
    "one": Case(
        _T,
        f"<|tool_call|>[\n    {_W}\n]<|end_of_text|>\n",
        "<|end_of_text|>\n",
        ONE,
        special=frozenset({"<|tool_call|>"}),
    ),
    "two": Case(
        _T, f"<|tool_call|>[\n    {_W},\n    {_Z}\n]<|end_of_text|>\n", "<|end_of_text|>\n", TWO
    ),
    "one-line": Case("", f"<|tool_call|>{_FLAT}", "", ONE),
    "one-line-space": Case("", f"<|tool_call|> {_FLAT}", "", ONE),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("granite", CASES[name])


def test_each_object_in_one_layout() -> None:
    case = CASES["one"]
    half = '{"name": "get_weather",\n        "arguments": {"city": "Paris"}}'
    assert not takes("granite", case, f"<|tool_call|>[{half}]")
    two_spaces = _W.replace("        ", "      ")
    assert not takes("granite", case, f"<|tool_call|>[\n    {two_spaces}\n]")
