"""Parsing a finished or streaming assistant turn into prose, tool calls and malformed blocks.

One scanner serves both parsers. It walks the text left to right: prose until the format's
trigger (or, for formats that allow it, a ``{`` at the very start), then one block of calls,
then prose again. Every decision depends only on the text before the point where it is made
(the first full trigger, the end of a balanced JSON value, a close marker), so a prefix of the
text yields a prefix of the final items; that is what lets :class:`StreamParser` emit deltas
early and still end with exactly :func:`parse_turn`'s result.

Contract of the result (:class:`ParsedTurn`):

* ``calls``: every well-formed call, in order, with its parsed ``arguments`` object.
* ``content``: the prose, with the whitespace that touches a well-formed block removed on that
  side (``"Let me check.\\n<tool_call>..."`` gives ``"Let me check."``); a reply without blocks
  is its own content, byte for byte.
* ``malformed``: blocks that start like a call but are not one (bad JSON, a missing name, cut
  off at max tokens). They are never dropped: the raw text stays in ``content`` where it was
  (a block cut off by the end of the reply included: what the model wrote is never lost), and
  the block is listed with a reason and its UTF-8 byte offset. A malformed block extends to
  the first close marker after its opener, or to the end of the text when there is none.

Parsing is lenient where the grammar is strict (any JSON whitespace, ``"arguments"`` or
``"parameters"``, arguments given as a JSON string): the parser also reads unconstrained output.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolmask.tools._fences import Verdict, head_verdict, quoted_names
from toolmask.tools.formats import Block as _Block
from toolmask.tools.formats import Call as _Call
from toolmask.tools.formats import FormatSpec
from toolmask.tools.formats._read import skip_ws as _skip_ws

__all__ = [
    "MalformedBlock",
    "ParsedTurn",
    "ReasoningSplitter",
    "StreamDelta",
    "StreamParser",
    "ToolCall",
    "parse_turn",
    "random_call_id",
    "sequential_call_id",
]


def random_call_id(index: int) -> str:
    """``call_`` + 24 random hex digits (the default id factory; ``index`` is ignored)."""
    return "call_" + uuid.uuid4().hex[:24]


def sequential_call_id(index: int) -> str:
    """``call_0``, ``call_1``, ...: deterministic ids for tests and reproducible transcripts."""
    return f"call_{index}"


IdFactory = Callable[[int], str]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One parsed call: ``id``, tool ``name`` and the ``arguments`` object (parsed JSON)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(hash=False)

    @property
    def arguments_json(self) -> str:
        """The arguments as JSON text (what OpenAI's ``function.arguments`` holds)."""
        return json.dumps(self.arguments, ensure_ascii=False)

    def to_openai(self) -> dict[str, Any]:
        """``{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}``."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_json},
        }


@dataclass(frozen=True, slots=True)
class MalformedBlock:
    """A block that started like a call but is not one; ``text`` is its raw text (also kept in
    ``content``), ``offset`` its UTF-8 byte offset in the reply."""

    text: str
    reason: str
    offset: int


@dataclass(frozen=True, slots=True)
class ParsedTurn:
    """The parse of one assistant reply (see the module docstring for the contract).
    ``reasoning`` is the text of the reasoning channel (``<think>...</think>``, Harmony's
    analysis channel, ...), stripped of surrounding whitespace; ``""`` when there is none."""

    content: str
    calls: tuple[ToolCall, ...] = ()
    malformed: tuple[MalformedBlock, ...] = ()
    reasoning: str = ""


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """One OpenAI-style streaming delta: either ``content`` text, or a piece of call ``index``.

    The first delta of a call carries ``id`` and ``name`` (and ``arguments=""``); later ones
    carry argument text fragments whose concatenation is the call's arguments JSON.
    """

    content: str | None = None
    index: int | None = None
    id: str | None = None
    name: str | None = None
    arguments: str | None = None
    #: a piece of the reasoning channel (then ``content`` and ``index`` are None)
    reasoning: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The ``delta`` object of a ``chat.completion.chunk``."""
        if self.reasoning is not None:
            return {"reasoning_content": self.reasoning}
        if self.index is None:
            return {"content": self.content or ""}
        call: dict[str, Any] = {"index": self.index}
        fn: dict[str, Any] = {}
        if self.id is not None:
            call["id"] = self.id
            call["type"] = "function"
        if self.name is not None:
            fn["name"] = self.name
        fn["arguments"] = self.arguments or ""
        call["function"] = fn
        return {"tool_calls": [call]}


_WS = " \t\r\n"


# -- the scanner ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    kind: str  # "prose" | "calls" | "bad" | "reasoning"
    text: str = ""
    calls: list[_Call] = field(default_factory=list)
    start: int = 0  # char offset of a block
    reason: str = ""


@dataclass(slots=True)
class _State:
    pos: int = 0
    after_block: bool = False
    items: list[_Item] = field(default_factory=list)
    #: "start" (reasoning may open), "reasoning" (inside the channel), "body"
    phase: str = "start"


@dataclass(slots=True)
class _Pending:
    prose: str
    calls: list[_Call]
    block_start: int
    reasoning: str = ""


class _Scanner:
    """The block/prose scanner for one wire format (see the module docstring)."""

    def __init__(
        self,
        fmt: FormatSpec,
        *,
        reasoning_open: bool = False,
        schemas: Mapping[str, Any] | None = None,
        habits: bool = True,
    ) -> None:
        self.fmt = fmt
        self.triggers = fmt.parse_triggers(habits=habits)
        self.reasoning_open = reasoning_open and bool(fmt.reasoning.end)
        self.schemas = schemas
        #: the variant of the format whose block :meth:`_find` found last (a habit's or its own)
        self._found = fmt
        #: the trigger :meth:`_find` found last
        self._trigger = ""
        #: the tools' names a call's head names (:meth:`_head`, read on first use)
        self._names: frozenset[str] | None = None
        self._names_read = False
        #: :meth:`_find` met a bare block's start whose head may still name a tool
        self._bare_pending = False

    def reasoning(self, text: str, st: _State, *, final: bool) -> _Pending | None:
        """The reasoning channel at the start of the reply: opened by the prompt
        (``reasoning_open``) or by the reply's first non-blank text (``reasoning_start``)."""
        r = self.fmt.reasoning
        if st.phase == "start":
            if self.reasoning_open:
                rest = text[_skip_ws(text, 0) :]
                if not final and any(t.startswith(rest) for t in r.skips):
                    return _Pending("", [], -1)
                st.phase = "body" if any(rest.startswith(t) for t in r.skips) else "reasoning"
            elif r.start:
                i = _skip_ws(text, 0)
                rest = text[i:]
                if rest.startswith(r.start):
                    st.phase = "reasoning"
                    st.pos = i + len(r.start)
                elif not final and r.start.startswith(rest):
                    return _Pending("", [], -1)
                else:
                    st.phase = "body"
            else:
                st.phase = "body"
        if st.phase != "reasoning":
            return None
        end = r.end
        k = text.find(end, st.pos)
        if k < 0:
            seg = text[st.pos :]
            if final:
                body = seg.strip(_WS)
                if body:
                    st.items.append(_Item("reasoning", body))
                st.pos = len(text)
                st.phase = "body"
                return None
            hold = _held(seg, end)
            return _Pending("", [], -1, reasoning=seg[: len(seg) - hold].strip(_WS))
        body = text[st.pos : k].strip(_WS)
        if body:
            st.items.append(_Item("reasoning", body))
        st.pos = k + len(end)
        st.after_block = True
        st.phase = "body"
        return None

    def scan(self, text: str, st: _State, *, final: bool) -> _Pending | None:
        """Advance ``st`` over the decided part of ``text``; return what is still undecided
        (``None`` when ``final``, which decides everything)."""
        if st.phase != "body":
            pending = self.reasoning(text, st, final=final)
            if pending is not None or st.phase != "body":
                return pending
        while True:
            pos = st.pos
            k, bare = self._find(text, pos, st, final=final)
            while k is not None and not bare and self._trigger in self.fmt.prose_openers:
                verdict = self._head(text, k + len(self._trigger), final=final)
                if verdict == "call":
                    break
                if verdict == "pending":  # held from the fence until its head says
                    safe = text[pos:k].rstrip(_WS)
                    return _Pending(safe.lstrip(_WS) if st.after_block else safe, [], -1)
                k, bare = self._find(text, pos, st, final=final, after=k + len(self._trigger))
            if k is None:
                seg = text[pos:]
                if final:
                    self._prose(st, seg, rstrip=False)
                    st.pos = len(text)
                    return None
                at = _skip_ws(text, pos)
                if self._bare_pending or (
                    self._bare_possible(st) and self.fmt.codec.may_start_bare(self.fmt, text, at)
                ):
                    return _Pending("", [], -1)  # may still become a bare block
                hold = self._held(seg)
                safe = seg[: len(seg) - hold].rstrip(_WS)
                return _Pending(safe.lstrip(_WS) if st.after_block else safe, [], -1)
            block = self._block(text, k, bare=bare, final=final)
            seg = text[pos:k]
            if block.status == "pending":
                safe = seg.rstrip(_WS)
                return _Pending(safe.lstrip(_WS) if st.after_block else safe, block.calls, k)
            if block.status == "ok":
                self._prose(st, seg, rstrip=True)
                if block.calls:
                    st.items.append(_Item("calls", calls=block.calls, start=k))
                elif block.text_kind == "reasoning" and block.text:
                    st.items.append(_Item("reasoning", block.text))
                elif block.text_kind == "prose" and block.text:
                    st.items.append(_Item("prose", block.text))
                st.after_block = True
            else:
                self._prose(st, seg, rstrip=False)
                st.items.append(_Item("bad", text[k : block.end], start=k, reason=block.reason))
                st.after_block = False
            st.pos = block.end

    def _prose(self, st: _State, seg: str, *, rstrip: bool) -> None:
        if st.after_block:
            seg = seg.lstrip(_WS)
        if rstrip:
            seg = seg.rstrip(_WS)
        if seg:
            st.items.append(_Item("prose", seg))

    def _bare_possible(self, st: _State) -> bool:
        return bool(self.fmt.block.bare_start) and self._at_start(st)

    @staticmethod
    def _at_start(st: _State) -> bool:
        """Whether nothing but reasoning was read yet (the body of the reply starts here)."""
        return all(it.kind == "reasoning" for it in st.items)

    def _find(
        self, text: str, pos: int, st: _State, *, final: bool, after: int | None = None
    ) -> tuple[int | None, bool]:
        """The first block's start at or after ``pos`` (``after``: look for triggers from there
        on, past a fence that is prose), and whether it is a bare block."""
        self._found = self.fmt
        self._bare_pending = False
        if after is None and self._bare_possible(st):
            i = _skip_ws(text, pos)
            if self.fmt.codec.starts_bare(self.fmt, text, i):
                if not self.fmt.block.bare_named:
                    return i, True
                verdict = self._head(text, i, final=final)
                if verdict == "call":
                    return i, True
                self._bare_pending = verdict == "pending"
                if self._bare_pending:
                    return None, False
        best: int | None = None
        for t in self.triggers:
            k = text.find(t, pos if after is None else after)
            if k >= 0 and not t.strip(_WS) and (text[pos:k].strip(_WS) or not self._at_start(st)):
                continue  # a marker of whitespace alone opens a message only where the body starts
            if k >= 0 and (best is None or k < best):
                best = k
                self._trigger = t
                self._found = self.fmt.variant_for(t)  # a habit's opener: its own markers
        return best, False

    def _head(self, text: str, i: int, *, final: bool) -> Verdict:
        """Whether the text from ``i`` (a prose habit's fence after its opener, or a bare block
        of a ``bare_named`` format) is a call: its head names a tool
        (:mod:`toolmask.tools._fences`; any name when the tools are not known or too many)."""
        head = self.fmt.codec.call_head(self.fmt)
        assert head is not None  # checked by FormatSpec
        if not self._names_read:
            self._names = None if self.schemas is None else quoted_names(self.schemas)
            self._names_read = True
        return head_verdict(text, i, head, self._names, final=final)

    def _held(self, seg: str) -> int:
        """Length of the longest suffix of ``seg`` that is a proper prefix of a trigger."""
        return max(_held(seg, t) for t in self.triggers)

    def _block(self, text: str, k: int, *, bare: bool, final: bool) -> _Block:
        fmt = self._found  # the format, or the habit whose opener is at k
        return fmt.codec.read_block(fmt, text, k, final=final, bare=bare, schemas=self.schemas)


def _held(seg: str, t: str) -> int:
    """Length of the longest suffix of ``seg`` that is a proper prefix of ``t``."""
    for h in range(min(len(t) - 1, len(seg)), 0, -1):
        if seg.endswith(t[:h]):
            return h
    return 0


def _byte_offsets(text: str, starts: list[int]) -> Iterator[int]:
    """UTF-8 byte offsets of ascending char offsets ``starts``; O(len(text))."""
    done_chars = 0
    done_bytes = 0
    for s in starts:
        done_bytes += len(text[done_chars:s].encode("utf-8", "surrogatepass"))
        done_chars = s
        yield done_bytes


def _assemble(text: str, items: list[_Item], ids: Callable[[int, _Item, int], str]) -> ParsedTurn:
    content: list[str] = []
    calls: list[ToolCall] = []
    bad = [it for it in items if it.kind == "bad"]
    offsets = dict(
        zip((id(b) for b in bad), _byte_offsets(text, [b.start for b in bad]), strict=True)
    )
    malformed: list[MalformedBlock] = []
    reasoning: list[str] = []
    for it in items:
        if it.kind == "reasoning":
            reasoning.append(it.text)
        elif it.kind == "prose":
            content.append(it.text)
        elif it.kind == "bad":
            content.append(it.text)
            malformed.append(MalformedBlock(it.text, it.reason, offsets[id(it)]))
        else:
            for j, c in enumerate(it.calls):
                assert c.name is not None and c.args is not None
                calls.append(ToolCall(ids(len(calls), it, j), c.name, c.args))
    return ParsedTurn("".join(content), tuple(calls), tuple(malformed), "\n\n".join(reasoning))


def _call_id(c: _Call, made: str, used: set[str]) -> str:
    """The id the model wrote in the call (formats whose template writes one), unless it is
    empty or already given to a call of this reply; else ``made`` (the id factory's)."""
    cid = c.id if c.id and c.id not in used else made
    used.add(cid)
    return cid


def parse_turn(
    text: str,
    fmt: FormatSpec,
    *,
    id_factory: IdFactory = random_call_id,
    reasoning_open: bool = False,
    schemas: Mapping[str, Any] | None = None,
    habits: bool = True,
) -> ParsedTurn:
    """Parse a finished reply (see the module docstring). O(len(text)); never raises on text.

    Call ids come from ``id_factory``, except where the format's calls carry the id the model
    wrote (Command R7B's ``tool_call_id``, Solar Open's): that id, unless empty or already
    given to an earlier call of the reply.

    ``reasoning_open``: the prompt ended inside the reasoning channel (a template that
    prefills ``<think>``; see :meth:`FormatSpec.prompt_opens_reasoning`), so the reply starts
    with reasoning. ``schemas`` (tool name -> parameters schema) types the values of formats
    that write parameters as raw text (XML parameters): strings stay text, others are JSON.
    ``habits=False``: the format's habits (:class:`~toolmask.tools.formats.Habit`) are read as
    prose, for a turn in which no call may be made.
    """
    st = _State()
    scanner = _Scanner(fmt, reasoning_open=reasoning_open, schemas=schemas, habits=habits)
    scanner.scan(text, st, final=True)
    used: set[str] = set()
    return _assemble(text, st.items, lambda n, it, j: _call_id(it.calls[j], id_factory(n), used))


class StreamParser:
    """Incremental parsing of a reply that arrives in chunks.

    ``feed(chunk)`` returns the deltas that the new text decides: prose that cannot be the start
    of a marker (a possible marker prefix and trailing whitespace are held back until decided),
    the first delta of each call once its name is known, and argument fragments as they arrive.
    ``finish()`` decides the rest (a block cut off becomes malformed) and returns the last
    deltas; :attr:`result` is then exactly :func:`parse_turn`'s result for the whole text.

    Deltas are not retracted: when a block whose calls were already announced turns out
    malformed, the announcement stands and the final :attr:`result` is authoritative (calls
    announced later get the next stream indices). Cost: each feed rescans from the start of the
    first undecided item, so a reply costs O(n * undecided length) at worst, O(n) typically.
    """

    def __init__(
        self,
        fmt: FormatSpec,
        *,
        id_factory: IdFactory = random_call_id,
        reasoning_open: bool = False,
        schemas: Mapping[str, Any] | None = None,
        habits: bool = True,
    ) -> None:
        self._scanner = _Scanner(fmt, reasoning_open=reasoning_open, schemas=schemas, habits=habits)
        self._reasoning = ""  # decided reasoning so far
        self._reasoning_sent = 0
        self._ids = id_factory
        self._used_ids: set[str] = set()
        self._text = ""
        self._st = _State()
        self._n_items_content = 0  # items whose content has been added to _content
        self._content = ""  # decided content so far
        self._content_sent = 0
        self._decided_calls: list[tuple[int, int, _Call]] = []  # (block start, j, call)
        self._announced: dict[tuple[int, int], tuple[int, str]] = {}  # (block, j) -> (index, id)
        self._sent_args: dict[int, int] = {}  # stream index -> chars of arguments sent
        self._result: ParsedTurn | None = None

    @property
    def text(self) -> str:
        """Everything fed so far."""
        return self._text

    @property
    def result(self) -> ParsedTurn:
        """The final parse; only after :meth:`finish`."""
        if self._result is None:
            raise RuntimeError("StreamParser.result is available after finish()")
        return self._result

    def feed(self, chunk: str) -> list[StreamDelta]:
        """Add ``chunk`` and return the deltas it decides. RuntimeError after :meth:`finish`."""
        if self._result is not None:
            raise RuntimeError("StreamParser.feed() after finish()")
        self._text += chunk
        pending = self._scanner.scan(self._text, self._st, final=False)
        return self._deltas(pending)

    def finish(self) -> list[StreamDelta]:
        """Decide the rest of the text; returns the last deltas and sets :attr:`result`."""
        if self._result is not None:
            return []
        self._scanner.scan(self._text, self._st, final=True)
        deltas = self._deltas(None)

        def ids(n: int, it: _Item, j: int) -> str:
            return self._announced[it.start, j][1]  # _deltas(None) announced every call

        self._result = _assemble(self._text, self._st.items, ids)
        return deltas

    def _deltas(self, pending: _Pending | None) -> list[StreamDelta]:
        out: list[StreamDelta] = []
        items = self._st.items
        # newly decided items: content and calls
        for it in items[self._n_items_content :]:
            if it.kind == "reasoning":
                self._reasoning += ("\n\n" if self._reasoning else "") + it.text
            elif it.kind == "calls":
                for j, c in enumerate(it.calls):
                    self._decided_calls.append((it.start, j, c))
            else:
                self._content += it.text
        self._n_items_content = len(items)
        reasoning = self._reasoning
        if pending is not None and pending.reasoning:
            reasoning += ("\n\n" if reasoning else "") + pending.reasoning
        if len(reasoning) > self._reasoning_sent:  # reasoning only grows
            out.append(StreamDelta(reasoning=reasoning[self._reasoning_sent :]))
            self._reasoning_sent = len(reasoning)
        content = self._content + (pending.prose if pending is not None else "")
        if len(content) > self._content_sent:  # content only grows (see the module docstring)
            out.append(StreamDelta(content=content[self._content_sent :]))
            self._content_sent = len(content)
        live = list(self._decided_calls)
        if pending is not None:
            live.extend((pending.block_start, j, c) for j, c in enumerate(pending.calls))
        for start, j, c in live:
            if c.name is None or c.args is None:
                break  # a call is announced once complete: a cut-off call is never sent
            key = (start, j)
            hit = self._announced.get(key)
            if hit is None:
                index = len(self._announced)
                hit = (index, _call_id(c, self._ids(index), self._used_ids))
                self._announced[key] = hit
                self._sent_args[index] = 0
                out.append(StreamDelta(index=index, id=hit[1], name=c.name, arguments=""))
            index = hit[0]
            sent = self._sent_args[index]
            if len(c.stream) > sent:
                out.append(StreamDelta(index=index, arguments=c.stream[sent:]))
                self._sent_args[index] = len(c.stream)
        return out


class ReasoningSplitter:
    """The reasoning channel at the start of a streamed reply, split off as text arrives by the
    scanner :class:`StreamParser` runs first, for a consumer that reads the rest of the reply
    itself (vLLM's reasoning parser hands it to a separate tool parser).

    ``feed(chunk)`` returns ``(new reasoning text, new body text)``; the reasoning text is what
    :class:`StreamParser` would send as ``reasoning`` deltas (several channel blocks joined by a
    blank line), the body is the raw text after the channel, with the whitespace that follows a
    closed channel dropped (as :func:`parse_turn` drops it). ``feed(chunk, final=True)``
    decides the channel (the reply ended). Cost: each feed rescans the undecided channel, so
    O(n * channel length) at worst.
    """

    def __init__(self, fmt: FormatSpec, *, reasoning_open: bool = False) -> None:
        self._scanner = _Scanner(fmt, reasoning_open=reasoning_open)
        self._st = _State()
        self._has = bool(fmt.reasoning.end)
        self.text = ""
        self._sent_reasoning = 0
        self._sent_body = 0

    @property
    def done(self) -> bool:
        """The channel is decided: everything from here on is the body."""
        return not self._has or self._st.phase == "body"

    @property
    def handed_over(self) -> bool:
        """The body has begun: the channel is decided and, after a closed channel, a
        non-whitespace character came (the whitespace before it is dropped here, since a
        reader of the body cannot know it follows a channel)."""
        return self.done and (self._sent_body > 0 or not self._st.after_block)

    def feed(self, chunk: str, *, final: bool = False) -> tuple[str, str]:
        """Add ``chunk``; return the reasoning and body text it decides."""
        self.text += chunk
        st = self._st
        pending = None
        if not self.done:
            pending = self._scanner.reasoning(self.text, st, final=final)
        parts = [it.text for it in st.items if it.kind == "reasoning"]
        if pending is not None and pending.reasoning:
            parts.append(pending.reasoning)
        reasoning = "\n\n".join(parts)
        new_reasoning = reasoning[self._sent_reasoning :]
        self._sent_reasoning = max(self._sent_reasoning, len(reasoning))
        body = ""
        if self.done:
            body = self.text[st.pos :]
            if st.after_block:
                body = body.lstrip(_WS)
        new_body = body[self._sent_body :]
        self._sent_body = max(self._sent_body, len(body))
        return new_reasoning, new_body
