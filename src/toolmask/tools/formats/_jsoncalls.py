"""The formats whose calls are JSON objects in a family's own envelope, and what they share.

A :class:`JsonCalls` format is data. The block is ``open after_open list_open CALL (separator
CALL)* list_close before_close close`` (or one call per block, blocks joined by ``block_sep``),
where every piece of fixed text is written exactly as the family's chat template writes it
(``"[\\n    "`` before the first call of a Command R7B action, ``",\\n    "`` between calls).
A CALL is a JSON object whose keys the template writes in its own order (:attr:`call_keys`:
the name, the arguments and, where the template writes one, an id), laid out as the template
lays it out (:attr:`call_indent`: ``json.dumps`` spacing on one line, or ``tojson(indent=k)``
at :attr:`call_depth` levels down, its arguments one level deeper). Apertus writes the name as
the object's only key (:attr:`name_as_key`).

From that data come the grammar of one call (:meth:`JsonCalls.call_grammar`), the text the model
writes (:meth:`JsonCalls.render_calls`, exact) and the block reader (:meth:`JsonCalls.read_block`):
the JSON between the markers is one array of call objects (:attr:`json_list`) or call objects
one after another with whitespace between them, read with :func:`json.loads`, so the reader is
lenient where the grammar is exact (any JSON whitespace, any key order, arguments given as a
JSON string, ``"arguments"`` or ``"parameters"``). A block that is cut off or malformed is
``bad`` (its raw text stays in the content) and extends to the first ``close`` after it, or to
the end of the reply.

Families that write their prose inside markers too (Command R7B's
``<|START_RESPONSE|>...<|END_RESPONSE|>``) are :class:`ProseMessages`; their turn grammar is
built here (:meth:`ProseMessages.turn_grammar`): the reasoning channel, then a prose message,
or calls, or a prose message and then calls (``auto``); the parser reads the prose message
into the content without its markers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from toolmask.grammar import EMPTY, Node, byte_class, choice, lit, opt, repeat, seq, star
from toolmask.tools.formats._base import WireFormat, tool_json_lines
from toolmask.tools.formats._blocks import (
    Block,
    Call,
    bad_block,
    done,
    json_object_end,
    loads,
    skip_ws,
    tools_prompt,
)

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = [
    "ID_SHAPES",
    "JsonCalls",
    "ProseMessages",
    "json_object",
    "marked_call",
    "read_marked_calls",
]

#: the shapes of the ids templates write in calls: the grammar of each and how the renderer
#: writes the ``i``-th call's id (Command R7B counts the calls of the conversation, Solar Open
#: writes the id it was given: an OpenAI-style token)
ID_SHAPES: dict[str, tuple[Node, str]] = {
    "digits": (repeat(byte_class((0x30, 0x39)), 1, 6), "{i}"),
    "token": (
        repeat(byte_class((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), 0x5F, 0x2D), 1, 64),
        "call_{i}",
    ),
}


def json_object(pairs: Sequence[tuple[str, Node]], *, indent: int = 0, depth: int = 0) -> Node:
    """The grammar of a JSON object with these (key, value grammar) pairs in this order:
    ``json.dumps`` spacing (``indent=0``) or ``json.dumps(indent=indent)`` for an object that
    sits ``depth`` levels down (its keys ``indent * (depth + 1)`` spaces in)."""
    if indent:
        inner = "\n" + " " * (indent * (depth + 1))
        first, sep, last = "{" + inner, "," + inner, "\n" + " " * (indent * depth) + "}"
    else:
        first, sep, last = "{", ", ", "}"
    parts: list[Node] = [lit(first)]
    for j, (key, value) in enumerate(pairs):
        parts += [lit((sep if j else "") + json.dumps(key, ensure_ascii=False) + ": "), value]
    parts.append(lit(last))
    return seq(*parts)


def _dumps_object(pairs: Sequence[tuple[str, str]], indent: int, depth: int) -> str:
    """The text :func:`json_object` admits for these (key, value text) pairs."""
    if indent:
        inner = "\n" + " " * (indent * (depth + 1))
        first, sep, last = "{" + inner, "," + inner, "\n" + " " * (indent * depth) + "}"
    else:
        first, sep, last = "{", ", ", "}"
    body = sep.join(f"{json.dumps(k, ensure_ascii=False)}: {v}" for k, v in pairs)
    return first + body + last


class JsonCalls(WireFormat):
    """A format whose calls are JSON objects (see the module docstring). Subclasses set data."""

    #: the call object's keys in the template's order, each with its role: ``"name"``,
    #: ``"args"`` or ``"id"``
    call_keys: ClassVar[tuple[tuple[str, str], ...]] = (("name", "name"), ("arguments", "args"))
    #: the call object is ``{"NAME": ARGS}`` (Apertus)
    name_as_key: ClassVar[bool] = False
    #: the call objects' layout: 0 = ``json.dumps`` on one line, k = ``tojson(indent=k)``
    call_indent: ClassVar[int] = 0
    #: how many levels down the call object sits in its block's JSON (1 inside a list)
    call_depth: ClassVar[int] = 0
    #: the shape of the id the template writes in each call (a key of :data:`ID_SHAPES`)
    id_shape: ClassVar[str] = ""
    #: the calls of a block are one JSON array (``list_open`` starts with ``[``)
    json_list: ClassVar[bool] = False
    #: the reply may end a block where ``close`` would be (an end-of-turn token that the engine
    #: cuts from the text: Solar Open's ``<|calls|>``)
    close_at_end: ClassVar[bool] = False

    # -- grammar ----------------------------------------------------------------------------------
    def arguments_node(self, tool: Tool, index: int, kit: Kit) -> Node:
        """The arguments grammar: the kit's layouts, or the template's indentation."""
        if self.call_indent:
            return kit.json_indented(
                tool.parameters, f"a{index}i_", indent=self.call_indent, depth=self.call_depth + 1
            )
        return kit.json(tool.parameters, f"a{index}_")

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """The call object: the keys of :attr:`call_keys` in order, laid out as the template
        lays it out (:func:`json_object`)."""
        args = self.arguments_node(tool, index, kit)
        if self.name_as_key:
            pairs = [(tool.name, args)]
        else:
            values = {"name": lit(json.dumps(tool.name, ensure_ascii=False)), "args": args}
            if self.id_shape:
                values["id"] = seq(lit('"'), ID_SHAPES[self.id_shape][0], lit('"'))
            pairs = [(key, values[role]) for key, role in self.call_keys]
        return json_object(pairs, indent=self.call_indent, depth=self.call_depth)

    # -- what the model writes ------------------------------------------------------------------
    def render_one(self, name: str, arguments: object, index: int) -> str:
        """The ``index``-th call of a block as the grammar writes it."""
        if self.call_indent:
            args = json.dumps(arguments, ensure_ascii=False, indent=self.call_indent)
            args = args.replace("\n", "\n" + " " * (self.call_indent * (self.call_depth + 1)))
        else:
            args = self.dump_arguments(arguments)
        if self.name_as_key:
            pairs = [(name, args)]
        else:
            values = {"name": json.dumps(name, ensure_ascii=False), "args": args}
            if self.id_shape:
                values["id"] = json.dumps(ID_SHAPES[self.id_shape][1].format(i=index))
            pairs = [(key, values[role]) for key, role in self.call_keys]
        return _dumps_object(pairs, self.call_indent, self.call_depth)

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        """The calls as the template writes them: one block, or one block per call (a format
        whose blocks may start bare: the bare block)."""

        def block(body: str) -> str:
            inner = self.list_open + body + self.list_close
            return self.open + self.after_open + inner + self.before_close + self.close

        one = [self.render_one(n, a, i) for i, (n, a) in enumerate(calls)]
        if self.bare_at_start:  # the template writes the block bare, at the start of the reply
            return self.list_open + self.separator_text.join(one) + self.list_close
        if self.separator or self.list_calls:
            return block(self.separator_text.join(one))
        return self.block_sep.join(block(b) for b in one)

    def render_tools(self, tools: Sequence[Tool]) -> str:
        """A template-less tool prompt: the tool list and how this format writes a call."""
        return tools_prompt(tool_json_lines(tools), self.render_call("{name}", {"{arg}": "..."}))

    # -- parsing ----------------------------------------------------------------------------------
    def call_of(self, obj: Any) -> Call | str:
        """The call an object of a block holds, or why it is not one."""
        if not isinstance(obj, dict):
            return "a call must be a JSON object"
        if self.name_as_key:
            if len(obj) != 1:
                return "a call must be an object with one key, the tool's name"
            ((name, args),) = obj.items()
        else:
            keys = {role: key for key, role in self.call_keys}
            name = obj.get(keys["name"], obj.get("name"))
            if not isinstance(name, str):
                return f"the call has no string {keys['name']!r}"
            for key in (keys["args"], "arguments", "parameters"):
                if key in obj:
                    args = obj[key]
                    break
            else:
                args = {}
        if isinstance(args, str):
            args, err = loads(args)
            if err is not None:
                return f"the arguments string is not JSON: {err}"
        if not isinstance(args, dict):
            return "the arguments must be a JSON object"
        call = done(name, args)
        id_key = next((key for key, role in self.call_keys if role == "id"), "")
        value = obj.get(id_key) if id_key and not self.name_as_key else None
        if isinstance(value, str | int) and not isinstance(value, bool):
            call.id = str(value)
        return call

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        return self.read_json(text, k, final, bare=bare)

    def read_json(self, text: str, k: int, final: bool, *, bare: bool = False) -> Block:
        """The block of JSON calls whose trigger is at ``text[k]`` (``bare``: a block without
        its markers at the start of the reply)."""
        n = len(text)
        opener = next((t for t in (self.open, *self.extra_triggers) if text.startswith(t, k)), "")
        start = k if bare else k + len(opener)
        i = skip_ws(text, start)
        close = "" if bare else self.close

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
            end = json_object_end(text, i)
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
                end = json_object_end(text, i)
                if end is None:
                    return cut("inside a call object")
                obj, err = loads(text[i:end])
                if err is not None:
                    return bad(err)
                objs.append(obj)
                if not (self.separator or self.list_calls):
                    break
                j = skip_ws(text, end)
                if j >= n and not final:
                    return Block("pending")  # another call may follow
                if j >= n or text[j] != "{":
                    break
                i = j
        calls: list[Call] = []
        for obj in objs:
            got = self.call_of(obj)
            if isinstance(got, str):
                return bad(got)
            calls.append(got)
        return self.closed(text, end, calls, final=final, close=close, start=start)

    def closed(
        self, text: str, end: int, calls: list[Call], *, final: bool, close: str, start: int
    ) -> Block:
        """The block of ``calls`` that end at ``end``, once its ``close`` marker is read (the
        end of a reply stands for it where :attr:`close_at_end`); ``start``: where the block's
        inside starts (a malformed block extends to the first ``close`` from there)."""
        if not close:
            return Block("ok", end, calls)
        n = len(text)
        j = skip_ws(text, end)
        if text.startswith(close, j):
            return Block("ok", j + len(close), calls)
        if j >= n and final and self.close_at_end:
            return Block("ok", n, calls)
        if close.startswith(text[j:]):
            if not final:
                return Block("pending")
            return Block("bad", n, reason=f"truncated: the reply ends before {close!r}")
        return bad_block(text, start, close, f"expected {close!r} after the calls", final)


class ProseMessages(JsonCalls):
    """A :class:`JsonCalls` family whose prose is a message between markers too
    (:attr:`prose_open` / :attr:`prose_close`): it builds its own turn grammar, and its parser
    reads a prose message into the content without the markers (to the end of a reply cut off
    before :attr:`prose_close`)."""

    prose_open: ClassVar[str] = ""
    prose_close: ClassVar[str] = ""

    def parse_triggers(self, *, habits: bool = True) -> tuple[str, ...]:
        found = (*super().parse_triggers(habits=habits), self.prose_open)
        return tuple(dict.fromkeys(t for t in found if t))

    def own_markers(self) -> tuple[str, ...]:
        prose = (m for m in (self.prose_open, self.prose_close) if m)
        return tuple(dict.fromkeys((*super().own_markers(), *prose)))

    def markers(self) -> tuple[str, ...]:
        extra = {m for m in (self.prose_open, self.prose_close) if m}
        return tuple(sorted({*super().markers(), *extra}, key=lambda m: (-len(m), m)))

    def blocks_node(self, kit: Kit, call: Node, *, parallel: bool) -> Node:
        """The block(s) holding the calls and the whitespace before the end of the turn: the
        same shape as the generic turn grammar's (for :meth:`turn_grammar`)."""
        ws = kit.ws(self.max_trailing_ws)
        opener = self.open_node(kit.special_tokens)
        closer = self.close_node(kit.special_tokens) if self.close else lit(self.before_close)
        if self.close and self.close_at_end:
            closer = opt(closer)
        if self.separator or self.list_calls:
            inner = seq(call, star(seq(self.separator_node(), call))) if parallel else call
            return seq(opener, self.list_open_node(), inner, self.list_close_node(), closer, ws)
        body = seq(self.list_open_node(), call, self.list_close_node(), closer)
        if not parallel:
            return seq(opener, body, ws)
        return seq(opener, body, star(seq(ws, opener, body)), ws)

    def turn_grammar(
        self, kit: Kit, calls: Sequence[Node], mode: str, *, parallel: bool, reasoning: bool
    ) -> Node | None:
        """``[reasoning] ws body``: the body under ``none`` an optional prose message, under
        ``required`` the calls, under ``auto`` either, or a closed prose message and then the
        calls."""
        ws = kit.ws(self.max_trailing_ws)
        head: Node = EMPTY
        if self.reasoning_end:
            text = kit.text_without((self.reasoning_end,))
            end = kit.marker(self.reasoning_end)
            if kit.reasoning_open:
                head = seq(text, end)
            elif reasoning and self.reasoning_start:
                head = opt(seq(kit.marker(self.reasoning_start), text, end))
        prose = seq(kit.marker(self.prose_open), kit.text_without((self.prose_close,)))
        closed = kit.marker(self.prose_close) if self.prose_close else EMPTY
        if mode == "none" or not calls:
            body = opt(seq(prose, opt(closed)))
        else:
            call = kit.add("call", choice(*calls))
            blocks = kit.add("calls", self.blocks_node(kit, call, parallel=parallel))
            if mode == "auto":
                then = opt(seq(closed, opt(seq(ws, blocks)))) if self.prose_close else EMPTY
                body = choice(EMPTY, seq(prose, then), blocks)
            else:
                body = blocks
        return seq(head, ws, body)

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        if text.startswith(self.prose_open, k):
            return self.read_prose(text, k, final)
        return self.read_json(text, k, final, bare=bare)

    def read_prose(self, text: str, k: int, final: bool) -> Block:
        """A prose message: its text, without the markers (to the end of a reply cut off)."""
        start = k + len(self.prose_open)
        c = text.find(self.prose_close, start) if self.prose_close else -1
        if c >= 0:
            return Block("ok", c + len(self.prose_close), text_kind="prose", text=text[start:c])
        if not final:
            return Block("pending")
        return Block("ok", len(text), text_kind="prose", text=text[start:])


