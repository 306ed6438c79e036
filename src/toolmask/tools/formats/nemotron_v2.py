"""``nemotron_v2``: NVIDIA Nemotron Nano v2: ``<think>`` reasoning (the generation prompt opens
it unless thinking is off), then every call of the turn in one JSON list::

    <TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>
"""

from __future__ import annotations

from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "nemotron_v2",
    JsonCalls(json_list=True),
    BlockMarkers("<TOOLCALL>", "</TOOLCALL>"),
    Layout(list_open="[", list_close="]", separator=","),
    Reasoning("<think>", "</think>"),
    template_markers=(
        "<SPECIAL_10>",
        "<SPECIAL_11>",
        "<SPECIAL_12>",
        "<AVAILABLE_TOOLS>",
        "</AVAILABLE_TOOLS>",
        "<TOOLCALL>",
        "</TOOLCALL>",
        "<TOOL_RESPONSE>",
        "</TOOL_RESPONSE>",
        "<think>",
        "</think>",
    ),
)
