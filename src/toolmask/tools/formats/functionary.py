"""``functionary_v31``: MeetKai Functionary v3.1 (Llama 3.1 base): each call is
``<function=NAME>`` and its JSON arguments, calls back to back::

    <function=get_weather>{"city": "Paris"}</function><function=get_time>{"zone": "UTC"}</function>

The template's prompt asks for one call at a time but renders a turn's calls back to back;
the grammar admits them so (``parallel_tool_calls``). Its ``<|python_tag|>`` code calls (the
built-in ``python`` tool) are not function calls and stay prose.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolmask.grammar import Node, lit, seq
from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._blocks import Block, bad_block
from toolmask.tools.formats._jsoncalls import JsonCalls, read_marked_calls

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["FunctionaryV31"]

_HEAD = re.compile(r"(?P<name>[^>\s]+)>")


@register_format("functionary_v31")
class FunctionaryV31(JsonCalls):
    open = "<function="
    close = "</function>"
    block_sep = ""
    template_markers = (
        "<|begin_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<|python_tag|>",
        "<function=",
        "</function>",
    )

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``NAME>{...}`` (between ``<function=`` and ``</function>``)."""
        return seq(lit(tool.name + ">"), kit.json(tool.parameters, f"a{index}_"))

    def render_one(self, name: str, arguments: object, index: int) -> str:
        return f"{name}>{self.dump_arguments(arguments)}"

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        return "".join(f"{self.open}{self.render_one(n, a, 0)}{self.close}" for n, a in calls)

    def read_json(self, text: str, k: int, final: bool, *, bare: bool = False) -> Block:
        got = read_marked_calls(
            text,
            k + len(self.open),
            _HEAD,
            self.close,
            first="",
            need=">",
            final=final,
            many=False,
        )
        if isinstance(got, Block):
            return got
        if isinstance(got, str):
            return bad_block(text, k + len(self.open), self.close, got, final)
        calls, end = got
        return Block("ok", end, calls)
