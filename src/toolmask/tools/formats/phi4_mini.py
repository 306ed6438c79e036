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

from toolmask.tools.formats._json import JsonEnvelope
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, ToolLike

__all__ = ["SPEC"]


def _prompt(tools: Sequence[ToolLike]) -> str:
    """The ``<|tool|>[...]<|/tool|>`` section of the Phi-4-mini system turn."""
    fns = [
        {"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools
    ]
    return "<|tool|>" + json.dumps(fns, ensure_ascii=False) + "<|/tool|>"


SPEC = FormatSpec(
    "phi4_mini",
    JsonEnvelope(),
    BlockMarkers("<|tool_call|>", "<|/tool_call|>"),
    Layout(list_open="[", list_close="]", list_optional=True, separator=","),
    template_markers=(
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
    ),
    prompt=Prompt(section=_prompt),
)
