"""The pushdown automaton at run time: interned states, memoised transitions.

A *stack* is a tuple of positions: return positions from the bottom up, the current position on
top. A :class:`State` is a set of stacks (the live parses of an ambiguous grammar) plus an
``accepting`` flag. States are *closed*: every stack's top position has a byte or special-token
edge; calls have been expanded and returns taken, and a parse that can end is recorded in
``accepting`` instead of as a stack.
"""

from __future__ import annotations

import threading

from toolmask.automaton._dfa import LazyDFA
from toolmask.errors import LimitError
from toolmask.limits import Limits

__all__ = ["PythonAutomaton", "State"]

Stack = tuple[int, ...]
_FULL = (1 << 256) - 1
_MISS = object()
_NO_NAMES: frozenset[str] = frozenset()


def _bits_of(mask: int) -> tuple[int, ...]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return tuple(out)


class State:
    """An interned, immutable automaton configuration.

    Value: ``stacks`` (a frozenset of stacks) and ``accepting``. Equality and hashing are by
    value (the hash is precomputed), and states are interned per automaton, so two equal states
    are normally the same object and comparing them is an identity check. (Interning is per
    cache generation: after ``Limits.max_cached_states`` new states the automaton starts a new
    generation; older states stay valid and equal to their new twins, only not identical.)

    A state carries its own memo tables (byte -> next state); they are caches, not its value.
    """

    __slots__ = (
        "_allowed",
        "_allowed_specials",
        "_hash",
        "_next",
        "_next_special",
        "_special_names",
        "_umask",
        "accepting",
        "stacks",
    )

    stacks: frozenset[Stack]
    accepting: bool

    def __init__(
        self,
        stacks: frozenset[Stack],
        accepting: bool,
        umask: int,
        special_names: frozenset[str],
        hash_: int,
    ) -> None:
        self.stacks = stacks
        self.accepting = accepting
        self._umask = umask
        self._special_names = special_names
        self._hash = hash_
        self._next: dict[int, State | None] = {}
        self._next_special: dict[str, State | None] = {}
        self._allowed: int | None = None
        self._allowed_specials: frozenset[str] | None = None

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, State):
            return NotImplemented
        return (
            self._hash == other._hash
            and self.accepting == other.accepting
            and self.stacks == other.stacks
        )

    @property
    def is_dead(self) -> bool:
        """No parse is alive and none has ended: nothing is accepted from here on."""
        return not self.stacks and not self.accepting

    def __repr__(self) -> str:
        shown = sorted(self.stacks, key=lambda s: (len(s), s))[:4]
        more = f", +{len(self.stacks) - 4}" if len(self.stacks) > 4 else ""
        inner = ", ".join(str(list(s)) for s in shown)
        return f"State([{inner}{more}], accepting={self.accepting})"


