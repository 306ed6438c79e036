"""``jamba`` on AI21 Jamba Mini 1.7's chat template (``models/ai21labs-AI21-Jamba-Mini-1.7.jinja``):
the indented list the ``hunyuan_a13b`` / ``apriel`` grammars refuse."""

from __future__ import annotations

import pytest

from .rendered import ONE, TWO, Case, check_case, check_stays_in_content, parse, takes

_T = "models/ai21labs-AI21-Jamba-Mini-1.7.jinja"
_W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
_Z = '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}'
CASES = {
    # the role prefix "<|assistant|> " ends with the space before <tool_calls>
    "one": Case(_T, f" <tool_calls>[\n    {_W}\n]</tool_calls><|eom|>", "<|eom|>", ONE),
    "two": Case(_T, f" <tool_calls>[\n    {_W},\n    {_Z}\n]</tool_calls><|eom|>", "<|eom|>", TWO),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("jamba", CASES[name])


def test_only_the_templates_layout() -> None:
    case = CASES["two"]
    # the compact list is hunyuan_a13b's and apriel's layout, not this template's
    assert not takes("jamba", case, f"<tool_calls>[{_W}, {_Z}]</tool_calls>")
    assert takes("hunyuan_a13b", case, f"<tool_calls>[{_W}, {_Z}]</tool_calls>")
    assert not takes("hunyuan_a13b", case, case.reply)
    # prose before the calls under auto only
    reply = "Let me check." + case.reply
    assert takes("jamba", case, reply, "auto") and not takes("jamba", case, reply)
    assert parse("jamba", case, reply).content == "Let me check."


def test_malformed_block_stays_in_content() -> None:
    case = CASES["one"]
    check_stays_in_content(
        "jamba",
        case,
        (
            "<tool_calls>[\n    " + _W + "\n</tool_calls>",  # the list is never closed
            "<tool_calls>[\n]</tool_calls>",  # an empty list
            "<tool_calls>[\n    " + _W[:30],  # cut off
        ),
    )
