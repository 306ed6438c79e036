"""Fences: a habit's opener that also starts prose, told from a call by the call's head.

A model that writes its calls in a code fence (Qwen2.5-Coder's ```` ```json ````,
:attr:`~toolmask.tools.formats.Habit.prose`) writes the same fence around any JSON it shows the
user: ```` ```json\\n{"name": "Alice", "age": 30}\\n``` ```` is an answer, not a call to a tool
named ``Alice``. Such a fence is a call only from the point where its text is a call's head
naming a tool of the turn: the codec's head (:meth:`~toolmask.tools.formats.Codec.call_head`,
``{``, ``"name"``, ``:`` for a JSON envelope, any JSON whitespace around each) and then a
tool's name as the JSON string the grammar writes, closing quote included. Before that point
the text may still be either; once it leaves every such head it is prose, fence and all.

The grammar (``auto``) and the parser draw the line at the same place: the turn's prose may
hold the opener followed by anything but a head (:func:`head_dfa`), and the parser reads a
block there only when :func:`head_verdict` says ``"call"``. The names are those of every tool
of the turn, not only the callable ones: a fence naming a tool that the turn's ``tool_choice``
leaves out is still a call (which the name filter then refuses), never prose that a subset
would let through. Past :data:`MAX_NAME_BYTES` of names the head ends at the name's opening
quote instead (any name makes a call, as it did before fences were prose): the prose grammar
would otherwise hold a trie of every name.

:func:`prose_rules` writes a turn's prose: free text without the format's triggers, where such a
fence (and a bare block of a ``bare_named`` format) may stand when it names no tool.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Literal

from toolmask.grammar import Dfa, Node, Rule, dfa_to_rules
from toolmask.tools.formats import FormatSpec
from toolmask.tools.formats._read import WS, skip_ws, string_end

__all__ = [
    "MAX_NAME_BYTES",
    "Names",
    "Verdict",
    "head_dfa",
    "head_verdict",
    "prose_rules",
    "quoted_names",
]

#: the most bytes of quoted names the prose grammar holds a trie of (about 60 tools of twenty
#: characters; past it, any name makes a fence a call)
MAX_NAME_BYTES = 1024

Verdict = Literal["call", "prose", "pending"]
#: the turn's tools' names for a call's head (:func:`quoted_names`), or False: not given
Names = frozenset[str] | None | Literal[False]


@functools.cache
def _ws_star() -> Dfa:
    """Any run of JSON whitespace."""
    return Dfa.literals(list(WS)).star()


def quoted_names(names: Iterable[str]) -> frozenset[str] | None:
    """The tools' names as the grammar writes them (JSON strings), or None past
    :data:`MAX_NAME_BYTES` (any name then makes a call)."""
    quoted = frozenset(json.dumps(n, ensure_ascii=False) for n in names)
    if sum(len(q.encode("utf-8", "surrogatepass")) for q in quoted) > MAX_NAME_BYTES:
        return None
    return quoted


@functools.lru_cache(maxsize=64)
def head_dfa(head: tuple[str, ...], names: frozenset[str] | None) -> Dfa:
    """The texts that make a fence a call: whitespace, each of ``head`` with whitespace after
    it, then one of ``names`` (quoted; None: the opening quote of any name)."""
    ws = _ws_star()
    dfa = ws
    for piece in head:
        dfa = dfa.concat(Dfa.literal(piece)).concat(ws)
    tail = Dfa.literal('"') if names is None else Dfa.literals(sorted(names))
    return dfa.concat(tail)


def head_verdict(
    text: str, i: int, head: tuple[str, ...], names: frozenset[str] | None, *, final: bool
) -> Verdict:
    """Whether the fence whose opener ends at ``text[i]`` is a call (its text from ``i`` starts
    with a head naming one of ``names``, as :func:`head_dfa`), prose (it cannot), or, when the
    text may still grow (not ``final``), pending."""
    for piece in head:
        i = skip_ws(text, i)
        got = text[i : i + len(piece)]
        if got != piece:
            return "pending" if not final and piece.startswith(got) else "prose"
        i += len(piece)
    i = skip_ws(text, i)
    if i == len(text):
        return "prose" if final else "pending"
    if text[i] != '"':
        return "prose"
    if names is None:
        return "call"
    # the name: a JSON string up to its closing quote, compared as the grammar writes it
    j = string_end(text, i)
    if j is None:
        rest = text[i:]
        if final or not any(q.startswith(rest) for q in names):
            return "prose"
        return "pending"
    return "call" if text[i:j] in names else "prose"


# -- the prose of a turn ----------------------------------------------------------------------
def prose_rules(
    fmt: FormatSpec,
    *,
    at_start: bool,
    name: str = "prose",
    habits: bool = True,
    words: bool = False,
    names: Names = False,
) -> tuple[Node, tuple[Rule, ...]]:
    """Free text that contains none of ``fmt``'s parse triggers (rules named ``<name>_s<i>``;
    ``habits=False``: the habits' openers are plain text, for a turn without calls).

    ``names`` (the turn's tools' names, as :func:`~toolmask.tools._fences.quoted_names` gives
    them; ``False``: not given): a habit whose opener also starts prose (a code fence,
    :attr:`~toolmask.tools.formats.Habit.prose`) may appear in the text, followed by anything
    but a call's head naming one of them (:mod:`toolmask.tools._fences`).

    ``words`` (a turn that must answer in words: ``TurnOptions.habit_prose=False``): the text
    may not start (after whitespace) with a habit opener's leading punctuation (```` ``` ````
    of ```` ```json ````: a model set on its fence would write only that and stop) nor, with
    ``at_start``, with the first byte of a bare start that opens with punctuation (``{`` of
    hermes' ``{"name"``: a model set on a bare call would write ``{"name`` and stop), and it
    holds at least one byte that is not whitespace.

    With ``at_start``: a format whose blocks may start bare (``{`` at the start of the reply)
    also may not start with ``bare_start``, and a format with a reasoning channel may not start
    with its open marker (after whitespace), which the parser would read as reasoning. Cost: a
    DFA of about the triggers' (and the names') total length in states, cached.
    """
    return dfa_to_rules(_prose_dfa(fmt, at_start, habits, words, names), name, encoding="raw")


@functools.lru_cache(maxsize=128)
def _prose_dfa(fmt: FormatSpec, at_start: bool, habits: bool, words: bool, names: Names) -> Dfa:
    anything = Dfa.any_string()
    dfa = anything
    # a call's head naming one of the names, where the format has openers that need it
    named: Dfa | None = None
    if names is not False and (fmt.prose_openers or fmt.block.bare_named):
        head = fmt.codec.call_head(fmt)
        assert head is not None  # checked by FormatSpec
        named = head_dfa(head, names)
    for t in fmt.parse_triggers(habits=habits):
        banned = Dfa.literal(t)
        if named is not None and habits and t in fmt.prose_openers:
            banned = banned.concat(named)  # prose unless a call's head follows (a fence)
        dfa = dfa.intersect(anything.concat(banned).concat(anything).complement())
    if at_start and fmt.block.bare_start:
        bare = Dfa.literal(fmt.block.bare_start)
        if named is not None and fmt.block.bare_named:  # a call only where it names a tool
            bare = named
        dfa = dfa.intersect(bare.concat(anything).complement())
    # what the text may not start with, after whitespace: asked for words, not the way a
    # call opens (a model that commits to ``{"name`` is cut there when the whole bare start
    # alone is kept out: only its first byte decides early enough)
    starts = [_lead(h.open) for h in fmt.habits] if words else []
    bare_start = fmt.block.bare_start
    if words and at_start and bare_start and not bare_start[0].isalnum():
        starts.append(bare_start[0])
    if at_start and fmt.reasoning.start:
        starts.append(fmt.reasoning.start)
    if starts or words:
        ws = _ws_star()
        for t in starts:
            dfa = dfa.intersect(ws.concat(Dfa.literal(t)).concat(anything).complement())
        if words:
            dfa = dfa.intersect(ws.complement())
    return dfa


def _lead(opener: str) -> str:
    """An opener's leading punctuation (```` ``` ```` of ```` ```json ````), or the whole
    opener where it starts with a letter or digit."""
    m = re.match(r"[^0-9A-Za-z]+", opener)
    return m.group(0) if m else opener
