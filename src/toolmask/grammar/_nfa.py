"""NFAs over code points and the constructions every DFA is built with.

:class:`Nfa` is a Thompson-style NFA with conditional epsilon edges (anchors, word boundaries,
lookaheads). :func:`determinize` is the subset construction, :func:`atomize` the atom partition
of the alphabet (the coarsest set of disjoint :class:`CharSet` s refining every edge label, so
transition tables are dense ``state x atom`` lists), :func:`minimize` Hopcroft's algorithm on
such a table, and :class:`StateTable` numbers the states a construction discovers under
``Limits.max_dfa_states``. They work on plain tables: :class:`~toolmask.grammar.Dfa`
(``_fsm``) wraps what :func:`minimize` returns.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Generic, TypeAlias, TypeVar

from toolmask.errors import LimitError
from toolmask.grammar._charset import ANY_CHAR, CharSet
from toolmask.limits import Limits

__all__ = [
    "BOL",
    "EMPTY_LANGUAGE",
    "EOL",
    "EPS",
    "LOOKAHEAD",
    "NOT_WORD_BOUNDARY",
    "WORD_BOUNDARY",
    "WORD_CHARS",
    "Edges",
    "Nfa",
    "StateTable",
    "Tables",
    "atomize",
    "check_states",
    "dense_table",
    "determinize",
    "limit_error",
    "minimize",
    "union_of",
]

#: a DFA's edges: per state, ``((CharSet, target), ...)``
Edges: TypeAlias = tuple[tuple[tuple[CharSet, int], ...], ...]
#: what a construction hands to :func:`minimize`: atoms, the dense table, the final states
Tables: TypeAlias = tuple[list[CharSet], list[list[int]], set[int]]
#: the edges and finals of the empty language
EMPTY_LANGUAGE: tuple[Edges, frozenset[int]] = (((),), frozenset())

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


def limit_error(limits: Limits) -> LimitError:
    return LimitError(
        f"automaton needs more than {limits.max_dfa_states} states", limit="max_dfa_states"
    )


def check_states(n: int, limits: Limits) -> None:
    """LimitError when an automaton would have ``n`` states, more than ``max_dfa_states``."""
    if n > limits.max_dfa_states:
        raise limit_error(limits)


K = TypeVar("K", bound=Hashable)


class StateTable(Generic[K]):
    """The states a construction discovers, numbered in order (the first key is state 0):
    ``index`` (key -> number) and ``order`` (number -> key), at most ``max_dfa_states`` of
    them. The constructions look a key up in ``index`` themselves (the hot path, one dict
    lookup) and call :meth:`add` for a new one."""

    __slots__ = ("cap", "index", "limits", "order")

    def __init__(self, start: K, limits: Limits) -> None:
        self.index: dict[K, int] = {start: 0}
        self.order: list[K] = [start]
        self.limits = limits
        self.cap = limits.max_dfa_states

    def add(self, key: K) -> int:
        """Number a key not seen yet; LimitError past ``max_dfa_states`` states."""
        j = len(self.order)
        if j >= self.cap:
            raise limit_error(self.limits)
        self.index[key] = j
        self.order.append(key)
        return j


# -- NFA ----------------------------------------------------------------------------------------


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


# -- atoms --------------------------------------------------------------------------------------


def atomize(sets: Iterable[CharSet]) -> tuple[list[CharSet], dict[CharSet, list[int]]]:
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


def union_of(sets: Iterable[CharSet]) -> CharSet:
    return CharSet.from_ranges(r for s in sets for r in s.ranges)


def dense_table(edges: Edges, n_atoms: int, members: dict[CharSet, list[int]]) -> list[list[int]]:
    """The dense ``state x atom`` table of ``edges`` (``-1``: dead)."""
    rows: list[list[int]] = []
    for es in edges:
        row = [-1] * n_atoms
        for cs, t in es:
            for a in members[cs]:
                row[a] = t
        rows.append(row)
    return rows


# -- minimisation ------------------------------------------------------------------------------


def minimize(
    atoms: Sequence[CharSet], trans: Sequence[Sequence[int]], finals: set[int]
) -> tuple[Edges, frozenset[int]]:
    """Hopcroft's algorithm on a dense table (``-1`` = dead): the edges and final states of
    the canonical minimal DFA (states in breadth-first order from the start, edges sorted by
    their smallest code point)."""
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
        return EMPTY_LANGUAGE
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
    # the same groups of atoms label the edges of many states (every digit, "any other
    # character"): each group's union is built once
    unions: dict[tuple[int, ...], CharSet] = {}
    i = 0
    while i < len(order):
        row = table[rep[order[i]]]
        by_target: dict[int, list[int]] = {}
        for a in range(n_atoms):
            tb = block[row[a]]
            if tb != dead_block:
                by_target.setdefault(tb, []).append(a)
        es = []
        for tb, al in by_target.items():
            key = tuple(al)
            cs = unions.get(key)
            if cs is None:
                cs = unions[key] = union_of(atoms[a] for a in al)
            es.append((cs, tb))
        es.sort(key=lambda e: e[0].ranges[0][0])
        for _, tb in es:
            if tb not in num:
                num[tb] = len(order)
                order.append(tb)
        edges_out.append(tuple((cs, num[tb]) for cs, tb in es))
        i += 1
    finals_out = frozenset(k for k, bk in enumerate(order) if rep[bk] in fin)
    return tuple(edges_out), finals_out


# -- subset construction -----------------------------------------------------------------------


def _universal_states(nfa: Nfa) -> frozenset[int]:
    """The states from which every string is accepted because they loop on every code point
    and reach the accepting state by plain epsilon edges (a search's trailing ``.*``, or an
    operand's such state in a union of automata). A subset holding one of them accepts every
    string from there, so the subset construction makes every such subset one state: without
    that, a union of n unanchored patterns would tell apart the subsets that differ only in
    which operands have already matched, up to 2**n of them, which minimisation then merges
    anyway. O(states + edges)."""
    loops = [
        q for q, row in enumerate(nfa.chars) if any(t == q and cs == ANY_CHAR for cs, t in row)
    ]
    out: set[int] = set()
    for q in loops:
        seen = {q}
        stack = [q]
        while stack and nfa.accept not in seen:
            p = stack.pop()
            for cond, t in nfa.eps[p]:
                if cond == EPS and t not in seen:
                    seen.add(t)
                    stack.append(t)
        if nfa.accept in seen:
            out.add(q)
    return frozenset(out)


def determinize(nfa: Nfa, limits: Limits) -> Tables:
    """Subset construction (with anchor / word-boundary context): the dense tables of a DFA
    for ``nfa``, to :func:`minimize`. LimitError past ``limits.max_dfa_states`` states."""
    if nfa.looks:
        return _LookaheadSubsets(nfa, limits).run()
    conds = {c for row in nfa.eps for c, _ in row}
    has_word = bool(conds & {WORD_BOUNDARY, NOT_WORD_BOUNDARY})
    has_bol = BOL in conds
    has_assert = bool(conds - {EPS})
    sets = [cs for row in nfa.chars for cs, _ in row]
    if has_word:
        sets.append(WORD_CHARS)
    atoms, members = atomize(sets)
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
    universal = _universal_states(nfa)
    sink = min(universal) if universal else -1
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

    states: StateTable[tuple[frozenset[int], int]] = StateTable(
        (frozenset({nfa.start}), norm(_EDGE)), limits
    )
    index, order = states.index, states.order
    trans: list[list[int]] = []
    finals: set[int] = set()
    n_atoms = len(atoms)
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
                    key = sink_key if not universal.isdisjoint(fs) else (fs, norm(g))
                    j = index.get(key)
                    if j is None:
                        j = states.add(key)
                    interned[fs] = j
                row[a] = j
        trans.append(row)
        i += 1
    return atoms, trans, finals


# -- lookahead ---------------------------------------------------------------------------------

#: one pending lookahead: its index and the (epsilon-closed, or just stepped) states of its
#: fragment
_Obligation = tuple[int, frozenset[int]]
#: one run of the main automaton: its state and the lookaheads it still has to honour
_Thread = tuple[int, frozenset[_Obligation]]


class _LookaheadSubsets:
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

    def __init__(self, nfa: Nfa, limits: Limits) -> None:
        conds = {c for row in nfa.eps for c, _ in row if c < LOOKAHEAD}
        self.has_word = bool(conds & {WORD_BOUNDARY, NOT_WORD_BOUNDARY})
        self.has_bol = BOL in conds
        sets = [cs for row in nfa.chars for cs, _ in row]
        if self.has_word:
            sets.append(WORD_CHARS)
        self.atoms, members = atomize(sets)
        self.groups = (_NONWORD, _WORD) if self.has_word else (_NONWORD,)
        self.atom_ctx = [
            _WORD if self.has_word and a.ranges[0][0] in WORD_CHARS else _NONWORD
            for a in self.atoms
        ]
        self.nfa = nfa
        self.limits = limits
        self.eps, self.looks = nfa.eps, nfa.looks
        # per NFA state: atom -> targets
        self.step_of: list[dict[int, list[int]]] = []
        for edges in nfa.chars:
            by_atom: dict[int, list[int]] = {}
            for cs, t in edges:
                for a in members[cs]:
                    by_atom.setdefault(a, []).append(t)
            self.step_of.append(by_atom)
        acc = nfa.accept
        self.sink = -1
        if not nfa.eps[acc] and any(t == acc and cs == ANY_CHAR for cs, t in nfa.chars[acc]):
            self.sink = acc  # search mode: once here, the rest of the input does not matter

    def norm(self, ctx: int) -> int:
        if ctx == _WORD and not self.has_word:
            return _NONWORD
        if ctx == _EDGE and not self.has_bol:
            return _NONWORD
        return ctx

    @staticmethod
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

    def close_plain(self, states: frozenset[int], prev: int, nxt: int) -> frozenset[int]:
        eps, passes = self.eps, self.passes
        seen = set(states)
        stack = list(states)
        while stack:
            q = stack.pop()
            for cond, t in eps[q]:
                if t not in seen and passes(cond, prev, nxt):
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def settle(
        self, obs: frozenset[_Obligation], prev: int, nxt: int
    ) -> frozenset[_Obligation] | None:
        out: list[_Obligation] = []
        for k, states in obs:
            closed = self.close_plain(states, prev, nxt)
            if self.looks[k][1] in closed:
                if self.looks[k][2]:
                    return None  # a negative lookahead matched here: the run dies
                continue  # a positive one is met
            out.append((k, closed))
        return frozenset(out)

    def close(self, threads: frozenset[_Thread], prev: int, nxt: int) -> set[_Thread]:
        seen: set[_Thread] = set()
        stack: list[_Thread] = []
        for q, obs in threads:
            settled = self.settle(obs, prev, nxt)
            if settled is not None:
                stack.append((q, settled))
        while stack:
            th = stack.pop()
            if th in seen:
                continue
            seen.add(th)
            q, obs = th
            for cond, t in self.eps[q]:
                if cond < LOOKAHEAD:
                    if self.passes(cond, prev, nxt):
                        stack.append((t, obs))
                    continue
                k = cond - LOOKAHEAD
                start, accept, negative = self.looks[k]
                body = self.close_plain(frozenset({start}), prev, nxt)
                if accept in body:
                    if not negative:
                        stack.append((t, obs))  # met at once
                    continue  # a negative one is broken at once
                stack.append((t, obs | {(k, body)}))
        return seen

    def step(self, closed: set[_Thread], a: int) -> set[_Thread]:
        """The runs after atom ``a`` from the closed runs ``closed``."""
        step_of, looks = self.step_of, self.looks
        nxt_threads: set[_Thread] = set()
        for q, obs in closed:
            targets = step_of[q].get(a)
            if not targets:
                continue
            stepped: list[_Obligation] = []
            alive = True
            for k, states in obs:
                moved = frozenset(t for p in states for t in step_of[p].get(a, ()))
                if moved:
                    stepped.append((k, moved))
                elif not looks[k][2]:
                    alive = False  # a positive lookahead can no longer match
                    break
            if alive:
                fo = frozenset(stepped)
                nxt_threads.update((t, fo) for t in targets)
        return nxt_threads

    def run(self) -> Tables:
        nfa, looks, acc = self.nfa, self.looks, self.nfa.accept
        start_key: tuple[frozenset[_Thread], int] = (
            frozenset({(nfa.start, frozenset())}),
            self.norm(_EDGE),
        )
        states: StateTable[tuple[frozenset[_Thread], int]] = StateTable(start_key, self.limits)
        index, order = states.index, states.order
        trans: list[list[int]] = []
        finals: set[int] = set()
        n_atoms = len(self.atoms)
        sink_thread: _Thread = (self.sink, frozenset())
        i = 0
        while i < len(order):
            cur, prev = order[i]
            row = [-1] * n_atoms
            for q, obs in self.close(cur, prev, _EDGE):
                if q == acc and not any(not looks[k][2] for k, _ in obs):
                    finals.add(i)
                    break
            for g in self.groups:
                closed = self.close(cur, prev, g)
                for a in range(n_atoms):
                    if self.atom_ctx[a] != g:
                        continue
                    nxt_threads = self.step(closed, a)
                    if not nxt_threads:
                        continue
                    key = (
                        (frozenset({sink_thread}), _NONWORD)
                        if sink_thread in nxt_threads
                        else (frozenset(nxt_threads), self.norm(g))
                    )
                    j = index.get(key)
                    row[a] = states.add(key) if j is None else j
            trans.append(row)
            i += 1
        return self.atoms, trans, finals
