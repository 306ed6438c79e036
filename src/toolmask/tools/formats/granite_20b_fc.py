"""``granite_20b_fc``: IBM Granite 20B Function Calling: each call behind its own marker, one per
line::

    <function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}
    <function_call> {"name": "get_time", "arguments": {"zone": "Europe/Paris"}}

(vLLM's ``tool_chat_template_granite_20b_fc``.)
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls

__all__ = ["Granite20bFC"]


@register_format("granite_20b_fc")
class Granite20bFC(JsonCalls):
    open = "<function_call>"
    after_open = " "
    block_sep = "\n"
    template_markers = ("<|endoftext|>", "<function_call>", "<function_response>")
