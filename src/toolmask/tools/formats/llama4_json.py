"""``llama4_json``: Llama 4 with vLLM's JSON tool template: the calls are JSON objects with
``"parameters"``, written one after another::

    {"name": "get_weather", "parameters": {"city": "Paris"}}{"name": "get_time", ...}

(vLLM's ``tool_chat_template_llama4_json``.) Without a marker a block is recognised only at
the very start of the reply (a reply that starts with ``{``), as for ``llama3_json``; elsewhere
the calls sit between Llama 4's ``<|python_start|>`` and ``<|python_end|>``.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import LLAMA4
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "llama4_json",
    JsonCalls(call_keys=(("name", "name"), ("parameters", "args"))),
    BlockMarkers("<|python_start|>", "<|python_end|>", bare_start="{"),
    Layout(list_calls=True, separator_text=""),
    template_markers=LLAMA4,
)
