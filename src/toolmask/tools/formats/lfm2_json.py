"""``lfm2_json``: Liquid LFM2 / LFM2.5 in JSON mode (what LFM2 writes when its system prompt asks
for JSON calls, and what llama.cpp's LFM2 template renders): every call of the turn as a JSON
object in one list between ``<|tool_call_start|>`` and ``<|tool_call_end|>`` (special tokens),
each with the call id the template writes after its arguments, reasoning in ``<think>``::

    <|tool_call_start|>[{"name": "get_weather", "arguments": {...}, "id": "c1"}]<|tool_call_end|>

The grammar takes the id as optional (the template writes it only where the call has one) and
the parser returns it. ``lfm2`` is the same markers around Python calls, LFM2's default mode.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import LFM2
from toolmask.tools.formats._json import JsonEnvelope
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "lfm2_json",
    JsonEnvelope(id_key="id", id_shape="token"),
    BlockMarkers("<|tool_call_start|>", "<|tool_call_end|>"),
    Layout(list_open="[", list_close="]", separator=",", block_sep=""),
    Reasoning("<think>", "</think>"),
    template_markers=LFM2,
)
