"""``functionary_v32``: MeetKai Functionary v3.2 (Llama 3.1 base): the turn is messages, each
``>>>RECIPIENT\n`` and its content: ``all`` for text to the user, a function's name for a call
(its JSON arguments), back to back, text first::

    >>>all\nLet me check.>>>get_weather\n{"city": "Paris"}>>>get_time\n{"zone": "UTC"}

The template's generation prompt ends with ``>>>``: it opens the first message, so the reply
starts with its recipient (``get_weather\n{...}``, ``all\n...``). The grammar and the reader
take both, the first ``>>>`` written by the prompt or by the reply (a prompt of toolmask's own
renders none), so they need not know which prompt the reply continues. Its template reads the
arguments as a JSON string (OpenAI's shape, not transformers' dict).

Reader: ``>>>`` (and, at the reply's very start, nothing: the prompt wrote it) opens a message;
``all\n`` is text, read as prose up to the next ``>>>``; ``NAME\n{...}`` is a call. A message
that is neither is malformed up to the next ``>>>``. At the start, only ``all\n`` or a name, a
newline and ``{`` open a message, so a reply that ignores the format stays prose. ``>>>``
overlaps itself: the turn grammar keeps the text before a ``>>>`` from ending with ``>``, so the
first ``>>>`` the reader finds is the one meant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import EMPTY, Dfa, Node, choice, dfa_to_rules, lit, opt, seq, star
from toolmask.tools.formats._kit import Kit
from toolmask.tools.formats._read import Block, read_marked_calls
from toolmask.tools.formats._spec import (
    BlockMarkers,
    Calls,
    CodecBase,
    FormatSpec,
    ToolLike,
    Values,
)

__all__ = ["SPEC"]

_GT = ">>>"
_ALL = "all\n"
#: a message's recipient line: a function's name, then its arguments
_RECIPIENT = re.compile(r"(?P<name>[^\s>]+)\n")
#: at the reply's start (the prompt opened the message): text to the user or a call
_BARE = re.compile(r"all\n|[\w.\-]+\n[ \t]*\{")
#: what may still grow into :data:`_BARE`
_BARE_PREFIX = re.compile(r"[\w.\-]*(?:\n[ \t]*)?")


@dataclass(frozen=True, slots=True)
class _Messages(CodecBase):
    """``NAME\n{...}`` calls in ``>>>RECIPIENT`` messages (see the module docstring)."""

    def starts_bare(self, spec: FormatSpec, text: str, i: int) -> bool:
        """Only at the reply's very start (whitespace before it): ``all\n`` or ``NAME\n{``."""
        return not text[:i].strip() and _BARE.match(text, i) is not None

    def may_start_bare(self, spec: FormatSpec, text: str, i: int) -> bool:
        return not text[:i].strip() and _BARE_PREFIX.fullmatch(text, i) is not None

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
        """The message at ``k`` (its ``>>>`` there, or none when ``bare``): ``all\n`` is an
        empty block (the prose after it is the scanner's), a call is ``NAME\n{...}``."""
        pos = k if bare else k + len(_GT)
        rest = text[pos : pos + len(_ALL)]
        if text.startswith(_ALL, pos):
            return Block("ok", pos + len(_ALL))
        if not final and _ALL.startswith(rest) and len(rest) < len(_ALL):
            return Block("pending")  # ``all`` or a name that starts so
        got = read_marked_calls(
            text, pos, _RECIPIENT, "", first="", need="\n", final=final, many=False
        )
        if isinstance(got, str):  # malformed up to the next message
            nxt = text.find(_GT, pos)
            if nxt >= 0:
                return Block("bad", nxt, reason=got)
            return Block("bad", len(text), reason=got) if final else Block("pending")
        if isinstance(got, Block):
            return got
        calls, end = got
        return Block("ok", end, calls)

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        """``NAME\n{...}`` (after the ``>>>`` that opens the message)."""
        return seq(lit(tool.name + "\n"), kit.json(tool.parameters, f"a{index}_"))

    def render_calls(self, spec: FormatSpec, calls: Calls) -> str:
        return "".join(f"{_GT}{n}\n{spec.values.dump(a)}" for n, a in calls)

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
        """``[>>>]`` (the prompt's or the reply's), then under ``none`` a text message, under
        ``required`` the calls, under ``auto`` either, or a text message and then the calls;
        calls ``call (>>> call)*`` (one under parallel off), then up to ``max_trailing_ws``
        whitespace. A text message is ``all\n`` and text without ``>>>``; before a call it
        does not end with ``>`` either."""
        gt = kit.marker(_GT)
        start = opt(gt)
        text_end = seq(lit(_ALL), _text(kit, "msg", before_call=False))
        if mode == "none" or not calls:
            return seq(start, text_end)
        call = kit.add("call", choice(*calls))
        more = star(seq(gt, call)) if parallel else EMPTY
        blocks = kit.add("calls", seq(call, more, kit.ws(spec.layout.max_trailing_ws)))
        if mode == "required":
            return seq(start, blocks)
        text_call = seq(lit(_ALL), _text(kit, "msg_c", before_call=True), gt, blocks)
        return seq(start, choice(text_end, text_call, blocks))


def _text(kit: Kit, name: str, *, before_call: bool) -> Node:
    """Text without ``>>>`` (rules ``<name>_s<i>``); ``before_call``: nor ending with ``>``.
    O(1) states."""
    anything = Dfa.any_string()
    dfa = anything.concat(Dfa.literal(_GT)).concat(anything).complement()
    if before_call:
        dfa = dfa.intersect(anything.concat(Dfa.literal(">")).complement())
    entry, rules = dfa_to_rules(dfa, name, encoding="raw")
    for r in rules:
        kit.add(r.name, r.body)
    return entry


SPEC = FormatSpec(
    "functionary_v32",
    _Messages(),
    BlockMarkers(_GT, bare_start="{", overlaps=True),
    values=Values(extra_layouts=("compact",)),
    template_markers=(
        "<|begin_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<|python_tag|>",
    ),
)
