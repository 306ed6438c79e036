"""``granite_20b_fc``: IBM Granite 20B Function Calling: each call behind its own marker, one per
line::

    <function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}
    <function_call> {"name": "get_time", "arguments": {"zone": "Europe/Paris"}}

(vLLM's ``tool_chat_template_granite_20b_fc``.)
"""

from __future__ import annotations

from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "granite_20b_fc",
    JsonCalls(),
    BlockMarkers("<function_call>", after_open=" "),
    template_markers=("<|endoftext|>", "<function_call>", "<function_response>"),
)
