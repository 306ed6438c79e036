"""Families whose prose is a message between markers too (Command R7B's
``<|START_RESPONSE|>...<|END_RESPONSE|>``, Solar Open's ``<|content|>...<|end|>``):
:class:`ProseMessages` wraps the codec of their calls and builds their turn: the reasoning
channel, then a prose message, or calls, or a prose message and then calls (``auto``); the
reader gives a prose message's text without its markers (to the end of a reply cut off before
its close).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import EMPTY, Node, choice, lit, opt, seq, star
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._pieces import closer, list_close, list_open, opener, separator
from toolmask.tools.formats._read import Block
from toolmask.tools.formats._spec import Calls, Codec, CodecBase, FormatSpec, ToolLike

__all__ = ["ProseMessages"]


@dataclass(frozen=True, slots=True)
class ProseMessages(CodecBase):
    """The calls written by ``calls``, the prose between ``prose_open`` and ``prose_close``
    (see the module docstring); ``then``: the text between a closed prose message and the calls
    that follow it (the next message's header: HyperCLOVA X SEED's ``\n<|im_start|>assistant``;
    ``""``: whitespace), read as a part of the prose message."""

    calls: Codec
    prose_open: str = ""
    prose_close: str = ""
    then: str = ""

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        return self.calls.call_grammar(spec, tool, index, kit)

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        return self.calls.render_calls(spec, calls)

    def triggers(self, spec: FormatSpec) -> tuple[str, ...]:
        return (self.prose_open,)

    def own_markers(self, spec: FormatSpec) -> tuple[str, ...]:
        # whitespace alone (HyperCLOVA X SEED's text message opens with a newline) is no
        # control marker: tool output keeps its newlines
        return tuple(m for m in (self.prose_open, self.prose_close, self.then) if m.strip())

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
        if text.startswith(self.prose_open, k):
            return self._read_prose(text, k, final)
        return self.calls.read_block(spec, text, k, final=final, bare=bare, schemas=schemas)

    def _read_prose(self, text: str, k: int, final: bool) -> Block:
        """A prose message: its text, without the markers (to the end of a reply cut off)."""
        start = k + len(self.prose_open)
        c = text.find(self.prose_close, start) if self.prose_close else -1
        if c >= 0:
            end = c + len(self.prose_close)
            rest = text[end : end + len(self.then)]
            if self.then and rest == self.then:
                end += len(self.then)
            elif self.then and self.then.startswith(rest) and not final:
                return Block("pending")
            return Block("ok", end, text_kind="prose", text=text[start:c])
        if not final:
            return Block("pending")
        return Block("ok", len(text), text_kind="prose", text=text[start:])

    def _blocks(self, spec: FormatSpec, kit: Kit, call: Node, *, parallel: bool) -> Node:
        """The block(s) holding the calls and the whitespace before the end of the turn: the
        same shape as the generic turn grammar's."""
        b, lay = spec.block, spec.layout
        ws = kit.ws(lay.max_trailing_ws)
        first = opener(spec, kit.special_tokens)
        close = closer(spec, kit.special_tokens) if b.close else lit(b.before_close)
        if b.close and lay.close_at_end:
            close = opt(close)
        if lay.one_block:
            inner = seq(call, star(seq(separator(spec), call))) if parallel else call
            return seq(first, list_open(spec), inner, list_close(spec), close, ws)
        body = seq(list_open(spec), call, list_close(spec), close)
        if not parallel:
            return seq(first, body, ws)
        return seq(first, body, star(seq(ws, first, body)), ws)

    def turn_grammar(
        self,
        spec: FormatSpec,
        kit: Kit,
        calls: Sequence[Node],
        mode: str,
        *,
        parallel: bool,
        reasoning: bool,
    ) -> Node | None:
        """``[reasoning] ws body``: the body under ``none`` an optional prose message, under
        ``required`` the calls, under ``auto`` either, or a closed prose message and then the
        calls."""
        r = spec.reasoning
        ws = kit.ws(spec.layout.max_trailing_ws)
        head: Node = EMPTY
        if r.end:
            text = kit.text_without((r.end,))
            end = kit.marker(r.end)
            if kit.reasoning_open:
                head = seq(text, end)
            elif reasoning and r.start:
                head = opt(seq(kit.marker(r.start), text, end))
        prose = seq(kit.marker(self.prose_open), kit.text_without((self.prose_close,)))
        closed = kit.marker(self.prose_close) if self.prose_close else EMPTY
        if mode == "none" or not calls:
            body = opt(seq(prose, opt(closed)))
        else:
            call = kit.add("call", choice(*calls))
            blocks = kit.add("calls", self._blocks(spec, kit, call, parallel=parallel))
            if mode == "auto":
                gap = lit(self.then) if self.then else ws
                then = opt(seq(closed, opt(seq(gap, blocks)))) if self.prose_close else EMPTY
                body = choice(EMPTY, seq(prose, then), blocks)
            else:
                body = blocks
        return seq(head, ws, body)
