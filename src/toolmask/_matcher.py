"""Matchers: the :class:`Matcher` protocol (an abstract base with no state) and two
implementations, composed rather than built on one another.

* :class:`PlainMatcher` runs one automaton and, with a vocabulary, its mask cache: the matcher
  of a compiled grammar;
* :class:`FilteredMatcher` runs two matchers, of any implementation, in lockstep: a unit is
  accepted when both accept it and a mask is the AND of both (a grammar
  :meth:`~toolmask.CompiledGrammar.restricted` by a filter: the tool layer's allowed subsets).

The tool layer adds a third, the lazy turn's (:class:`toolmask.tools.LazyTurnMatcher`), made of
plain matchers and, for a subset, a filtered one. Every implementation says whether its allowed
tokens are its mask cache's mask at its state (:attr:`Matcher.cached_by_state`): a batch filler
reads such a row from the cache (:func:`toolmask.mask.fill_batch`, in the kernel without the
GIL) and asks any other row to :meth:`~Matcher.fill_bitmask` itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from toolmask.automaton import Automaton, AutomatonState
    from toolmask.mask import MaskCache

__all__ = ["FilteredMatcher", "Matcher", "PlainMatcher", "forced_stepwise"]


class Matcher(ABC):
    """Matching of one sequence: bytes, special tokens and, with a vocabulary, tokens.

    The protocol every caller uses (decoding, the server, vLLM, the batch filler); it holds no
    state. Never raises on model output: ``accept_*`` returns False and leaves the state
    unchanged. Raises ValueError only on misuse (rolling back more than was accepted, token
    methods on a grammar compiled without a vocabulary). One history entry per accepted unit (a
    byte for ``accept_bytes``, a token for ``accept_token``, a special token for
    ``accept_special``), so ``rollback(n)`` undoes the last ``n`` units in O(n). Accepting an
    EOS id (when the state accepts and the grammar does not name that token) stops the
    matcher: nothing more is allowed until it is rolled back.
    """

    __slots__ = ()

    @property
    @abstractmethod
    def state(self) -> AutomatonState:
        """The current state of :attr:`automaton` (interned; usable as a cache key)."""

    @property
    @abstractmethod
    def automaton(self) -> Automaton:
        """The automaton :attr:`state` belongs to."""

    @property
    @abstractmethod
    def masks(self) -> MaskCache | None:
        """The mask cache over :attr:`automaton` (None without a vocabulary)."""

    @property
    @abstractmethod
    def cached_by_state(self) -> bool:
        """Whether the allowed tokens are exactly :attr:`masks`' mask at :attr:`state`, so
        that a batch filler may read them from the cache (a plain matcher); False for a
        matcher that combines masks (filtered, lazy), which fills its own row."""

    @property
    @abstractmethod
    def n_accepted(self) -> int:
        """Units (bytes, tokens, special tokens) accepted so far: what ``rollback`` can undo."""

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Width of the logits the masks are for (ValueError without a vocabulary)."""

    @property
    @abstractmethod
    def stopped(self) -> bool:
        """An EOS token was accepted."""

    @abstractmethod
    def accept_bytes(self, data: bytes | bytearray | memoryview) -> bool:
        """Accept all of ``data`` or nothing."""

    @abstractmethod
    def accept_special(self, text: str) -> bool:
        """Accept one special token by its text; counts as one unit for ``rollback``."""

    @abstractmethod
    def accept_token(self, tid: int) -> bool:
        """Accept token ``tid`` (one unit for ``rollback``); False leaves the state unchanged.

        A text token advances by all its bytes; a special token by its text where the grammar
        names it; an EOS id is accepted when the state accepts (and then stops the matcher).
        Padding and unknown ids are rejected."""

    @abstractmethod
    def rollback(self, n: int) -> None:
        """Undo the last ``n`` accepted units. ValueError if ``n`` is too big."""

    @abstractmethod
    def reset(self) -> None:
        """Back to the start of the grammar."""

    @abstractmethod
    def is_accepting(self) -> bool:
        """The document accepted so far is complete (it may still continue)."""

    @abstractmethod
    def is_finished(self) -> bool:
        """Stopped by EOS, or complete with nothing more acceptable."""

    @abstractmethod
    def allowed_bytes(self) -> int:
        """256-bit mask of the bytes that ``accept_bytes`` would take next."""

    @abstractmethod
    def allowed_specials(self) -> frozenset[str]:
        """Special-token texts that ``accept_special`` would take next."""

    @abstractmethod
    def mask(self) -> npt.NDArray[np.int32]:
        """The int32 bitmask of the allowed token ids, read-only (do not modify it). Bit
        ``t % 32`` of word ``t // 32`` is token ``t``."""

    @abstractmethod
    def fill_bitmask(self, out: npt.NDArray[np.int32], index: int | None = None) -> None:
        """Write the allowed-token bitmask into ``out`` (int32, ``ceil(V/32)`` words), or into
        row ``index`` of a batch ``out[B, W]``."""

    @abstractmethod
    def forced_bytes(self) -> bytes:
        """The longest byte string every continuation must start with (at most
        ``Limits.max_forced_bytes`` of the automaton's limits). Does not change the matcher."""

    def allowed_token_ids(self) -> npt.NDArray[np.int64]:
        """The allowed token ids, sorted."""
        bits = np.unpackbits(self.mask().view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self.vocab_size]).astype(np.int64)


