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
when the caller passes ``reasoning=True`` (:meth:`WireFormat.prompt_opens_reasoning` reads it).
Reader and grammar are :class:`~toolmask.tools.formats.deepseek.DeepSeekDsml`'s with the mark
changed.
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats.deepseek import DeepSeekDsml

__all__ = ["GigaChat35"]

GCML = "｜GCML｜"


@register_format("gigachat35")
class GigaChat35(DeepSeekDsml):
    mark = GCML
    tag = "tool_calls"
    open = "<｜GCML｜tool_calls>"
    close = "</｜GCML｜tool_calls>"
    extra_triggers = ("<｜GCML｜",)
    template_markers = (
        "<|role_sep|>",
        "<|message_sep|>",
        "<|file|>",
        "<|/file|>",
        "<think>",
        "</think>",
        "<｜GCML｜",
        "</｜GCML｜",
    )
