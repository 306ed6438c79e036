"""``falcon3``: TII Falcon 3 (Instruct): the turn's calls as OpenAI tool-call objects, the list
written with ``tojson(indent=2)`` inside ``<tool_call>`` tags::

    <tool_call>
    [
      {
        "id": "call_0",
        "type": "function",
        "function": {
          "name": "get_weather",
          "arguments": {
            "city": "Paris"
          }
        }
      }
    ]
    </tool_call>

The id is the one the client gave the call (an OpenAI-style token), read back as the call's id.
Falcon 3's template renders a call-only assistant message without its ``<|assistant|>\\n``
header, right after the previous turn; the reply continues the generation prompt, which ends
with that header.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import QWEN_TOOL_TAGS
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "falcon3",
    JsonCalls(
        call_keys=(("id", "id"), ("type", "type"), ("function", "function")),
        function_keys=(("name", "name"), ("arguments", "args")),
        indent=2,
        depth=1,
        id_shape="token",
        json_list=True,
    ),
    BlockMarkers("<tool_call>", "</tool_call>", after_open="\n", before_close="\n"),
    Layout(list_open="[\n  ", list_close="\n]", separator=",", separator_text=",\n  "),
    template_markers=("<|system|>", "<|user|>", "<|assistant|>", "<|endoftext|>", *QWEN_TOOL_TAGS),
)
