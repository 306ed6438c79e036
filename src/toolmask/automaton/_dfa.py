"""Lazy subset construction: the grammar's NFA becomes per-entry DFAs over one shared position
space, one position at a time.

A *position* is a set of NFA states, interned by its *kernel*: the states of its epsilon
closure that have a byte, call or special edge, plus the exits it reaches. The kernel decides
everything about the position's future, so two paths that reach the same configuration reach
the same position (and hence, at run time, the same interned state) without any minimisation.

A position is created (interned, numbered) when some row first mentions it, and *expanded*
(its row computed) the first time the runtime looks at it. Expanding a position computes all
of its outgoing edges at once: the byte masks of its NFA states are refined into disjoint atoms,
and atoms with the same target position are merged, so a row has a few disjoint
``(mask, target)`` edges; call edges are grouped by callee, special edges by text. Targets are
only interned, not expanded, so a row costs O(NFA states x edges) and nothing downstream.

The alphabet is bytes, call labels (entry ids) and special-token texts. Treating a call as one
symbol is sound: after the call returns the automaton is in every NFA state that a call of that
entry could reach, whichever NFA state made the call. The NFA builds only productive nodes, so
every position can still reach the end of its rule (the automaton never offers a byte that can
only lead to death, up to the runtime stack caps).

Cost per expanded position: O(NFA states in the kernel x their edges + atoms x closure size).
Positions are counted as they are created; past ``max_automaton_states`` a LimitError is raised
(the runtime turns it into a rejection).
"""

from __future__ import annotations

from collections.abc import Iterable

from toolmask.automaton._nfa import LazyNFA
from toolmask.errors import LimitError
from toolmask.limits import Limits

__all__ = ["LazyDFA"]

Stack = tuple[int, ...]
_NO_SPECIALS: dict[str, int] = {}


