"""Key/value markers: the function's name, then each argument as a key marker pair and a value
marker pair (GLM 4.5+, Ling, Spark, Hunyuan Hy3)::

    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>

String values are raw text (no escaping), other types JSON, so the reader types values with the
tool's schema. The reader is structural: a value ends at the value's close marker followed by
the next key or the call's close (whitespace between), so marker text inside a value stays text;
a last value whose close marker is missing ends at a call close followed by what may follow a
call.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import Node, lit, opt, seq
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import Block, coerce_value, done, param_schema, skip_ws
from toolmask.tools.formats._spec import Calls, CodecBase, FormatSpec, ToolLike

__all__ = ["GLM_HOW", "KeyValue"]

#: how GLM's compact layout writes a call (the tool prompt of the formats written in it)
GLM_HOW = (
    "<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key>"
    "<arg_value>{arg-value-1}</arg_value>...</tool_call>"
)


@functools.lru_cache(maxsize=16)
def _patterns(
    key_open: str, key_close: str, value_open: str, value_close: str, close: str
) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The key-then-value-opener pattern and the value-end pattern of a marker set."""
    kv = re.escape(key_open) + r"(.*?)" + re.escape(key_close) + r"\s*" + re.escape(value_open)
    return re.compile(kv, re.S), re.compile(re.escape(value_close) + "|" + re.escape(close))


@dataclass(frozen=True, slots=True)
class KeyValue(CodecBase):
    """The markers around a key and a value, what follows the name (``name_sep``: Hy3's
    ``<tool_sep:opensource>``), and ``layout``: what follows the name (or ``name_sep``), a
    key's close, a value's close, and what precedes the call's close: ``"?"`` an optional
    newline (GLM 4.5/4.6 write it, 4.7+ do not; rendered as none), else that exact text.

    ``call_open`` / ``call_close``: the markers around each call inside a block that holds
    every call of the turn (Hy3); without them each call is a block of its own, between the
    block's ``open`` and ``close``."""

    key_open: str = "<arg_key>"
    key_close: str = "</arg_key>"
    value_open: str = "<arg_value>"
    value_close: str = "</arg_value>"
    name_sep: str = ""
    layout: tuple[str, str, str, str] = ("?", "?", "?", "")
    call_open: str = ""
    call_close: str = ""

    # -- reading ----------------------------------------------------------------------------------
    def read_block(
        self,
        spec: FormatSpec,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool,
        schemas: Mapping[str, Any] | None,
    ) -> Block:
        """The call from the block's open to its close (:meth:`read_call`)."""
        b = spec.block
        return self.read_call(
            text, k + len(b.open), close=b.close, after=(b.open,), block_close=b.close,
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
        """The call whose name starts at ``text[pos]``, up to its ``close``, read structurally
        (see the module docstring): a last value whose ``value_close`` is missing ends at a
        ``close`` that ends the reply or is followed by one of ``after``. A malformed call
        extends to the next ``block_close``."""
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
            j = skip_ws(text, p)
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
                t = skip_ws(text, e.end())
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

    # -- grammar ----------------------------------------------------------------------------------
    def value_stops(self, spec: FormatSpec) -> tuple[tuple[str, str], ...]:
        """What a raw value may not hold besides ``value_close``: a call's close followed by
        what may follow a call (``(close, next)`` pairs, whitespace between)."""
        b = spec.block
        if self.call_open:
            return ((self.call_close, self.call_open), (self.call_close, b.close))
        return ((b.close, b.open),)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """``NAME`` then the key/value pairs (strings raw, other types JSON; declared keys in
        any order, required ones present), with the layout's newlines; in a block of calls,
        between the call's markers, then a newline."""
        # a value holds no value_close, and no close marker that the reader would take for
        # the end of a call whose last value_close is missing (one the next call follows)
        raw = kit.text_without((self.value_close, *self.value_stops(spec)))
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
        body = seq(lit(tool.name), sep, after_name, params, before_close)
        if not self.call_open:
            return body
        return seq(kit.marker(self.call_open), body, kit.marker(self.call_close), lit("\n"))

    # -- what the model writes --------------------------------------------------------------------
    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        after_name, after_key, after_value, before_close = (
            "" if g == "?" else g for g in self.layout
        )
        b = spec.block
        out = []
        for name, arguments in calls:
            pairs = "".join(
                f"{self.key_open}{k}{self.key_close}{after_key}{self.value_open}"
                f"{v if isinstance(v, str) else spec.values.dump(v)}{self.value_close}"
                f"{after_value}"
                for k, v in (arguments if isinstance(arguments, dict) else {}).items()
            )
            one = f"{name}{self.name_sep}{after_name}{pairs}{before_close}"
            if self.call_open:
                out.append(f"{self.call_open}{one}{self.call_close}\n")
            else:
                out.append(f"{b.open}{one}{b.close}")
        if self.call_open:
            return b.open + b.after_open + "".join(out) + b.close
        return spec.layout.block_sep.join(out)
