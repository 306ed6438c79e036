"""``jamba``: AI21 Jamba (Mini / Large 1.6, 1.7): every call of the turn in one JSON list, one
call object a line, indented by four spaces::

     <tool_calls>[
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_time", "arguments": {"zone": "Europe/Paris"}}
    ]</tool_calls>

(the space before ``<tool_calls>`` ends the assistant's role prefix ``<|assistant|> ``). The
markers and the reader are ``hunyuan_a13b``'s; the list's layout is the template's own.
"""

from __future__ import annotations

from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "jamba",
    JsonCalls(json_list=True),
    BlockMarkers("<tool_calls>", "</tool_calls>"),
    Layout(list_open="[\n    ", list_close="\n]", separator=",", separator_text=",\n    "),
    template_markers=(
        "<|startoftext|>",
        "<|bom|>",
        "<|eom|>",
        "<|system|>",
        "<|user|>",
        "<|assistant|>",
        "<|tool|>",
        "<tool_definitions>",
        "</tool_definitions>",
        "<tool_calls>",
        "</tool_calls>",
        "<documents>",
        "</documents>",
        "<citations>",
        "</citations>",
    ),
)