class LazyDFA:
    """Positions and their rows (byte edges, calls, specials, finality), built on demand.

    The per-position lists are shared with the runtime, which reads them directly; a position's
    entries are placeholders until ``done[p]`` is set by :meth:`expand`.
    """

    __slots__ = (
        "_starts",
        "broken",
        "calls",
        "cap",
        "closures",
        "consuming",
        "done",
        "edges",
        "final",
        "index",
        "nfa",
        "specials",
        "subsets",
        "umask",
    )

    def __init__(self, nfa: LazyNFA, limits: Limits) -> None:
        self.nfa = nfa
        self.cap = limits.max_automaton_states
        self.index: dict[frozenset[int], int] = {}
        self.subsets: list[frozenset[int]] = []
        self.done: list[bool] = []
        #: byte edges: disjoint ``(mask, target position)`` pairs
        self.edges: list[tuple[tuple[int, int], ...]] = []
        #: union of the byte-edge masks
        self.umask: list[int] = []
        #: call edges: ``(callee start position, return position, tail)``; ``tail`` means the
        #: return position is a bare exit, so nothing needs pushing
        self.calls: list[tuple[tuple[int, int, bool], ...]] = []
        #: special-token edges: text -> target position
        self.specials: list[dict[str, int]] = []
        #: the rule this position belongs to may end here
        self.final: list[bool] = []
        #: has a byte or special edge
        self.consuming: list[bool] = []
        #: the runtime's memo of static closures (see ``_runtime``)
        self.closures: list[tuple[tuple[Stack, ...], bool] | None] = []
        self._starts: dict[int, int] = {}
        self.broken = False

    def __len__(self) -> int:
        return len(self.subsets)

    # -- positions --------------------------------------------------------------------------------
    def kernel(self, seeds: Iterable[int]) -> frozenset[int]:
        """The kernel of the epsilon closure of ``seeds`` (expanding NFA states on the way)."""
        nfa = self.nfa
        pending = nfa.pending
        eps = nfa.eps
        byte = nfa.byte
        call = nfa.call
        special = nfa.special
        is_exit = nfa.is_exit
        seen = set(seeds)
        stack = list(seen)
        out: list[int] = []
        while stack:
            s = stack.pop()
            if pending[s] is not None:
                nfa.expand(s)
            if byte[s] or call[s] or special[s] or is_exit[s]:
                out.append(s)
            for t in eps[s]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(out)

    def position(self, key: frozenset[int]) -> int:
        """The position of a kernel (interned; created unexpanded)."""
        p = self.index.get(key)
        if p is not None:
            return p
        p = len(self.subsets)
        if p >= self.cap or self.broken:
            self.broken = True
            raise LimitError(
                f"the automaton exceeds {self.cap} positions", limit="max_automaton_states"
            )
        self.index[key] = p
        self.subsets.append(key)
        self.done.append(False)
        self.edges.append(())
        self.umask.append(0)
        self.calls.append(())
        self.specials.append(_NO_SPECIALS)
        self.final.append(False)
        self.consuming.append(False)
        self.closures.append(None)
        return p

    def start(self, eid: int) -> int:
        """Start position of entry ``eid``."""
        p = self._starts.get(eid)
        if p is None:
            p = self.position(self.kernel((self.nfa.entries[eid],)))
            self._starts[eid] = p
        return p

    def entry_start(self, name: str) -> int:
        return self.start(self.nfa.entry(name))

    # -- rows -------------------------------------------------------------------------------------
    def expand(self, p: int) -> None:
        """Compute the row of position ``p`` (idempotent)."""
        if self.done[p]:
            return
        if self.broken:
            raise LimitError("the automaton hit a cap earlier", limit="max_automaton_states")
        nfa = self.nfa
        byte = nfa.byte
        call = nfa.call
        special = nfa.special
        is_exit = nfa.is_exit
        key = self.subsets[p]
        if len(key) == 1:
            # fast path (literal runs): one NFA state with one byte edge and nothing else
            for s in key:
                bl = byte[s]
                if len(bl) == 1 and not call[s] and not special[s]:
                    m, t = bl[0]
                    self.edges[p] = ((m, self.position(self.kernel((t,)))),)
                    self.umask[p] = m
                    self.final[p] = is_exit[s]
                    self.consuming[p] = True
                    self.done[p] = True
                    return
        by_mask: dict[int, list[int]] = {}
        by_call: dict[int, list[int]] = {}
        by_special: dict[str, list[int]] = {}
        final = False
        for s in key:
            if is_exit[s]:
                final = True
            for m, t in byte[s]:
                ts = by_mask.get(m)
                if ts is None:
                    by_mask[m] = [t]
                else:
                    ts.append(t)
            for e, t in call[s]:
                by_call.setdefault(e, []).append(t)
            for text, t in special[s]:
                by_special.setdefault(text, []).append(t)

        kernel = self.kernel
        position = self.position
        edges: tuple[tuple[int, int], ...]
        union = 0
        if by_mask:
            # refine the masks into disjoint atoms (usually they are disjoint already)
            total = 0
            for m in by_mask:
                union |= m
                total += m.bit_count()
            if total == union.bit_count():
                atoms = [(m, ts) for m, ts in by_mask.items()]
            else:
                atoms = _refine(by_mask)
            merged: dict[int, int] = {}
            memo: dict[frozenset[int], int] = {}
            for a, ts in atoms:
                seeds = frozenset(ts)
                q = memo.get(seeds)
                if q is None:
                    q = memo[seeds] = position(kernel(seeds))
                merged[q] = merged.get(q, 0) | a
            edges = tuple((m, q) for q, m in merged.items())
        else:
            edges = ()
        calls: tuple[tuple[int, int, bool], ...] = ()
        if by_call:
            out: list[tuple[int, int, bool]] = []
            for e, ts in by_call.items():
                x0 = self.start(e)
                q = position(kernel(ts))
                out.append((x0, q, self._bare_exit(q)))
            calls = tuple(dict.fromkeys(out))
        specials = (
            {text: position(kernel(ts)) for text, ts in by_special.items()}
            if by_special
            else _NO_SPECIALS
        )
        self.edges[p] = edges
        self.umask[p] = union
        self.calls[p] = calls
        self.specials[p] = specials
        self.final[p] = final
        self.consuming[p] = bool(union or specials)
        self.done[p] = True

    def _bare_exit(self, q: int) -> bool:
        """Final with no edge at all: every NFA state of the kernel is an exit."""
        is_exit = self.nfa.is_exit
        return all(is_exit[s] for s in self.subsets[q])


def _refine(by_mask: dict[int, list[int]]) -> list[tuple[int, list[int]]]:
    """Partition overlapping masks into disjoint atoms, each with the union of its targets."""
    atoms: list[int] = []
    for m in by_mask:
        rest = m
        new: list[int] = []
        for a in atoms:
            both = a & m
            if both:
                new.append(both)
                if a != both:
                    new.append(a ^ both)
                rest &= ~a
            else:
                new.append(a)
        if rest:
            new.append(rest)
        atoms = new
    out: list[tuple[int, list[int]]] = []
    for a in atoms:
        targets: list[int] = []
        for m, ts in by_mask.items():
            if m & a:
                targets.extend(ts)
        out.append((a, targets))
    return out
