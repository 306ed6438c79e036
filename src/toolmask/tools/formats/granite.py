"""``granite``: IBM Granite 3.x: every call of the turn in one JSON list behind
``<|tool_call|>``, optional ``<think>`` reasoning::

    <|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]

vLLM's ``tool_chat_template_granite`` renders the list as ``tojson(indent=4)``::

    <|tool_call|>[
        {
            "name": "get_weather",
            "arguments": {
                "city": "Paris"
            }
        }
    ]

and the grammar admits both layouts, each call object exactly in one of them (the list's
brackets and separators in either; ``[`` after a space too, as vLLM's Granite parser tests
write it). llama.cpp's Granite 3.3 template renders no calls at all (its assistant turns are
the message content only): its system prompt asks for ``<|tool_call|>`` followed by a JSON list.
"""

from __future__ import annotations

from toolmask.grammar import choice, lit, opt, seq
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

_PAD = "\n    "

SPEC = FormatSpec(
    "granite",
    JsonCalls(indent=4, depth=1, flat_too=True, json_list=True),
    BlockMarkers("<|tool_call|>"),
    Layout(
        list_open="[" + _PAD,
        list_close="\n]",
        separator=",",
        separator_text="," + _PAD,
        list_open_admits=seq(opt(lit(" ")), lit("["), opt(lit(_PAD))),
        separator_admits=choice(lit(", "), lit("," + _PAD)),
        list_close_admits=seq(opt(lit("\n")), lit("]")),
    ),
    Reasoning("<think>", "</think>"),
    template_markers=(
        "<|start_of_role|>",
        "<|end_of_role|>",
        "<|end_of_text|>",
        "<|tool_call|>",
        "<think>",
        "</think>",
        "<response>",
        "</response>",
    ),
)
