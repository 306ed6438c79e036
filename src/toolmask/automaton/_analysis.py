"""Static analysis of a grammar before it becomes an automaton.

Computes, for the rules reachable from the start rule: strongly connected components of the
reference graph, nullability, productivity (non-empty language), left recursion (an error),
regular groups (cyclic components whose internal references are all in tail position) and the
inlining plan (which references become calls, which are copied into the caller).

Every traversal of a rule body is iterative, so deeply nested IR cannot overflow the Python stack.
Cost: O(grammar size) per pass, plus a fixpoint inside each cyclic component.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from toolmask.errors import GrammarError, LimitError
from toolmask.grammar._ir import (
    ByteClass,
    Bytes,
    Choice,
    Grammar,
    Node,
    Repeat,
    RuleRef,
    Seq,
    Special,
    iter_nodes,
)
from toolmask.limits import Limits

__all__ = ["INLINE_BUDGET", "INLINE_SMALL", "Plan", "analyse", "children", "fold", "repeat_copies"]

T = TypeVar("T")

#: a rule whose inlined size (in NFA states, estimated) is at most this is always inlined
INLINE_SMALL = 64
#: otherwise it is inlined when ``size * number of references`` stays within this budget
INLINE_BUDGET = 8_192
#: sizes saturate here so that estimates of absurd grammars stay cheap integers
_SIZE_CAP = 1 << 40


def children(n: Node) -> tuple[Node, ...]:
    if isinstance(n, (Seq, Choice)):
        return n.items
    if isinstance(n, Repeat):
        return (n.item,)
    return ()


def fold(node: Node, f: Callable[[Node, list[T]], T]) -> T:
    """Post-order evaluation ``f(node, [values of children])`` without recursion."""
    out: list[T] = []
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        kids = children(n)
        if expanded or not kids:
            k = len(kids)
            if k:
                vals = out[-k:]
                del out[-k:]
            else:
                vals = []
            out.append(f(n, vals))
        else:
            stack.append((n, True))
            stack.extend((c, False) for c in reversed(kids))
    return out[0]


def repeat_copies(r: Repeat, limits: Limits) -> int:
    """Copies of ``r.item`` that unrolling makes; raises LimitError past ``max_repeat_unroll``."""
    copies = r.max if r.max is not None else max(r.min, 1)
    if copies > limits.max_repeat_unroll:
        raise LimitError(
            f"repetition {{{r.min},{'' if r.max is None else r.max}}} would unroll to "
            f"{copies} copies (more than {limits.max_repeat_unroll})",
            limit="max_repeat_unroll",
        )
    return copies


@dataclass(frozen=True, slots=True)
class Plan:
    """What the NFA builder needs to know about each reachable rule.

    ``call``: rules that are compiled once as an entry and referenced by a call edge.
    ``group_of``: rule -> regular group id; inside its group a (tail) reference is a jump.
    Every other reachable, productive rule is copied (inlined) at each reference.
    """

    reachable: frozenset[str]
    productive: frozenset[str]
    nullable: frozenset[str]
    call: frozenset[str]
    group_of: dict[str, int]
    groups: tuple[tuple[str, ...], ...]
    recursive: frozenset[str]
    #: NFA states one inlined copy of the rule (of its whole group, for group members) creates
    sizes: dict[str, int]


class _Deadline:
    __slots__ = ("at", "n")

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self.n = 0

    def tick(self) -> None:
        self.n += 1
        if self.n & 1023 == 0 and time.monotonic() > self.at:
            raise LimitError("automaton construction took too long", limit="max_compile_seconds")


def _refs(node: Node) -> list[str]:
    return [n.name for n in iter_nodes(node) if isinstance(n, RuleRef)]


def _sccs(names: list[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components come out callees first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in names:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            edges = succ[v]
            recursed = False
            while i < len(edges):
                w = edges[i]
                i += 1
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recursed = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if recursed:
                continue
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def _find_cycle(names: Iterable[str], succ: dict[str, set[str]]) -> list[str] | None:
    """A cycle in ``succ`` as ``[a, b, ..., a]``, or None. Iterative DFS, deterministic."""
    color: dict[str, int] = {}
    for root in names:
        if root in color:
            continue
        path: list[str] = []
        work: list[tuple[str, list[str]]] = [(root, sorted(succ.get(root, ())))]
        color[root] = 1
        path.append(root)
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop(0)
                c = color.get(w, 0)
                if c == 1:
                    return [*path[path.index(w) :], w]
                if c == 0:
                    color[w] = 1
                    path.append(w)
                    work.append((w, sorted(succ.get(w, ()))))
            else:
                color[v] = 2
                path.pop()
                work.pop()
    return None


def analyse(grammar: Grammar, limits: Limits) -> Plan:
    """Analyse ``grammar``; raise GrammarError on left recursion, LimitError on caps."""
    if len(grammar.rules) > limits.max_rules:
        raise LimitError(
            f"grammar has {len(grammar.rules)} rules (more than {limits.max_rules})",
            limit="max_rules",
        )
    deadline = _Deadline(limits.max_compile_seconds)

    # reachable rules and the reference graph (with multiplicity)
    refs: dict[str, list[str]] = {}
    order: list[str] = []
    todo = [grammar.start]
    while todo:
        name = todo.pop()
        if name in refs:
            continue
        deadline.tick()
        order.append(name)
        refs[name] = _refs(grammar[name].body)
        todo.extend(r for r in refs[name] if r not in refs)
    succ = {n: list(dict.fromkeys(rs)) for n, rs in refs.items()}
    refcount: dict[str, int] = dict.fromkeys(order, 0)
    for rs in refs.values():
        for r in rs:
            refcount[r] += 1
    pos_of = {n: i for i, n in enumerate(order)}
    sccs = _sccs(order, succ)
    scc_id = {n: i for i, comp in enumerate(sccs) for n in comp}
    cyclic = [len(c) > 1 or c[0] in succ[c[0]] for c in sccs]

    # nullable and productive, fixpoint per component, callees first
    nullable: set[str] = set()
    productive: set[str] = set()

    def is_nullable(n: Node, vals: list[bool]) -> bool:
        if isinstance(n, Bytes):
            return not n.value
        if isinstance(n, Seq):
            return all(vals)
        if isinstance(n, Choice):
            return any(vals)
        if isinstance(n, Repeat):
            return n.min == 0 or n.max == 0 or vals[0]
        if isinstance(n, RuleRef):
            return n.name in nullable
        return False  # ByteClass, Special

    def is_productive(n: Node, vals: list[bool]) -> bool:
        if isinstance(n, ByteClass):
            return n.mask != 0
        if isinstance(n, Seq):
            return all(vals)
        if isinstance(n, Choice):
            return any(vals)
        if isinstance(n, Repeat):
            return n.min == 0 or n.max == 0 or vals[0]
        if isinstance(n, RuleRef):
            return n.name in productive
        return True  # Bytes, Special

    for comp in sccs:
        for prop, fn in ((nullable, is_nullable), (productive, is_productive)):
            changed = True
            while changed:
                changed = False
                for name in comp:
                    deadline.tick()
                    if name not in prop and fold(grammar[name].body, fn):
                        prop.add(name)
                        changed = True

    # left recursion: rule -> rules it can reach without consuming a byte or special
    def first_refs(n: Node, vals: list[tuple[frozenset[str], bool]]) -> tuple[frozenset[str], bool]:
        """(rules reachable at the start of ``n`` without consuming, ``n`` nullable)."""
        if isinstance(n, RuleRef):
            return frozenset((n.name,)), n.name in nullable
        if isinstance(n, Seq):
            acc: set[str] = set()
            for v, v_nullable in vals:
                acc |= v
                if not v_nullable:
                    return frozenset(acc), False
            return frozenset(acc), True
        if isinstance(n, Choice):
            return frozenset().union(*(v for v, _ in vals)), any(b for _, b in vals)
        if isinstance(n, Repeat):
            if n.max == 0:
                return frozenset(), True
            return vals[0][0], n.min == 0 or vals[0][1]
        return frozenset(), is_nullable(n, [])

    first: dict[str, set[str]] = {}
    for name in order:
        deadline.tick()
        if not cyclic[scc_id[name]]:
            continue  # a cycle of first-references lies inside one cyclic component
        comp_set = set(sccs[scc_id[name]])
        refs_at_start, _ = fold(grammar[name].body, first_refs)
        first[name] = {r for r in refs_at_start if r in comp_set}
    cycle = _find_cycle([n for n in order if n in first], first)
    if cycle is not None:
        raise GrammarError("left recursion: " + " -> ".join(cycle))

    # regular groups, boundaries (call targets) and inline sizes
    call: set[str] = set()
    group_of: dict[str, int] = {}
    groups: list[tuple[str, ...]] = []
    size: dict[str, int] = {}
    recursive: set[str] = set()

    nfa_cap = 2 * limits.max_automaton_states

    def node_size(body: Node, gid: int | None) -> int:
        """NFA states the builder creates for ``body`` (exact for this construction)."""

        def f(n: Node, vals: list[int]) -> int:
            if isinstance(n, Bytes):
                return max(len(n.value) - 1, 0)
            if isinstance(n, (ByteClass, Special)):
                return 0
            if isinstance(n, RuleRef):
                if n.name not in productive:
                    return 0
                if (gid is not None and group_of.get(n.name) == gid) or n.name in call:
                    return 0
                return size[n.name]
            if isinstance(n, Repeat):
                if n.max == 0:
                    return 0
                copies = repeat_copies(n, limits)
                extra = copies if n.max is not None else max(n.min - 1, 0) + 2
                return min(_SIZE_CAP, copies * vals[0] + extra)
            if isinstance(n, Seq):
                return min(_SIZE_CAP, max(len(vals) - 1, 0) + sum(vals))
            return min(_SIZE_CAP, sum(vals))

        out = fold(body, f)
        if out > nfa_cap:
            raise LimitError(
                f"the grammar's NFA would exceed {nfa_cap} states", limit="max_automaton_states"
            )
        return out

    def inline_ok(s: int, nrefs: int) -> bool:
        return s <= INLINE_SMALL or s * nrefs <= INLINE_BUDGET

    for i, comp in enumerate(sccs):
        deadline.tick()
        if not cyclic[i]:
            (name,) = comp
            size[name] = node_size(grammar[name].body, None)
            if not inline_ok(size[name], refcount[name]):
                call.add(name)
            continue
        recursive.update(comp)
        comp_set = set(comp)
        tails = _internal_refs(grammar, comp, comp_set)
        if all(all(is_tail for _, is_tail in tails[m]) for m in comp):
            gid = len(groups)
            members = tuple(sorted(comp, key=pos_of.__getitem__))
            groups.append(members)
            for m in members:
                group_of[m] = gid
            total = min(_SIZE_CAP, sum(node_size(grammar[m].body, gid) + 1 for m in members))
            outside = sum(refcount[m] for m in members) - sum(len(tails[m]) for m in members)
            for m in members:
                size[m] = total
            if not inline_ok(total, outside):
                call.update(members)
            continue
        # a truly recursive component: pick call targets that break every cycle (greedy
        # feedback vertex set: the most referenced members stay calls), inline the rest
        inner = {m: [r for r, _ in tails[m]] for m in comp}
        indeg = dict.fromkeys(comp, 0)
        for m in comp:
            for r in inner[m]:
                indeg[r] += 1
        cand = sorted(comp, key=lambda m: (indeg[m], pos_of[m]))
        free: set[str] = set()
        for c in cand:
            if c in inner[c]:
                continue
            if not _reaches(c, c, inner, free | {c}):
                free.add(c)
        call.update(comp_set - free)
        for m in _topo_callees_first(free, inner):
            size[m] = node_size(grammar[m].body, None)
            if not inline_ok(size[m], refcount[m]):
                call.add(m)
        for m in comp:
            if m not in size:  # a call target of the cycle: its body is compiled once
                size[m] = node_size(grammar[m].body, None)

    return Plan(
        reachable=frozenset(order),
        productive=frozenset(productive),
        nullable=frozenset(nullable),
        call=frozenset(call),
        group_of=group_of,
        groups=tuple(groups),
        recursive=frozenset(recursive),
        sizes=size,
    )


def _internal_refs(
    grammar: Grammar, comp: list[str], comp_set: set[str]
) -> dict[str, list[tuple[str, bool]]]:
    """For each member: references to members of the same component, with 'is in tail position'.

    Tail position: nothing can follow the reference inside the rule body (last item of a
    sequence, any alternative of a tail choice, the item of a tail ``{0,1}`` / ``{1,1}``).
    """
    out: dict[str, list[tuple[str, bool]]] = {}
    for m in comp:
        found: list[tuple[str, bool]] = []
        stack: list[tuple[Node, bool]] = [(grammar[m].body, True)]
        while stack:
            n, tail = stack.pop()
            if isinstance(n, RuleRef):
                if n.name in comp_set:
                    found.append((n.name, tail))
            elif isinstance(n, Seq):
                last = len(n.items) - 1
                while last >= 0 and n.items[last] == Bytes(b""):
                    last -= 1
                for j, item in enumerate(n.items):
                    stack.append((item, tail and j >= last))
            elif isinstance(n, Choice):
                stack.extend((item, tail) for item in n.items)
            elif isinstance(n, Repeat):
                stack.append((n.item, tail and n.max is not None and n.max <= 1))
        out[m] = found
    return out


def _reaches(src: str, dst: str, succ: dict[str, list[str]], allowed: set[str]) -> bool:
    """Is there a non-empty path src -> ... -> dst through ``allowed`` nodes?"""
    seen: set[str] = set()
    stack = [w for w in succ[src] if w in allowed]
    while stack:
        v = stack.pop()
        if v == dst:
            return True
        if v in seen:
            continue
        seen.add(v)
        stack.extend(w for w in succ[v] if w in allowed)
    return False


def _topo_callees_first(nodes: set[str], succ: dict[str, list[str]]) -> list[str]:
    """Order an acyclic set so that every node comes after the nodes it references."""
    out: list[str] = []
    done: set[str] = set()
    for root in sorted(nodes):
        if root in done:
            continue
        work: list[tuple[str, bool]] = [(root, False)]
        while work:
            v, expanded = work.pop()
            if expanded:
                if v not in done:
                    done.add(v)
                    out.append(v)
                continue
            if v in done:
                continue
            work.append((v, True))
            work.extend((w, False) for w in succ[v] if w in nodes and w not in done)
    return out
