"""``glm``: GLM 4.5 / 4.6 / 4.7 / 5.x: the name, then XML key/value pairs, with ``<think>``.

    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>

GLM 4.5/4.6 put newlines between the name, keys and values; 4.7 and 5.x write them compact.
String values are raw text (no escaping), other types are JSON, so the parser types values with
the tool's schema. GLM 4.7+ templates prefill ``<think>``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

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


@functools.lru_cache(maxsize=16)
def _patterns(
    key_open: str, key_close: str, value_open: str, value_close: str, close: str
) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The key-then-value-opener pattern and the value-end pattern of a marker set."""
    kv = re.escape(key_open) + r"(.*?)" + re.escape(key_close) + r"\s*" + re.escape(value_open)
    return re.compile(kv, re.S), re.compile(re.escape(value_close) + "|" + re.escape(close))


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
    template_markers: ClassVar[tuple[str, ...]] = (
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

    #: the markers around a key and a value, and what follows the name (Hunyuan's tool_sep);
    #: subclasses with other markers (:mod:`.hunyuan`) set these
    key_open: ClassVar[str] = "<arg_key>"
    key_close: ClassVar[str] = "</arg_key>"
    value_open: ClassVar[str] = "<arg_value>"
    value_close: ClassVar[str] = "</arg_value>"
    name_sep: ClassVar[str] = ""
    #: what follows the name (or ``name_sep``), a key's close, a value's close, and what
    #: precedes the call's close: ``"?"`` an optional newline (GLM 4.5/4.6 write it, 4.7+ do
    #: not), else that exact text
    layout: ClassVar[tuple[str, str, str, str]] = ("?", "?", "?", "")

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        """The call from ``<tool_call>`` to its ``</tool_call>`` (:meth:`read_call`)."""
        return self.read_call(
            text, k + len(self.open), close=self.close, after=(self.open,), block_close=self.close,
            final=final, schemas=schemas,
        )  # fmt: skip

    def read_call(
        self,
        text: str,
        pos: int,
        *,
        close: str,
        after: tuple[str, ...],
        block_close: str,
        final: bool,
        schemas: Mapping[str, Any] | None,
    ) -> Block:
        """The call whose name starts at ``text[pos]``, up to its ``close``, read structurally:
        a value ends at the ``value_close`` followed by ``key_open`` or ``close`` (whitespace
        between), so marker text inside a value stays text; a last value whose ``value_close``
        is missing ends at a ``close`` that ends the reply or is followed by one of ``after``.
        A malformed call extends to the next ``block_close``."""
        n = len(text)

        def wait(reason: str) -> Block:
            return Block("bad", n, reason=f"truncated: {reason}") if final else Block("pending")

        def bad(reason: str, at: int) -> Block:
            c = text.find(block_close, at)
            return Block("bad", c + len(block_close) if c >= 0 else n, reason=reason)

        ends = [self.name_sep] if self.name_sep else [self.key_open, close]
        hits = [(i, w) for w in ends if (i := text.find(w, pos)) >= 0]
        if not hits:
            return wait("the reply ends in the function name")
        at, word = min(hits)
        name = text[pos:at].strip()
        if not name or any(c in name for c in "<>\n"):
            return bad("the call has no function name", pos)
        args: dict[str, Any] = {}
        p = at + len(word) if word == self.name_sep else at
        kv, value_end = _patterns(self.key_open, self.key_close, self.value_open,
                                  self.value_close, close)  # fmt: skip
        while True:
            j = _skip(text, p)
            if text.startswith(close, j):
                return Block("ok", j + len(close), [done(name, args)])
            m = kv.match(text, j)
            if m is None:
                rest = text[j:]
                if any(w.startswith(rest) for w in (close, self.key_open)) or (
                    rest.startswith(self.key_open) and self.value_open not in rest
                ):
                    return wait("the reply ends inside a call")
                return bad(f"expected {self.key_open}K{self.key_close}{self.value_open}", j)
            key = m.group(1).strip()
            q = m.end()
            stop = nxt = -1
            while stop < 0:  # the first value end the structure confirms
                e = value_end.search(text, q)
                if e is None:
                    return wait("the reply ends inside a value")
                closing = e.group() == close
                words = after if closing else (self.key_open, close)
                t = _skip(text, e.end())
                rest = text[t:]
                if closing and t >= n:
                    if not final:
                        return Block("pending")
                    stop, nxt = e.start(), e.start()
                elif any(rest.startswith(w) for w in words):
                    # a missing value_close: the close marker ends the call below
                    stop, nxt = e.start(), (e.start() if closing else e.end())
                elif not final and any(w.startswith(rest) for w in words):
                    return Block("pending")
                else:
                    q = e.end()
            args[key] = coerce_value(text[m.end() : stop], param_schema(schemas, name, key))
            p = nxt

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``NAME`` then ``<arg_key>K</arg_key><arg_value>V</arg_value>`` pairs (strings raw,
        other types JSON; declared keys in any order, required ones present), with the
        newlines GLM 4.5/4.6 write between them optional (4.7+ write none)."""
        # a value holds no </arg_value>, and no close marker that the reader would take for
        # the end of a call whose last </arg_value> is missing (one the next call follows)
        raw = kit.text_without((self.value_close, *self.value_stops()))
        after_name, after_key, after_value, before_close = (
            opt(lit("\n")) if g == "?" else lit(g) for g in self.layout
        )

        def pair(key: Node, value: Node) -> Node:
            return seq(
                kit.marker(self.key_open), key, kit.marker(self.key_close), after_key,
                kit.marker(self.value_open), value, kit.marker(self.value_close), after_value,
            )  # fmt: skip

        def free() -> Node:
            return pair(kit.text_without((self.key_close,), nonempty=True), raw)

        params = kit.params(tool.parameters, f"a{index}_", lambda k, v: pair(lit(k), v), raw, free)
        sep = kit.marker(self.name_sep) if self.name_sep else lit("")
        return seq(lit(tool.name), sep, after_name, params, before_close)

    def value_stops(self) -> tuple[tuple[str, str], ...]:
        """What a raw value may not hold besides ``value_close``: a close marker followed by
        what may follow a call (``(close, next)`` pairs, whitespace between)."""
        return ((self.close, self.open),)

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        out = []
        for name, arguments in calls:
            pairs = "".join(
                f"{self.key_open}{k}{self.key_close}{self.value_open}"
                f"{v if isinstance(v, str) else self.dump_arguments(v)}{self.value_close}"
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
