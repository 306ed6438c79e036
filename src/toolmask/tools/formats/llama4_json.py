"""``llama4_json``: Llama 4 with vLLM's JSON tool template: the calls are JSON objects with
``"parameters"``, written one after another::

    {"name": "get_weather", "parameters": {"city": "Paris"}}{"name": "get_time", ...}

(vLLM's ``tool_chat_template_llama4_json``.) Without a marker a block is recognised only at
the very start of the reply (a reply that starts with ``{``), as for ``llama3_json``; elsewhere
the calls sit between Llama 4's ``<|python_start|>`` and ``<|python_end|>``.
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls

__all__ = ["Llama4Json"]


@register_format("llama4_json")
class Llama4Json(JsonCalls):
    open = "<|python_start|>"
    close = "<|python_end|>"
    bare_at_start = True
    bare_start = "{"
    list_calls = True
    separator_text = ""
    call_keys = (("name", "name"), ("parameters", "args"))
    template_markers = (
        "<|begin_of_text|>",
        "<|header_start|>",
        "<|header_end|>",
        "<|eot|>",
        "<|eom|>",
        "<|python_start|>",
        "<|python_end|>",
    )
