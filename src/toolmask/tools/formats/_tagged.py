"""Calls written as the tool's name, a fixed text and the JSON arguments, or as a JSON call
object, each after an optional call id: the notations a format derived from a chat template's
rendering (:mod:`toolmask.tools._generic`) finds where no family reads the calls::

    <tool=get_weather>{"city": "Paris"}</tool>                 NAME ">" ARGS, in the block's markers
    <tool name="get_weather">{"city": "Paris"}</tool>          NAME '">' ARGS
    name: get_weather\\narguments: {"city": "Paris"}            NAME "\\narguments: " ARGS
    <call id="call_0">{"name": "get_weather", ...}</call>      ID '">' OBJECT
    <tool id="call_0" name="get_weather">{...}</tool>          ID '" name="' NAME '">' ARGS

:class:`TaggedJson`: a call is ``[ID id_text] NAME mid ARGS``, or ``[ID id_text] OBJECT`` where
a :class:`~toolmask.tools.formats._json.JsonCalls` writes and reads the call object. The texts
before and after a call (``<tool=``, ``</tool>``) are the block's markers and the separator
between two calls of a block, as the format's :class:`~toolmask.tools.formats.Layout` says.

A name is a tool's name (``[A-Za-z0-9_-]``, 1 to 64 characters, as :class:`toolmask.tools.Tool`
requires), read up to the first other character, which must start ``mid``. An id is written
raw (no quotes of its own): the id the client gave, any 1 to 64 of ``[A-Za-z0-9_-]`` in the
grammar (the renderer writes ``call_<i>``), or one that counts the calls (``id_prefix`` and the
index from ``id_base``: ``call_0``, ``call_1``; the grammar any number of 1 to 6 digits), read
up to the first other character, which must start ``id_text``. The reader takes the texts
between the pieces as the grammar writes them, whitespace after the block's opener, around a
separator, before the arguments and before the close aside, and the arguments as any JSON
object (:func:`~toolmask.tools.formats._read.loads`), as the other JSON readers do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import Node, byte_class, lit, repeat, seq
from toolmask.tools.formats._json import JsonCalls, close_block
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import (
    Block,
    Call,
    bad_block,
    done,
    json_end,
    loads,
    next_call_at,
    skip_ws,
)
from toolmask.tools.formats._spec import Calls, CodecBase, FormatSpec, ToolLike

__all__ = ["ID_CHARS", "NAME_CHARS", "TaggedJson"]

#: the characters of a tool's name
NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
#: the characters of a call id written outside a JSON string (an OpenAI-style token)
ID_CHARS = NAME_CHARS
_DIGITS = frozenset("0123456789")

_ID_NODE = repeat(byte_class((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), 0x5F, 0x2D), 1, 64)
_DIGITS_NODE = repeat(byte_class((0x30, 0x39)), 1, 6)


@dataclass(frozen=True, slots=True)
class TaggedJson(CodecBase):
    """A call as ``[ID id_text] NAME mid ARGS`` or ``[ID id_text] OBJECT`` (see the module
    docstring). ``mid``: the text between the name and the arguments (``call_object`` None);
    ``indent``: the arguments as ``tojson(indent=k)`` writes them (0: the spec's layouts);
    ``call_object``: the call object's codec instead of the name and the arguments; ``id_shape``:
    ``""`` (no id), ``"token"`` (the id the client gave), ``"counter"`` (``id_prefix`` and the
    call's index from ``id_base``) or ``"index"`` (the index alone)."""

    mid: str = ""
    indent: int = 0
    call_object: JsonCalls | None = None
    id_shape: str = ""
    id_prefix: str = ""
    id_base: int = 0
    id_text: str = ""

    def __post_init__(self) -> None:
        if self.call_object is None and (not self.mid or self.mid[0] in NAME_CHARS):
            raise ValueError(f"TaggedJson: mid {self.mid!r} must start with a non-name character")
        if self.id_shape not in ("", "token", "counter", "index"):
            raise ValueError(f"TaggedJson: unknown id shape {self.id_shape!r}")
        if self.id_shape:
            after = self.id_text or ("{" if self.call_object is not None else "")
            if not after or after[0] in ID_CHARS:
                raise ValueError(
                    f"TaggedJson: the text after the id, {after!r}, must start with a character "
                    "an id cannot hold"
                )

    def starts_call(self, text: str, i: int) -> bool:
        """Whether a call may start at ``text[i]`` (its id's or its name's first character,
        or the call object's ``{``)."""
        if i >= len(text):
            return False
        c = text[i]
        if self.id_shape in ("counter", "index"):
            return c == self.id_prefix[0] if self.id_prefix else c in _DIGITS
        if self.id_shape:
            return c in ID_CHARS
        return c == "{" if self.call_object is not None else c in NAME_CHARS

    # -- grammar ----------------------------------------------------------------------------------
    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        parts: list[Node] = []
        if self.id_shape:
            parts += [self._id_node(), lit(self.id_text)]
        if self.call_object is not None:
            parts.append(self.call_object.call_grammar(spec, tool, index, kit))
        elif self.indent:
            args = kit.json_indented(tool.parameters, f"a{index}i_", indent=self.indent, depth=0)
            parts += [lit(tool.name + self.mid), args]
        else:
            parts += [lit(tool.name + self.mid), kit.json(tool.parameters, f"a{index}_")]
        return seq(*parts)

    def _id_node(self) -> Node:
        if self.id_shape == "token":
            return _ID_NODE
        return seq(lit(self.id_prefix), _DIGITS_NODE)

    # -- what the model writes --------------------------------------------------------------------
    def render_one(self, spec: FormatSpec, name: str, arguments: object, index: int) -> str:
        """The ``index``-th call as the grammar writes it."""
        head = ""
        if self.id_shape == "token":
            head = f"call_{index}{self.id_text}"
        elif self.id_shape:
            head = f"{self.id_prefix}{index + self.id_base}{self.id_text}"
        if self.call_object is not None:
            return head + self.call_object.render_one(spec, name, arguments, index)
        if self.indent:
            args = json.dumps(arguments, ensure_ascii=False, indent=self.indent)
        else:
            args = spec.values.dump(arguments)
        return head + name + self.mid + args

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        b, lay = spec.block, spec.layout
        one = [self.render_one(spec, n, a, i) for i, (n, a) in enumerate(calls)]

        def block(body: str) -> str:
            return b.open + b.after_open + body + b.before_close + b.close

        if lay.one_block:
            return block(lay.separator_text.join(one))
        return lay.block_sep.join(block(c) for c in one)

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
        """The block whose opener is at ``text[k]``: its calls, each after the previous and the
        separator (or whitespace, where the calls sit back to back), then the close."""
        b, lay = spec.block, spec.layout
        start = k + len(b.open)
        close = b.close
        i = skip_ws(text, start)

        def bad(reason: str) -> Block:
            return bad_block(text, start, close, reason, final)

        calls: list[Call] = []
        while True:
            got = self._call_at(text, i, final)
            if got is None:
                return Block("pending")
            if isinstance(got, str):
                return bad(got)
            call, end = got
            calls.append(call)
            if not lay.one_block:
                break
            nxt = next_call_at(text, end, lay.separator_mark, close, final, start, self.starts_call)
            if nxt is None:
                break
            if isinstance(nxt, Block):
                return nxt
            i = nxt
        return close_block(spec, text, end, calls, final=final, close=close, start=start)

    def _call_at(self, text: str, i: int, final: bool) -> tuple[Call, int] | str | None:
        """The call at ``text[i]`` and its end; why it is not one; or None where the text ends
        inside it and more may come."""
        n = len(text)

        def cut(what: str) -> str | None:
            return f"truncated: the reply ends {what}" if final else None

        call_id: str | None = None
        if self.id_shape:
            got = self._id_at(text, i)
            if got is None:
                return cut("inside a call id")
            if isinstance(got, str):
                return got
            call_id, i = got
            if not text.startswith(self.id_text, i):
                if self.id_text.startswith(text[i:]):
                    return cut("after a call id")
                return f"expected {self.id_text!r} after the call id"
            i += len(self.id_text)
        if self.call_object is not None:
            if i >= n:
                return cut("before the call object")
            if text[i] != "{":
                return "expected a call object '{'"
            end = json_end(text, i)
            if end is None:
                return cut("inside a call object")
            obj, err = loads(text[i:end])
            got_call = self.call_object.read_object(obj) if err is None else err
            if isinstance(got_call, str):
                return got_call
            got_call.id = call_id
            return got_call, end
        j = i
        while j < n and text[j] in NAME_CHARS:
            j += 1
        if j >= n:
            return cut("inside a call's name")
        if j == i or j - i > 64:
            return "expected a tool's name"
        name = text[i:j]
        if not text.startswith(self.mid, j):
            if self.mid.startswith(text[j:]):
                return cut("after a call's name")
            return f"expected {self.mid!r} after the name"
        a = skip_ws(text, j + len(self.mid))
        if a >= n:
            return cut("before the arguments")
        if text[a] != "{":
            return "expected the arguments object"
        end = json_end(text, a)
        if end is None:
            return cut("inside the arguments")
        args, err = loads(text[a:end])
        if err is not None or not isinstance(args, dict):
            return err or "the arguments must be a JSON object"
        return done(name, args, call_id), end

    def _id_at(self, text: str, i: int) -> tuple[str, int] | str | None:
        """The call id at ``text[i]`` and its end; why none is there; or None where the text
        ends inside it."""
        n = len(text)
        j = i
        if self.id_shape in ("counter", "index"):
            pre = self.id_prefix
            if not text.startswith(pre, i):
                return None if pre.startswith(text[i:]) else f"expected a call id {pre!r}..."
            j = i + len(pre)
            while j < n and text[j] in _DIGITS:
                j += 1
            if j >= n:
                return None
            if j == i + len(pre) or j - i - len(pre) > 6:
                return "expected the call's index"
            return text[i:j], j
        while j < n and text[j] in ID_CHARS:
            j += 1
        if j >= n:
            return None
        if j == i or j - i > 64:
            return "expected a call id"
        return text[i:j], j
