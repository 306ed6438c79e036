"""``hunyuan_a13b``: Tencent Hunyuan-A13B: ``<think>`` reasoning, then every call of the turn
in one JSON list::

    <think>
    The user wants the weather.
    </think>
    <tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>

(vLLM's ``tool_chat_template_hunyuan_a13b``.)
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls

__all__ = ["HunyuanA13B"]


@register_format("hunyuan_a13b")
class HunyuanA13B(JsonCalls):
    open = "<tool_calls>"
    close = "</tool_calls>"
    list_open = "["
    list_close = "]"
    separator = ","
    separator_text = ", "
    json_list = True
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers = (
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
    )
