"""``apriel`` on Apriel 1.5's and 1.6's templates (``tests/data/templates/llama.cpp/``)."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS, ToolTurn

from .rendered import ONE, TOOLS, TWO, Case, check_case, parse, takes

_ONE = '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]'
_TWO = (
    '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, '
    '{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}]'
)
CASES = {
    # unsloth-Apriel-1.5.jinja: the turn after "<|assistant|>\n"
    "1.5-one": Case(
        "llama.cpp/unsloth-Apriel-1.5.jinja",
        f"\n<tool_calls>{_ONE}</tool_calls>\n<|end|>\n</s>",
        "<|end|>\n</s>",
        ONE,
    ),
    "1.5-two": Case(
        "llama.cpp/unsloth-Apriel-1.5.jinja",
        f"\n<tool_calls>{_TWO}</tool_calls>\n<|end|>\n</s>",
        "<|end|>\n</s>",
        TWO,
    ),
    # Apriel-1.6-15b-Thinker-fixed.jinja: the last turn renders no <|end|>; its generation
    # prompt opens the reasoning ("Here are my reasoning steps:\n")
    "1.6-one": Case(
        "llama.cpp/Apriel-1.6-15b-Thinker-fixed.jinja",
        f"\n<tool_calls>{_ONE}</tool_calls>",
        "",
        ONE,
    ),
    "1.6-two": Case(
        "llama.cpp/Apriel-1.6-15b-Thinker-fixed.jinja",
        f"\n<tool_calls>{_TWO}</tool_calls>",
        "",
        TWO,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_turns(name: str) -> None:
    check_case("apriel", CASES[name])


def test_reasoning_opened_by_the_generation_prompt() -> None:
    fmt = FORMATS["apriel"]
    prompt = "<|begin_user|>\nHi\n<|begin_assistant|>\nHere are my reasoning steps:\n"
    assert fmt.prompt_opens_reasoning(prompt)
    assert not fmt.prompt_opens_reasoning("<|assistant|>\n")
    # the reasoning text, then the final response: Apriel-1.6's rendering of reasoning_content
    reply = "The user wants the weather.\n[BEGIN FINAL RESPONSE]\n" + CASES["1.6-one"].reply
    case = Case("", reply, "", ONE, reasoning_open=True)
    assert takes("apriel", case, reply) and takes("apriel", case, reply, "auto")
    got = parse("apriel", case, reply)
    assert got.reasoning == "The user wants the weather." and got.content == ""
    assert [(c.name, c.arguments) for c in got.calls] == ONE
    # the channel must be closed first
    assert not takes("apriel", case, CASES["1.6-one"].reply)


def test_tool_call_inside_the_instructions_is_not_the_trigger() -> None:
    turn = ToolTurn(TOOLS, "apriel", "auto")
    text = 'Use <tool_call></tool_call> tags, like <tool_call>{"name": "x"}</tool_call>.'
    got = turn.parse(text)
    assert got.content == text and got.calls == () and got.malformed == ()
