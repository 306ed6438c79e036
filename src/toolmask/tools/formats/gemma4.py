"""``gemma4``: Gemma 4: ``call:NAME{...}`` in Gemma's object notation between ``<|tool_call>`` and
``<tool_call|>``; strings are quoted with ``<|"|>``, keys are bare; reasoning in the thought
channel ``<|channel>thought ... <channel|>``::

    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>

The grammar writes the arguments in that notation from the tool's schema (compact, as the
template renders them, or with ``", "`` between members as some models write; keys in any
order); calls follow each other without a separator, and text may follow the last call (the
template renders a message's content after its calls).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from toolmask.grammar import Node, lit, seq
from toolmask.tools.formats._base import WireFormat, register_format, tool_json_lines
from toolmask.tools.formats._blocks import Block, done, skip_ws, tools_prompt

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["Gemma4", "dump_value", "read_value"]

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


@register_format("gemma4")
class Gemma4(WireFormat):
    open = "<|tool_call>"
    close = "<tool_call|>"
    block_sep = ""
    prose_after_calls = True
    argument_options: ClassVar[Mapping[str, Any]] = {
        "whitespace": "compact",
        "property_order": "any",
        "additional_properties_default": False,
    }
    extra_layouts = ("spaced",)
    reasoning_start = "<|channel>thought"
    reasoning_end = "<channel|>"
    #: the string delimiter and the value notation (:mod:`toolmask.schema._notation`)
    quote: ClassVar[str] = Q
    notation: ClassVar[str] = "gemma"
    template_markers: ClassVar[tuple[str, ...]] = (
        "<bos>",
        "<eos>",
        "<|turn>",
        "<turn|>",
        "<|tool_call>",
        "<tool_call|>",
        "<|tool_response>",
        "<tool_response|>",
        "<|tool>",
        "<tool|>",
        Q,
        "<|channel>",
        "<channel|>",
        "<|think|>",
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
        i = skip_ws(text, k + len(self.open))
        rest = text[i : i + 5]
        if not text.startswith("call:", i):
            if not final and "call:".startswith(rest):
                return Block("pending")
            return self._bad(text, k, "expected call:NAME{", final)
        b = text.find("{", i)
        if b < 0:
            return Block("pending") if not final else self._bad(text, k, "truncated", final)
        name = text[i + 5 : b].strip()
        try:
            args, j = read_value(text, b, self.quote)
        except _Incomplete:
            if final:
                return Block("bad", len(text), reason="truncated: the reply ends inside a call")
            return Block("pending")
        except _Bad as e:
            return self._bad(text, k, str(e), final)
        j = skip_ws(text, j)
        if text.startswith(self.close, j):
            if not name:
                return Block("bad", j + len(self.close), reason="the call has no name")
            return Block("ok", j + len(self.close), [done(name, args)])
        if not final and self.close.startswith(text[j:]):
            return Block("pending")
        return self._bad(text, k, f"expected {self.close!r}", final)

    def _bad(self, text: str, k: int, reason: str, final: bool) -> Block:
        c = text.find(self.close, k)
        if c >= 0:
            return Block("bad", c + len(self.close), reason=reason)
        return Block("bad", len(text), reason=reason) if final else Block("pending")

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``call:NAME{key:value,...}``: the arguments in Gemma's object notation, derived
        from the tool's schema (strings between ``<|"|>``, a special token where the
        vocabulary has it)."""
        return seq(lit(f"call:{tool.name}"), kit.json(tool.parameters, f"a{index}_", self.notation))

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        return "".join(
            f"{self.open}call:{n}{dump_value(a, self.quote)}{self.close}" for n, a in calls
        )

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), self.render_call("NAME", {"key": "value"}))
