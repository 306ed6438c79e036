"""Calls written as a name and a JSON arguments object between markers:

    <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>            (DeepSeek V3.1)
    <|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{...}...   (Kimi K2)
    [TOOL_CALLS]NAME[ARGS]{...}                                                (Mistral v11)

:class:`MarkedJson`: a call is a sequence of parts (:class:`Mark` for a marker, plain text,
:data:`NAME`, :data:`ARGS`, :class:`Shape` for a piece with a grammar of its own such as a call
index), from which its grammar and its rendering both come; the reader is one of two:
:class:`Inner` (the calls between ``open`` and ``close`` matched by a pattern, DeepSeek's and
Kimi's, which also read the family's other spellings) or :class:`HeadTail` (each call read from
its head to its tail, the arguments string-aware: Functionary's, Solar Open's).
:class:`MistralCalls` is Mistral v11's (``[CALL_ID]`` optional, a v3-style JSON list read too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import Node, lit, opt, seq
from toolmask.tools.formats._chat import DEEPSEEK_CALL
from toolmask.tools.formats._json import close_block
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import (
    Block,
    bad_block,
    call_of,
    closed_block,
    done,
    json_end,
    loads,
    read_marked_calls,
    regex_calls,
    skip_ws,
)
from toolmask.tools.formats._spec import Calls, CodecBase, FormatSpec, ToolLike

__all__ = [
    "ARGS",
    "DEEPSEEK_CALLS",
    "K2_CALLS",
    "NAME",
    "HeadTail",
    "Inner",
    "Mark",
    "MarkedJson",
    "MistralCalls",
    "Shape",
]


@dataclass(frozen=True, slots=True)
class Mark:
    """A marker inside a call (a special token where the vocabulary has it)."""

    text: str


@dataclass(frozen=True, slots=True)
class Shape:
    """A piece with a grammar of its own (``node``) that the renderer writes as ``text``
    (``{i}``: the call's index in the block)."""

    node: Node
    text: str


@dataclass(frozen=True, slots=True)
class _Slot:
    what: str


#: the tool's name, and its arguments (JSON in the spec's layouts)
NAME = _Slot("name")
ARGS = _Slot("args")

Part = str | Mark | Shape | _Slot


_, _, _CALL_BEGIN, _CALL_END, _SEP = DEEPSEEK_CALL

#: a DeepSeek call as V3 (``function<sep>NAME```json ...```) or V3.1 (``NAME<sep>{...}``)
#: writes it: both formats read both
DEEPSEEK_CALLS = re.compile(
    re.escape(_CALL_BEGIN)
    + r"\s*(?:function\s*"
    + re.escape(_SEP)
    + r")?\s*([^\s<`{]+)\s*(?:"
    + re.escape(_SEP)
    + r"|```(?:json)?)\s*(.*?)\s*(?:```)?\s*"
    + re.escape(_CALL_END)
    + r"\s*",
    re.S,
)

#: a Kimi K2 call: the name inside the call id ``functions.NAME:IDX`` (or bare)
K2_CALLS = re.compile(
    r"\s*<\|tool_call_begin\|>\s*(?:functions\.)?([^\s<:]+?)(?::\d+)?\s*"
    r"<\|tool_call_argument_begin\|>\s*(.*?)\s*<\|tool_call_end\|>\s*",
    re.S,
)


@dataclass(frozen=True, slots=True)
class Inner:
    """Reads the calls between ``open`` and the first ``close`` with ``pattern`` (group 1 the
    name, group 2 the arguments), whitespace between them; ``empty_ok``: a block without calls
    is no call (else it is malformed)."""

    pattern: re.Pattern[str]
    empty_ok: bool = False

    def read(self, spec: FormatSpec, text: str, k: int, final: bool) -> Block:
        got = closed_block(text, k, len(spec.block.open), spec.block.close, final)
        if isinstance(got, Block):
            return got
        inner_end, end = got
        calls = regex_calls(self.pattern, text, k + len(spec.block.open), inner_end, end)
        if isinstance(calls, Block):
            return calls
        if not calls and not self.empty_ok:
            return Block("bad", end, reason="an empty block of calls")
        return Block("ok", end, calls)


@dataclass(frozen=True, slots=True)
class HeadTail:
    """Reads each call from ``head`` (a pattern up to the arguments, group ``name``, optional
    group ``id``) to ``tail`` (default: the block's ``close``), the arguments a JSON object
    read string-aware (see :func:`~toolmask.tools.formats._read.read_marked_calls`: ``need``
    is the head's last fixed text); ``many``: further calls follow, each starting with
    ``first``, and then the block's ``close``."""

    head: re.Pattern[str]
    need: str
    tail: str = ""
    first: str = ""
    many: bool = False

    def read(self, spec: FormatSpec, text: str, k: int, final: bool) -> Block:
        start = k + len(spec.block.open)
        close = spec.block.close
        got = read_marked_calls(
            text, start, self.head, self.tail or close, first=self.first, need=self.need,
            final=final, many=self.many,
        )  # fmt: skip
        if isinstance(got, Block):
            return got
        if isinstance(got, str):
            return bad_block(text, start, close, got, final)
        calls, end = got
        if not self.tail:
            return Block("ok", end, calls)
        return close_block(spec, text, end, calls, final=final, close=close, start=start)


@dataclass(frozen=True, slots=True)
class MarkedJson(CodecBase):
    """A call is ``parts`` (see the module docstring), read by ``reader``."""

    parts: tuple[Part, ...]
    reader: Inner | HeadTail

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        nodes: list[Node] = []
        for p in self.parts:
            if isinstance(p, str):
                nodes.append(lit(p))
            elif isinstance(p, Mark):
                nodes.append(kit.marker(p.text))
            elif isinstance(p, Shape):
                nodes.append(p.node)
            elif p is NAME:
                nodes.append(lit(tool.name))
            else:
                nodes.append(kit.json(tool.parameters, f"a{index}_"))
        return seq(*nodes)

    def render_one(self, spec: FormatSpec, name: str, arguments: object, index: int) -> str:
        out: list[str] = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
            elif isinstance(p, Mark):
                out.append(p.text)
            elif isinstance(p, Shape):
                out.append(p.text.format(i=index))
            else:
                out.append(name if p is NAME else spec.values.dump(arguments))
        return "".join(out)

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        """Every call in one block (``list_calls``), or each in a block of its own."""
        b = spec.block
        one = [self.render_one(spec, n, a, i) for i, (n, a) in enumerate(calls)]
        if spec.layout.one_block:
            return b.open + "".join(one) + b.close
        return spec.layout.block_sep.join(b.open + c + b.close for c in one)

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
        return self.reader.read(spec, text, k, final)


_NAME = re.compile(r"([^\[\]{}\s]+)\s*(?:\[CALL_ID\]\s*([^\[\s]*)\s*)?\[ARGS\]", re.S)


@dataclass(frozen=True, slots=True)
class MistralCalls(CodecBase):
    """``NAME[ARGS]{...}`` behind the block's ``[TOOL_CALLS]``, with the optional
    ``[CALL_ID]id`` history renders (and some models) write; a v3-style JSON list after
    ``[TOOL_CALLS]`` is read too."""

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        call_id = opt(seq(kit.marker("[CALL_ID]"), kit.chars("[]{} \t\r\n")))
        args = kit.json(tool.parameters, f"a{index}_")
        return seq(lit(tool.name), call_id, kit.marker("[ARGS]"), args)

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        o = spec.block.open
        return "".join(f"{o}{n}[ARGS]{spec.values.dump(a)}" for n, a in calls)

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
        i = skip_ws(text, k + len(spec.block.open))
        if i >= len(text):
            return Block("pending") if not final else _cut(text)
        if text[i] in "[{" and not text.startswith("[ARGS]", i):
            return _json_list(text, i, final)
        m = _NAME.match(text, i)
        if m is None:
            rest = text[i:]
            tail = rest[rest.rfind("[") :]
            if not final and (
                "[" not in rest or any(t.startswith(tail) for t in ("[ARGS]", "[CALL_ID]"))
            ):
                return Block("pending")
            if not final and re.fullmatch(r"[^\[\]{}\s]+\s*\[CALL_ID\][^\[]*", rest):
                return Block("pending")
            if final and "[" not in rest:
                return _cut(text)
            return Block("bad", len(text), reason="expected NAME[ARGS]")
        j = skip_ws(text, m.end())
        if j >= len(text):
            return Block("pending") if not final else _cut(text)
        if text[j] != "{":
            return Block("bad", j, reason="expected the arguments object after [ARGS]")
        end = json_end(text, j)
        if end is None:
            return Block("pending") if not final else _cut(text)
        args, err = loads(text[j:end])
        if err is not None or not isinstance(args, dict):
            return Block("bad", end, reason=err or "the arguments must be a JSON object")
        return Block("ok", end, [done(m.group(1), args)])


def _cut(text: str) -> Block:
    return Block("bad", len(text), reason="truncated: the reply ends inside the call")


def _json_list(text: str, i: int, final: bool) -> Block:
    end = json_end(text, i)
    if end is None:
        return Block("pending") if not final else _cut(text)
    value, err = loads(text[i:end])
    if err is not None:
        return Block("bad", end, reason=err)
    calls = []
    for obj in value if isinstance(value, list) else [value]:
        got = call_of(obj)
        if isinstance(got, str):
            return Block("bad", end, reason=got)
        calls.append(got)
    return Block("ok", end, calls)
