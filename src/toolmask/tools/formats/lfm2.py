"""``lfm2``: Liquid LFM2 / LFM2.5: a Python list of calls (:mod:`._pythonic`) between
``<|tool_call_start|>`` and ``<|tool_call_end|>`` (special tokens), reasoning in ``<think>``::

    <|tool_call_start|>[get_weather(city="Paris", days=3)]<|tool_call_end|>
"""

from __future__ import annotations

from toolmask.grammar import choice, lit
from toolmask.tools.formats._chat import LFM2
from toolmask.tools.formats._pythonic import HOW, PythonCalls
from toolmask.tools.formats._spec import (
    BlockMarkers,
    FormatSpec,
    Layout,
    Prompt,
    Reasoning,
    Values,
)

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "lfm2",
    PythonCalls(wrap=True),
    BlockMarkers("<|tool_call_start|>", "<|tool_call_end|>"),
    Layout(
        list_open="[",
        list_close="]",
        separator=",",
        block_sep="",
        separator_admits=choice(lit(", "), lit(",")),
    ),
    Reasoning("<think>", "</think>"),
    Values(extra_layouts=("compact",)),
    template_markers=LFM2,
    prompt=Prompt(how=f"<|tool_call_start|>{HOW}<|tool_call_end|>"),
)