def marked_call(kit: Kit, parts: Sequence[str | Node]) -> Node:
    """A call written between markers (Solar Open's): ``parts`` are marker texts (special
    tokens where the vocabulary has them) and grammar nodes, in order."""
    return seq(*(kit.marker(p) if isinstance(p, str) else p for p in parts))


def read_marked_calls(
    text: str,
    pos: int,
    head: re.Pattern[str],
    tail: str,
    *,
    first: str,
    need: str,
    final: bool,
    many: bool,
) -> tuple[list[Call], int] | Block | str:
    """Calls written ``HEAD {arguments} TAIL`` from ``text[pos]`` on (Solar Open's,
    Functionary's). ``head`` matches up to the arguments object (group ``name``); ``need`` is
    the head's last fixed text: until it appears, a head that does not match yet may still
    (pending). The arguments are a JSON object, read string-aware, so a marker inside a string
    value does not end it. ``many``: further calls may follow, each starting with ``first``
    (whitespace between them). Returns the calls and the end of the last, a ``pending``
    :class:`Block`, or the reason the text is not a call (the caller extends the bad block to
    its close marker)."""
    n = len(text)
    calls: list[Call] = []
    while True:
        m = head.match(text, pos)
        if m is None:
            if not final and need not in text[pos:]:
                return Block("pending")
            if need not in text[pos:]:
                return "truncated: the reply ends inside a call"
            return "expected a complete tool call"
        j = skip_ws(text, m.end())
        if j >= n or (text[j] == "{" and json_object_end(text, j) is None):
            return Block("pending") if not final else "truncated: the reply ends inside a call"
        if text[j] != "{":
            return "expected the arguments object"
        end = json_object_end(text, j)
        assert end is not None
        args, err = loads(text[j:end])
        if err is not None or not isinstance(args, dict):
            return err or "the arguments must be a JSON object"
        t = skip_ws(text, end)
        if not text.startswith(tail, t):
            if tail.startswith(text[t:]):
                return Block("pending") if not final else "truncated: the reply ends inside a call"
            return f"expected {tail!r} after the arguments"
        call = done(m.group("name"), args)
        if "id" in head.groupindex:
            call.id = m.group("id")
        calls.append(call)
        pos = t + len(tail)
        if not many:
            return calls, pos
        nxt = skip_ws(text, pos)
        rest = text[nxt:]
        if rest.startswith(first):
            pos = nxt
            continue
        if not final and first.startswith(rest):
            return Block("pending")
        return calls, pos
