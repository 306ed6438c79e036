"""Static analysis of a grammar before (and while) it becomes an automaton.

Up front, in one pass over the rules reachable from the start rule: the reference graph (with
multiplicities), repetition caps, an estimate of the NFA states each rule body unrolls to, and
whether special tokens occur. Then, on the reference graph only: strongly connected components,
and for the cyclic ones (few and small in practice) left recursion (an error), regular groups
(cyclic components whose internal references are all in tail position) and the call targets
that break true recursion.

Everything else is computed on demand, the first time the lazy NFA builder reaches a rule, and
memoised: nullability and productivity (three-valued evaluation that stops as soon as the
answer is known, asking only for the rules it needs), and the inlining decision (a rule is
inlined when it is referenced once, or when its size including inlined callees stays within
``INLINE_SMALL``; the size is computed with that cut-off, so a decision costs O(INLINE_SMALL)).

Every traversal of a rule body is iterative, so deeply nested IR cannot overflow the Python stack.
Cost: O(grammar size) for the up-front pass; O(component size) per cyclic component.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from toolmask.errors import GrammarError, LimitError
from toolmask.grammar import (
    ByteClass,
    Bytes,
    Choice,
    Grammar,
    Node,
    Repeat,
    RuleRef,
    Seq,
    Special,
)
from toolmask.grammar.passes import NULLABLE, PRODUCTIVE, node_prop, rules_fixpoint
from toolmask.limits import Limits

__all__ = ["INLINE_SMALL", "NULLABLE", "PRODUCTIVE", "Analysis", "repeat_copies"]

#: a rule referenced more than once is inlined when its size (NFA states, including inlined
#: callees, one per inlined reference) is at most this; otherwise it is called
INLINE_SMALL = 64


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


class _Deadline:
    __slots__ = ("at", "n")

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self.n = 0

    def tick(self) -> None:
        self.n += 1
        if self.n & 1023 == 0:
            self.check()

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise LimitError("automaton construction took too long", limit="max_compile_seconds")


def check_rule_count(grammar: Grammar, limits: Limits) -> None:
    """Raise :class:`LimitError` (``max_rules``) for a grammar with more rules than ``limits``
    allow, with the grammar's :attr:`~toolmask.grammar.Grammar.hint` when it has one. Both
    automaton builders call it first."""
    if len(grammar.rules) > limits.max_rules:
        raise LimitError(
            f"grammar has {len(grammar.rules)} rules (more than {limits.max_rules})"
            + (f"; {grammar.hint}" if grammar.hint else ""),
            limit="max_rules",
        )


class Analysis:
    """What the lazy NFA builder needs to know about the rules reachable from the start.

    Eager (computed by the constructor): ``order`` (reachable rules), ``refs`` and
    ``refcount``, ``group_of`` / ``groups`` / ``group_refs`` (regular groups and their
    references from outside), ``forced_calls`` (call targets of true recursion),
    ``has_specials``. Lazy and memoised: :meth:`rule_prop`, :meth:`node_prop`, :meth:`inline`.
    """

    __slots__ = (
        "_blocked",
        "_clean",
        "_dirty",
        "_exact",
        "_inline",
        "_known",
        "_lower",
        "_node_memo",
        "cyclic",
        "deadline",
        "forced_calls",
        "grammar",
        "group_of",
        "group_refs",
        "groups",
        "has_specials",
        "limits",
        "order",
        "refcount",
        "refs",
        "scc_id",
        "sccs",
    )

    def __init__(self, grammar: Grammar, limits: Limits) -> None:
        check_rule_count(grammar, limits)
        self.grammar = grammar
        self.limits = limits
        self.deadline = _Deadline(limits.max_compile_seconds)
        self._known: tuple[dict[str, bool], dict[str, bool]] = ({}, {})
        self._node_memo: tuple[dict[int, bool], dict[int, bool]] = ({}, {})
        self._blocked: set[str] = set()
        #: inlining decisions and sizes, keyed by rule name (or regular group id)
        self._inline: dict[str | int, bool] = {}
        self._exact: dict[str | int, int] = {}
        self._lower: dict[str | int, int] = {}
        self.has_specials = False
        #: rules whose body has an empty choice or an empty byte class somewhere
        self._dirty: set[str] = set()
        self._clean: dict[str, bool] = {}
        self.refs: dict[str, list[str]] = {}
        self.order: list[str] = []
        self._scan()
        self.refcount: dict[str, int] = dict.fromkeys(self.order, 0)
        for rs in self.refs.values():
            for r in rs:
                self.refcount[r] += 1
        succ = {n: list(dict.fromkeys(rs)) for n, rs in self.refs.items()}
        self.sccs = _sccs(self.order, succ)
        self.scc_id = {n: i for i, comp in enumerate(self.sccs) for n in comp}
        self.cyclic = [len(c) > 1 or c[0] in succ[c[0]] for c in self.sccs]
        self.group_of: dict[str, int] = {}
        self.groups: list[tuple[str, ...]] = []
        self.group_refs: list[int] = []
        self.forced_calls: set[str] = set()
        self._cyclic_components()
        self.deadline.check()

    # -- the up-front pass ----------------------------------------------------------------------
    def _scan(self) -> None:
        """Reachable rules and their references, repetition caps, specials: one tight walk."""
        g = self.grammar
        refs = self.refs
        order = self.order
        todo = [g.start]
        deadline = self.deadline
        limits = self.limits
        dirty = self._dirty
        byte_class, seq_, choice_, rule_ref, repeat_ = ByteClass, Seq, Choice, RuleRef, Repeat
        while todo:
            name = todo.pop()
            if name in refs:
                continue
            deadline.check()
            order.append(name)
            found: list[str] = []
            stack: list[Node] = [g[name].body]
            pop = stack.pop
            while stack:
                n = pop()
                t = type(n)
                if t is byte_class:
                    if not n.mask:  # type: ignore[union-attr]
                        dirty.add(name)
                    continue
                if t is seq_ or t is choice_:
                    if not n.items:  # type: ignore[union-attr]
                        dirty.add(name)
                    stack.extend(n.items[::-1])  # type: ignore[union-attr]
                elif t is rule_ref:
                    found.append(n.name)  # type: ignore[union-attr]
                elif t is repeat_:
                    assert isinstance(n, Repeat)
                    if n.max is None and n.min <= 1:
                        stack.append(n.item)  # *, +: one copy, nothing multiplies
                    elif n.max == 1:
                        stack.append(n.item)  # ?
                    else:
                        repeat_copies(n, limits)
                        self._scan_repeat(name, n, found)
                elif t is Special:
                    self.has_specials = True
            refs[name] = found
            todo.extend(r for r in found if r not in refs)

    def _scan_repeat(self, name: str, rep: Repeat, found: list[str]) -> None:
        """Walk a repetition that makes several copies, multiplying by the copies of each
        nested repetition, so that nested repeats whose product explodes fail here, before
        anything is built."""
        limits = self.limits
        cap = 2 * limits.max_automaton_states
        total = 0
        stack: list[tuple[Node, int]] = [(rep, 1)]
        while stack:
            n, f = stack.pop()
            t = type(n)
            if t is Repeat:
                assert isinstance(n, Repeat)
                if n.max == 0:
                    stack.append((n.item, 0))
                    continue
                copies = repeat_copies(n, limits)
                total += f * (copies if n.max is not None else max(n.min - 1, 0) + 2)
                stack.append((n.item, f * copies))
            elif t is Seq or t is Choice:
                assert isinstance(n, (Seq, Choice))
                if t is Seq:
                    total += f * max(len(n.items) - 1, 0)
                if not n.items:
                    self._dirty.add(name)
                stack.extend((c, f) for c in reversed(n.items))
            elif t is Bytes:
                assert isinstance(n, Bytes)
                total += f * max(len(n.value) - 1, 0)
            elif t is ByteClass:
                assert isinstance(n, ByteClass)
                if not n.mask:
                    self._dirty.add(name)
            elif t is RuleRef:
                assert isinstance(n, RuleRef)
                found.append(n.name)
            elif t is Special:
                self.has_specials = True
            if total > cap:
                raise LimitError(
                    f"the grammar's NFA would exceed {cap} states", limit="max_automaton_states"
                )

    # -- cyclic components ----------------------------------------------------------------------
    def _cyclic_components(self) -> None:
        g = self.grammar
        pos_of = {n: i for i, n in enumerate(self.order)}
        first: dict[str, set[str]] = {}
        for i, comp in enumerate(self.sccs):
            if not self.cyclic[i]:
                continue
            self.deadline.check()
            comp_set = set(comp)
            for name in comp:
                first[name] = self._first_refs(g[name].body, comp_set)
        cycle = _find_cycle([n for n in self.order if n in first], first)
        if cycle is not None:
            raise GrammarError("left recursion: " + " -> ".join(cycle))

        for i, comp in enumerate(self.sccs):
            if not self.cyclic[i]:
                continue
            comp_set = set(comp)
            tails = _internal_refs(g, comp, comp_set)
            if all(all(is_tail for _, is_tail in tails[m]) for m in comp):
                gid = len(self.groups)
                members = tuple(sorted(comp, key=pos_of.__getitem__))
                self.groups.append(members)
                for m in members:
                    self.group_of[m] = gid
                outside = sum(self.refcount[m] for m in members) - sum(
                    len(tails[m]) for m in members
                )
                self.group_refs.append(outside)
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
            self.forced_calls.update(comp_set - free)

    def _first_refs(self, body: Node, comp_set: set[str]) -> set[str]:
        """Members of ``comp_set`` that ``body`` can start with (through nullable prefixes)."""
        out: set[str] = set()
        stack = [body]
        while stack:
            n = stack.pop()
            if isinstance(n, RuleRef):
                if n.name in comp_set:
                    out.add(n.name)
            elif isinstance(n, Seq):
                for item in n.items:
                    stack.append(item)
                    if not self.node_prop(item, NULLABLE):
                        break
            elif isinstance(n, Choice):
                stack.extend(n.items)
            elif isinstance(n, Repeat) and n.max != 0:
                stack.append(n.item)
        return out

    # -- nullable / productive, on demand --------------------------------------------------------
    def rule_prop(self, name: str, prop: int) -> bool:
        """Is rule ``name`` nullable (``prop=NULLABLE``) / productive (``PRODUCTIVE``)? Memoised."""
        known = self._known[prop]
        v = known.get(name)
        if v is not None:
            return v
        g = self.grammar
        work = [name]
        while work:
            x = work[-1]
            if x in known:
                work.pop()
                continue
            cid = self.scc_id[x]
            if self.cyclic[cid]:
                comp = self.sccs[cid]
                missing = [
                    r
                    for m in comp
                    for r in self.refs[m]
                    if r not in known and self.scc_id[r] != cid
                ]
                if missing:
                    work.extend(dict.fromkeys(missing))
                    continue
                self._fixpoint(comp, prop)
                work.pop()
                continue
            self._blocked = set()
            v = self._eval(g[x].body, prop, True)
            if v is None:
                work.extend(self._blocked)
            else:
                known[x] = v
                work.pop()
        return known[name]

    def clean(self, name: str) -> bool:
        """Is every node of rule ``name``'s body productive? True when the body has no empty
        choice or byte class and every rule it references is productive (the usual case: the
        NFA builder then skips per-node checks). Memoised."""
        c = self._clean.get(name)
        if c is None:
            c = name not in self._dirty and all(
                self.rule_prop(r, PRODUCTIVE) for r in dict.fromkeys(self.refs[name])
            )
            self._clean[name] = c
        return c

    def node_prop(self, node: Node, prop: int) -> bool:
        """Is ``node`` nullable / productive? Asks for the rules it needs; memoised per node."""
        m = self._node_memo[prop].get(id(node))
        if m is not None:
            return m
        while True:
            self._blocked = set()
            v = self._eval(node, prop, True)
            if v is not None:
                return v
            for name in self._blocked:
                self.rule_prop(name, prop)

    def _fixpoint(self, comp: list[str], prop: int) -> None:
        """Least fixpoint of ``prop`` inside a cyclic component (callees outside are known)."""
        g = self.grammar
        rules_fixpoint(comp, lambda m: g[m].body, prop, self._known[prop])

    def _eval(self, root: Node, prop: int, use_memo: bool) -> bool | None:
        """:func:`~toolmask.grammar.passes._walk.node_prop` with this analysis' knowledge (rules it
        still needs are added to ``self._blocked``)."""
        memo = self._node_memo[prop] if use_memo else {}
        return node_prop(root, prop, self._known[prop], self._blocked, memo)

    # -- inlining ---------------------------------------------------------------------------------
    def inline(self, name: str) -> bool:
        """Should a reference to ``name`` (from outside its regular group) be inlined?

        Call targets of true recursion never are; a rule (or regular group) referenced once
        always is (inlining it copies nothing); otherwise it is inlined when it is small: the
        NFA states of one copy with everything below it inlined stay within ``INLINE_SMALL``.
        Memoised; the size is computed with that cut-off, so a decision is cheap.
        """
        gid = self.group_of.get(name)
        key: str | int = name if gid is None else gid
        d = self._inline.get(key)
        if d is None:
            if name in self.forced_calls:
                d = False
            elif (self.refcount[name] if gid is None else self.group_refs[gid]) <= 1:
                d = True
            else:
                d = self._size(name, INLINE_SMALL) <= INLINE_SMALL
            self._inline[key] = d
        return d

    def _size(self, name: str, cutoff: int) -> int:
        """NFA states of one inlined copy of ``name`` (its whole regular group, for a member)
        with every non-recursive reference below it inlined (one extra state per reference):
        exact when at most ``cutoff``, else any lower bound above ``cutoff``.

        Memoised (exact sizes and lower bounds are facts, so the memo does not depend on the
        order of questions). A callee is asked with the budget that is left, which decreases
        by at least one per level: the recursion depth is at most ``cutoff``.
        """
        if cutoff < 0:
            return 0
        gid = self.group_of.get(name)
        key: str | int = name if gid is None else gid
        exact = self._exact.get(key)
        if exact is not None:
            return exact
        lower = self._lower.get(key, -1)
        if lower > cutoff:
            return lower
        g = self.grammar
        total = 0
        if gid is None:
            total = self._body_size(g[name].body, None, cutoff)
        else:
            for m in self.groups[gid]:
                total += 1 + self._body_size(g[m].body, gid, cutoff - total - 1)
                if total > cutoff:
                    break
        if total <= cutoff:
            self._exact[key] = total
        else:
            self._lower[key] = max(lower, total)
        return total

    def _body_size(self, body: Node, gid: int | None, cutoff: int) -> int:
        if cutoff < 0:
            return 0
        limits = self.limits
        total = 0
        stack: list[tuple[Node, int]] = [(body, 1)]
        while stack:
            n, f = stack.pop()
            if isinstance(n, Bytes):
                total += f * max(len(n.value) - 1, 0)
            elif isinstance(n, Seq):
                total += f * max(len(n.items) - 1, 0)
                stack.extend((c, f) for c in n.items)
            elif isinstance(n, Choice):
                stack.extend((c, f) for c in n.items)
            elif isinstance(n, Repeat):
                if n.max == 0:
                    continue
                copies = repeat_copies(n, limits)
                total += f * (copies if n.max is not None else max(n.min - 1, 0) + 2)
                stack.append((n.item, f * copies))
            elif isinstance(n, RuleRef):
                r = n.name
                if r in self.forced_calls or (gid is not None and self.group_of.get(r) == gid):
                    continue  # a call or a jump inside the group: no states
                if not self.rule_prop(r, PRODUCTIVE):
                    continue
                total += f * (1 + self._size(r, (cutoff - total) // f - 1))
            if total > cutoff:
                return total
        return total


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
                while last >= 0 and type(n.items[last]) is Bytes and not n.items[last].value:  # type: ignore[union-attr]
                    last -= 1
                for j, item in enumerate(n.items):
                    stack.append((item, tail and j >= last))
            elif isinstance(n, Choice):
                stack.extend((item, tail) for item in n.items)
            elif isinstance(n, Repeat):
                stack.append((n.item, tail and n.max is not None and n.max <= 1))
        out[m] = found
    return out


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
