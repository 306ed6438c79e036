"""The JSON call object notation: ``{"name": "X", "arguments": {...}}`` and the envelopes
families wrap it in.

Two codecs, for the two ways families lay the objects out:

* :class:`JsonEnvelope`: ``{"<name_key>": "X", "<args_key>": ARGS}`` with ``json.dumps``
  spacing (Hermes, Qwen, Llama 3, Phi-4-mini, Mistral v3, functools), one call per block or a
  list between one-character brackets. Its reader streams: a call's arguments are sent as the
  model writes them, before the object closes.
* :class:`JsonCalls`: the object exactly as a family's chat template writes it: its keys in
  the template's order (:attr:`JsonCalls.call_keys`: the name, the arguments and, where the
  template writes one, an id), on one line or ``tojson(indent=k)`` at :attr:`~JsonCalls.depth`
  levels down; the block's fixed texts as the template writes them (``"[\\n    "`` before the
  first call of a Command R7B action). Its reader reads whole objects (or the whole list) with
  :func:`json.loads`, so it is lenient where the grammar is exact (any whitespace, any key
  order, arguments given as a JSON string, ``"arguments"`` or ``"parameters"``).

Both read a call object with :func:`~toolmask.tools.formats._read.call_of`. A block that is cut
off or malformed is ``bad`` (its raw text stays in the content) and extends to the first
``close`` after it, or to the end of the reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import (
    ANY_CHAR,
    Node,
    byte_class,
    choice,
    encode_charset,
    lit,
    opt,
    repeat,
    seq,
)
from toolmask.schema import json_ws
from toolmask.tools.formats._kit import Kit, escape_node
from toolmask.tools.formats._read import (
    Block,
    Call,
    bad_block,
    call_of,
    id_of,
    json_end,
    loads,
    next_call_at,
    skip_ws,
)
from toolmask.tools.formats._spec import Calls, CodecBase, FormatSpec, ToolLike

__all__ = ["ID_SHAPES", "JsonCalls", "JsonEnvelope", "close_block", "json_object"]

#: the shapes of the ids templates write in calls: the grammar of each and how the renderer
#: writes the ``i``-th call's id (Command R7B counts the calls of the conversation, Solar Open
#: writes the id it was given: an OpenAI-style token, Mistral nine letters or digits; a
#: template that writes the id it was given, of no known shape: any JSON string of 1 to 64
#: characters, the formats derived from a rendering)
ID_SHAPES: dict[str, tuple[Node, str]] = {
    "digits": (repeat(byte_class((0x30, 0x39)), 1, 6), "{i}"),
    "token": (
        repeat(byte_class((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), 0x5F, 0x2D), 1, 64),
        "call_{i}",
    ),
    "alnum9": (repeat(byte_class((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)), 9, 9), "{i:09d}"),
    "string": (repeat(escape_node(encode_charset(ANY_CHAR)), 1, 64), "call_{i}"),
}


def json_object(pairs: Sequence[tuple[str, Node]], *, indent: int = 0, depth: int = 0) -> Node:
    """The grammar of a JSON object with these (key, value grammar) pairs in this order:
    ``json.dumps`` spacing (``indent=0``) or ``json.dumps(indent=indent)`` for an object that
    sits ``depth`` levels down (its keys ``indent * (depth + 1)`` spaces in)."""
    first, sep, last = _object_texts(indent, depth)
    parts: list[Node] = [lit(first)]
    for j, (key, value) in enumerate(pairs):
        parts += [lit((sep if j else "") + json.dumps(key, ensure_ascii=False) + ": "), value]
    parts.append(lit(last))
    return seq(*parts)


def _object_texts(indent: int, depth: int) -> tuple[str, str, str]:
    if indent:
        inner = "\n" + " " * (indent * (depth + 1))
        return "{" + inner, "," + inner, "\n" + " " * (indent * depth) + "}"
    return "{", ", ", "}"


def _dumps_object(pairs: Sequence[tuple[str, str]], indent: int, depth: int) -> str:
    """The text :func:`json_object` admits for these (key, value text) pairs."""
    first, sep, last = _object_texts(indent, depth)
    body = sep.join(f"{json.dumps(k, ensure_ascii=False)}: {v}" for k, v in pairs)
    return first + body + last


def _block_text(spec: FormatSpec, body: str) -> str:
    """``body`` (the calls) in the block's markers and brackets."""
    b, lay = spec.block, spec.layout
    return b.open + b.after_open + lay.list_open + body + lay.list_close + b.before_close + b.close


