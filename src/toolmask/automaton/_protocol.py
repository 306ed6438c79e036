"""What a byte-level automaton offers the layers above it, whichever implementation built it.

Two implementations satisfy :class:`Automaton`: the pure-Python reference
(:class:`~toolmask.automaton.PythonAutomaton`, from :func:`~toolmask.automaton.build_automaton`)
and the compiled kernel's ``toolmask._native.Automaton`` (from
:func:`~toolmask.automaton.build_native_automaton`). The compiler chooses one when it is made
(``GrammarCompiler(backend=...)``); the matchers and the mask caches only use this protocol.

States are opaque handles: interned (equal states are one object while referenced), hashable,
usable as cache keys; pass an automaton only the states it returned. The protocol says so by
typing them as :class:`AutomatonState`; each implementation's own methods take its own state
type, so a backend hands out its automaton as an :class:`Automaton` once, where it builds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from toolmask.limits import Limits

__all__ = ["Automaton", "AutomatonState"]


class AutomatonState(Protocol):
    """One configuration of an automaton (a set of stacks), interned and hashable."""

    @property
    def accepting(self) -> bool:
        """The start rule can end here."""
        ...

    def __hash__(self) -> int: ...


@runtime_checkable
class Automaton(Protocol):
    """A byte-level pushdown automaton: ``advance`` never raises on input, it returns None
    when no parse survives (the caps of ``limits`` only ever reject). Costs: see the
    implementations (a memoised ``advance`` is one lookup in both)."""

    @property
    def initial(self) -> AutomatonState:
        """The state before any input."""
        ...

    @property
    def limits(self) -> Limits:
        """The limits it was built under."""
        ...

    @property
    def n_positions(self) -> int:
        """DFA positions built so far (it is built lazily, as input explores it)."""
        ...

    def advance(self, state: AutomatonState, byte: int, /) -> AutomatonState | None:
        """The state after ``byte``, or None."""
        ...

    def advance_bytes(
        self, state: AutomatonState, data: bytes | bytearray | memoryview, /
    ) -> AutomatonState | None:
        """The state after all of ``data``, or None as soon as a byte is rejected."""
        ...

    def advance_special(self, state: AutomatonState, text: str, /) -> AutomatonState | None:
        """The state after the special token ``text``, or None where it is not allowed."""
        ...

    def allowed_bytes(self, state: AutomatonState, /) -> int:
        """256-bit mask of the bytes ``advance`` takes from ``state``."""
        ...

    def allowed_specials(self, state: AutomatonState, /) -> Iterable[str]:
        """The special-token texts ``advance_special`` takes from ``state``."""
        ...

    def is_finished(self, state: AutomatonState, /) -> bool:
        """Accepting, and nothing (byte or special token) can follow."""
        ...

    def cached_states(self) -> int:
        """States interned now (diagnostics)."""
        ...

    def memory_bytes(self) -> int:
        """Bytes held: positions, interned states and their transition memos (the Python
        reference estimates them)."""
        ...
