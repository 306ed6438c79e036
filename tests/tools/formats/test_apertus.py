"""``apertus`` on llama.cpp's ``Apertus-8B-Instruct.jinja`` and vLLM's
``tool_chat_template_apertus.jinja`` (the same bytes)."""

from __future__ import annotations

import pytest

from .rendered import ONE, TWO, Case, check_case, parse, takes

_ONE = '<|tools_prefix|>[{"get_weather": {"city": "Paris", "days": 3}}]<|tools_suffix|>'
_TWO = (
    '<|tools_prefix|>[{"get_weather": {"city": "Paris", "days": 3}}, '
    '{"get_time": {"zone": "Europe/Paris"}}]<|tools_suffix|>'
)
_S = frozenset({"<|tools_prefix|>", "<|tools_suffix|>"})
CASES = {
    f"{where}-{n}": Case(t, text, "", calls, special=_S)
    for where, t in (
        ("llama.cpp", "llama.cpp/Apertus-8B-Instruct.jinja"),
        ("vllm", "vllm/tool_chat_template_apertus.jinja"),
    )
    for n, text, calls in (("one", _ONE, ONE), ("two", _TWO, TWO))
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("apertus", CASES[name])


def test_inner_reasoning_then_calls() -> None:
    reply = "<|inner_prefix|>Need the weather.<|inner_suffix|>" + _ONE
    case = Case("", reply, "", ONE)
    assert takes("apertus", case, reply)
    assert parse("apertus", case, reply).reasoning == "Need the weather."
    envelope = _ONE.replace('{"get_weather": ', '{"name": "get_weather", "arguments": ')
    assert not takes("apertus", case, envelope)  # the name is the key, not a "name" value
