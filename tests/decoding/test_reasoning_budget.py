"""The reasoning budget of the decode loop: after that many tokens inside the reasoning channel
the loop writes the close marker (through the grammar), and the turn goes on under
``tool_choice``. The model (:class:`~tests.decoding.thinker.Thinker`) would think forever."""

from __future__ import annotations

import json

import pytest

import toolmask as tm
from toolmask.backends import ReasoningBudget
from toolmask.tools import ToolTurn

from .thinker import Thinker

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
QWEN = {"opener": "<think>", "close": "</think>", "specials": ["<think>", "</think>"]}


def _qwen(budget: int | None, *, opened: bool = False, stop_after: int | None = None) -> tuple:
    model = Thinker(**QWEN, after="\n\n" + CALL, stop_after=stop_after)  # type: ignore[arg-type]
    turn = ToolTurn([TOOL], "qwen3", "required", special_tokens=QWEN["specials"])
    prompt_text = "<|im_start|>assistant\n" + ("<think>\n" if opened else "")
    turn = turn.for_prompt(prompt_text)
    compiled = tm.compile(turn.grammar(), model.vocab)
    prompt = model.tokenize(prompt_text)
    rb = ReasoningBudget.for_turn(turn, budget)
    gen = model.generate(prompt, compiled, max_tokens=120, reasoning_budget=rb)
    return model, turn, gen


@pytest.mark.parametrize("budget", [0, 1, 5])
def test_the_budget_closes_the_channel_then_the_call_follows(budget: int) -> None:
    model, turn, gen = _qwen(budget)
    text = model.text(gen.tokens)
    assert text.startswith("<think>" + ("hm " * 3)[:budget] + "</think>")
    assert gen.reasoning_cut and gen.reasoning_tokens == budget
    parsed = turn.parse(text)
    assert parsed.reasoning == ("hm " * 3)[:budget].strip()
    assert [(c.name, c.arguments) for c in parsed.calls] == [("get_weather", {"city": "Oslo"})]
    assert gen.finish_reason == "stop"


def test_a_prompt_that_opened_the_channel() -> None:
    model, turn, gen = _qwen(2, opened=True)
    assert turn.reasoning_open
    text = model.text(gen.tokens)
    assert text.startswith("hm</think>") and gen.reasoning_cut
    assert turn.parse(text).calls


def test_a_model_that_closes_the_channel_itself_is_left_alone() -> None:
    model, turn, gen = _qwen(50, stop_after=2)
    text = model.text(gen.tokens)
    assert text.startswith("<think>hm hm </think>")
    assert not gen.reasoning_cut and gen.reasoning_tokens == 6
    assert turn.parse(text).calls


def test_without_a_budget_the_model_thinks_until_max_tokens() -> None:
    model, _turn, gen = _qwen(None)
    assert "</think>" not in model.text(gen.tokens)
    assert gen.finish_reason == "length" and not gen.reasoning_cut


def test_a_close_marker_written_as_text() -> None:
    """Gemma 4's channel without special tokens: the close marker is the model's own
    tokenisation of ``<channel|>``."""
    call = '<|tool_call>call:get_weather{city:<|"|>Oslo<|"|>}<tool_call|>'
    model = Thinker(opener="<|channel>thought\n", close="<channel|>", after=call)
    turn = ToolTurn([TOOL], "gemma4", "required")
    compiled = tm.compile(turn.grammar(), model.vocab)
    rb = ReasoningBudget.for_turn(turn, 4)
    assert rb == ReasoningBudget(4, "<channel|>", "<|channel>thought", False)
    gen = model.generate(
        model.tokenize("<|turn>model\n"), compiled, max_tokens=200, reasoning_budget=rb
    )
    text = model.text(gen.tokens)
    assert text.startswith("<|channel>thought\nhm <channel|>"), text  # 4 tokens: "\nhm "
    parsed = turn.parse(text)
    assert parsed.reasoning == "hm" and parsed.calls[0].arguments == {"city": "Oslo"}


def test_harmony_analysis_channel() -> None:
    specials = ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|call|>"]
    after = (
        "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
        '<|message|>{"city": "Oslo"}<|call|>'
    )
    model = Thinker(
        opener="<|channel|>analysis<|message|>", close="<|end|>", after=after, specials=specials
    )
    turn = ToolTurn([TOOL], "gpt_oss", "required", special_tokens=specials)
    compiled = tm.compile(turn.grammar(), model.vocab)
    rb = ReasoningBudget.for_turn(turn, 3)
    gen = model.generate(
        model.tokenize("<|start|>assistant"), compiled, max_tokens=200, reasoning_budget=rb
    )
    text = model.text(gen.tokens)
    assert text.startswith("<|channel|>analysis<|message|>hm <|end|>"), text
    parsed = turn.parse(text)
    assert parsed.reasoning == "hm" and json.loads(parsed.calls[0].arguments_json) == {
        "city": "Oslo"
    }


def test_no_budget_for_a_turn_that_cannot_reason() -> None:
    assert ReasoningBudget.for_turn(ToolTurn([TOOL], "hermes"), 5) is None
    assert ReasoningBudget.for_turn(ToolTurn([TOOL], "qwen3", reasoning=False), 5) is None
    assert ReasoningBudget.for_turn(ToolTurn([TOOL], "qwen3"), None) is None
    with pytest.raises(ValueError, match="tokens >= 0"):
        ReasoningBudget(-1, "</think>")