def forced_stepwise(m: Matcher, cap: int) -> bytes:
    """:meth:`Matcher.forced_bytes` through ``m``'s own methods, one byte at a time (up to
    ``cap``) while exactly one byte and no special token is allowed and ``m`` is not
    accepting, rolled back at the end: for a matcher whose state is more than one automaton's
    (filtered, lazy)."""
    out = bytearray()
    while len(out) < cap and not m.is_accepting():
        mask = m.allowed_bytes()
        if mask == 0 or mask & (mask - 1) or m.allowed_specials():
            break
        b = mask.bit_length() - 1
        if not m.accept_bytes(bytes((b,))):  # pragma: no cover - allowed means taken
            break
        out.append(b)
    m.rollback(len(out))
    return bytes(out)


class PlainMatcher(Matcher):
    """The matcher of one automaton and its mask cache (a compiled grammar's; see
    :class:`Matcher` for the contract). Per unit: O(its bytes) memo lookups when warm; a mask
    of a cached state is one copy of its words."""

    __slots__ = ("_a", "_history", "_masks", "_state", "_stopped_at")

    #: a plain matcher's allowed tokens are its mask cache's mask at its state
    cached_by_state = True

    def __init__(self, automaton: Automaton, masks: MaskCache | None = None) -> None:
        self._a = automaton
        self._masks = masks
        self._state: AutomatonState = automaton.initial
        self._history: list[AutomatonState] = []
        self._stopped_at = -1

    @property
    def state(self) -> AutomatonState:
        return self._state

    @property
    def automaton(self) -> Automaton:
        return self._a

    @property
    def masks(self) -> MaskCache | None:
        """The compiled grammar's mask cache (None without a vocabulary): what
        :func:`toolmask.mask.fill_batch` reads with :attr:`state` to fill many rows at once."""
        return self._masks

    @property
    def n_accepted(self) -> int:
        return len(self._history)

    @property
    def vocab_size(self) -> int:
        return int(self._need_masks().index.size)

    @property
    def stopped(self) -> bool:
        return self._stopped_at >= 0

    def _need_masks(self) -> MaskCache:
        m = self._masks
        if m is None:
            raise ValueError(
                "this grammar was compiled without a vocabulary: use tm.compile(grammar, vocab)"
            )
        return m

    def accept_bytes(self, data: bytes | bytearray | memoryview) -> bool:
        """Accept all of ``data`` or nothing. O(len(data)) memo lookups when warm."""
        if self._stopped_at >= 0:
            return False
        a = self._a
        s = self._state
        trail: list[AutomatonState] = []
        for b in bytes(data):
            trail.append(s)
            nxt = a.advance(s, b)
            if nxt is None:
                return False
            s = nxt
        self._history.extend(trail)
        self._state = s
        return True

    def accept_special(self, text: str) -> bool:
        if self._stopped_at >= 0:
            return False
        s = self._a.advance_special(self._state, text)
        if s is None:
            return False
        self._history.append(self._state)
        self._state = s
        return True

    def accept_token(self, tid: int) -> bool:
        """See :meth:`Matcher.accept_token`. O(token bytes) memo lookups when warm."""
        masks = self._need_masks()
        if self._stopped_at >= 0:
            return False
        idx = masks.index
        if not 0 <= tid < idx.size:
            return False
        cur = self._state
        nxt: AutomatonState | None
        if idx.text[tid]:
            nxt = masks.advance_token(cur, tid)
            if nxt is None:
                return False
        else:
            vocab = idx.vocab
            text = vocab.special.get(tid)
            nxt = self._a.advance_special(cur, text) if text is not None else None
            if nxt is None:
                if not (tid in vocab.eos_ids and cur.accepting):
                    return False
                self._stopped_at = len(self._history)
                self._history.append(cur)
                return True
        self._history.append(cur)
        self._state = nxt
        return True

    def rollback(self, n: int) -> None:
        if n < 0 or n > len(self._history):
            raise ValueError(f"cannot roll back {n} units: only {len(self._history)} accepted")
        if n == 0:
            return
        self._state = self._history[-n]
        del self._history[-n:]
        if self._stopped_at >= len(self._history):
            self._stopped_at = -1

    def reset(self) -> None:
        self._state = self._a.initial
        self._history.clear()
        self._stopped_at = -1

    def is_accepting(self) -> bool:
        return bool(self._state.accepting)

    def is_finished(self) -> bool:
        return self._stopped_at >= 0 or bool(self._a.is_finished(self._state))

    def allowed_bytes(self) -> int:
        """See :meth:`Matcher.allowed_bytes` (cached by state)."""
        return 0 if self._stopped_at >= 0 else int(self._a.allowed_bytes(self._state))

    def allowed_specials(self) -> frozenset[str]:
        if self._stopped_at >= 0:
            return frozenset()
        return frozenset(self._a.allowed_specials(self._state))

    def mask(self) -> npt.NDArray[np.int32]:
        masks = self._need_masks()
        if self._stopped_at >= 0:
            return np.zeros(masks.index.words, dtype=np.int32)
        return masks.get(self._state)

    def fill_bitmask(self, out: npt.NDArray[np.int32], index: int | None = None) -> None:
        """See :meth:`Matcher.fill_bitmask`. A cached state costs one copy of the words."""
        masks = self._need_masks()
        target = out if index is None else out[index]
        words = masks.index.words
        if target.shape != (words,):
            raise ValueError(f"bitmask has shape {target.shape}, expected ({words},)")
        if self._stopped_at >= 0:
            target.fill(0)
            return
        masks.fill(self._state, target)

    def forced_bytes(self) -> bytes:
        """See :meth:`Matcher.forced_bytes`: follows the automaton while exactly one byte is
        allowed, no special token is allowed and the state is not accepting."""
        if self._stopped_at >= 0:
            return b""
        a = self._a
        s = self._state
        out = bytearray()
        cap = a.limits.max_forced_bytes
        while len(out) < cap and not s.accepting:
            mask = a.allowed_bytes(s)
            if mask == 0 or mask & (mask - 1) or a.allowed_specials(s):
                break
            b = mask.bit_length() - 1
            nxt = a.advance(s, b)
            assert nxt is not None
            out.append(b)
            s = nxt
        return bytes(out)

    def __repr__(self) -> str:
        return f"PlainMatcher(accepted={len(self._history)}, state={self._state!r})"


