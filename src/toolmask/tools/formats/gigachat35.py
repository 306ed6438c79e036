"""``gigachat35``: GigaChat 3.5 ("chatml v5"), DeepSeek's DSML markup under the ``｜GCML｜``
tag, after optional ``<think>`` reasoning and text, each part a blank line apart::

    <think>The user wants a forecast.</think>

    Let me check.

    <｜GCML｜tool_calls>
    <｜GCML｜invoke name="get_weather">
    <｜GCML｜parameter name="city" string="true">Paris</｜GCML｜parameter>
    <｜GCML｜parameter name="days" string="false">3</｜GCML｜parameter>
    </｜GCML｜invoke>
    </｜GCML｜tool_calls>

The template ends the assistant's message with ``<|message_sep|>`` (the end-of-turn token,
the template's own end marker after a plain answer) or, for the conversation's last message,
the EOS token. Its generation prompt is ``assistant<|role_sep|>\\n``, with ``<think>`` prefilled
when the caller passes ``reasoning=True`` (:meth:`FormatSpec.prompt_opens_reasoning` reads
it). Reader and grammar are DeepSeek's DSML codec (:mod:`._dsml`) with the mark changed.
"""

from __future__ import annotations

from toolmask.tools.formats._dsml import Dsml
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

GCML = "｜GCML｜"

SPEC = FormatSpec(
    "gigachat35",
    Dsml(GCML, "tool_calls"),
    BlockMarkers(
        "<｜GCML｜tool_calls>",
        "</｜GCML｜tool_calls>",
        after_open="\n",
        extra_triggers=("<｜GCML｜",),
    ),
    Layout(block_sep="", list_calls=True, separator_text=""),
    Reasoning("<think>", "</think>"),
    template_markers=(
        "<|role_sep|>",
        "<|message_sep|>",
        "<|file|>",
        "<|/file|>",
        "<think>",
        "</think>",
        "<｜GCML｜",
        "</｜GCML｜",
    ),
)
