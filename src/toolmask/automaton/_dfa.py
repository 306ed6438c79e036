"""Subset construction: the grammar's NFA becomes per-entry DFAs over one shared position space.

The alphabet is bytes (partitioned per DFA state into disjoint atoms), call labels (entry ids)
and special-token texts. Treating a call as one symbol is sound: after the call returns the
automaton is in every NFA state that a call of that entry could reach, whichever NFA state made
the call. NFA states that cannot reach an exit are dropped first, so every DFA position can
still reach the end of its rule (the automaton never offers a byte that can only lead to death,
up to the runtime stack caps).

Cost: O(DFA positions x NFA states per subset x edges); the position count is checked as each
position is created.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolmask.automaton._analysis import _Deadline
from toolmask.automaton._nfa import NFA
from toolmask.errors import LimitError
from toolmask.limits import Limits

__all__ = ["Tables", "determinise", "minimise"]


@dataclass(frozen=True, slots=True)
class Tables:
    """Per-position tables (a position is an index into each tuple)."""

    #: byte edges: disjoint ``(mask, target position)`` pairs
    edges: tuple[tuple[tuple[int, int], ...], ...]
    #: union of the byte-edge masks
    umask: tuple[int, ...]
    #: call edges: ``(callee start position, return position, tail)``; ``tail`` means the
    #: return position is a bare exit, so nothing needs pushing
    calls: tuple[tuple[tuple[int, int, bool], ...], ...]
    #: special-token edges: text -> target position
    specials: tuple[dict[str, int], ...]
    #: the rule this position belongs to may end here
    final: tuple[bool, ...]
    #: entry id -> start position (entry 0 is the start rule)
    entry_start: tuple[int, ...]
    #: entry id -> rule name
    entry_names: tuple[str, ...]


def _live_states(nfa: NFA) -> list[bool]:
    """NFA states from which an exit is reachable (calls count: their callees are productive)."""
    n = len(nfa)
    rev: list[list[int]] = [[] for _ in range(n)]
    for s in range(n):
        for t in nfa.eps[s]:
            rev[t].append(s)
        for _, t in nfa.byte[s]:
            rev[t].append(s)
        for _, t in nfa.call[s]:
            rev[t].append(s)
        for _, t in nfa.special[s]:
            rev[t].append(s)
    live = [False] * n
    stack = list(nfa.exits)
    for s in stack:
        live[s] = True
    while stack:
        s = stack.pop()
        for p in rev[s]:
            if not live[p]:
                live[p] = True
                stack.append(p)
    return live


def determinise(nfa: NFA, limits: Limits) -> Tables:
    """Build the DFA positions of every entry of ``nfa``."""
    live = _live_states(nfa)
    eps = nfa.eps
    cap = limits.max_automaton_states
    deadline = _Deadline(limits.max_compile_seconds)

    def closure(seed: set[int]) -> frozenset[int]:
        out = set(seed)
        stack = list(seed)
        while stack:
            s = stack.pop()
            for t in eps[s]:
                if t not in out and live[t]:
                    out.add(t)
                    stack.append(t)
        return frozenset(out)

    index: dict[frozenset[int], int] = {}
    subsets: list[frozenset[int]] = []

    def position(subset: frozenset[int]) -> int:
        p = index.get(subset)
        if p is None:
            p = len(subsets)
            if p >= cap:
                raise LimitError(
                    f"the automaton exceeds {cap} positions", limit="max_automaton_states"
                )
            index[subset] = p
            subsets.append(subset)
        return p

    entry_start = [position(closure({s})) for s in nfa.entries]
    edges: list[tuple[tuple[int, int], ...]] = []
    umask: list[int] = []
    calls_e: list[tuple[tuple[int, int], ...]] = []  # (entry id, return position)
    specials: list[dict[str, int]] = []
    final: list[bool] = []
    exits = nfa.exits
    i = 0
    while i < len(subsets):
        deadline.tick()
        subset = subsets[i]
        i += 1
        by_mask: dict[int, set[int]] = {}
        by_call: dict[int, set[int]] = {}
        by_special: dict[str, set[int]] = {}
        for s in subset:
            for m, t in nfa.byte[s]:
                if live[t]:
                    by_mask.setdefault(m, set()).add(t)
            for e, t in nfa.call[s]:
                if live[t]:
                    by_call.setdefault(e, set()).add(t)
            for text, t in nfa.special[s]:
                if live[t]:
                    by_special.setdefault(text, set()).add(t)
        final.append(not exits.isdisjoint(subset))
        # partition the masks into disjoint atoms, then merge atoms with equal targets
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
        merged: dict[int, int] = {}
        for a in atoms:
            targets: set[int] = set()
            for m, ts in by_mask.items():
                if m & a:
                    targets |= ts
            p = position(closure(targets))
            merged[p] = merged.get(p, 0) | a
        edges.append(tuple((m, p) for p, m in merged.items()))
        union = 0
        for m in merged.values():
            union |= m
        umask.append(union)
        calls_e.append(tuple((e, position(closure(ts))) for e, ts in by_call.items()))
        specials.append({text: position(closure(ts)) for text, ts in by_special.items()})

    return _finish(
        edges,
        specials,
        [tuple((entry_start[e], q) for e, q in calls_e[p]) for p in range(len(subsets))],
        final,
        entry_start,
        tuple(nfa.entry_names),
    )


def _finish(
    edges: list[tuple[tuple[int, int], ...]],
    specials: list[dict[str, int]],
    calls: list[tuple[tuple[int, int], ...]],
    final: list[bool],
    entry_start: list[int],
    entry_names: tuple[str, ...],
) -> Tables:
    """Tables from raw per-position data: unions of masks and tail flags of call edges."""
    n = len(final)
    umask = []
    for p in range(n):
        u = 0
        for m, _ in edges[p]:
            u |= m
        umask.append(u)

    def bare_exit(q: int) -> bool:
        return final[q] and not edges[q] and not calls[q] and not specials[q]

    return Tables(
        edges=tuple(edges),
        umask=tuple(umask),
        calls=tuple(tuple((x0, q, bare_exit(q)) for x0, q in calls[p]) for p in range(n)),
        specials=tuple(specials),
        final=tuple(final),
        entry_start=tuple(entry_start),
        entry_names=entry_names,
    )


def minimise(t: Tables, limits: Limits) -> Tables:
    """Merge equivalent positions (Hopcroft's partition refinement).

    Two positions are equivalent when they have the same finality and, for every byte, special
    token and call (keyed by the callee's start position), equivalent successors. Missing
    transitions are allowed (partial DFA): both initial blocks start as splitters, which keeps
    Hopcroft's "smaller half" rule correct (Valmari & Lehtinen, 2008). Equal configurations
    then give equal stacks, so the runtime interns them to one state.

    Cost: O(S * n log n) for n positions and S symbols (global byte atoms, specials, callees).
    """
    n = len(t.final)
    deadline = _Deadline(limits.max_compile_seconds)
    # global byte atoms: every edge mask is a union of atoms
    atoms: list[int] = []
    for m in {m for es in t.edges for m, _ in es}:
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
    atoms_of: dict[int, list[int]] = {}
    rev: list[list[tuple[object, int]]] = [[] for _ in range(n)]
    for p in range(n):
        for m, q in t.edges[p]:
            ids = atoms_of.get(m)
            if ids is None:
                ids = atoms_of[m] = [i for i, a in enumerate(atoms) if a & m]
            for i in ids:
                rev[q].append((i, p))
        for text, q in t.specials[p].items():
            rev[q].append((("s", text), p))
        for x0, q, _ in t.calls[p]:
            rev[q].append((("c", x0), p))

    block_of = [0 if t.final[p] else 1 for p in range(n)]
    blocks: list[set[int]] = [set(), set()]
    for p in range(n):
        blocks[block_of[p]].add(p)
    in_w = [True, True]
    work = [0, 1]
    while work:
        deadline.tick()
        b = work.pop()
        in_w[b] = False
        splitter = list(blocks[b])
        by_sym: dict[object, set[int]] = {}
        for q in splitter:
            for sym, p in rev[q]:
                by_sym.setdefault(sym, set()).add(p)
        for preds in by_sym.values():
            touched: dict[int, list[int]] = {}
            for p in preds:
                touched.setdefault(block_of[p], []).append(p)
            for y, ps in touched.items():
                if len(ps) == len(blocks[y]):
                    continue
                z = len(blocks)
                moved = set(ps)
                blocks.append(moved)
                blocks[y] -= moved
                for p in ps:
                    block_of[p] = z
                if in_w[y] or len(moved) <= len(blocks[y]):
                    in_w.append(True)
                    work.append(z)
                else:
                    in_w.append(False)
                    in_w[y] = True
                    work.append(y)

    # renumber blocks in order of their first position (entry 0's start stays small)
    new_id: dict[int, int] = {}
    rep: list[int] = []
    for p in range(n):
        if block_of[p] not in new_id:
            new_id[block_of[p]] = len(rep)
            rep.append(p)
    pos = [new_id[block_of[p]] for p in range(n)]
    edges: list[tuple[tuple[int, int], ...]] = []
    specials: list[dict[str, int]] = []
    calls: list[tuple[tuple[int, int], ...]] = []
    final: list[bool] = []
    for p in rep:
        merged: dict[int, int] = {}
        for m, q in t.edges[p]:
            merged[pos[q]] = merged.get(pos[q], 0) | m
        edges.append(tuple((m, q) for q, m in merged.items()))
        specials.append({text: pos[q] for text, q in t.specials[p].items()})
        calls.append(tuple(dict.fromkeys((pos[x0], pos[q]) for x0, q, _ in t.calls[p])))
        final.append(t.final[p])
    return _finish(edges, specials, calls, final, [pos[s] for s in t.entry_start], t.entry_names)
