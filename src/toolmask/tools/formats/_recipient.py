"""Turns written as messages, each opened by a header that names its recipient: ``all`` for
text to the user, a function's name for a call (its JSON arguments), back to back, text first
(MeetKai Functionary v2 and v3.2)::

    >>>all\nLet me check.>>>get_weather\n{"city": "Paris"}                  (v3.2)
    all\n<|content|>Let me check.\n<|from|>assistant\n<|recipient|>get_weather\n<|content|>{...}
                                                                           (v2)

:class:`RecipientMessages`: ``opener`` opens each message; the template's generation prompt
writes the first one, so a reply starts with a recipient. The grammar and the reader take the
first header written by the reply too (a prompt of toolmask's own writes none), as ``first``
(v2's spelling without the leading newline) or as ``opener``; the renderer writes ``opener``
before every call. ``text`` is the header of a text message, ``sep`` what stands between a
call's name and its arguments.

Reader: ``opener`` (and, at the reply's very start, ``first`` or nothing: the prompt wrote it)
opens a message; ``text`` is prose up to the next opener; ``NAME sep {...}`` is a call. A
message that is neither is malformed up to the next opener. At the start without a header,
only ``text`` or a name, ``sep`` and ``{`` open a message, so a reply that ignores the format
stays prose. Text never holds the opener, and before a call it does not end with a start of
the opener that the opener repeats (``>`` before v3.2's ``>>>``), so the first opener the
reader finds is the one meant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import EMPTY, Dfa, Node, choice, dfa_to_rules, lit, opt, seq, star
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import Block, read_marked_calls
from toolmask.tools.formats._spec import Calls, CodecBase, FormatSpec, ToolLike

__all__ = ["RecipientMessages"]

#: a function's name as a recipient
_NAME = r"[\w.\-]+"


@dataclass(frozen=True, slots=True)
class RecipientMessages(CodecBase):
    """``NAME sep {...}`` calls in messages opened by ``opener`` (see the module docstring)."""

    opener: str
    first: str
    text: str
    sep: str

    def _head(self) -> re.Pattern[str]:
        return re.compile(r"(?P<name>[^\s<>]+)" + re.escape(self.sep))

    def _bare(self, text: str, i: int) -> int:
        """Where the first message's recipient starts: after ``first`` when the reply wrote it."""
        return i + len(self.first) if text.startswith(self.first, i) else i

    def starts_bare(self, spec: FormatSpec, text: str, i: int) -> bool:
        """Only at the reply's very start (whitespace before it): ``first`` (the reply opened
        the message), else ``text`` or ``NAME sep {``."""
        if text[:i].strip():
            return False
        if text.startswith(self.first, i):
            return True
        bare = re.escape(self.text) + "|" + _NAME + re.escape(self.sep) + r"[ \t]*\{"
        return re.compile(bare).match(text, i) is not None

    def may_start_bare(self, spec: FormatSpec, text: str, i: int) -> bool:
        if text[:i].strip():
            return False
        rest = text[i:]
        if self.first.startswith(rest):
            return True
        rest = text[self._bare(text, i) :]
        if self.text.startswith(rest):
            return True
        name = re.match(_NAME, rest)
        after = rest[name.end() :] if name else rest
        if self.sep.startswith(after):
            return True
        return after.startswith(self.sep) and not after[len(self.sep) :].strip(" \t")

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
        """The message at ``k`` (its opener there, or none when ``bare``): ``text`` is an empty
        block (the prose after it is the scanner's), a call is ``NAME sep {...}``."""
        pos = self._bare(text, k) if bare else k + len(self.opener)
        rest = text[pos : pos + len(self.text)]
        if text.startswith(self.text, pos):
            return Block("ok", pos + len(self.text))
        if not final and self.text.startswith(rest) and len(rest) < len(self.text):
            return Block("pending")  # ``all`` or a name that starts so
        got = read_marked_calls(
            text, pos, self._head(), "", first="", need=self.sep, final=final, many=False
        )
        if isinstance(got, str):  # malformed up to the next message
            nxt = text.find(self.opener, pos)
            if nxt >= 0:
                return Block("bad", nxt, reason=got)
            return Block("bad", len(text), reason=got) if final else Block("pending")
        if isinstance(got, Block):
            return got
        calls, end = got
        while end > pos and text[end - 1].isspace():
            end -= 1  # the whitespace after the arguments is the scanner's (v2's opener has it)
        return Block("ok", end, calls)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """``NAME sep {...}`` (after the opener of the message)."""
        return seq(lit(tool.name), kit.marker(self.sep), kit.json(tool.parameters, f"a{index}_"))

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        return "".join(f"{self.opener}{n}{self.sep}{spec.values.dump(a)}" for n, a in calls)

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
        """``[first | opener]`` (the prompt's or the reply's), then under ``none`` a text
        message, under ``required`` the calls, under ``auto`` either, or a text message and then
        the calls; calls ``call (opener call)*`` (one under parallel off), then up to
        ``max_trailing_ws`` whitespace. A text message is ``text`` and text without the opener;
        before a call it does not end with a start of the opener that the opener repeats
        either."""
        gt = kit.marker(self.opener)
        start = opt(choice(*(kit.marker(t) for t in dict.fromkeys((self.first, self.opener)))))
        head = kit.marker(self.text)
        text_end = seq(head, self._prose(kit, "msg", before_call=False))
        if mode == "none" or not calls:
            return seq(start, text_end)
        call = kit.add("call", choice(*calls))
        more = star(seq(gt, call)) if parallel else EMPTY
        blocks = kit.add("calls", seq(call, more, kit.ws(spec.layout.max_trailing_ws)))
        if mode == "required":
            return seq(start, blocks)
        text_call = seq(head, self._prose(kit, "msg_c", before_call=True), gt, blocks)
        return seq(start, choice(text_end, text_call, blocks))

    def _prose(self, kit: Kit, name: str, *, before_call: bool) -> Node:
        """Text without the opener (rules ``<name>_s<i>``); ``before_call``: nor ending with a
        start of the opener that the opener repeats. O(len(opener)) states."""
        anything = Dfa.any_string()
        dfa = anything.concat(Dfa.literal(self.opener)).concat(anything).complement()
        if before_call:
            o = self.opener
            for p in range(1, len(o)):
                if o[p:] == o[: len(o) - p]:  # p is a period: o[:p] + o holds o at p
                    dfa = dfa.intersect(anything.concat(Dfa.literal(o[:p])).complement())
        entry, rules = dfa_to_rules(dfa, name, encoding="raw")
        for r in rules:
            kit.add(r.name, r.body)
        return entry
