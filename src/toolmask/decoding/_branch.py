"""Exact choice on finite branches (the ``exact`` mode; see ``docs/sampling.md``).

Where the grammar offers a finite set of complete alternatives (an enum value, a boolean, null
against a value, a tool name, "another call or the end"), masking picks the first token among
the allowed ones and renormalises, which over-weights alternatives that share a likely first
token. Here the alternatives are enumerated from the automaton, each is tokenised as the model
writes it, and one is taken by its whole sequence's probability: the argmax at temperature 0,
else a draw from ``exp(log p / T)``. This module finds the branches; ``_scoring.LazyBranch``
scores alternatives only as far as that choice needs (the context's KV prefix reused), and
``_scoring.score_branch`` scores all of them in one pass over their token trie, for callers
that need every probability.

**Where a branch ends.** From the matcher's state ``s`` the reachable automaton states are
explored (bounded). A state ``J`` that every continuation from ``s`` passes through (a
post-dominator of ``s``; the end of the document counts as one) closes a branch: its
alternatives are the byte strings from ``s`` to ``J``. Of the post-dominators the farthest
whose strings are finite and fit the budget is taken, so a small finite remainder (an enum,
or a whole object of small fields) is chosen jointly. Where paths never meet again (tool names
lead to different argument grammars) each alternative runs from ``s`` until it has split off
from the others and then through its forced bytes up to its next choice. A region whose
alternatives are all single bytes is what masking already decides: no branch. Alternatives go
on through the forced text after ``J`` (a key that follows a value), so the model's probability
of writing that text counts too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolmask.automaton import Automaton, AutomatonState

__all__ = ["Alternative", "Branch", "find_branch"]

#: bounds of the automaton walk (states explored, post-dominators tried, forced bytes after one)
_MAX_STATES = 1024
#: a state that loops on this many bytes is free text (a string's body, a number's digits):
#: its continuations are left to masking
_FREE_TEXT_LOOP = 8
_MAX_CANDIDATES = 64
_MAX_FORCED = 64
_MAX_DEPTH = 256


@dataclass(frozen=True, slots=True)
class Alternative:
    """One complete alternative of a branch: its bytes, and whether the turn ends after them
    (an end-of-turn token follows; False where the grammar itself is finished or goes on)."""

    text: bytes
    end: bool = False


@dataclass(frozen=True, slots=True)
class Branch:
    """What :func:`find_branch` found at a state: ``alternatives`` (None: no finite choice
    here, mask token by token) and ``over_budget`` (a finite choice existed but had more
    alternatives or bytes than the budget: a counted fallback)."""

    alternatives: tuple[Alternative, ...] | None
    over_budget: bool = False


_OPEN = Branch(None)
_OVER = Branch(None, True)


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class _Graph:
    """The states reachable from ``s`` (at most ``_MAX_STATES``; the rest are *open*)."""

    def __init__(self, a: Automaton, s: AutomatonState) -> None:
        self.states: list[AutomatonState] = [s]
        index: dict[AutomatonState, int] = {s: 0}
        #: edges[i]: (byte, j) with j == -1 for a state past the bound
        self.edges: list[list[tuple[int, int]]] = []
        self.end: list[bool] = []  # the turn may end here (accepting, or finished)
        self.finished: list[bool] = []
        self.open: list[bool] = []
        i = 0
        while i < len(self.states):
            st = self.states[i]
            i += 1
            edges: list[tuple[int, int]] = []
            self.edges.append(edges)
            finished = bool(a.is_finished(st))
            self.finished.append(finished)
            self.end.append(finished or bool(st.accepting))
            # a special token may come here, or free text: not enumerated
            self.open.append(not finished and (bool(a.allowed_specials(st)) or _free_text(a, st)))
            if finished or self.open[-1]:
                continue
            for b in _bits(a.allowed_bytes(st)):
                nxt = a.advance(st, b)
                if nxt is None:
                    continue
                j = index.get(nxt)
                if j is None:
                    if len(self.states) >= _MAX_STATES:
                        edges.append((b, -1))
                        continue
                    j = index[nxt] = len(self.states)
                    self.states.append(nxt)
                edges.append((b, j))
        self.has_open = any(self.open) or any(j < 0 for e in self.edges for _, j in e)

    def reaches_exit(self, avoid: int) -> bool:
        """Whether some path from the start reaches the end or an open state without passing
        ``avoid``."""
        seen = {0}
        stack = [0]
        while stack:
            i = stack.pop()
            if self.end[i] or self.open[i]:
                return True
            for _, j in self.edges[i]:
                if j < 0:
                    return True
                if j != avoid and j not in seen:
                    seen.add(j)
                    stack.append(j)
        return False

    def some_path(self) -> list[int]:
        """The states of one path from the start to an exit (depth first)."""
        parent = {0: -1}
        stack = [0]
        hit = -1
        while stack:
            i = stack.pop()
            if self.end[i] or self.open[i] or any(j < 0 for _, j in self.edges[i]):
                hit = i
                break
            for _, j in self.edges[i]:
                if j not in parent:
                    parent[j] = i
                    stack.append(j)
        path = []
        while hit > 0:
            path.append(hit)
            hit = parent[hit]
        return path[::-1]

    def count(self, target: int, cap: int) -> int | None:
        """Paths from the start to ``target`` (-2: the end of the document), capped at
        ``cap + 1``; None when a path loops or meets an open state first."""
        memo: dict[int, int] = {}
        onstack: set[int] = set()

        def go(i: int) -> int | None:
            if i == target:
                return 1
            got = memo.get(i)
            if got is not None:
                return got
            if i in onstack or self.open[i]:
                return None
            onstack.add(i)
            total = 1 if (target == -2 and self.end[i]) else 0
            for _, j in self.edges[i]:
                if j < 0:
                    onstack.discard(i)
                    return None
                sub = go(j)
                if sub is None:
                    onstack.discard(i)
                    return None
                total = min(cap + 1, total + sub)
            onstack.discard(i)
            memo[i] = total
            return total

        return go(0)

    def strings(self, target: int) -> list[Alternative]:
        """Every byte string from the start to ``target`` (-2: to the end of the document)."""
        out: list[Alternative] = []

        def go(i: int, prefix: bytes) -> None:
            if i == target:
                out.append(Alternative(prefix))
                return
            if target == -2 and self.end[i]:
                out.append(Alternative(prefix, end=not self.finished[i]))
            for b, j in self.edges[i]:
                go(j, prefix + bytes((b,)))

        go(0, b"")
        return out


def _forced_after(a: Automaton, s: AutomatonState) -> bytes:
    out = bytearray()
    while len(out) < _MAX_FORCED and not s.accepting and not a.allowed_specials(s):
        mask = a.allowed_bytes(s)
        if mask == 0 or mask & (mask - 1):
            break
        b = mask.bit_length() - 1
        nxt = a.advance(s, b)
        if nxt is None:
            break
        out.append(b)
        s = nxt
    return bytes(out)


def _divergent(
    a: Automaton, s: AutomatonState, max_alternatives: int, max_bytes: int
) -> list[Alternative] | None:
    """Alternatives that never meet again: each runs until it has split off from the others,
    then through its forced bytes to its next choice. Single-byte alternatives (what a masked
    step decides anyway) are not counted against the budget; None when the others exceed it."""
    out: list[Alternative] = []
    long = 0
    total = 0

    def leaf(alt: Alternative) -> bool:
        nonlocal long, total
        out.append(alt)
        if len(alt.text) > 1 or alt.end:
            long += 1
            total += len(alt.text)
        return long <= max_alternatives and total <= max_bytes

    def go(st: AutomatonState, prefix: bytes, alone: bool) -> bool:
        while True:
            if a.is_finished(st) or a.allowed_specials(st) or len(prefix) >= _MAX_DEPTH:
                break
            opts = _bits(a.allowed_bytes(st))
            if len(opts) == 1 and not st.accepting:  # forced
                nxt = a.advance(st, opts[0])
                if nxt is None:
                    break
                st, prefix = nxt, prefix + bytes((opts[0],))
                continue
            if alone or not opts:
                break
            if st.accepting and not leaf(Alternative(prefix, end=True)):
                return False
            for b in opts:
                nxt = a.advance(st, b)
                if nxt is not None and not go(nxt, prefix + bytes((b,)), True):
                    return False
            return True
        return leaf(Alternative(prefix))

    if not go(s, b"", False):
        return None
    return out


def _free_text(a: Automaton, s: AutomatonState) -> bool:
    loops = 0
    for b in _bits(a.allowed_bytes(s)):
        if a.advance(s, b) == s:
            loops += 1
            if loops >= _FREE_TEXT_LOOP:
                return True
    return False


def find_branch(
    a: Automaton, s: AutomatonState, *, max_alternatives: int, max_bytes: int = 8192
) -> Branch:
    """The finite branch at state ``s`` (see the module docstring). Free text (a state that
    loops on 8 or more bytes: inside a string, a number's digits) is no branch. Cost: a walk
    of at most 1,024 automaton states plus one reachability test per post-dominator tried;
    callers cache the result by state."""
    if max_alternatives < 2 or _free_text(a, s):
        return _OPEN
    g = _Graph(a, s)
    over = False
    best: list[Alternative] | None = None
    best_target = -1
    targets = [i for i in g.some_path()[:_MAX_CANDIDATES] if not g.reaches_exit(i)]
    if not g.has_open:
        targets.append(-2)
    for t in targets:
        n = g.count(t, max_alternatives)
        if n is None:
            break
        if n > max_alternatives:
            over = True
            break
        if n < 2:
            continue
        alts = g.strings(t)
        if sum(len(x.text) for x in alts) > max_bytes:
            over = True
            break
        best, best_target = alts, t
    if best is not None and best_target >= 0:  # on through the text forced after the meeting
        tail = _forced_after(a, g.states[best_target])
        best = [Alternative(x.text + tail, x.end) for x in best]
    if best is None:
        best = _divergent(a, s, max_alternatives, max_bytes)
        if best is None:
            return _OVER
    if len(best) < 2 or all(len(x.text) <= 1 for x in best):  # what masking decides anyway
        return _OVER if over else _OPEN
    return Branch(tuple(best))
