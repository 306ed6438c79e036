"""Deterministic automata over Unicode code points, and their lowering to grammar rules.

A :class:`Dfa` has states ``0..n-1`` with start state ``0``; each state has a tuple of outgoing
edges ``(CharSet, target)`` whose sets are pairwise disjoint (a code point on no edge leads to the
implicit dead state). Every operation that builds a DFA works on an *atom partition* of the
alphabet: the coarsest set of disjoint :class:`CharSet` s such that every edge label is a union of
atoms. Transition tables are then dense ``state x atom`` lists, which keeps the algorithms the
textbook ones (subset construction, product construction, Hopcroft's minimisation) while the
alphabet stays all of Unicode.

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

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from toolmask._cache import compiler_memo
from toolmask.errors import LimitError
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
from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = [
    "BOL",
    "EOL",
    "EPS",
    "NOT_WORD_BOUNDARY",
    "WORD_BOUNDARY",
    "WORD_CHARS",
    "Dfa",
    "Encoding",
    "Nfa",
    "dfa_bytes",
    "dfa_to_node",
    "dfa_to_rules",
    "encode_charset",
]


#: ECMA-262 ``\w`` (without the ``i`` flag): the characters a word boundary looks at
WORD_CHARS = CharSet.of([(0x30, 0x39), (0x41, 0x5A), 0x5F, (0x61, 0x7A)])

# epsilon-edge conditions of an Nfa
EPS = 0  #: unconditional
BOL = 1  #: ``^``: at the start of the string
EOL = 2  #: ``$``: at the end of the string
WORD_BOUNDARY = 3  #: ``\b``
NOT_WORD_BOUNDARY = 4  #: ``\B``
LOOKAHEAD = 16  #: ``LOOKAHEAD + k``: passes lookahead ``k`` of :attr:`Nfa.looks`

# contexts: the character before (prev) / after (next) the current position
_EDGE = 0  # start of string (prev) or end of string (next)
_NONWORD = 1
_WORD = 2


def _limit_error(limits: Limits) -> LimitError:
    return LimitError(
        f"automaton needs more than {limits.max_dfa_states} states", limit="max_dfa_states"
    )


# -- NFA ---------------------------------------------------------------------------------------


class Nfa:
    """A Thompson-style NFA over code points, with conditional epsilon edges (anchors, ``\\b``).

    ``chars[q]`` lists ``(CharSet, target)`` edges, ``eps[q]`` lists ``(condition, target)``
    edges where condition is one of :data:`EPS`, :data:`BOL`, :data:`EOL`, :data:`WORD_BOUNDARY`,
    :data:`NOT_WORD_BOUNDARY`, or ``LOOKAHEAD + k`` for the lookahead ``looks[k] = (start,
    accept, negative)``: a fragment of this NFA (without lookaheads of its own) that the rest of
    the input, from where the edge is passed, must (``negative``: must not) start with a match
    of. There is one start and one accepting state.
    """

    __slots__ = ("accept", "chars", "eps", "looks", "start")

    def __init__(self) -> None:
        self.chars: list[list[tuple[CharSet, int]]] = []
        self.eps: list[list[tuple[int, int]]] = []
        self.looks: list[tuple[int, int, bool]] = []
        self.start = 0
        self.accept = 0

    def __len__(self) -> int:
        return len(self.chars)

    def add_state(self) -> int:
        self.chars.append([])
        self.eps.append([])
        return len(self.chars) - 1

    def add_char(self, p: int, cs: CharSet, q: int) -> None:
        if cs:
            self.chars[p].append((cs, q))

    def add_eps(self, p: int, q: int, cond: int = EPS) -> None:
        self.eps[p].append((cond, q))

    def add_lookahead(self, p: int, q: int, start: int, accept: int, *, negative: bool) -> None:
        """An epsilon edge ``p -> q`` guarded by the lookahead fragment ``start .. accept``."""
        self.looks.append((start, accept, negative))
        self.eps[p].append((LOOKAHEAD + len(self.looks) - 1, q))

    def add_dfa(self, dfa: Dfa) -> tuple[int, int]:
        """Copy ``dfa`` in; returns its (entry, exit) states (exit reached by epsilon)."""
        base = len(self.chars)
        for _ in range(dfa.n_states):
            self.add_state()
        out = self.add_state()
        for s, es in enumerate(dfa.edges):
            for cs, t in es:
                self.add_char(base + s, cs, base + t)
            if s in dfa.finals:
                self.add_eps(base + s, out)
        return base, out


# -- atoms ---------------------------------------------------------------------------------------


def _atomize(sets: Iterable[CharSet]) -> tuple[list[CharSet], dict[CharSet, list[int]]]:
    """The coarsest partition of the union of ``sets`` refining each of them.

    Returns the atoms and, for every distinct non-empty input set, the indices of its atoms.
    """
    distinct = list(dict.fromkeys(s for s in sets if s))
    points = sorted({p for s in distinct for lo, hi in s.ranges for p in (lo, hi + 1)})
    index = {p: i for i, p in enumerate(points)}
    sigs: list[list[int]] = [[] for _ in points]
    for k, s in enumerate(distinct):
        for lo, hi in s.ranges:
            for i in range(index[lo], index[hi + 1]):
                sigs[i].append(k)
    groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for i, sig in enumerate(sigs):
        if sig:
            groups.setdefault(tuple(sig), []).append((points[i], points[i + 1] - 1))
    atoms: list[CharSet] = []
    members: dict[CharSet, list[int]] = {s: [] for s in distinct}
    for sig_key, ranges in groups.items():
        a = len(atoms)
        atoms.append(CharSet(tuple(ranges)) if _disjoint_sorted(ranges) else _cs(ranges))
        for k in sig_key:
            members[distinct[k]].append(a)
    return atoms, members


def _disjoint_sorted(ranges: list[tuple[int, int]]) -> bool:
    return all(ranges[i][1] + 1 < ranges[i + 1][0] for i in range(len(ranges) - 1))


def _cs(ranges: Iterable[tuple[int, int]]) -> CharSet:
    return CharSet.from_ranges(ranges)


def _union(sets: Iterable[CharSet]) -> CharSet:
    return CharSet.from_ranges(r for s in sets for r in s.ranges)


def _table(dfa: Dfa, n_atoms: int, members: dict[CharSet, list[int]]) -> list[list[int]]:
    rows: list[list[int]] = []
    for es in dfa.edges:
        row = [-1] * n_atoms
        for cs, t in es:
            for a in members[cs]:
                row[a] = t
        rows.append(row)
    return rows


# -- minimisation ---------------------------------------------------------------------------------


def _minimize(atoms: Sequence[CharSet], trans: Sequence[Sequence[int]], finals: set[int]) -> Dfa:
    """Hopcroft's algorithm on a dense table (``-1`` = dead); returns a canonical minimal DFA."""
    n = len(trans)
    n_atoms = len(atoms)
    reach = [False] * n
    reach[0] = True
    stack = [0]
    while stack:
        s = stack.pop()
        for t in trans[s]:
            if t >= 0 and not reach[t]:
                reach[t] = True
                stack.append(t)
    rev: list[list[int]] = [[] for _ in range(n)]
    for s in range(n):
        if reach[s]:
            for t in set(trans[s]):
                if t >= 0:
                    rev[t].append(s)
    live = [False] * n
    stack = [f for f in finals if reach[f]]
    for f in stack:
        live[f] = True
    while stack:
        t = stack.pop()
        for s in rev[t]:
            if not live[s]:
                live[s] = True
                stack.append(s)
    if not live[0]:
        return Dfa.empty()
    states = [s for s in range(n) if live[s]]
    ids = [-1] * n
    for i, s in enumerate(states):
        ids[s] = i
    m = len(states)
    dead = m
    table = [[ids[t] if t >= 0 and ids[t] >= 0 else dead for t in trans[s]] for s in states]
    table.append([dead] * n_atoms)

    fin = {ids[f] for f in finals if f >= 0 and ids[f] >= 0}
    rest = set(range(m + 1)) - fin
    blocks: list[set[int]] = [set(fin), rest]
    block = [0] * (m + 1)
    for s in rest:
        block[s] = 1
    inv: list[dict[int, list[int]]] = [{} for _ in range(n_atoms)]
    for s, row in enumerate(table):
        for a in range(n_atoms):
            inv[a].setdefault(row[a], []).append(s)
    smaller = 0 if len(fin) <= len(rest) else 1
    work: set[tuple[int, int]] = {(smaller, a) for a in range(n_atoms)}
    while work:
        b, a = work.pop()
        inv_a = inv[a]
        touched: dict[int, list[int]] = {}
        for t in blocks[b]:
            for s in inv_a.get(t, ()):
                touched.setdefault(block[s], []).append(s)
        for y, ys in touched.items():
            whole = blocks[y]
            if len(ys) == len(whole):
                continue
            new_block = set(ys)
            whole -= new_block
            nb = len(blocks)
            blocks.append(new_block)
            for s in ys:
                block[s] = nb
            small = nb if len(new_block) <= len(whole) else y
            for c in range(n_atoms):
                if (y, c) in work:
                    work.add((nb, c))
                else:
                    work.add((small, c))

    dead_block = block[dead]
    rep: dict[int, int] = {}
    for s in range(m):
        rep.setdefault(block[s], s)
    order = [block[0]]
    num = {block[0]: 0}
    edges_out: list[tuple[tuple[CharSet, int], ...]] = []
    i = 0
    while i < len(order):
        row = table[rep[order[i]]]
        by_target: dict[int, list[int]] = {}
        for a in range(n_atoms):
            tb = block[row[a]]
            if tb != dead_block:
                by_target.setdefault(tb, []).append(a)
        es = [(_union(atoms[a] for a in al), tb) for tb, al in by_target.items()]
        es.sort(key=lambda e: e[0].ranges[0][0])
        for _, tb in es:
            if tb not in num:
                num[tb] = len(order)
                order.append(tb)
        edges_out.append(tuple((cs, num[tb]) for cs, tb in es))
        i += 1
    finals_out = frozenset(k for k, bk in enumerate(order) if rep[bk] in fin)
    return Dfa(tuple(edges_out), finals_out)


