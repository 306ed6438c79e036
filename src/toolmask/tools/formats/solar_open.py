"""``solar_open``: Upstage Solar Open: a turn is messages. The reasoning message, then either a
content message or a tool-calls message, each call with its id, its name and its arguments::

    <|think|>The user wants the weather.<|end|><|begin|>assistant<|tool_calls|>
    <|tool_call:begin|>call_0<|tool_call:name|>get_weather<|tool_call:args|>{"city": "Paris"}
    <|tool_call:end|><|calls|>

(without the line breaks). The generation prompt ends with ``<|begin|>assistant``. Prose is
``<|content|>...<|end|>``; the parser gives its text without the markers. ``<|calls|>`` and
``<|end|>`` end the turn: an engine that cuts its end-of-turn token from the reply leaves the
calls message without ``<|calls|>``, which the parser accepts at the end of a reply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolmask.grammar import Node, lit
from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._blocks import Block, bad_block
from toolmask.tools.formats._jsoncalls import (
    ID_SHAPES,
    ProseMessages,
    marked_call,
    read_marked_calls,
)

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["SolarOpen"]

_BEGIN, _NAME, _ARGS, _END = (
    "<|tool_call:begin|>",
    "<|tool_call:name|>",
    "<|tool_call:args|>",
    "<|tool_call:end|>",
)
_HEAD = re.compile(
    re.escape(_BEGIN) + r"\s*(?P<id>[^<\s]*)\s*" + re.escape(_NAME) + r"\s*(?P<name>[^<\s]+)\s*"
    + re.escape(_ARGS)
)  # fmt: skip


@register_format("solar_open")
class SolarOpen(ProseMessages):
    open = "<|tool_calls|>"
    close = "<|calls|>"
    close_at_end = True
    list_calls = True
    separator_text = ""
    id_shape = "token"
    prose_open = "<|content|>"
    prose_close = "<|end|>"
    reasoning_start = "<|think|>"
    reasoning_end = "<|end|><|begin|>assistant"
    template_markers = (
        "<|begin|>",
        "<|end|>",
        "<|content|>",
        "<|think|>",
        "<|tool_calls|>",
        "<|calls|>",
        _BEGIN,
        _NAME,
        _ARGS,
        _END,
        "<|tool_response|>",
        "<|tool_response:begin|>",
        "<|tool_response:name|>",
        "<|tool_response:result|>",
        "<|tool_response:end|>",
    )

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``<|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{...}
        <|tool_call:end|>``, the id an OpenAI-style token."""
        args = kit.json(tool.parameters, f"a{index}_")
        parts = [_BEGIN, ID_SHAPES["token"][0], _NAME, lit(tool.name), _ARGS, args, _END]
        return marked_call(kit, parts)

    def render_one(self, name: str, arguments: object, index: int) -> str:
        call_id = ID_SHAPES["token"][1].format(i=index)
        args = self.dump_arguments(arguments)
        return f"{_BEGIN}{call_id}{_NAME}{name}{_ARGS}{args}{_END}"

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        body = "".join(self.render_one(n, a, i) for i, (n, a) in enumerate(calls))
        return self.open + body + self.close

    def read_json(self, text: str, k: int, final: bool, *, bare: bool = False) -> Block:
        got = read_marked_calls(
            text,
            k + len(self.open),
            _HEAD,
            _END,
            first=_BEGIN,
            need=_ARGS,
            final=final,
            many=True,
        )
        if isinstance(got, Block):
            return got
        if isinstance(got, str):
            return bad_block(text, k + len(self.open), self.close, got, final)
        calls, end = got
        return self.closed(
            text, end, calls, final=final, close=self.close, start=k + len(self.open)
        )