class PythonAutomaton:
    """The pure-Python :class:`~toolmask.automaton.Automaton`, built by
    :func:`toolmask.automaton.build_automaton` (the reference the compiled kernel is tested
    against).

    Contract: ``advance`` never raises on input; it returns ``None`` when no parse survives.
    A stack deeper than ``limits.max_stack_depth`` is dropped (that parse dies); when more than
    ``limits.max_stacks`` stacks would be live the advance returns ``None``. The DFA positions
    are built lazily; if building one on a miss would pass ``limits.max_automaton_states``
    (positions, or twice that many NFA states), that advance returns ``None`` too, and so does
    every later miss that needs something new. All these caps can only reject input, never
    accept input the grammar rejects.

    Cost: a memoised ``advance`` is one dict lookup. A miss costs O(stacks x (edges per position
    + closure size + stack depth)) and fills the memo for every byte with the same outcome; the
    first miss that reaches a position also builds its row (see ``_dfa``), once per automaton.
    Thread-safe: misses (and with them all lazy construction) are serialised by a lock; hits
    take no lock.
    """

    def __init__(self, dfa: LazyDFA, limits: Limits) -> None:
        self._dfa = dfa
        self.limits = limits
        # the position tables grow as the DFA is explored; these are the same list objects
        self._edges = dfa.edges
        self._umask = dfa.umask
        self._calls = dfa.calls
        self._specials = dfa.specials
        self._final = dfa.final
        self._consuming = dfa.consuming
        self._done = dfa.done
        self._closures = dfa.closures
        self._max_depth = limits.max_stack_depth
        self._max_stacks = limits.max_stacks
        self._max_cached = max(limits.max_cached_states, 16)
        self._lock = threading.RLock()
        #: atom mask -> its bytes (atoms recur across states; filling the memo is one update)
        self._bits: dict[int, tuple[int, ...]] = {}
        self._intern: dict[tuple[frozenset[Stack], bool], State] = {}
        self._any_specials = dfa.nfa.analysis.has_specials
        self._dead = self._make(frozenset(), False)
        # building the initial state may raise LimitError: the caps apply at build time here
        start = dfa.entry_start(dfa.nfa.grammar.start)
        stacks: set[Stack] = set()
        accepting = self._close((), start, stacks)
        init = self._make(frozenset(stacks), accepting) if accepting is not None else self._dead
        self.initial: State = init

    # -- public API -----------------------------------------------------------------------------
    @property
    def n_positions(self) -> int:
        """Number of DFA positions created so far (states of all per-rule DFAs together).

        The DFA is built lazily, so this grows as the automaton is explored.
        """
        return len(self._final)

    @property
    def entry_names(self) -> tuple[str, ...]:
        """Rules compiled as call targets so far (entry 0 is the start rule)."""
        return tuple(self._dfa.nfa.entry_names)

    def advance(self, state: State, byte: int) -> State | None:
        """The state after ``byte``, or None when no parse survives. O(1) when memoised."""
        r = state._next.get(byte, _MISS)
        if r is _MISS:
            return self._advance_miss(state, byte)
        return r  # type: ignore[return-value]

    def transitions(self, state: State) -> dict[int, State | None]:
        """The memo of ``state``: byte -> next state (None = dead), filled as bytes are tried.

        For hot loops (the token-trie walk): ``t.get(b, MISSING)`` and fall back to
        :meth:`advance` when the byte is absent. Read it, never write it. Entries are exact
        transitions; the dict may be replaced (not mutated into falsehood) when the automaton
        starts a new cache generation, so re-fetch it per state rather than holding it.
        """
        return state._next

    def advance_bytes(self, state: State, data: bytes | bytearray | memoryview) -> State | None:
        """The state after all of ``data`` (None as soon as a byte is rejected)."""
        s: State | None = state
        for b in bytes(data):
            assert s is not None
            r = s._next.get(b, _MISS)
            s = self._advance_miss(s, b) if r is _MISS else r  # type: ignore[assignment]
            if s is None:
                return None
        return s

    def advance_special(self, state: State, text: str) -> State | None:
        """The state after the special token ``text``, or None when it is not allowed here."""
        r = state._next_special.get(text, _MISS)
        if r is not _MISS:
            return r  # type: ignore[return-value]
        with self._lock:
            if text not in state._special_names:
                state._next_special[text] = None
                return None
            specials = self._specials
            new: set[Stack] = set()
            accepting = False
            try:
                for st in state.stacks:
                    q = specials[st[-1]].get(text)
                    if q is not None:
                        acc = self._close(st[:-1], q, new)
                        if acc is None or len(new) > self._max_stacks:
                            accepting = False
                            new.clear()
                            break
                        accepting = accepting or acc
            except LimitError:  # a cap of the lazy construction: reject, never raise
                state._next_special[text] = None
                return None
            out = self._make(frozenset(new), accepting) if new or accepting else None
            state._next_special[text] = out
            return out

    def successors(self, state: State, mask: int) -> list[tuple[int, State | None]]:
        """The bytes of the 256-bit ``mask`` partitioned by where they lead from ``state``:
        ``(subset, next state or None)``. Cost: one ``advance`` per class of bytes that every
        stack treats alike (usually a handful), not one per byte."""
        out: list[tuple[int, State | None]] = []
        todo = mask
        while todo:
            b = (todo & -todo).bit_length() - 1
            atom = self._atom(state, b) & todo
            out.append((atom, self.advance(state, b)))
            todo &= ~atom
        return out

    def is_accepting(self, state: State) -> bool:
        """The start rule can end here."""
        return state.accepting

    def allowed_bytes(self, state: State) -> int:
        """256-bit mask of the bytes ``b`` for which ``advance(state, b)`` is not None (cached)."""
        a = state._allowed
        if a is not None:
            return a
        allowed = 0
        todo = state._umask
        while todo:
            b = (todo & -todo).bit_length() - 1
            atom = self._atom(state, b)
            if self.advance(state, b) is not None:
                allowed |= atom
            todo &= ~atom
        state._allowed = allowed
        return allowed

    def allowed_specials(self, state: State) -> frozenset[str]:
        """Special-token texts accepted in ``state`` (cached)."""
        a = state._allowed_specials
        if a is None:
            a = frozenset(
                t for t in state._special_names if self.advance_special(state, t) is not None
            )
            state._allowed_specials = a
        return a

    def is_finished(self, state: State) -> bool:
        """Accepting, and no byte or special token can follow."""
        return (
            state.accepting and self.allowed_bytes(state) == 0 and not self.allowed_specials(state)
        )

    def cached_states(self) -> int:
        """States interned in the current cache generation (diagnostics)."""
        return len(self._intern)

    def memory_bytes(self) -> int:
        """Bytes held, a rough estimate: about 600 per position (its rows and closures) and 1200
        per interned state (its stacks and transition memos). O(1)."""
        return len(self._final) * 600 + len(self._intern) * 1200

    # -- internals ------------------------------------------------------------------------------
    def _make(self, stacks: frozenset[Stack], accepting: bool) -> State:
        key = (stacks, accepting)
        s = self._intern.get(key)
        if s is not None:
            return s
        if len(self._intern) >= self._max_cached:
            self._new_generation()
        umask = 0
        table = self._umask
        for st in stacks:
            umask |= table[st[-1]]
        names = _NO_NAMES
        if self._any_specials:
            specials = self._specials
            names = frozenset(t for st in stacks for t in specials[st[-1]])
        s = State(stacks, accepting, umask, names, hash(key))
        self._intern[key] = s
        return s

    def _new_generation(self) -> None:
        """Forget every interned state's memo tables and the intern table (bounds memory).

        States held elsewhere stay valid: they recompute their transitions on demand.
        """
        for s in self._intern.values():
            s._next = {}
            s._next_special = {}
        self._intern = {}
        self._intern[(self.initial.stacks, self.initial.accepting)] = self.initial
        self._intern[(self._dead.stacks, self._dead.accepting)] = self._dead

    def _atom(self, state: State, b: int) -> int:
        """The bytes that every stack of ``state`` treats exactly like ``b``."""
        atom = _FULL
        edges = self._edges
        for st in state.stacks:
            p = st[-1]
            for m, _ in edges[p]:
                if (m >> b) & 1:
                    atom &= m
                    break
            else:
                atom &= ~self._umask[p]
        return atom

    def _advance_miss(self, state: State, b: int) -> State | None:
        with self._lock:
            r = state._next.get(b, _MISS)
            if r is not _MISS:
                return r  # type: ignore[return-value]
            if not (state._umask >> b) & 1:
                state._next[b] = None
                return None
            edges = self._edges
            atom = _FULL
            new: set[Stack] = set()
            accepting: bool | None = False
            try:
                for st in state.stacks:
                    p = st[-1]
                    for m, q in edges[p]:
                        if (m >> b) & 1:
                            atom &= m
                            if accepting is not None:
                                acc = self._close(st[:-1], q, new)
                                if acc is None or len(new) > self._max_stacks:
                                    accepting = None  # over the cap: dead (for the atom only)
                                else:
                                    accepting = accepting or acc
                            break
                    else:
                        atom &= ~self._umask[p]
            except LimitError:  # a cap of the lazy construction: reject this byte, never raise
                state._next[b] = None
                return None
            out: State | None
            if accepting is None or not (new or accepting):
                out = None
            else:
                out = self._make(frozenset(new), accepting)
            bits = self._bits.get(atom)
            if bits is None:
                bits = self._bits[atom] = _bits_of(atom)
            state._next.update(dict.fromkeys(bits, out))
            return out

    def _close(self, base: Stack, p: int, out: set[Stack]) -> bool | None:
        """Add the closed stacks of ``base + (p,)`` to ``out``; return whether the parse can end.

        Returns None when a closure overflows ``max_stacks``.
        """
        max_depth = self._max_depth
        closures = self._closures
        while True:
            c = closures[p]
            if c is None:
                c = self._static_closure(p)
                if c is None:
                    return None
                closures[p] = c
            sufs, returns = c
            room = max_depth - len(base)
            if base:
                for s in sufs:
                    if len(s) <= room:
                        out.add(base + s)
            else:
                for s in sufs:
                    if len(s) <= room:
                        out.add(s)
            if not returns:
                return False
            if not base:
                return True
            p = base[-1]
            base = base[:-1]

    def _static_closure(self, p: int) -> tuple[tuple[Stack, ...], bool] | None:
        """Stacks that replace ``(p,)`` by calls and internal returns, and whether ``p`` can
        return (reach the end of its rule) without consuming. None on overflow of the stack
        caps; LimitError when expanding a position passes the automaton caps.
        """
        consuming = self._consuming
        final = self._final
        calls = self._calls
        done = self._done
        expand = self._dfa.expand
        max_depth = self._max_depth
        budget = 4 * self._max_stacks + 16
        out: list[Stack] = []
        seen: set[Stack] = {(p,)}
        work: list[Stack] = [(p,)]
        returns = False
        while work:
            s = work.pop()
            top = s[-1]
            if not done[top]:
                expand(top)
            if consuming[top]:
                out.append(s)
            nexts: list[Stack] = []
            if final[top]:
                if len(s) == 1:
                    returns = True
                else:
                    nexts.append(s[:-1])
            for x0, q, tail in calls[top]:
                ns = (*s[:-1], x0) if tail else (*s[:-1], q, x0)
                if len(ns) <= max_depth:
                    nexts.append(ns)
            for ns in nexts:
                if ns not in seen:
                    seen.add(ns)
                    work.append(ns)
            if len(seen) > budget or len(out) > self._max_stacks:
                return None
        return tuple(out), returns
