"""``mistral``: Mistral 7B v0.3, Mistral Nemo, Mistral Small (v3 tokenizers).

All calls of a turn in one JSON array behind ``[TOOL_CALLS]``, each with the call id the model
writes after its arguments (nine alphanumeric characters; Nemo's template refuses any other)::

    [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1B2c3D4e"}]

The grammar takes the id (optional: older fine-tunes leave it out); the parser returns it as
the call's id. ``[TOOL_CALLS]``, ``[AVAILABLE_TOOLS]``, ``[INST]`` ... are special tokens in
v3 vocabularies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolmask.grammar import Node, byte_range, choice, lit, opt, repeat, seq
from toolmask.tools.formats._base import WireFormat, register_format

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

#: Mistral's call ids: nine ASCII letters or digits
ID_LENGTH = 9

__all__ = ["Mistral"]


@register_format("mistral")
class Mistral(WireFormat):
    open = "[TOOL_CALLS]"
    #: the v3 template writes ``[TOOL_CALLS] [``; the space is optional
    after_open = " "
    list_open = "["
    list_close = "]"
    separator = ","
    separator_text = ", "
    id_key = "id"
    template_markers = (
        "<s>",
        "</s>",
        "[INST]",
        "[/INST]",
        "[TOOL_CALLS]",
        "[AVAILABLE_TOOLS]",
        "[/AVAILABLE_TOOLS]",
        "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]",
        "[SYSTEM_PROMPT]",
        "[/SYSTEM_PROMPT]",
    )

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """The call object, then optionally ``, "id": "XXXXXXXXX"`` (nine alphanumerics)."""
        args = kit.json(tool.parameters, f"a{index}_")
        alnum = choice(byte_range(0x30, 0x39), byte_range(0x41, 0x5A), byte_range(0x61, 0x7A))
        value = seq(lit('"'), repeat(alnum, ID_LENGTH, ID_LENGTH), lit('"'))
        name = json.dumps(tool.name, ensure_ascii=False)
        if kit.options.get("whitespace") == "flexible":  # the envelope's layout follows suit
            ws = kit.ws(int(kit.options.get("max_whitespace", 4)))
            head = seq(lit("{"), ws, lit('"name"'), ws, lit(":"), ws, lit(name), ws, lit(","), ws,
                       lit('"arguments"'), ws, lit(":"), ws)  # fmt: skip
            call_id = seq(ws, lit(","), ws, lit('"id"'), ws, lit(":"), ws, value)
            return seq(head, args, opt(call_id), ws, lit("}"))
        call_id = seq(lit(', "id": '), value)
        return seq(lit(f'{{"name": {name}, "arguments": '), args, opt(call_id), lit("}"))

    def render_tools(self, tools: Sequence[Tool]) -> str:
        """The ``[AVAILABLE_TOOLS]`` section the Mistral template puts before the last user turn."""
        body = json.dumps([t.to_openai() for t in tools], ensure_ascii=False)
        return "[AVAILABLE_TOOLS]" + body + "[/AVAILABLE_TOOLS]"
