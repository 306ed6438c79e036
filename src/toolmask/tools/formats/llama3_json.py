"""``llama3_json``: Llama 3.1 / 3.2 / 3.3 JSON tool calling.

The reply is the call itself, optionally behind ``<|python_tag|>``; parallel calls are joined by
``; `` (the convention vLLM's ``llama3_json`` parser reads)::

    {"name": "get_weather", "parameters": {"city": "Paris"}}
    <|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "parameters": {}}

Without the tag a block is recognised only at the very start of the reply (a reply that starts
with ``{``); ``<|python_tag|>`` is a special token in Llama 3 vocabularies. The template asks for
``"parameters"``; Llama 3 models also write ``"arguments"`` (vLLM's and SGLang's parsers read
both), and so does the grammar.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolmask.grammar import Node, choice
from toolmask.tools.formats._base import WireFormat, register_format

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["Llama3Json"]


@register_format("llama3_json")
class Llama3Json(WireFormat):
    open = "<|python_tag|>"
    bare_at_start = True
    separator = ";"
    separator_text = "; "
    args_key = "parameters"
    template_markers = (
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<|python_tag|>",
        "<|finetune_right_pad_id|>",
    )

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """The call object with ``"parameters"`` or ``"arguments"`` (one arguments rule)."""
        args = kit.json(tool.parameters, f"a{index}_")
        layout = str(kit.options.get("whitespace", "compact"))
        max_ws = int(kit.options.get("max_whitespace", 4))
        return choice(*(self.call_node(tool.name, args, layout, max_ws, key) for key in _ARGS_KEYS))

    def render_tools(self, tools: Sequence[Tool]) -> str:
        """The JSON tool-calling instructions of the Llama 3.1 chat template (user turn)."""
        defs = "\n\n".join(json.dumps(t.to_openai(), indent=4, ensure_ascii=False) for t in tools)
        return (
            "Given the following functions, please respond with a JSON for a function call "
            "with its proper arguments that best answers the given prompt.\n\n"
            'Respond in the format {"name": function name, "parameters": dictionary of '
            "argument name and its value}. Do not use variables.\n\n" + defs + "\n\n"
        )


_ARGS_KEYS = ("parameters", "arguments")
