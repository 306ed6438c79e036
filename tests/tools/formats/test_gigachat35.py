"""``gigachat35`` on llama.cpp's ``GigaChat3.5.jinja`` renders (see :mod:`.xml_rendered`): one
call, two calls, typed parameters, reasoning and prose before the calls; and DeepSeek's DSML
markup, which shares its reader, stays apart from it."""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS, ToolTurn

from .checks import check_prefixes, check_rendered, check_truncated, takes, turn_for
from .xml_rendered import RENDERED, TOOLS, cases_for

G35 = "llama.cpp-upstream/GigaChat3.5.jinja"


@pytest.mark.parametrize("key", cases_for("gigachat35"), ids="-".join)
def test_gigachat35_rendered(key: tuple[str, str]) -> None:
    check_rendered(*key)


@pytest.mark.parametrize("key", cases_for("gigachat35"), ids="-".join)
def test_gigachat35_every_prefix(key: tuple[str, str]) -> None:
    check_prefixes(*key)


def test_gigachat35_truncated() -> None:
    check_truncated(G35)


def test_the_prefilled_think_opens_the_reasoning() -> None:
    """``reasoning=True`` makes the template's generation prompt end with ``<think>``: the
    reply starts inside the channel."""
    fmt = FORMATS["gigachat35"]
    tail, text = RENDERED[G35, "reasoning"]
    prompt = tail + "<think>"
    assert fmt.prompt_opens_reasoning(prompt) and not fmt.prompt_opens_reasoning(tail)
    reply = text.removeprefix("<think>")
    turn = turn_for("gigachat35", "required", prompt)
    assert turn.reasoning_open and takes(turn, reply)
    parsed = turn.parse(reply)
    assert parsed.reasoning == "THINK" and [c.name for c in parsed.calls] == ["get_weather"]


def test_dsml_and_gcml_stay_apart() -> None:
    """The two markups differ only in their mark: each format reads and takes its own, the
    other's is prose to it."""
    _, text = RENDERED[G35, "one"]
    dsml = text.replace("｜GCML｜", "｜DSML｜")
    for fmt, own, other in (("gigachat35", text, dsml), ("deepseek_v4", dsml, text)):
        turn = turn_for(fmt, "required", "")
        assert takes(turn, own) and not takes(turn, other), fmt
        assert [c.name for c in turn.parse(own).calls] == ["get_weather"]
        assert turn.parse(other).calls == () and turn.parse(other).content == other


def test_a_call_without_arguments() -> None:
    """The template writes an invoke with no parameters as its open and close tags alone."""
    tools = [{"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}}]
    text = (
        '<｜GCML｜tool_calls>\n<｜GCML｜invoke name="ping">\n</｜GCML｜invoke>\n'
        "</｜GCML｜tool_calls>"
    )
    turn = ToolTurn([*TOOLS, *tools], "gigachat35", "required")
    assert takes(turn, text)
    assert [(c.name, c.arguments) for c in turn.parse(text).calls] == [("ping", {})]