# -- the DFA ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dfa:
    """An immutable DFA over code points: start state 0, ``edges[s]`` = ``((CharSet, t), ...)``.

    Invariant: the CharSets of one state are pairwise disjoint and non-empty; targets are in range.
    """

    edges: tuple[tuple[tuple[CharSet, int], ...], ...]
    finals: frozenset[int]

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
                    if nxt >= limits.max_dfa_states:
                        raise _limit_error(limits)
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
        if top + 1 > limits.max_dfa_states:
            raise _limit_error(limits)
        edges: list[tuple[tuple[CharSet, int], ...]] = [((universe, i + 1),) for i in range(top)]
        edges.append(((universe, top),) if max is None else ())
        return Dfa(tuple(edges), frozenset(range(min, top + 1)))

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

    def is_equivalent(self, other: Dfa) -> bool:
        return self.minimize() == other.minimize()

    def alphabet(self) -> CharSet:
        """The code points appearing on some edge."""
        return _union(cs for es in self.edges for cs, _ in es)

    # -- algebra --------------------------------------------------------------------------------
    def minimize(self) -> Dfa:
        """The canonical minimal DFA of the same language (dead states removed)."""
        atoms, members = _atomize(cs for es in self.edges for cs, _ in es)
        return _minimize(atoms, _table(self, len(atoms), members), set(self.finals))

    def intersect(self, other: Dfa, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        return _product(self, other, "and", limits)

    def union(self, other: Dfa, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        return _product(self, other, "or", limits)

    def difference(self, other: Dfa, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        """Strings of ``self`` not in ``other``."""
        return _product(self, other, "diff", limits)

    def complement(self, universe: CharSet = ANY_CHAR, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        """All strings over ``universe`` not in the language."""
        if self.n_states + 1 > limits.max_dfa_states:
            raise _limit_error(limits)
        atoms, members = _atomize([universe, *(cs for es in self.edges for cs, _ in es)])
        keep = [a for a in members.get(universe, [])]
        rows = _table(self, len(atoms), members)
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
        s1, e1 = nfa.add_dfa(self)
        s2, e2 = nfa.add_dfa(other)
        nfa.add_eps(e1, s2)
        nfa.start, nfa.accept = s1, e2
        return _determinize(nfa, limits)

    def star(self, *, limits: Limits = DEFAULT_LIMITS) -> Dfa:
        nfa = Nfa()
        hub = nfa.add_state()
        s1, e1 = nfa.add_dfa(self)
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
    atoms, members = _atomize([cs for d in (a, b) for es in d.edges for cs, _ in es])
    n_atoms = len(atoms)
    ta = _table(a, n_atoms, members)
    tb = _table(b, n_atoms, members)
    none = [-1] * n_atoms
    index: dict[tuple[int, int], int] = {(0, 0): 0}
    order: list[tuple[int, int]] = [(0, 0)]
    trans: list[list[int]] = []
    finals: set[int] = set()
    cap = limits.max_dfa_states
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
            if j is None:
                j = len(order)
                if j >= cap:
                    raise _limit_error(limits)
                index[key] = j
                order.append(key)
            row[x] = j
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


def _determinize(nfa: Nfa, limits: Limits) -> Dfa:
    if nfa.looks:
        return _determinize_lookahead(nfa, limits)
    conds = {c for row in nfa.eps for c, _ in row}
    has_word = bool(conds & {WORD_BOUNDARY, NOT_WORD_BOUNDARY})
    has_bol = BOL in conds
    has_assert = bool(conds - {EPS})
    sets = [cs for row in nfa.chars for cs, _ in row]
    if has_word:
        sets.append(WORD_CHARS)
    atoms, members = _atomize(sets)
    groups = (_NONWORD, _WORD) if has_word else (_NONWORD,)
    atom_ctx = [_WORD if has_word and a.ranges[0][0] in WORD_CHARS else _NONWORD for a in atoms]
    by_ctx: dict[CharSet, tuple[list[int], list[int], list[int]]] = {
        cs: (
            [],
            [a for a in al if atom_ctx[a] == _NONWORD],
            [a for a in al if atom_ctx[a] == _WORD],
        )
        for cs, al in members.items()
    }
    acc = nfa.accept
    sink = -1
    if not nfa.eps[acc] and any(t == acc and cs == ANY_CHAR for cs, t in nfa.chars[acc]):
        sink = acc
    chars = nfa.chars
    eps = nfa.eps

    def norm(ctx: int) -> int:
        if ctx == _WORD and not has_word:
            return _NONWORD
        if ctx == _EDGE and not has_bol:
            return _NONWORD
        return ctx

    plain: dict[frozenset[int], frozenset[int]] = {}

    def closure(s: frozenset[int], prev: int, nxt: int) -> frozenset[int]:
        if not has_assert:
            hit = plain.get(s)
            if hit is not None:
                return hit
        seen = set(s)
        stack = list(s)
        while stack:
            q = stack.pop()
            for cond, t in eps[q]:
                if t in seen:
                    continue
                if cond != EPS:
                    if cond == BOL:
                        ok = prev == _EDGE
                    elif cond == EOL:
                        ok = nxt == _EDGE
                    elif cond == WORD_BOUNDARY:
                        ok = (prev == _WORD) != (nxt == _WORD)
                    else:
                        ok = (prev == _WORD) == (nxt == _WORD)
                    if not ok:
                        continue
                seen.add(t)
                stack.append(t)
        out = frozenset(seen)
        if not has_assert:
            plain[s] = out
        return out

    start_key = (frozenset({nfa.start}), norm(_EDGE))
    index: dict[tuple[frozenset[int], int], int] = {start_key: 0}
    order = [start_key]
    trans: list[list[int]] = []
    finals: set[int] = set()
    n_atoms = len(atoms)
    cap = limits.max_dfa_states
    sink_key = (frozenset({sink}), _NONWORD)
    i = 0
    while i < len(order):
        cur, prev = order[i]
        row = [-1] * n_atoms
        if acc in closure(cur, prev, _EDGE):
            finals.add(i)
        for g in groups:
            c = closure(cur, prev, g)
            tgt: dict[int, set[int]] = {}
            for q in c:
                for cs, t in chars[q]:
                    for a in by_ctx[cs][g]:
                        ts = tgt.get(a)
                        if ts is None:
                            tgt[a] = {t}
                        else:
                            ts.add(t)
            interned: dict[frozenset[int], int] = {}
            for a, ts in tgt.items():
                fs = frozenset(ts)
                j = interned.get(fs)
                if j is None:
                    key = sink_key if sink in fs else (fs, norm(g))
                    j = index.get(key)
                    if j is None:
                        j = len(order)
                        if j >= cap:
                            raise _limit_error(limits)
                        index[key] = j
                        order.append(key)
                    interned[fs] = j
                row[a] = j
        trans.append(row)
        i += 1
    return _minimize(atoms, trans, finals)


# -- lowering to IR -----------------------------------------------------------------------------

#: how one code point of a class is written: :func:`encode_charset` for raw UTF-8 (``"raw"``),
#: or a caller's encoder (``toolmask.schema._json_text.json_string_char`` writes the canonical
#: JSON string escape), given a CharSet and returning its IR
Encoding = Literal["raw"] | Callable[[CharSet], Node]


def dfa_bytes(d: Dfa) -> int:
    """An estimate of the bytes a :class:`Dfa` holds (states, edges and their character
    classes). O(edges)."""
    return 64 + sum(72 + sum(64 + 16 * len(cs.ranges) for cs, _ in es) for es in d.edges)


@compiler_memo("grammar.encoded_charsets", limit="max_memo_entries", entry_bytes=node_bytes)
def encode_charset(cs: CharSet, encoding: Encoding = "raw") -> Node:
    """One code point of ``cs`` in ``encoding``: raw UTF-8, a single code point as a literal
    (so that :func:`seq` fuses neighbouring literals); or ``encoding(cs)``. Memoised in the
    active GrammarCompiler."""
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


# -- lookahead ---------------------------------------------------------------------------------

#: one pending lookahead: its index and the (epsilon-closed, or just stepped) states of its
#: fragment
_Obligation = tuple[int, frozenset[int]]
#: one run of the main automaton: its state and the lookaheads it still has to honour
_Thread = tuple[int, frozenset[_Obligation]]


def _determinize_lookahead(nfa: Nfa, limits: Limits) -> Dfa:
    """Subset construction for an NFA with lookahead edges (see :class:`Nfa`).

    A lookahead reads the same input as the main automaton from the position it is passed, so
    a run of the main automaton carries its *obligations*: for each lookahead it passed and that
    is not settled yet, the states the lookahead's fragment has reached. A DFA state is the set
    of such runs (plus the previous code point's context, for anchors and word boundaries). At
    each position the runs are epsilon-closed under that context; an obligation whose fragment
    reaches its accepting state is settled there: a positive one is met (dropped), a negative
    one is broken (the run dies). Reading a code point steps every run and its obligations; a
    positive obligation with no fragment state left kills its run, a negative one is met. At the
    end of the input a run accepts when it is in the accepting state with no positive
    obligation pending. So ``X(?=B)Y`` is ``X`` followed by ``Y... ∩ B.*`` and ``(?!B)`` the
    complement, computed on the fly, also inside repetitions (``((?!ab).)*``): the language
    stays regular and the DFA exact. Costs as subset construction, over runs instead of states.
    """
    conds = {c for row in nfa.eps for c, _ in row if c < LOOKAHEAD}
    has_word = bool(conds & {WORD_BOUNDARY, NOT_WORD_BOUNDARY})
    has_bol = BOL in conds
    sets = [cs for row in nfa.chars for cs, _ in row]
    if has_word:
        sets.append(WORD_CHARS)
    atoms, members = _atomize(sets)
    groups = (_NONWORD, _WORD) if has_word else (_NONWORD,)
    atom_ctx = [_WORD if has_word and a.ranges[0][0] in WORD_CHARS else _NONWORD for a in atoms]
    chars, eps, looks, acc = nfa.chars, nfa.eps, nfa.looks, nfa.accept
    # per NFA state: atom -> targets
    step_of: list[dict[int, list[int]]] = []
    for edges in chars:
        by_atom: dict[int, list[int]] = {}
        for cs, t in edges:
            for a in members[cs]:
                by_atom.setdefault(a, []).append(t)
        step_of.append(by_atom)
    sink = -1
    if not eps[acc] and any(t == acc and cs == ANY_CHAR for cs, t in chars[acc]):
        sink = acc  # search mode: once here, the rest of the input does not matter

    def norm(ctx: int) -> int:
        if ctx == _WORD and not has_word:
            return _NONWORD
        if ctx == _EDGE and not has_bol:
            return _NONWORD
        return ctx

    def passes(cond: int, prev: int, nxt: int) -> bool:
        if cond == EPS:
            return True
        if cond == BOL:
            return prev == _EDGE
        if cond == EOL:
            return nxt == _EDGE
        if cond == WORD_BOUNDARY:
            return (prev == _WORD) != (nxt == _WORD)
        return (prev == _WORD) == (nxt == _WORD)

    def close_plain(states: frozenset[int], prev: int, nxt: int) -> frozenset[int]:
        seen = set(states)
        stack = list(states)
        while stack:
            q = stack.pop()
            for cond, t in eps[q]:
                if t not in seen and passes(cond, prev, nxt):
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def settle(obs: frozenset[_Obligation], prev: int, nxt: int) -> frozenset[_Obligation] | None:
        out: list[_Obligation] = []
        for k, states in obs:
            closed = close_plain(states, prev, nxt)
            if looks[k][1] in closed:
                if looks[k][2]:
                    return None  # a negative lookahead matched here: the run dies
                continue  # a positive one is met
            out.append((k, closed))
        return frozenset(out)

    def close(threads: frozenset[_Thread], prev: int, nxt: int) -> set[_Thread]:
        seen: set[_Thread] = set()
        stack: list[_Thread] = []
        for q, obs in threads:
            settled = settle(obs, prev, nxt)
            if settled is not None:
                stack.append((q, settled))
        while stack:
            th = stack.pop()
            if th in seen:
                continue
            seen.add(th)
            q, obs = th
            for cond, t in eps[q]:
                if cond < LOOKAHEAD:
                    if passes(cond, prev, nxt):
                        stack.append((t, obs))
                    continue
                k = cond - LOOKAHEAD
                start, accept, negative = looks[k]
                body = close_plain(frozenset({start}), prev, nxt)
                if accept in body:
                    if not negative:
                        stack.append((t, obs))  # met at once
                    continue  # a negative one is broken at once
                stack.append((t, obs | {(k, body)}))
        return seen

    def step_states(states: frozenset[int], a: int) -> frozenset[int]:
        return frozenset(t for q in states for t in step_of[q].get(a, ()))

    start_key: tuple[frozenset[_Thread], int] = (
        frozenset({(nfa.start, frozenset())}),
        norm(_EDGE),
    )
    index: dict[tuple[frozenset[_Thread], int], int] = {start_key: 0}
    order = [start_key]
    trans: list[list[int]] = []
    finals: set[int] = set()
    n_atoms = len(atoms)
    cap = limits.max_dfa_states
    sink_thread: _Thread = (sink, frozenset())
    i = 0
    while i < len(order):
        cur, prev = order[i]
        row = [-1] * n_atoms
        for q, obs in close(cur, prev, _EDGE):
            if q == acc and not any(not looks[k][2] for k, _ in obs):
                finals.add(i)
                break
        for g in groups:
            closed = close(cur, prev, g)
            for a in range(n_atoms):
                if atom_ctx[a] != g:
                    continue
                nxt_threads: set[_Thread] = set()
                for q, obs in closed:
                    targets = step_of[q].get(a)
                    if not targets:
                        continue
                    stepped: list[_Obligation] = []
                    alive = True
                    for k, states in obs:
                        moved = step_states(states, a)
                        if moved:
                            stepped.append((k, moved))
                        elif not looks[k][2]:
                            alive = False  # a positive lookahead can no longer match
                            break
                    if alive:
                        fo = frozenset(stepped)
                        nxt_threads.update((t, fo) for t in targets)
                if not nxt_threads:
                    continue
                key = (
                    (frozenset({sink_thread}), _NONWORD)
                    if sink_thread in nxt_threads
                    else (frozenset(nxt_threads), norm(g))
                )
                j = index.get(key)
                if j is None:
                    j = len(order)
                    if j >= cap:
                        raise _limit_error(limits)
                    index[key] = j
                    order.append(key)
                row[a] = j
        trans.append(row)
        i += 1
    return _minimize(atoms, trans, finals)
