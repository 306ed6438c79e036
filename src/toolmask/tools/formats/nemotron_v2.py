"""``nemotron_v2``: NVIDIA Nemotron Nano v2: ``<think>`` reasoning (the generation prompt opens
it unless thinking is off), then every call of the turn in one JSON list::

    <TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls

__all__ = ["NemotronV2"]


@register_format("nemotron_v2")
class NemotronV2(JsonCalls):
    open = "<TOOLCALL>"
    close = "</TOOLCALL>"
    list_open = "["
    list_close = "]"
    separator = ","
    separator_text = ", "
    json_list = True
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers = (
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
    )
