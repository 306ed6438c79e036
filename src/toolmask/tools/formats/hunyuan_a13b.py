"""``hunyuan_a13b``: Tencent Hunyuan-A13B: ``<think>`` reasoning, then every call of the turn
in one JSON list::

    <think>
    The user wants the weather.
    </think>
    <tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>

(vLLM's ``tool_chat_template_hunyuan_a13b``.)
"""

from __future__ import annotations

from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "hunyuan_a13b",
    JsonCalls(json_list=True),
    BlockMarkers("<tool_calls>", "</tool_calls>"),
    Layout(list_open="[", list_close="]", separator=","),
    Reasoning("<think>", "</think>"),
    template_markers=(
        "<|startoftext|>",
        "<|extra_0|>",
        "<|extra_4|>",
        "<|eos|>",
        "<tool_calls>",
        "</tool_calls>",
        "<think>",
        "</think>",
        "<answer>",
        "</answer>",
    ),
)
