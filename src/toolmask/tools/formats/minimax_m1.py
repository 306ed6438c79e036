"""``minimax_m1``: MiniMax-M1: ``<think>`` reasoning, then the calls of the turn one JSON object
per line between ``<tool_calls>`` and ``</tool_calls>``::

    <tool_calls>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    {"name": "get_time", "arguments": {"zone": "Europe/Paris"}}
    </tool_calls>
"""

from __future__ import annotations

from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "minimax_m1",
    JsonCalls(),
    BlockMarkers("<tool_calls>", "</tool_calls>", after_open="\n", before_close="\n"),
    Layout(separator="\n", separator_text="\n"),
    Reasoning("<think>", "</think>"),
    template_markers=(
        "<beginning_of_sentence>",
        "<end_of_sentence>",
        "<tools>",
        "</tools>",
        "<tool_calls>",
        "</tool_calls>",
        "<think>",
        "</think>",
    ),
)
