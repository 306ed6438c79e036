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
brackets and separators in either). llama.cpp's Granite 3.3 template renders no calls at all
(its assistant turns are the message content only): its system prompt asks for
``<|tool_call|>`` followed by a JSON list.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from toolmask.grammar import Node, choice, lit, opt, seq
from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls, json_object

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["Granite"]

_PAD = "\n    "


@register_format("granite")
class Granite(JsonCalls):
    open = "<|tool_call|>"
    list_open = "[" + _PAD
    list_close = "\n]"
    separator = ","
    separator_text = "," + _PAD
    json_list = True
    call_indent = 4
    call_depth = 1
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers = (
        "<|start_of_role|>",
        "<|end_of_role|>",
        "<|end_of_text|>",
        "<|tool_call|>",
        "<think>",
        "</think>",
        "<response>",
        "</response>",
    )

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """The call object on one line (``json.dumps`` spacing) or indented as the template
        indents it."""
        name = lit(json.dumps(tool.name, ensure_ascii=False))
        flat = json_object([("name", name), ("arguments", kit.json(tool.parameters, f"a{index}_"))])
        deep = json_object(
            [("name", name), ("arguments", self.arguments_node(tool, index, kit))],
            indent=self.call_indent,
            depth=self.call_depth,
        )
        return choice(flat, deep)

    def list_open_node(self) -> Node:
        """``[`` (after a space, as vLLM's Granite parser tests write it, or none), then the
        indented layout's first line break."""
        return seq(opt(lit(" ")), lit("["), opt(lit(_PAD)))

    def separator_node(self) -> Node:
        return choice(lit(", "), lit("," + _PAD))

    def list_close_node(self) -> Node:
        return seq(opt(lit("\n")), lit("]"))
