"""Gemma's object notation: ``call:NAME{...}`` with bare keys and strings between a quote
marker (Gemma 4's ``<|"|>``, FunctionGemma's ``<escape>``)::

    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>

The grammar writes the arguments in that notation from the tool's schema (the ``gemma`` /
``functiongemma`` value notations of :mod:`toolmask.schema`: compact as the templates render
them, or with ``", "`` between members as some models write; keys in any order); numbers,
booleans and ``null`` are bare, as in JSON. One call per block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import Node, lit, seq
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import Block, bad_block, done, skip_ws
from toolmask.tools.formats._spec import Calls, CodecBase, FormatSpec, ToolLike

__all__ = ["ObjectNotation", "Q", "dump_value", "read_value"]

Q = '<|"|>'


class _Incomplete(Exception):
    pass


class _Bad(Exception):
    pass


def read_value(text: str, i: int, quote: str = Q) -> tuple[Any, int]:
    """The value at ``text[i]`` and its end; ``_Incomplete`` when the text ends first. ``quote``:
    the string delimiter (FunctionGemma's ``<escape>``)."""
    i = skip_ws(text, i)
    n = len(text)
    if i >= n:
        raise _Incomplete
    if text.startswith(quote, i):
        e = text.find(quote, i + len(quote))
        if e < 0:
            raise _Incomplete
        return text[i + len(quote) : e], e + len(quote)
    c = text[i]
    if c == "{":
        obj: dict[str, Any] = {}
        i = skip_ws(text, i + 1)
        if text.startswith("}", i):
            return obj, i + 1
        while True:
            i = skip_ws(text, i)
            if i >= n:
                raise _Incomplete
            if text.startswith(quote, i):
                key, i = read_value(text, i, quote)
                i = skip_ws(text, i)
                if i >= n:
                    raise _Incomplete
                if text[i] != ":":
                    raise _Bad("expected ':'")
            else:
                colon = text.find(":", i)
                if colon < 0:
                    raise _Incomplete
                key = text[i:colon].strip()
                if not key or any(ch in key for ch in "{}[],<"):
                    raise _Bad("a bad key")
                i = colon
            obj[str(key)], i = read_value(text, i + 1, quote)
            i = skip_ws(text, i)
            if i >= n:
                raise _Incomplete
            if text[i] == ",":
                i += 1
                continue
            if text[i] == "}":
                return obj, i + 1
            raise _Bad("expected ',' or '}'")
    if c == "[":
        arr: list[Any] = []
        i = skip_ws(text, i + 1)
        if text.startswith("]", i):
            return arr, i + 1
        while True:
            v, i = read_value(text, i, quote)
            arr.append(v)
            i = skip_ws(text, i)
            if i >= n:
                raise _Incomplete
            if text[i] == ",":
                i += 1
                continue
            if text[i] == "]":
                return arr, i + 1
            raise _Bad("expected ',' or ']'")
    j = i
    while j < n and text[j] not in ",}]<" and text[j] not in " \t\r\n":
        j += 1
    if j >= n:
        raise _Incomplete
    word = text[i:j]
    try:
        return json.loads(word), j
    except ValueError:
        raise _Bad(f"a bare value {word!r}") from None


def dump_value(v: object, quote: str = Q) -> str:
    if isinstance(v, str):
        return quote + v + quote
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{dump_value(x, quote)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(dump_value(x, quote) for x in v) + "]"
    return json.dumps(v)


@dataclass(frozen=True, slots=True)
class ObjectNotation(CodecBase):
    """``call:NAME{...}`` in the notation whose string delimiter is ``quote`` (a special token
    where the vocabulary has it) and whose value grammar is the schema notation ``notation``."""

    quote: str = Q
    notation: str = "gemma"

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
        close = spec.block.close
        i = skip_ws(text, k + len(spec.block.open))
        rest = text[i : i + 5]
        if not text.startswith("call:", i):
            if not final and "call:".startswith(rest):
                return Block("pending")
            return bad_block(text, k, close, "expected call:NAME{", final)
        b = text.find("{", i)
        if b < 0:
            return Block("pending") if not final else bad_block(text, k, close, "truncated", final)
        name = text[i + 5 : b].strip()
        try:
            args, j = read_value(text, b, self.quote)
        except _Incomplete:
            if final:
                return Block("bad", len(text), reason="truncated: the reply ends inside a call")
            return Block("pending")
        except _Bad as e:
            return bad_block(text, k, close, str(e), final)
        j = skip_ws(text, j)
        if text.startswith(close, j):
            if not name:
                return Block("bad", j + len(close), reason="the call has no name")
            return Block("ok", j + len(close), [done(name, args)])
        if not final and close.startswith(text[j:]):
            return Block("pending")
        return bad_block(text, k, close, f"expected {close!r}", final)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """``call:NAME{key:value,...}``: the arguments in the notation, derived from the tool's
        schema (strings between the quote, a special token where the vocabulary has it)."""
        return seq(lit(f"call:{tool.name}"), kit.json(tool.parameters, f"a{index}_", self.notation))

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        o, c = spec.block.open, spec.block.close
        return "".join(f"{o}call:{n}{dump_value(a, self.quote)}{c}" for n, a in calls)