# -- JsonEnvelope --------------------------------------------------------------------------------

# the start of a call object up to its arguments value: name first, then arguments/parameters
_ENVELOPE = re.compile(
    r'\{\s*"name"\s*:\s*("[^"\\]*(?:\\.[^"\\]*)*")\s*,\s*"(?:arguments|parameters)"\s*:\s*(?=\{)',
    re.S,
)


@dataclass(frozen=True, slots=True)
class JsonEnvelope(CodecBase):
    """``{"<name_key>": "X", "<args_key>": ARGS}``, ``json.dumps`` spacing (see the module
    docstring). ``args_keys``: the keys the grammar admits for the arguments, in order (default
    ``args_key`` alone; Llama 3 writes ``"parameters"`` and ``"arguments"``). ``id_key`` /
    ``id_shape``: the key of an optional call id after the arguments and its shape
    (:data:`ID_SHAPES`; Mistral v3), which the reader returns as the call's id."""

    name_key: str = "name"
    args_key: str = "arguments"
    args_keys: tuple[str, ...] = ()
    id_key: str = ""
    id_shape: str = ""

    # -- grammar ---------------------------------------------------------------------------------
    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """The call object around the arguments grammar of the tool's schema; with
        ``whitespace="flexible"`` (the arguments' layout), the envelope too takes up to
        ``max_whitespace`` bytes wherever JSON allows them (the pretty-printed
        ``{\\n  "name": ...`` some models write)."""
        args = kit.json(tool.parameters, f"a{index}_")
        layout = str(kit.options.get("whitespace", "compact"))
        max_ws = int(kit.options.get("max_whitespace", 4))
        keys = self.args_keys or (self.args_key,)
        return choice(*(self._object(tool.name, args, layout, max_ws, key) for key in keys))

    def _object(self, name: str, arguments: Node, whitespace: str, max_ws: int, key: str) -> Node:
        name_text = json.dumps(name, ensure_ascii=False)
        akey = json.dumps(key)
        shape = ID_SHAPES[self.id_shape][0] if self.id_shape else None
        id_value = seq(lit('"'), shape, lit('"')) if shape is not None else None
        if whitespace == "flexible":
            ws = json_ws(max_ws)
            id_key = lit(json.dumps(self.id_key))
            tail = lit("")
            if id_value is not None:
                tail = opt(seq(ws, lit(","), ws, id_key, ws, lit(":"), ws, id_value))
            return seq(
                lit("{"), ws, lit(json.dumps(self.name_key)), ws, lit(":"), ws, lit(name_text),
                ws, lit(","), ws, lit(akey), ws, lit(":"), ws, arguments, tail, ws, lit("}"),
            )  # fmt: skip
        tail = lit("")
        if id_value is not None:
            tail = opt(seq(lit(f", {json.dumps(self.id_key)}: "), id_value))
        return seq(
            lit("{" + json.dumps(self.name_key) + ": " + name_text),
            lit(", " + akey + ": "),
            arguments,
            tail,
            lit("}"),
        )

    def call_head(self, spec: FormatSpec) -> tuple[str, ...] | None:
        return ("{", json.dumps(self.name_key), ":")

    # -- what the model writes ------------------------------------------------------------------
    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        """One block per call joined by ``block_sep``, or all calls in one block for list
        formats (``separator``); arguments in the spec's layout."""

        def one(name: str, arguments: object) -> str:
            args = spec.values.dump(arguments)
            key, akey = json.dumps(self.name_key), json.dumps(self.args_key)
            return f"{{{key}: {json.dumps(name, ensure_ascii=False)}, {akey}: {args}}}"

        lay = spec.layout
        if lay.separator:
            return _block_text(spec, lay.separator_text.join(one(n, a) for n, a in calls))
        return lay.block_sep.join(_block_text(spec, one(n, a)) for n, a in calls)

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
        """Call objects after the opener (a list of them between one-character brackets, or
        one), then ``close``; a call is streamed from the moment its name is read."""
        b, lay = spec.block, spec.layout
        n = len(text)
        calls: list[Call] = []

        def bad(reason: str) -> Block:
            return bad_block(text, k + len(b.open), b.close, reason, final)

        def truncated(what: str) -> Block:
            if final:
                return bad(f"truncated: the reply ends {what}")
            return Block("pending", calls=calls)

        i = k if bare else k + len(b.open)
        i = skip_ws(text, i)
        # a bare one-call block has no closer: the reply starts with the call object
        close = "" if bare and not lay.one_block else b.close
        listed = bool(lay.list_open)
        if listed:
            if i >= n:
                return truncated(f"before {lay.list_open!r}")
            if lay.list_optional and text[i] == "{":
                listed = False  # one bare call object in this block
            elif text[i] != lay.list_open:
                return bad(f"expected {lay.list_open!r} after the marker")
            else:
                i += 1
        end = i
        while True:
            i = skip_ws(text, i)
            if i >= n:
                return truncated("before the call object")
            if text[i] != "{":
                what = "an empty list of calls" if text[i] == lay.list_close and not calls else ""
                return bad(what or "expected a call object '{'")
            call, end_or_none = _streamed(text, i)
            if end_or_none is None:
                calls.append(call)
                return truncated("inside a call object")
            end = end_or_none
            obj, err = loads(text[i:end])
            got = (
                call_of(obj, name_key=self.name_key, args_key=self.args_key, id_key=self.id_key)
                if err is None
                else err
            )
            if isinstance(got, str):
                return bad(got)
            call.name, call.args, call.id = got.name, got.args, got.id
            if not call.stream or loads(call.stream)[0] != call.args:
                call.stream = got.stream
            calls.append(call)
            i = skip_ws(text, end)
            if not lay.separator or (lay.list_open and not listed):
                break
            if i >= n:
                if lay.list_close or close or not final:
                    return truncated("after a call")
                break
            if text[i] == lay.separator:
                i += 1
                continue
            if lay.list_close:
                if text[i] != lay.list_close:
                    return bad(f"expected {lay.separator!r} or {lay.list_close!r}")
                i += 1
                end = i
            break
        if lay.list_close and not lay.separator and listed:
            if i >= n:
                return truncated(f"before {lay.list_close!r}")
            if text[i] != lay.list_close:
                return bad(f"expected {lay.list_close!r}")
            end = i = i + 1
        if close:
            i = skip_ws(text, end)
            if text.startswith(close, i):
                return Block("ok", i + len(close), calls)
            if i >= n and final and lay.close_at_end:
                return Block("ok", n, calls)
            if close.startswith(text[i:]):
                return truncated(f"before {close!r}")
            return bad(f"expected {close!r} after the call")
        return Block("ok", end, calls)


