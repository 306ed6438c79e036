"""``internlm2``: InternLM2 / 2.5: one call per action, actions back to back::

    <|action_start|><|plugin|>
    {"name": "get_weather", "arguments": {"city": "Paris"}}<|action_end|>

(vLLM's ``tool_chat_template_internlm2_tool``.)
"""

from __future__ import annotations

from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "internlm2",
    JsonCalls(),
    BlockMarkers("<|action_start|><|plugin|>", "<|action_end|>", after_open="\n"),
    Layout(block_sep=""),
    template_markers=(
        "<|im_start|>",
        "<|im_end|>",
        "<|action_start|>",
        "<|action_end|>",
        "<|plugin|>",
        "<|interpreter|>",
    ),
)
