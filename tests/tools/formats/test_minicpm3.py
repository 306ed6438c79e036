"""``minicpm3`` on vLLM's MiniCPM3 template (``vllm-upstream/tool_chat_template_minicpm3.jinja``,
renders in :mod:`.xml_rendered`): Python calls one a line in a fence between
``<|tool_call_start|>`` and ``<|tool_call_end|>``, values as JSON."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS

from .checks import check_prefixes, check_rendered, check_truncated, streamed, takes, turn_for
from .xml_rendered import CALLS, RENDERED, cases_for

_T = "vllm-upstream/tool_chat_template_minicpm3.jinja"
_TAIL, _ONE = RENDERED[_T, "one"]


@pytest.mark.parametrize("key", cases_for("minicpm3"), ids="-".join)
def test_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("minicpm3"), ids="-".join)
def test_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


def test_truncated() -> None:
    check_truncated(_T)


def test_thought_then_calls_then_the_answer() -> None:
    """What the template renders for a message with a ``thought`` and content: the thought,
    the calls, then the content (its system prompt asks for the answer there)."""
    text = "<|thought_start|>\nTHINK\n<|thought_end|>\n" + _ONE + "Let me check."
    auto, required = turn_for("minicpm3", "auto", _TAIL), turn_for("minicpm3", "required", _TAIL)
    assert takes(auto, text) and takes(required, text)
    got = auto.parse(text)
    assert [(c.name, c.arguments) for c in got.calls] == CALLS["one"]
    assert got.reasoning.strip() == "THINK" and got.content == "Let me check."
    assert streamed(auto, text, 3)[0] == got


def test_the_renderer_writes_what_the_grammar_takes() -> None:
    for case in ("two", "types"):
        text = FORMATS["minicpm3"].render_calls(CALLS[case])
        turn = turn_for("minicpm3", "required", _TAIL)
        assert takes(turn, text), text
        assert [(c.name, c.arguments) for c in turn.parse(text).calls] == CALLS[case]


def test_only_the_fenced_calls() -> None:
    auto = turn_for("minicpm3", "auto", _TAIL)
    # without the fence: read, not written
    bare = _ONE.replace("```python\n", "").replace("```\n", "")
    assert [(c.name, c.arguments) for c in auto.parse(bare).calls] == CALLS["one"]
    assert not takes(auto, bare)
    # LFM2's list of calls in the same markers is lfm2's
    lfm2 = "<|tool_call_start|>[get_weather(city='Paris', days=3)]<|tool_call_end|>"
    assert not takes(auto, lfm2)
    got = auto.parse(lfm2)
    assert got.calls == () and got.malformed and got.content == lfm2


def test_malformed_block_stays_in_content() -> None:
    auto = turn_for("minicpm3", "auto", _TAIL)
    for bad in (
        _ONE.replace("days=3", "days=3,)", 1),  # not Python
        _ONE.replace("get_weather(", 'get_weather("Paris",', 1),  # a positional argument
        _ONE.replace("<|tool_call_end|>", ""),  # never closed
    ):
        got = auto.parse(bad)
        assert got.calls == () and got.malformed and got.content == bad, bad
