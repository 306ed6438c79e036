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

from toolmask.grammar import Node, lit, opt, seq
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

_NAME_END = re.compile(r"<arg_key>|</tool_call>")
_KEY = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>", re.S)
_VALUE_END = re.compile(r"</arg_value>|</tool_call>")


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


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

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        """The call from ``<tool_call>`` to its ``</tool_call>``, read structurally: a value
        ends at the ``</arg_value>`` followed by ``<arg_key>`` or ``</tool_call>`` (whitespace
        between), so marker text inside a value stays text; a last value whose
        ``</arg_value>`` is missing ends at a ``</tool_call>`` that ends the reply or is
        followed by the next ``<tool_call>``."""
        n = len(text)

        def wait(reason: str) -> Block:
            return Block("bad", n, reason=f"truncated: {reason}") if final else Block("pending")

        def bad(reason: str, at: int) -> Block:
            c = text.find(self.close, at)
            return Block("bad", c + len(self.close) if c >= 0 else n, reason=reason)

        pos = k + len(self.open)
        m = _NAME_END.search(text, pos)
        if m is None:
            return wait("the reply ends in the function name")
        name = text[pos : m.start()].strip()
        if not name or any(c in name for c in "<>\n"):
            return bad("the call has no function name", pos)
        args: dict[str, Any] = {}
        p = m.start()
        while True:
            j = _skip(text, p)
            if text.startswith(self.close, j):
                return Block("ok", j + len(self.close), [done(name, args)])
            kv = _KEY.match(text, j)
            if kv is None:
                rest = text[j:]
                if any(w.startswith(rest) for w in (self.close, "<arg_key>")) or (
                    rest.startswith("<arg_key>") and "<arg_value>" not in rest
                ):
                    return wait("the reply ends inside a call")
                return bad("expected <arg_key>K</arg_key><arg_value>", j)
            key = kv.group(1).strip()
            q = kv.end()
            stop = after = -1
            while stop < 0:  # the first value end the structure confirms
                e = _VALUE_END.search(text, q)
                if e is None:
                    return wait("the reply ends inside a value")
                nxt = (("<arg_key>", self.close), ("", self.open))[e.group() == self.close]
                t = _skip(text, e.end())
                rest = text[t:]
                if e.group() == self.close and t >= n:
                    if not final:
                        return Block("pending")
                    stop, after = e.start(), e.start()
                elif any(w and rest.startswith(w) for w in nxt):
                    stop, after = e.start(), e.end()
                    if e.group() == self.close:
                        after = e.start()  # the close marker ends the call below
                elif not final and any(w.startswith(rest) for w in nxt if w):
                    return Block("pending")
                else:
                    q = e.end()
            args[key] = coerce_value(text[kv.end() : stop], param_schema(schemas, name, key))
            p = after

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``NAME`` then ``<arg_key>K</arg_key><arg_value>V</arg_value>`` pairs (strings raw,
        other types JSON; declared keys in any order, required ones present), with the
        newlines GLM 4.5/4.6 write between them optional (4.7+ write none)."""
        # a value holds no </arg_value>, and no close marker that the reader would take for
        # the end of a call whose last </arg_value> is missing (one the next call follows)
        raw = kit.text_without(("</arg_value>", (self.close, self.open)))
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