class FilteredMatcher(Matcher):
    """Two matchers in lockstep, any implementations of :class:`Matcher`: ``main`` and
    ``filter`` (the matcher of a grammar :meth:`~toolmask.CompiledGrammar.restricted` by a
    filter), from states that accepted the same units. Every unit must be accepted by both:
    ``main`` first (a main matcher that prepares before it accepts, such as the lazy turn's,
    prepares whatever the filter says), and ``main`` rolls it back when ``filter`` refuses it.
    Masks are the AND of both, and both roll back together. :attr:`state`, :attr:`automaton`
    and :attr:`masks` are ``main``'s. Costs one more advance per unit, and one more mask fill
    plus an AND of ceil(V/32) words per step."""

    __slots__ = ("_scratch", "filter", "main")

    #: the mask is an AND of two
    cached_by_state = False

    def __init__(self, main: Matcher, filter: Matcher) -> None:
        self.main = main
        self.filter = filter
        self._scratch: npt.NDArray[np.int32] | None = None

    @property
    def state(self) -> AutomatonState:
        """``main``'s state (the pair of both is the state of the intersection)."""
        return self.main.state

    @property
    def automaton(self) -> Automaton:
        return self.main.automaton

    @property
    def masks(self) -> MaskCache | None:
        return self.main.masks

    @property
    def n_accepted(self) -> int:
        return self.main.n_accepted

    @property
    def vocab_size(self) -> int:
        return self.main.vocab_size

    @property
    def stopped(self) -> bool:
        return self.main.stopped

    def accept_bytes(self, data: bytes | bytearray | memoryview) -> bool:
        data = bytes(data)
        if not self.main.accept_bytes(data):
            return False
        if not self.filter.accept_bytes(data):
            self.main.rollback(len(data))
            return False
        return True

    def accept_special(self, text: str) -> bool:
        if not self.main.accept_special(text):
            return False
        if not self.filter.accept_special(text):
            self.main.rollback(1)
            return False
        return True

    def accept_token(self, tid: int) -> bool:
        if not self.main.accept_token(tid):
            return False
        if not self.filter.accept_token(tid):
            self.main.rollback(1)
            return False
        return True

    def rollback(self, n: int) -> None:
        self.main.rollback(n)  # checks n first
        self.filter.rollback(n)

    def reset(self) -> None:
        self.main.reset()
        self.filter.reset()

    def is_accepting(self) -> bool:
        return self.filter.is_accepting() and self.main.is_accepting()

    def is_finished(self) -> bool:
        main, f = self.main, self.filter
        if main.stopped:
            return True
        return (
            f.is_accepting()
            and main.is_accepting()
            and not main.allowed_bytes() & f.allowed_bytes()
            and not main.allowed_specials() & f.allowed_specials()
        )

    # a stopped matcher allows nothing: so neither does the pair when ``main`` has stopped
    def allowed_bytes(self) -> int:
        return self.main.allowed_bytes() & self.filter.allowed_bytes()

    def allowed_specials(self) -> frozenset[str]:
        return self.main.allowed_specials() & self.filter.allowed_specials()

    def mask(self) -> npt.NDArray[np.int32]:
        masks = self.main.masks
        if masks is None or self.stopped:
            return self.main.mask()  # the no-vocabulary ValueError, or no token
        out = np.empty(masks.index.words, dtype=np.int32)
        self.fill_bitmask(out)
        out.setflags(write=False)
        return out

    def fill_bitmask(self, out: npt.NDArray[np.int32], index: int | None = None) -> None:
        """See :meth:`Matcher.fill_bitmask`: ``main``'s mask AND ``filter``'s (all zeros once
        ``main`` has stopped)."""
        target = out if index is None else out[index]
        self.main.fill_bitmask(target)
        scratch = self._scratch
        if scratch is None:
            scratch = self._scratch = np.empty(target.shape, dtype=np.int32)
        self.filter.fill_bitmask(scratch)
        np.bitwise_and(target, scratch, out=target)

    def forced_bytes(self) -> bytes:
        """See :meth:`Matcher.forced_bytes`: over the intersection, by stepping both matchers
        one byte at a time (:func:`forced_stepwise`)."""
        if self.stopped:
            return b""
        return forced_stepwise(self, self.main.automaton.limits.max_forced_bytes)

    def __repr__(self) -> str:
        return f"FilteredMatcher(main={self.main!r}, filter={self.filter!r})"
