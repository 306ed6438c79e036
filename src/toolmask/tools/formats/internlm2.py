"""``internlm2``: InternLM2 / 2.5: one call per action, actions back to back::

    <|action_start|><|plugin|>
    {"name": "get_weather", "arguments": {"city": "Paris"}}<|action_end|>

(vLLM's ``tool_chat_template_internlm2_tool``.)
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls

__all__ = ["InternLM2"]


@register_format("internlm2")
class InternLM2(JsonCalls):
    open = "<|action_start|><|plugin|>"
    after_open = "\n"
    close = "<|action_end|>"
    block_sep = ""
    template_markers = (
        "<|im_start|>",
        "<|im_end|>",
        "<|action_start|>",
        "<|action_end|>",
        "<|plugin|>",
        "<|interpreter|>",
    )
