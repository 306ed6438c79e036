"""``apertus``: Swiss AI Apertus: every call of the turn in one JSON list whose objects have
the tool's name as their only key; reasoning between ``<|inner_prefix|>`` and
``<|inner_suffix|>``::

    <|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"get_time": {}}]<|tools_suffix|>
"""

from __future__ import annotations

from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "apertus",
    JsonCalls(json_list=True, name_as_key=True),
    BlockMarkers("<|tools_prefix|>", "<|tools_suffix|>"),
    Layout(list_open="[", list_close="]", separator=","),
    Reasoning("<|inner_prefix|>", "<|inner_suffix|>"),
    template_markers=(
        "<|system_start|>",
        "<|system_end|>",
        "<|developer_start|>",
        "<|developer_end|>",
        "<|user_start|>",
        "<|user_end|>",
        "<|assistant_start|>",
        "<|assistant_end|>",
        "<|inner_prefix|>",
        "<|inner_suffix|>",
        "<|tools_prefix|>",
        "<|tools_suffix|>",
    ),
)
