"""``minimax_m1``: MiniMax-M1: ``<think>`` reasoning, then the calls of the turn one JSON object
per line between ``<tool_calls>`` and ``</tool_calls>``::

    <tool_calls>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    {"name": "get_time", "arguments": {"zone": "Europe/Paris"}}
    </tool_calls>
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls

__all__ = ["MiniMaxM1"]


@register_format("minimax_m1")
class MiniMaxM1(JsonCalls):
    open = "<tool_calls>"
    after_open = "\n"
    close = "</tool_calls>"
    before_close = "\n"
    separator = "\n"
    separator_text = "\n"
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers = (
        "<beginning_of_sentence>",
        "<end_of_sentence>",
        "<tools>",
        "</tools>",
        "<tool_calls>",
        "</tool_calls>",
        "<think>",
        "</think>",
    )
