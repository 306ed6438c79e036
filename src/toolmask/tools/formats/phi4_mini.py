"""``phi4_mini``: Phi-4-mini-instruct.

All calls in one JSON array between ``<|tool_call|>`` and ``<|/tool_call|>`` (the model's own
special tokens), or one bare call object per block, as llama.cpp's template for the model
renders them (and the model writes too)::

    <|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>
    <|tool_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}<|/tool_call|>

Tools are advertised as a JSON list between ``<|tool|>`` and ``<|/tool|>`` in the system turn.
Microsoft's own template renders no calls at all; see docs/tools.md for the decision.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolmask.tools.formats._base import WireFormat, register_format

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool

__all__ = ["Phi4Mini"]


@register_format("phi4_mini")
class Phi4Mini(WireFormat):
    open = "<|tool_call|>"
    close = "<|/tool_call|>"
    list_open = "["
    list_close = "]"
    list_optional = True
    separator = ","
    separator_text = ", "
    template_markers = (
        "<|system|>",
        "<|user|>",
        "<|assistant|>",
        "<|end|>",
        "<|endoftext|>",
        "<|tool|>",
        "<|/tool|>",
        "<|tool_call|>",
        "<|/tool_call|>",
        "<|tool_response|>",
    )

    def render_tools(self, tools: Sequence[Tool]) -> str:
        """The ``<|tool|>[...]<|/tool|>`` section of the Phi-4-mini system turn."""
        fns = [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in tools
        ]
        return "<|tool|>" + json.dumps(fns, ensure_ascii=False) + "<|/tool|>"
