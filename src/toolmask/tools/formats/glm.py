"""``glm``: GLM 4.5 / 4.6 / 4.7 / 5.x: the name, then XML key/value pairs, with ``<think>``.

    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>

GLM 4.5/4.6 put newlines between the name, keys and values; 4.7 and 5.x write them compact.
String values are raw text (no escaping), other types are JSON, so the parser types values with
the tool's schema. GLM 4.7+ templates prefill ``<think>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolmask.grammar._ir import Node, lit, opt, seq
from toolmask.tools.formats._base import WireFormat, register_format, tool_json_lines
from toolmask.tools.formats._blocks import (
    Block,
    coerce_value,
    done,
    param_schema,
    tools_prompt,
)

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["Glm"]

_PAIR = re.compile(r"\s*<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.S)


@register_format("glm")
class Glm(WireFormat):
    open = "<tool_call>"
    close = "</tool_call>"
    block_sep = ""
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers = (
        "[gMASK]",
        "<sop>",
        "<|system|>",
        "<|user|>",
        "<|assistant|>",
        "<|observation|>",
        "<|endoftext|>",
        "<tool_call>",
        "</tool_call>",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "<tool_response>",
        "</tool_response>",
        "<think>",
        "</think>",
    )

    def read_inner(
        self, text: str, start: int, inner_end: int, end: int, schemas: Mapping[str, Any] | None
    ) -> Block:
        inner = text[start:inner_end]
        cut = inner.find("<arg_key>")
        name = (inner if cut < 0 else inner[:cut]).strip()
        if not name or any(c in name for c in "<>\n"):
            return Block("bad", end, reason="the call has no function name")
        args: dict[str, Any] = {}
        pos = 0 if cut < 0 else cut
        body = "" if cut < 0 else inner[cut:]
        pos = 0
        while pos < len(body):
            m = _PAIR.match(body, pos)
            if m is None:
                if body[pos:].strip():
                    return Block("bad", end, reason="expected <arg_key>K</arg_key><arg_value>")
                break
            key = m.group(1).strip()
            args[key] = coerce_value(m.group(2), param_schema(schemas, name, key))
            pos = m.end()
        return Block("ok", end, [done(name, args)])

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``NAME`` then ``<arg_key>K</arg_key><arg_value>V</arg_value>`` pairs (strings raw,
        other types JSON; declared keys in any order, required ones present), with the
        newlines GLM 4.5/4.6 write between them optional (4.7+ write none)."""
        raw = kit.text_without(("</arg_value>", self.close))  # the reader ends there
        nl = opt(lit("\n"))

        def pair(key: Node, value: Node) -> Node:
            return seq(
                kit.marker("<arg_key>"), key, kit.marker("</arg_key>"), nl,
                kit.marker("<arg_value>"), value, kit.marker("</arg_value>"), nl,
            )  # fmt: skip

        def free() -> Node:
            return pair(kit.text_without(("</arg_key>",), nonempty=True), raw)

        params = kit.params(tool.parameters, f"a{index}_", lambda k, v: pair(lit(k), v), raw, free)
        return seq(lit(tool.name), nl, params)

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        out = []
        for name, arguments in calls:
            pairs = "".join(
                f"<arg_key>{k}</arg_key><arg_value>"
                f"{v if isinstance(v, str) else self.dump_arguments(v)}</arg_value>"
                for k, v in (arguments if isinstance(arguments, dict) else {}).items()
            )
            out.append(f"{self.open}{name}{pairs}{self.close}")
        return "".join(out)

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(
            tool_json_lines(tools),
            "<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key>"
            "<arg_value>{arg-value-1}</arg_value>...</tool_call>",
        )
