"""Deterministic automata over Unicode code points, and their lowering to grammar rules.

A :class:`Dfa` has states ``0..n-1`` with start state ``0``; each state has a tuple of outgoing
edges ``(CharSet, target)`` whose sets are pairwise disjoint (a code point on no edge leads to the
implicit dead state). Every operation that builds a DFA works on an *atom partition* of the
alphabet: the coarsest set of disjoint :class:`CharSet` s such that every edge label is a union of
atoms. Transition tables are then dense ``state x atom`` lists, which keeps the algorithms the
textbook ones (subset construction, product construction, Hopcroft's minimisation) while the
alphabet stays all of Unicode.

The constructions themselves (NFAs, atoms, subset construction, Hopcroft's minimisation, the
state table under the cap) are in ``_nfa``; this module wraps their tables as :class:`Dfa` s.
Every public operation returns a *minimal, canonically numbered* DFA (states in breadth-first order
from the start, edges sorted by their smallest code point), so two DFAs for the same language
compare equal with ``==``. Every construction checks :attr:`Limits.max_dfa_states` while it builds
and raises :class:`~toolmask.errors.LimitError` as soon as it is exceeded, so time and memory stay
bounded by ``max_dfa_states x atoms``.

Costs (n states, a atoms): subset/product construction O(n * a) dictionary operations plus the
closure work; minimisation O(a * n log n); :meth:`Dfa.accepts` O(len(s) * log(edges)).

:func:`dfa_to_rules` lowers a DFA to right-linear rules, encoding each code point either as raw
UTF-8 (``encoding="raw"``) or with an encoder the caller passes (the schema compiler's writes
the canonical JSON string escape, ``toolmask.schema._json_text``). See ``docs/strings.md``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from toolmask._cache import memo
from toolmask.grammar._charset import ANY_CHAR, CharSet, utf8_node
from toolmask.grammar._ir import (
    EMPTY,
    NOTHING,
    Node,
    Rule,
    RuleRef,
    choice,
    iter_nodes,
    lit,
    node_bytes,
    seq,
    star,
)
from toolmask.grammar._nfa import (
    Nfa,
    StateTable,
    atomize,
    check_states,
    dense_table,
    determinize,
    minimize,
    union_of,
)
from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = [
    "Dfa",
    "Encoding",
    "dfa_bytes",
    "dfa_to_node",
    "dfa_to_rules",
    "encode_charset",
]


# -- the constructions (``_nfa``) wrapped as Dfa --------------------------------------------------


def _minimize(atoms: Sequence[CharSet], trans: Sequence[Sequence[int]], finals: set[int]) -> Dfa:
    """The canonical minimal DFA of a dense table (see :func:`~toolmask.grammar._nfa.minimize`)."""
    edges, fin = minimize(atoms, trans, finals)
    return Dfa(edges, fin)


def _determinize(nfa: Nfa, limits: Limits) -> Dfa:
    return _minimize(*determinize(nfa, limits))


def _add_dfa(nfa: Nfa, dfa: Dfa) -> tuple[int, int]:
    """Copy ``dfa`` into ``nfa``; returns its (entry, exit) states (exit reached by epsilon)."""
    base = len(nfa.chars)
    for _ in range(dfa.n_states):
        nfa.add_state()
    out = nfa.add_state()
    for s, es in enumerate(dfa.edges):
        for cs, t in es:
            nfa.add_char(base + s, cs, base + t)
        if s in dfa.finals:
            nfa.add_eps(base + s, out)
    return base, out


# -- the DFA ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dfa:
    """An immutable DFA over code points: start state 0, ``edges[s]`` = ``((CharSet, t), ...)``.

    Invariant: the CharSets of one state are pairwise disjoint and non-empty; targets are in range.
    """

    edges: tuple[tuple[tuple[CharSet, int], ...], ...]
    finals: frozenset[int]
    #: the hash, computed on first use (0: not yet): DFAs key the memos of products and
    #: lowerings and the alternatives of a union, and hashing one walks all its edges
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        h = self._hash
        if not h:
            h = hash((self.edges, self.finals)) or 1
            object.__setattr__(self, "_hash", h)
        return h

    def __post_init__(self) -> None:
        n = len(self.edges)
        if n == 0:
            raise ValueError("a Dfa needs at least the start state")
        for es in self.edges:
            for cs, t in es:
                if not 0 <= t < n or not cs:
                    raise ValueError("bad Dfa edge")
        if any(not 0 <= f < n for f in self.finals):
            raise ValueError("bad Dfa final state")

    # -- basic constructors ---------------------------------------------------------------------
    @staticmethod
    def empty() -> Dfa:
        """The empty language."""
        return Dfa(((),), frozenset())

    @staticmethod
    def epsilon() -> Dfa:
        """The language ``{""}``."""
        return Dfa(((),), frozenset({0}))

    @staticmethod
    def char(cs: CharSet) -> Dfa:
        """Strings of exactly one code point from ``cs``."""
        if not cs:
            return Dfa.empty()
        return Dfa((((cs, 1),), ()), frozenset({1}))

    @staticmethod
    def literal(s: str) -> Dfa:
        """The language ``{s}``."""
        edges = tuple(((CharSet.of([ord(c)]), i + 1),) for i, c in enumerate(s))
        return Dfa((*edges, ()), frozenset({len(s)}))

    @staticmethod
    def literals(strings: Iterable[str], *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        """A finite language (built as a trie, then minimised)."""
        children: list[dict[int, int]] = [{}]
        finals: set[int] = set()
        for s in strings:
            node = 0
            for c in s:
                cp = ord(c)
                nxt = children[node].get(cp)
                if nxt is None:
                    nxt = len(children)
                    check_states(nxt + 1, limits)
                    children.append({})
                    children[node][cp] = nxt
                node = nxt
            finals.add(node)
        cps = sorted({cp for ch in children for cp in ch})
        atom_of = {cp: i for i, cp in enumerate(cps)}
        atoms = [CharSet(((cp, cp),)) for cp in cps]
        trans: list[list[int]] = []
        for ch in children:
            row = [-1] * len(atoms)
            for cp, t in ch.items():
                row[atom_of[cp]] = t
            trans.append(row)
        return _minimize(atoms, trans, finals)

    @staticmethod
    def any_string(universe: CharSet = ANY_CHAR) -> Dfa:
        """All strings (including ``""``) over ``universe``."""
        if not universe:
            return Dfa.epsilon()
        return Dfa((((universe, 0),),), frozenset({0}))

    @staticmethod
    def length(
        min: int,
        max: int | None = None,
        universe: CharSet = ANY_CHAR,
        *,
        limits: Limits = DEFAULT_LIMITS,
    ) -> Dfa:
        """Strings over ``universe`` of ``min..max`` code points (``max=None``: unbounded)."""
        if min < 0 or (max is not None and max < min):
            return Dfa.empty()
        if not universe:
            return Dfa.epsilon() if min == 0 else Dfa.empty()
        top = min if max is None else max
        check_states(top + 1, limits)
        # ((universe, 1),), ((universe, 2),), ... built at C speed (a state per code point)
        edges: list[tuple[tuple[CharSet, int], ...]] = list(
            zip(zip(itertools.repeat(universe, top), range(1, top + 1), strict=True))
        )
        edges.append(((universe, top),) if max is None else ())
        # valid by construction (one non-empty class per state, targets in range): the
        # O(states) checks of __post_init__ are skipped
        d = object.__new__(Dfa)
        object.__setattr__(d, "edges", tuple(edges))
        object.__setattr__(d, "finals", frozenset(range(min, top + 1)))
        object.__setattr__(d, "_hash", 0)
        return d

    @staticmethod
    def from_nfa(nfa: Nfa, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        """Subset construction (with anchor / word-boundary context), then minimisation."""
        return _determinize(nfa, limits)

    # -- properties -----------------------------------------------------------------------------
    @property
    def n_states(self) -> int:
        return len(self.edges)

    def __len__(self) -> int:
        return len(self.edges)

    def accepts(self, s: str) -> bool:
        """Whether the code-point sequence ``s`` is in the language. O(len(s) log edges)."""
        state = 0
        for c in s:
            cp = ord(c)
            for cs, t in self.edges[state]:
                if cp in cs:
                    state = t
                    break
            else:
                return False
        return state in self.finals

    def is_empty(self) -> bool:
        """Whether no string is accepted."""
        seen = {0}
        stack = [0]
        while stack:
            s = stack.pop()
            if s in self.finals:
                return False
            for _, t in self.edges[s]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return True

    def is_finite(self) -> bool:
        """Whether the language is finite (the minimal DFA's live part is acyclic)."""
        return _is_acyclic(self.minimize())

    def strings(self, limit: int) -> list[str] | None:
        """Every string of the language, when it is finite and has at most ``limit`` of
        them; None otherwise. Expects a minimal DFA (every public construction returns one:
        no dead states, so a cycle means an infinite language). O(limit x length)."""
        out: list[str] = []
        # (state, prefix, states on the path): a path that meets its own state again loops.
        # Without dead states every prefix leads to a string, so there are at most
        # limit x n_states prefixes when the answer is not None
        stack: list[tuple[int, str, frozenset[int]]] = [(0, "", frozenset({0}))]
        budget = (limit + 1) * self.n_states
        while stack:
            q, prefix, path = stack.pop()
            if q in self.finals:
                out.append(prefix)
                if len(out) > limit:
                    return None
            for cs, t in self.edges[q]:
                if t in path or len(cs) > limit:
                    return None
                budget -= len(cs)
                if budget < 0:
                    return None
                for lo, hi in cs.ranges:
                    for cp in range(lo, hi + 1):
                        stack.append((t, prefix + chr(cp), path | {t}))
        return out

    def is_equivalent(self, other: Dfa) -> bool:
        return self.minimize() == other.minimize()

    def alphabet(self) -> CharSet:
        """The code points appearing on some edge."""
        return union_of(cs for es in self.edges for cs, _ in es)

    # -- algebra --------------------------------------------------------------------------------
    def minimize(self) -> Dfa:
        """The canonical minimal DFA of the same language (dead states removed)."""
        atoms, members = atomize(cs for es in self.edges for cs, _ in es)
        return _minimize(atoms, dense_table(self.edges, len(atoms), members), set(self.finals))

    def intersect(self, other: Dfa, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        return _product(self, other, "and", limits)

    def union(self, other: Dfa, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        return _product(self, other, "or", limits)

    @staticmethod
    def union_all(dfas: Sequence[Dfa], *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        """The union of ``dfas``: one subset construction over the NFA that enters each of
        them from a common start, so n operands cost one determinisation rather than n - 1
        products (whose intermediate automata a chain of products would build and minimise
        each time). Raises LimitError past ``limits.max_dfa_states``."""
        if not dfas:
            return Dfa.empty()
        if len(dfas) == 1:
            return dfas[0]
        nfa = Nfa()
        hub = nfa.add_state()
        accept = nfa.add_state()
        for d in dfas:
            entry, exit_ = _add_dfa(nfa, d)
            nfa.add_eps(hub, entry)
            nfa.add_eps(exit_, accept)
        nfa.start, nfa.accept = hub, accept
        return _determinize(nfa, limits)

    def difference(self, other: Dfa, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        """Strings of ``self`` not in ``other``."""
        return _product(self, other, "diff", limits)

    def complement(self, universe: CharSet = ANY_CHAR, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        """All strings over ``universe`` not in the language."""
        check_states(self.n_states + 1, limits)
        atoms, members = atomize([universe, *(cs for es in self.edges for cs, _ in es)])
        keep = [a for a in members.get(universe, [])]
        rows = dense_table(self.edges, len(atoms), members)
        sink = len(rows)
        trans: list[list[int]] = []
        for row in [*rows, [-1] * len(atoms)]:
            new = [-1] * len(atoms)
            for a in keep:
                new[a] = row[a] if row[a] >= 0 else sink
            trans.append(new)
        finals = set(range(sink + 1)) - set(self.finals)
        return _minimize(atoms, trans, finals)

    def concat(self, other: Dfa, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        nfa = Nfa()
        s1, e1 = _add_dfa(nfa, self)
        s2, e2 = _add_dfa(nfa, other)
        nfa.add_eps(e1, s2)
        nfa.start, nfa.accept = s1, e2
        return _determinize(nfa, limits)

    def star(self, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        nfa = Nfa()
        hub = nfa.add_state()
        s1, e1 = _add_dfa(nfa, self)
        nfa.add_eps(hub, s1)
        nfa.add_eps(e1, hub)
        nfa.start = nfa.accept = hub
        return _determinize(nfa, limits)

    # -- sampling -------------------------------------------------------------------------------
    def sample(self, rng: random.Random, *, stop: float = 0.3, max_len: int = 40) -> str | None:
        """A random accepted string (``None`` if the language is empty).

        Walks live edges; at a final state stops with probability ``stop``; after ``max_len``
        code points heads for the nearest final state.
        """
        d = self.minimize()
        if d.is_empty():
            return None
        dist = _distance_to_final(d)
        out: list[str] = []
        state = 0
        while True:
            es = d.edges[state]
            if state in d.finals and (not es or rng.random() < stop or len(out) >= max_len):
                return "".join(out)
            if len(out) >= max_len:
                es = tuple(e for e in es if dist[e[1]] < dist[state])
            cs, state = rng.choice(es)
            out.append(chr(_random_cp(cs, rng)))

    def __repr__(self) -> str:
        lines = [f"Dfa({self.n_states} states, finals={sorted(self.finals)})"]
        for s, es in enumerate(self.edges[:50]):
            lines.append(f"  {s}: " + ", ".join(f"{cs!r}->{t}" for cs, t in es))
        return "\n".join(lines)


def _random_cp(cs: CharSet, rng: random.Random) -> int:
    for _ in range(20):
        lo, hi = rng.choice(cs.ranges)
        if rng.random() < 0.5:
            hi = min(hi, lo + 3)  # favour range ends: they are where bugs live
        cp = rng.randint(lo, hi)
        if not 0xD800 <= cp <= 0xDFFF:
            return cp
    return cs.ranges[0][0]


def _distance_to_final(d: Dfa) -> list[int]:
    inf = d.n_states + 1
    dist = [0 if s in d.finals else inf for s in range(d.n_states)]
    changed = True
    while changed:
        changed = False
        for s, es in enumerate(d.edges):
            for _, t in es:
                if dist[t] + 1 < dist[s]:
                    dist[s] = dist[t] + 1
                    changed = True
    return dist


def _is_acyclic(d: Dfa) -> bool:
    color = [0] * d.n_states  # 0 new, 1 on stack, 2 done
    for root in range(d.n_states):
        if color[root]:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        color[root] = 1
        while stack:
            s, i = stack[-1]
            es = d.edges[s]
            if i < len(es):
                stack[-1] = (s, i + 1)
                t = es[i][1]
                if color[t] == 1:
                    return False
                if color[t] == 0:
                    color[t] = 1
                    stack.append((t, 0))
            else:
                color[s] = 2
                stack.pop()
    return True


def _product(a: Dfa, b: Dfa, mode: str, limits: Limits) -> Dfa:
    atoms, members = atomize([cs for d in (a, b) for es in d.edges for cs, _ in es])
    n_atoms = len(atoms)
    ta = dense_table(a.edges, n_atoms, members)
    tb = dense_table(b.edges, n_atoms, members)
    none = [-1] * n_atoms
    states: StateTable[tuple[int, int]] = StateTable((0, 0), limits)
    index, order = states.index, states.order
    trans: list[list[int]] = []
    finals: set[int] = set()
    i = 0
    while i < len(order):
        p, q = order[i]
        ra = ta[p] if p >= 0 else none
        rb = tb[q] if q >= 0 else none
        row = [-1] * n_atoms
        for x in range(n_atoms):
            p2, q2 = ra[x], rb[x]
            if mode == "and":
                if p2 < 0 or q2 < 0:
                    continue
            elif mode == "diff":
                if p2 < 0:
                    continue
            elif p2 < 0 and q2 < 0:
                continue
            key = (p2, q2)
            j = index.get(key)
            row[x] = states.add(key) if j is None else j
        trans.append(row)
        fa = p >= 0 and p in a.finals
        fb = q >= 0 and q in b.finals
        if _combine(mode, fa, fb):
            finals.add(i)
        i += 1
    return _minimize(atoms, trans, finals)


def _combine(mode: str, fa: bool, fb: bool) -> bool:
    if mode == "and":
        return fa and fb
    if mode == "or":
        return fa or fb
    return fa and not fb


# -- lowering to IR -----------------------------------------------------------------------------

#: how one code point of a class is written: :func:`encode_charset` for raw UTF-8 (``"raw"``),
#: or a caller's encoder (``toolmask.schema._json_text.json_string_char`` writes the canonical
#: JSON string escape), given a CharSet and returning its IR
Encoding = Literal["raw"] | Callable[[CharSet], Node]


def dfa_bytes(d: Dfa) -> int:
    """An estimate of the bytes a :class:`Dfa` holds (states, edges and their character
    classes). O(edges)."""
    return 64 + sum(72 + sum(64 + 16 * len(cs.ranges) for cs, _ in es) for es in d.edges)


@memo("grammar.encoded_charsets", limit="max_memo_entries", entry_bytes=node_bytes)
def encode_charset(cs: CharSet, encoding: Encoding = "raw") -> Node:
    """One code point of ``cs`` in ``encoding``: raw UTF-8, a single code point as a literal
    (so that :func:`seq` fuses neighbouring literals); or ``encoding(cs)``. Memoised in the
    cache set in use (:func:`toolmask._cache.memo`)."""
    if encoding != "raw":
        return encoding(cs)
    if len(cs.ranges) == 1 and cs.ranges[0][0] == cs.ranges[0][1]:
        cp = cs.ranges[0][0]
        if not 0xD800 <= cp <= 0xDFFF:
            return lit(chr(cp))
    return utf8_node(cs)


def _node_size(n: Node) -> int:
    return sum(1 for _ in iter_nodes(n))


def dfa_to_rules(
    dfa: Dfa, prefix: str, *, encoding: Encoding, inline_max_nodes: int = 400
) -> tuple[Node, tuple[Rule, ...]]:
    """Lower ``dfa`` to an entry node and right-linear rules.

    Rule ``{prefix}_s{i} ::= enc(C1) {prefix}_s{j} | enc(C2) {prefix}_s{k} | ... | ""`` (the
    empty alternative iff ``i`` is final), one alternative per target state, dead states removed.
    Every Dfa operation returns a minimal DFA, so none is minimised here (a hand-built, non-minimal
    DFA lowers correctly, only to more rules). When the language is finite and its tree has at most
    ``inline_max_nodes`` nodes, the entry node is that tree and no rules are returned. Cost:
    O(states + edges) rules, each edge's size that of its UTF-8 / JSON encoding.
    """
    d = dfa
    if d.is_empty():
        return NOTHING, ()
    enc: dict[CharSet, Node] = {}
    for es in d.edges:
        for cs, _ in es:
            if cs not in enc:
                enc[cs] = encode_charset(cs, encoding)
    if _is_acyclic(d):
        node = _acyclic_node(d, enc, inline_max_nodes)
        if node is not None:
            return node, ()
    names = [f"{prefix}_s{i}" for i in range(d.n_states)]
    # a final state without edges needs no rule: a transition into it just ends the string
    leaf = {s for s in range(1, d.n_states) if not d.edges[s]}
    rules: list[Rule] = []
    for i, es in enumerate(d.edges):
        if i in leaf:
            continue
        alts = [enc[cs] if t in leaf else seq(enc[cs], RuleRef(names[t])) for cs, t in es]
        if i in d.finals:
            alts.append(EMPTY)
        rules.append(Rule(names[i], choice(*alts)))
    return RuleRef(names[0]), tuple(rules)


def _acyclic_node(d: Dfa, enc: dict[CharSet, Node], max_nodes: int) -> Node | None:
    sizes: dict[int, int] = {}
    # post-order over an acyclic graph: states reachable later have larger BFS numbers is not
    # guaranteed, so compute sizes with an explicit stack
    order: list[int] = []
    seen: set[int] = set()
    stack: list[tuple[int, bool]] = [(0, False)]
    while stack:
        s, done = stack.pop()
        if done:
            order.append(s)
            continue
        if s in seen:
            continue
        seen.add(s)
        stack.append((s, True))
        for _, t in d.edges[s]:
            if t not in seen:
                stack.append((t, False))
    for s in order:
        total = 1 + sum(_node_size(enc[cs]) + sizes[t] + 1 for cs, t in d.edges[s])
        if total > max_nodes:
            return None
        sizes[s] = total
    nodes: dict[int, Node] = {}
    for s in order:
        alts = [seq(enc[cs], nodes[t]) for cs, t in d.edges[s]]
        if s in d.finals:
            alts.append(EMPTY)
        nodes[s] = choice(*alts)
    return nodes[0]


def dfa_to_node(dfa: Dfa, *, encoding: Encoding = "raw", max_nodes: int = 2_000) -> Node | None:
    """One rule-free IR tree for the language (state elimination), or ``None`` when the tree
    would exceed ``max_nodes`` nodes. Exact; exponential in the worst case, hence the bound."""
    d = dfa.minimize()
    if d.is_empty():
        return NOTHING
    enc = {cs: encode_charset(cs, encoding) for es in d.edges for cs, _ in es}
    if _is_acyclic(d):
        return _acyclic_node(d, enc, max_nodes)
    if sum(len(es) for es in d.edges) > max_nodes:
        return None
    n = d.n_states
    start, final = n, n + 1
    out: dict[int, dict[int, Node]] = {s: {} for s in range(n + 2)}
    size: dict[tuple[int, int], int] = {}  # upper bounds of the node sizes of out[p][q]
    into: dict[int, set[int]] = {s: set() for s in range(n + 2)}

    def add(p: int, q: int, node: Node, node_size: int) -> bool:
        old = out[p].get(q)
        if old is None:
            out[p][q] = node
            size[p, q] = node_size
        else:
            out[p][q] = choice(old, node)
            size[p, q] += node_size + 1
        into[q].add(p)
        return size[p, q] <= max_nodes

    add(start, 0, EMPTY, 1)
    for s, es in enumerate(d.edges):
        for cs, t in es:
            add(s, t, enc[cs], _node_size(enc[cs]))
        if s in d.finals:
            add(s, final, EMPTY, 1)
    remaining = set(range(n))
    while remaining:
        k = min(remaining, key=lambda s: len(into[s]) * len(out[s]))
        remaining.discard(k)
        loop = out[k].pop(k, None)
        loop_size = size.pop((k, k), 0)
        into[k].discard(k)
        mid = star(loop) if loop is not None else EMPTY
        succ = out.pop(k)
        preds = into.pop(k)
        for p in preds:
            head = out[p].pop(k)
            head_size = size.pop((p, k))
            for q, tail in succ.items():
                node_size = head_size + loop_size + size[k, q] + 2
                if node_size > max_nodes or not add(p, q, seq(head, mid, tail), node_size):
                    return None
        for q in succ:
            into[q].discard(k)
    result = out[start].get(final, NOTHING)
    if _node_size(result) > max_nodes:
        return None
    return result
