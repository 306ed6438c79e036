"""``olmo3`` on vLLM's OLMo 3 template (``vllm-upstream/tool_chat_template_olmo3.jinja``, renders
in :mod:`.xml_rendered`): Python calls one a line in ``<function_calls>``, strings in single
quotes, other values as JSON."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS

from .checks import check_prefixes, check_rendered, check_truncated, takes, turn_for
from .xml_rendered import CALLS, RENDERED, cases_for

_T = "vllm-upstream/tool_chat_template_olmo3.jinja"


@pytest.mark.parametrize("key", cases_for("olmo3"), ids="-".join)
def test_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("olmo3"), ids="-".join)
def test_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


def test_truncated() -> None:
    check_truncated(_T)


def test_the_renderer_writes_what_the_grammar_takes() -> None:
    tail = RENDERED[_T, "types"][0]
    for case in ("two", "types"):
        text = FORMATS["olmo3"].render_calls(CALLS[case])
        turn = turn_for("olmo3", "required", tail)
        assert takes(turn, text), text
        assert [(c.name, c.arguments) for c in turn.parse(text).calls] == CALLS[case]


def test_values_in_either_spelling_are_read_the_grammar_writes_the_templates() -> None:
    tail, text = RENDERED[_T, "types"]
    turn = turn_for("olmo3", "auto", tail)
    python = text.replace("flag=true", "flag=True")
    assert [c.arguments for c in turn.parse(python).calls] == [CALLS["types"][0][1]]
    assert not takes(turn, python)
    # a list of calls is lfm2's and llama4_pythonic's notation, not this one's
    listed = "<function_calls>[get_weather(city='Paris')]</function_calls>"
    assert not takes(turn, listed)
    got = turn.parse(listed)
    assert got.calls == () and got.malformed and got.content == listed


def test_malformed_block_stays_in_content() -> None:
    tail, text = RENDERED[_T, "one"]
    turn = turn_for("olmo3", "auto", tail)
    for bad in (
        text.replace("days=3", "days=3,)", 1),  # not Python
        text.replace("get_weather(", "get_weather('Paris', ", 1),  # a positional argument
        text.replace("days=3", "days=f(3)", 1),  # not a literal
        text.replace("</function_calls>", ""),  # never closed
    ):
        got = turn.parse(bad)
        assert got.calls == () and got.malformed and got.content == bad, bad
