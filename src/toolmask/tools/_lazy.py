"""Lazy turns: a turn over many tools whose argument grammars compile when first entered.

A turn over N tools costs N schema compilations when it is compiled whole (milliseconds per
tool). A lazy turn compiles, up front, only what every tool shares and what the tool-name
position needs, and compiles a tool's arguments the first time a reply enters them. It keeps
two grammars per set ``T`` of tools compiled so far (:func:`build_lazy_turn`):

* **block(T)**: the real turn, except that each tool outside ``T`` has a placeholder special
  token where its first argument value starts. No token matches a placeholder, so block(T)
  admits exactly the real turn's prefixes that stop before an uncompiled tool's arguments;
* **any(T)**: the same with any JSON value there instead: a superset of the real turn.

The matcher (:class:`LazyTurnMatcher`) runs both in lockstep and keeps one invariant: its
states never stand where a placeholder is allowed (the moment one is, the tools it stands for
are compiled, ``T`` grows, and the units accepted so far are replayed into the two new
automata, which admit them since they only replace placeholders). Then:

* a byte or a special token is allowed exactly when block(T) allows it;
* a token's mask is block(T)'s when block(T) and any(T) give the same mask at the state (the
  real mask lies between the two); where they differ, the tokens in any(T)'s mask only are
  walked through block(T) to the placeholder they reach, those tools are compiled, and the
  mask is computed again (the real mask never differs from block(T)'s unless a token runs
  from a name into the arguments in one piece, which real vocabularies almost never hold);
* accepting a token or bytes walks them through block(T) and compiles the tools whose
  placeholders they reach on the way, before they are accepted.

So the masks and the language are exactly the eager turn's (tested token for token against
it), the turn compiles in O(names), and a tool whose arguments no reply enters is never
compiled. A tool's arguments cost their compilation (cached per tool by
:mod:`toolmask.tools._parts`) plus a rebuild of the two grammars over the names, once per
turn: the turn keeps its latest variant, with every tool any of its matchers entered, and new
matchers (and every subset restricted from it) start there.

What moves: a tool schema that cannot be compiled raises its SchemaError / LimitError (naming
the tool, ``e.tool``) when a reply first enters its arguments, from the matcher call that got
there, instead of at compile time. :meth:`ToolTurn.compile` with ``lazy=False`` (or
``ToolTurn.grammar()``) compiles every schema up front.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from toolmask._compile import CompiledGrammar
from toolmask._matcher import FilteredMatcher, Matcher, PlainMatcher, forced_stepwise
from toolmask.grammar import Grammar
from toolmask.tools._grammar import LazyTurn

if TYPE_CHECKING:
    from toolmask.automaton import Automaton, AutomatonState
    from toolmask.mask import MaskCache

__all__ = ["LazyTurnGrammar", "LazyTurnMatcher"]

#: puts the real parts of the named tools into one of the lazy turn's grammars
#: (:func:`~toolmask.tools._grammar.with_tool_parts` with the turn's options)
WithParts = Callable[[Grammar, frozenset[str]], Grammar]
#: compiles a grammar for the turn's vocabulary and limits
Compiler = Callable[[Grammar], CompiledGrammar]


class _Variant:
    """block(T) and any(T) compiled, with the memos their matchers share."""

    __slots__ = ("any", "at", "block", "exact", "reach", "sentinels", "tools")

    def __init__(
        self,
        tools: frozenset[str],
        block: CompiledGrammar,
        any_: CompiledGrammar,
        sentinels: dict[str, str],
    ) -> None:
        self.tools = tools
        self.block = block
        self.any = any_
        self.sentinels = sentinels
        #: block state -> names of the tools whose placeholders it allows (empty: none)
        self.at: dict[Any, frozenset[str]] = {}
        #: (block state, any state) pairs whose two masks are equal
        self.exact: set[tuple[Any, Any]] = set()
        #: (block state, a token's bytes) -> :meth:`reached`
        self.reach: dict[tuple[Any, bytes], frozenset[str]] = {}

    def placeholders_at(self, state: AutomatonState) -> frozenset[str]:
        hit = self.at.get(state)
        if hit is None:
            sent = self.sentinels
            allowed = self.block.automaton.allowed_specials(state) if sent else ()
            hit = frozenset(sent[t] for t in allowed if t in sent)
            self.at[state] = hit
        return hit

    def reached(self, state: AutomatonState, data: bytes, memo: bool) -> frozenset[str]:
        """The tools whose placeholders ``data`` reaches from ``state`` (walked through block
        until it stops). ``memo``: kept per (state, bytes), for a token's bytes (bounded by
        states x vocabulary, like the masks), not for arbitrary accepted bytes."""
        if not self.sentinels:
            return frozenset()
        key = (state, data)
        hit = self.reach.get(key) if memo else None
        if hit is not None:
            return hit
        a = self.block.automaton
        s: AutomatonState | None = state
        found: set[str] = set()
        for b in data:
            assert s is not None
            found |= self.placeholders_at(s)
            s = a.advance(s, b)
            if s is None:
                break
        if s is not None:
            found |= self.placeholders_at(s)
        hit = frozenset(found)
        if memo:
            self.reach[key] = hit
        return hit


class _Store:
    """The variants of one lazy turn (shared by its matchers and its restrictions;
    thread-safe): the first (no tool compiled) and the latest, which holds every tool any
    matcher has entered so far. A new matcher starts at the latest, so a tool compiles once
    per turn, not once per reply; a variant that is no longer the latest lives as long as the
    matchers that use it."""

    __slots__ = ("base", "compile", "first", "latest", "lock", "with_parts")

    def __init__(self, base: LazyTurn, with_parts: WithParts, compile: Compiler) -> None:
        self.base = base
        self.with_parts = with_parts
        self.compile = compile
        self.lock = threading.Lock()
        self.first = self._build(frozenset())
        self.latest = self.first

    def _build(self, tools: frozenset[str]) -> _Variant:
        base = self.base
        block = self.compile(self.with_parts(base.block, tools))
        any_ = self.compile(self.with_parts(base.any, tools))
        sentinels = {k: n for k, n in base.placeholders.items() if n not in tools}
        return _Variant(tools, block, any_, sentinels)

    def grow(self, tools: frozenset[str]) -> _Variant:
        """A variant holding at least ``tools`` compiled: the latest when it does, else the
        latest's tools and ``tools`` compiled, which becomes the latest. Raises the
        SchemaError / LimitError of a tool that cannot be compiled (the latest unchanged)."""
        hit = self.latest
        if tools <= hit.tools:
            return hit
        with self.lock:
            hit = self.latest
            if not tools <= hit.tools:
                hit = self.latest = self._build(hit.tools | tools)
        return hit

    def memory(self) -> dict[str, int]:
        out = {"automaton": 0, "masks": 0}
        variants = [self.first] if self.latest is self.first else [self.first, self.latest]
        for v in variants:
            for c in (v.block, v.any):
                for k, n in c.memory().items():
                    out[k] = out.get(k, 0) + n
        return out


class LazyTurnGrammar(CompiledGrammar):
    """A compiled turn whose tools' argument grammars compile on first use (see the module
    docstring). Used like any :class:`CompiledGrammar`: :meth:`matcher`, :meth:`restricted`;
    :attr:`grammar`, :attr:`automaton` and :attr:`masks` are block(∅)'s, with no tool
    compiled (the placeholders included: ``ToolTurn.grammar()`` is the turn's full grammar)."""

    __slots__ = ("_store",)

    def __init__(self, store: _Store, filter: CompiledGrammar | None = None) -> None:
        first = store.first
        super().__init__(
            first.block.grammar,
            first.block.automaton,
            first.block.masks,
            backend=first.block.backend,
            filter=filter,
        )
        self._store = store

    @classmethod
    def create(cls, base: LazyTurn, with_parts: WithParts, compile: Compiler) -> LazyTurnGrammar:
        """Compile block(∅) and any(∅) of ``base`` (the envelope and the names): O(names)."""
        return cls(_Store(base, with_parts, compile))

    @property
    def compiled_tools(self) -> frozenset[str]:
        """The tools whose argument grammars have been compiled (by any matcher so far)."""
        return self._store.latest.tools

    @property
    def lazy_turn(self) -> LazyTurn:
        """The two grammars this turn was made from, before any tool was compiled."""
        return self._store.base

    def restricted(self, filter: CompiledGrammar) -> CompiledGrammar:
        """This turn intersected with ``filter`` (see :meth:`CompiledGrammar.restricted`); the
        variants compiled so far are shared. O(1)."""
        return LazyTurnGrammar(self._store, self._with_filter(filter))

    def matcher(self) -> LazyTurnMatcher:
        f = self.filter
        return LazyTurnMatcher(self._store, f.matcher() if f is not None else None)

    def memory(self) -> dict[str, int]:
        return self._store.memory()

    def __repr__(self) -> str:
        return (
            f"LazyTurnGrammar(tools={len(self._store.base.call_rules)}, "
            f"compiled_tools={len(self.compiled_tools)}, backend={self.backend!r})"
        )


class LazyTurnMatcher(Matcher):
    """A matcher of a :class:`LazyTurnGrammar` (see the module docstring), composed of the
    plain matchers of block(T) and any(T) and, for a turn restricted by a filter, the filter's
    matcher in lockstep with block(T)'s (a :class:`~toolmask._matcher.FilteredMatcher`). The
    :class:`~toolmask._matcher.Matcher` contract (never raises on model output; one history
    unit per byte, token or special token), except that entering an uncompiled tool's
    arguments compiles them first and raises that tool's SchemaError / LimitError if its schema
    cannot be compiled."""

    __slots__ = ("_filter", "_ma", "_mb", "_run", "_store", "_units", "_v", "_wide")

    #: the mask is block(T)'s checked against any(T)'s (and AND the filter's)
    cached_by_state = False

    def __init__(self, store: _Store, filter: Matcher | None = None) -> None:
        self._store = store
        self._filter = filter
        #: accepted units, for replay: ("b", byte) | ("t", token id) | ("s", special text)
        self._units: list[tuple[str, Any]] = []
        self._wide: npt.NDArray[np.int32] | None = None
        v = store.latest
        self._use(v, PlainMatcher(v.block.automaton, v.block.masks))
        self._ma = PlainMatcher(v.any.automaton, v.any.masks)

    def _use(self, v: _Variant, mb: PlainMatcher) -> None:
        """Run variant ``v`` with block(T)'s matcher ``mb`` (at the units accepted so far)."""
        self._v = v
        self._mb = mb
        f = self._filter
        #: what accepts units and answers for the turn: block(T)'s matcher, and the filter's
        self._run: Matcher = mb if f is None else FilteredMatcher(mb, f)

    # -- views --------------------------------------------------------------------------------
    @property
    def state(self) -> AutomatonState:
        """block(T)'s state (interned within the automaton of :attr:`automaton`)."""
        return self._mb.state

    @property
    def automaton(self) -> Automaton:
        """block(T)'s automaton for the tools compiled so far (it changes as tools compile)."""
        return self._mb.automaton

    @property
    def masks(self) -> MaskCache | None:
        """block(T)'s mask cache (None without a vocabulary): the mask is not its mask at
        :attr:`state` alone (:attr:`cached_by_state` is False)."""
        return self._mb.masks

    @property
    def n_accepted(self) -> int:
        return len(self._units)

    @property
    def vocab_size(self) -> int:
        return self._mb.vocab_size

    @property
    def stopped(self) -> bool:
        return self._mb.stopped

    @property
    def compiled_tools(self) -> frozenset[str]:
        """The tools whose arguments this matcher's automata hold compiled."""
        return self._v.tools

    # -- compiling tools on the way --------------------------------------------------------------
    def _activate(self, names: frozenset[str]) -> None:
        """Move to the variant with ``names`` compiled too and replay the accepted units into
        its two matchers (the filter's, if any, is where it was)."""
        v = self._store.grow(self._v.tools | names)
        mb = PlainMatcher(v.block.automaton, v.block.masks)
        ma = PlainMatcher(v.any.automaton, v.any.masks)
        run: bytearray = bytearray()
        for kind, value in self._units:
            if kind == "b":
                run.append(value)
                continue
            if run:
                ok = mb.accept_bytes(run) and ma.accept_bytes(run)
                run.clear()
                assert ok, "a lazy turn's replay failed"
            if kind == "t":
                ok = mb.accept_token(value) and ma.accept_token(value)
            else:
                ok = mb.accept_special(value) and ma.accept_special(value)
            assert ok, "a lazy turn's replay failed"
        if run:
            ok = mb.accept_bytes(run) and ma.accept_bytes(run)
            assert ok, "a lazy turn's replay failed"
        self._use(v, mb)
        self._ma = ma

    def _settle(self) -> None:
        """Compile the tools whose placeholders the current state allows (the invariant)."""
        while True:
            names = self._v.placeholders_at(self._mb.state)
            if not names:
                return
            self._activate(names)

    def _prepare(self, data: bytes, memo: bool) -> None:
        """Compile every tool whose arguments ``data`` enters from here, so that block(T)
        takes exactly what the real turn takes."""
        while True:
            names = self._v.reached(self._mb.state, data, memo) - self._v.tools
            if not names:
                return
            self._activate(names)

    # -- accepting ---------------------------------------------------------------------------------
    def accept_bytes(self, data: bytes | bytearray | memoryview) -> bool:
        if self.stopped:
            return False
        data = bytes(data)
        if not data:
            return True
        self._settle()
        self._prepare(data, False)
        if not self._run.accept_bytes(data):
            return False
        if not self._ma.accept_bytes(data):  # pragma: no cover - any(T) holds block(T)
            self._run.rollback(len(data))
            return False
        self._units.extend(("b", b) for b in data)
        self._settle()
        return True

    def accept_special(self, text: str) -> bool:
        if self.stopped or text in self._v.sentinels:
            return False
        self._settle()
        if not self._run.accept_special(text):
            return False
        if not self._ma.accept_special(text):  # pragma: no cover - any(T) holds block(T)
            self._run.rollback(1)
            return False
        self._units.append(("s", text))
        self._settle()
        return True

    def accept_token(self, tid: int) -> bool:
        if self.stopped:
            return False
        self._settle()
        masks = self._mb.masks
        if masks is None:
            self._mb.accept_token(tid)  # raises the no-vocabulary ValueError
            return False
        idx = masks.index
        if 0 <= tid < idx.size and idx.text[tid]:
            self._prepare(idx.vocab.token_bytes[tid], True)
        if not self._run.accept_token(tid):
            return False
        if not self._ma.accept_token(tid):  # pragma: no cover - any(T) holds block(T)
            self._run.rollback(1)
            return False
        self._units.append(("t", tid))
        if not self._mb.stopped:
            self._settle()
        return True

    def rollback(self, n: int) -> None:
        if n < 0 or n > len(self._units):
            raise ValueError(f"cannot roll back {n} units: only {len(self._units)} accepted")
        if n == 0:
            return
        self._run.rollback(n)
        self._ma.rollback(n)
        del self._units[-n:]

    def reset(self) -> None:
        self._run.reset()
        self._ma.reset()
        self._units.clear()

    # -- queries --------------------------------------------------------------------------------
    def is_accepting(self) -> bool:
        self._settle()
        return self._run.is_accepting()

    def is_finished(self) -> bool:
        if self.stopped:
            return True
        self._settle()
        return self._run.is_finished()

    def allowed_bytes(self) -> int:
        if self.stopped:
            return 0
        self._settle()
        return self._run.allowed_bytes()

    def allowed_specials(self) -> frozenset[str]:
        if self.stopped:
            return frozenset()
        self._settle()
        return self._run.allowed_specials()

    def mask(self) -> npt.NDArray[np.int32]:
        out = np.empty(self._need_words(), dtype=np.int32)
        self.fill_bitmask(out)
        out.setflags(write=False)
        return out

    def _need_words(self) -> int:
        masks = self._mb.masks
        if masks is None:
            self._mb.mask()  # raises the no-vocabulary ValueError
        assert masks is not None
        return int(masks.index.words)

    def fill_bitmask(self, out: npt.NDArray[np.int32], index: int | None = None) -> None:
        """The real turn's mask (see the module docstring): block(T)'s, checked against
        any(T)'s once per pair of states (and the filter's AND it, if any)."""
        words = self._need_words()
        target = out if index is None else out[index]
        if target.shape != (words,):
            raise ValueError(f"bitmask has shape {target.shape}, expected ({words},)")
        if self.stopped:
            target.fill(0)
            return
        self._settle()
        while True:
            mb, ma, v = self._mb, self._ma, self._v
            key = (mb.state, ma.state)
            if key in v.exact:
                break
            mb.fill_bitmask(target)
            wide = self._wide
            if wide is None:
                wide = self._wide = np.empty(words, dtype=np.int32)
            ma.fill_bitmask(wide)
            np.bitwise_and(wide, np.invert(target), out=wide)
            if not wide.any():
                v.exact.add(key)
                break
            bits = np.unpackbits(wide.view(np.uint8), bitorder="little")
            masks = mb.masks
            assert masks is not None
            token_bytes = masks.index.vocab.token_bytes
            names: set[str] = set()
            for tid in np.flatnonzero(bits).tolist():
                names |= v.reached(mb.state, token_bytes[tid], True)
            names -= v.tools
            if not names:  # pragma: no cover - any(T) and block(T) differ only there
                v.exact.add(key)
                break
            self._activate(frozenset(names))
        self._run.fill_bitmask(target)

    def forced_bytes(self) -> bytes:
        if self.stopped:
            return b""
        return forced_stepwise(self, self._mb.automaton.limits.max_forced_bytes)

    def __repr__(self) -> str:
        return (
            f"LazyTurnMatcher(accepted={len(self._units)}, "
            f"compiled_tools={len(self._v.tools)}, state={self._mb.state!r})"
        )
