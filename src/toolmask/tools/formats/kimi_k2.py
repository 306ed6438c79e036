"""``kimi_k2``: Kimi K2, K2.5 / K2.6: section tokens, the name inside the call id
``functions.NAME:IDX`` (IDX counts the calls of the conversation: any number is admitted),
``<think>`` reasoning::

    <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0
    <|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>

(without the line break). An empty section is no call, not text.
"""

from __future__ import annotations

from toolmask.grammar import byte_range, lit, opt, repeat
from toolmask.tools.formats._marked import ARGS, K2_CALLS, NAME, Inner, Mark, MarkedJson, Shape
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning, Values

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "kimi_k2",
    MarkedJson(
        (
            Mark("<|tool_call_begin|>"),
            "functions.",
            NAME,
            ":",
            Shape(repeat(byte_range(0x30, 0x39), 1, 4), "{i}"),
            Shape(opt(lit(" ")), ""),
            Mark("<|tool_call_argument_begin|>"),
            ARGS,
            Mark("<|tool_call_end|>"),
        ),
        Inner(K2_CALLS, empty_ok=True),
    ),
    BlockMarkers("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
    Layout(block_sep="", list_calls=True),
    Reasoning("<think>", "</think>"),
    Values(extra_layouts=("compact",)),
    template_markers=(
        "<|im_end|>",
        "<|im_user|>",
        "<|im_assistant|>",
        "<|im_system|>",
        "<|im_middle|>",
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_end|>",
        "<|tool_call_argument_begin|>",
        "<think>",
        "</think>",
    ),
)