def _streamed(text: str, i: int) -> tuple[Call, int | None]:
    """The call object at ``text[i]``: its streamable name/arguments so far and its end."""
    end = json_end(text, i)
    m = _ENVELOPE.match(text, i)
    if m is None:
        return Call(None, ""), end
    name, err = loads(m.group(1))
    if err is not None or not isinstance(name, str):
        return Call(None, ""), end
    a = m.end()
    a_end = json_end(text, a)
    limit = a_end if a_end is not None else (end if end is not None else len(text))
    return Call(name, text[a:limit]), end


# -- JsonCalls -----------------------------------------------------------------------------------

#: a call's index as an id: a number of 1 to 6 digits (a counter over the conversation's
#: calls may pass the message's)
_DIGITS = repeat(byte_class((0x30, 0x39)), 1, 6)


@dataclass(frozen=True, slots=True)
class JsonCalls(CodecBase):
    """JSON call objects as a family's template writes them (see the module docstring).

    ``call_keys``: the object's keys in the template's order, each with its role (``"name"``,
    ``"args"`` or ``"id"``; ``"type"``, the text ``"function"``; ``"function"``, a nested object
    whose keys are :attr:`function_keys`: OpenAI's tool-call objects, ``{"id": ..., "type":
    "function", "function": {"name": ..., "arguments": ...}}``, Falcon 3); ``name_as_key``: the
    object is ``{"NAME": ARGS}`` (Apertus);
    ``indent``: 0 = ``json.dumps`` on one line, k = ``tojson(indent=k)`` with the object
    ``depth`` levels down in its block's JSON (1 inside a list); ``flat_too``: the grammar also
    admits the object on one line (Granite); ``id_shape``: the shape of the id the template
    writes (:data:`ID_SHAPES`); ``json_list``: the calls of a block are one JSON array;
    ``args_string``: the arguments are written as a JSON string holding their JSON text
    (OpenAI's ``"arguments": "{\\"city\\": \\"Paris\\"}"``), the grammar the arguments'
    grammar escaped inside it (:func:`~toolmask.tools.formats._kit.escape_in_string`). A
    ``"type"`` role is the text ``"function"`` wherever it sits; a ``"const"`` role the JSON
    value :attr:`constants` gives its key (a string, a number, a boolean or null), the same in
    every call (``"kind": "call"``, ``"version": 1``, ``"strict": true``).
    ``id_shape`` ``"counter"``: the id is :attr:`id_prefix` then the call's index in its
    message (``"call_0"``, ``"call_1"``; the grammar any number), ``"index"``: the index as
    a JSON integer. A ``"count"`` role is a key that counts the calls besides the id
    (``"index": 0`` next to ``"id"``), :attr:`counts` giving its shape (``"counter"`` or
    ``"index"``) and prefix; ``"const"`` and ``"count"`` keys may sit in the nested function
    object too (its keys named apart from the call object's), and so may the ``"id"`` where
    the call object has none."""

    call_keys: tuple[tuple[str, str], ...] = (("name", "name"), ("arguments", "args"))
    name_as_key: bool = False
    indent: int = 0
    depth: int = 0
    flat_too: bool = False
    id_shape: str = ""
    json_list: bool = False
    function_keys: tuple[tuple[str, str], ...] = ()
    args_string: bool = False
    constants: tuple[tuple[str, object], ...] = ()
    id_prefix: str = ""
    counts: tuple[tuple[str, str, str], ...] = ()

    def _key(self, role: str) -> str:
        keys = (*self.call_keys, *self.function_keys)
        return next((key for key, r in keys if r == role), "")

    @property
    def _args_depth(self) -> int:
        """How many levels below the call object's own the arguments object sits (inside the
        nested function object: one more)."""
        return self.depth + (2 if self.function_keys else 1)

    def read_object(self, obj: Any) -> Call | str:
        """The call a decoded call object holds (the name and arguments of its nested function
        object, where it has one; the id where either object holds it), or why it is not
        one."""
        name, args = self._key("name"), self._key("args")
        if not self.function_keys:
            id_key = self._key("id")
            return call_of(
                obj, name_key=name, args_key=args, id_key=id_key, name_as_key=self.name_as_key
            )
        if not isinstance(obj, dict):
            return "a call must be a JSON object"
        inner = obj.get(self._key("function"))
        got = call_of(inner, name_key=name, args_key=args)
        if isinstance(got, Call) and isinstance(inner, dict):
            nested = any(role == "id" for _, role in self.function_keys)
            got.id = id_of((inner if nested else obj).get(self._key("id")))
        return got

    # -- grammar ----------------------------------------------------------------------------------
    def arguments_node(self, tool: ToolLike, index: int, kit: Kit) -> Node:
        """The arguments grammar: the kit's layouts, or the template's indentation; in a JSON
        string (:attr:`args_string`), the kit's layouts escaped."""
        if self.args_string:
            return kit.json(tool.parameters, f"a{index}s_", quoted=True)
        if self.indent:
            return kit.json_indented(
                tool.parameters, f"a{index}i_", indent=self.indent, depth=self._args_depth
            )
        return kit.json(tool.parameters, f"a{index}_")

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """The call object: the keys of :attr:`call_keys` in order, laid out as the template
        lays it out (:func:`json_object`); with :attr:`flat_too` also on one line."""
        if not self.flat_too or self.args_string:
            return self._object(tool, self.arguments_node(tool, index, kit), self.indent)
        flat = self._object(tool, kit.json(tool.parameters, f"a{index}_"), 0)
        return choice(flat, self._object(tool, self.arguments_node(tool, index, kit), self.indent))

    def _object(self, tool: ToolLike, args: Node, indent: int) -> Node:
        if self.name_as_key:
            pairs = [(tool.name, args)]
        else:
            depth = self.depth if indent else 0
            values = {
                "name": lit(json.dumps(tool.name, ensure_ascii=False)),
                "args": args,
                "type": lit('"function"'),
            }
            if self.id_shape:
                values["id"] = self._id_node(self.id_shape, self.id_prefix)
            const = {k: lit(json.dumps(v, ensure_ascii=False)) for k, v in self.constants}
            const |= {k: self._id_node(shape, pre) for k, shape, pre in self.counts}

            def pick(key: str, role: str) -> Node:
                return const[key] if role in ("const", "count") else values[role]

            if self.function_keys:
                inner = [(key, pick(key, role)) for key, role in self.function_keys]
                values["function"] = json_object(inner, indent=indent, depth=depth + 1)
            pairs = [(key, pick(key, role)) for key, role in self.call_keys]
        return json_object(pairs, indent=indent, depth=self.depth if indent else 0)

    @staticmethod
    def _id_node(shape: str, prefix: str) -> Node:
        """An id's grammar: a JSON string of its shape, a counter or an integer index."""
        if shape == "index":
            return _DIGITS
        if shape == "counter":
            quoted = json.dumps(prefix, ensure_ascii=False)[:-1]
            return seq(lit(quoted), _DIGITS, lit('"'))
        return seq(lit('"'), ID_SHAPES[shape][0], lit('"'))

    @staticmethod
    def _id_text(shape: str, prefix: str, index: int) -> str:
        """The ``index``-th call's id as the renderer writes it."""
        if shape == "index":
            return str(index)
        if shape == "counter":
            return json.dumps(f"{prefix}{index}", ensure_ascii=False)
        return json.dumps(ID_SHAPES[shape][1].format(i=index))

    # -- what the model writes --------------------------------------------------------------------
    def render_one(self, spec: FormatSpec, name: str, arguments: object, index: int) -> str:
        """The ``index``-th call of a block as the grammar writes it."""
        if self.args_string:
            args = json.dumps(spec.values.dump(arguments), ensure_ascii=False)
        elif self.indent:
            args = json.dumps(arguments, ensure_ascii=False, indent=self.indent)
            args = args.replace("\n", "\n" + " " * (self.indent * self._args_depth))
        else:
            args = spec.values.dump(arguments)
        if self.name_as_key:
            pairs = [(name, args)]
        else:
            values = {"name": json.dumps(name, ensure_ascii=False), "args": args}
            values["type"] = '"function"'
            if self.id_shape:
                values["id"] = self._id_text(self.id_shape, self.id_prefix, index)
            const = {k: json.dumps(v, ensure_ascii=False) for k, v in self.constants}
            const |= {k: self._id_text(shape, pre, index) for k, shape, pre in self.counts}

            def pick(key: str, role: str) -> str:
                return const[key] if role in ("const", "count") else values[role]

            if self.function_keys:
                inner = [(key, pick(key, role)) for key, role in self.function_keys]
                values["function"] = _dumps_object(inner, self.indent, self.depth + 1)
            pairs = [(key, pick(key, role)) for key, role in self.call_keys]
        return _dumps_object(pairs, self.indent, self.depth)

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        """The calls as the template writes them: one block, or one block per call (a format
        whose blocks may start bare: the bare block)."""
        lay = spec.layout
        one = [self.render_one(spec, n, a, i) for i, (n, a) in enumerate(calls)]
        if spec.block.bare_start:  # the template writes the block bare, at the start
            return lay.list_open + lay.separator_text.join(one) + lay.list_close
        if lay.one_block:
            return _block_text(spec, lay.separator_text.join(one))
        return lay.block_sep.join(_block_text(spec, b) for b in one)

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
        """The block of JSON calls whose trigger is at ``text[k]`` (``bare``: a block without
        its markers at the start of the reply)."""
        b, lay = spec.block, spec.layout
        n = len(text)
        opener = next((t for t in (b.open, *b.extra_triggers) if text.startswith(t, k)), "")
        start = k if bare else k + len(opener)
        i = skip_ws(text, start)
        close = "" if bare else b.close

        def cut(what: str) -> Block:
            if not final:
                return Block("pending")
            return bad_block(text, start, close, f"truncated: the reply ends {what}", True)

        def bad(reason: str) -> Block:
            return bad_block(text, start, close, reason, final)

        objs: list[Any] = []
        if i >= n:
            return cut("before the calls")
        if self.json_list:
            if text[i] != "[":
                return bad("expected a JSON list of calls")
            end = json_end(text, i)
            if end is None:
                return cut("inside the list of calls")
            value, err = loads(text[i:end])
            if err is not None:
                return bad(err)
            if not isinstance(value, list) or not value:
                return bad("expected a non-empty list of calls")
            objs = value
        else:
            while True:
                if text[i] != "{":
                    return bad("expected a call object '{'")
                end = json_end(text, i)
                if end is None:
                    return cut("inside a call object")
                obj, err = loads(text[i:end])
                if err is not None:
                    return bad(err)
                objs.append(obj)
                if not lay.one_block:
                    break
                nxt = next_call_at(
                    text, end, lay.separator_mark, close, final, start, _starts_object
                )
                if nxt is None:
                    break
                if isinstance(nxt, Block):
                    return nxt
                i = nxt
        calls: list[Call] = []
        for obj in objs:
            got = self.read_object(obj)
            if isinstance(got, str):
                return bad(got)
            calls.append(got)
        return close_block(spec, text, end, calls, final=final, close=close, start=start)


def _starts_object(text: str, j: int) -> bool:
    return text[j : j + 1] == "{"


def close_block(
    spec: FormatSpec, text: str, end: int, calls: list[Call], *, final: bool, close: str, start: int
) -> Block:
    """The block of ``calls`` that end at ``end``, once its ``close`` marker is read (the end
    of a reply stands for it where ``close_at_end``); ``start``: where the block's inside
    starts (a malformed block extends to the first ``close`` from there)."""
    if not close:
        return Block("ok", end, calls)
    n = len(text)
    j = skip_ws(text, end)
    if text.startswith(close, j):
        return Block("ok", j + len(close), calls)
    if j >= n and final and spec.layout.close_at_end:
        return Block("ok", n, calls)
    if close.startswith(text[j:]):
        if not final:
            return Block("pending")
        return Block("bad", n, reason=f"truncated: the reply ends before {close!r}")
    return bad_block(text, start, close, f"expected {close!r} after the calls", final)
