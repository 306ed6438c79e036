"""The matcher of a compiled grammar: :class:`Matcher` (one sequence, bytes and tokens), with an
optional filter matcher run in lockstep."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from toolmask.automaton import Automaton, AutomatonState
    from toolmask.mask import MaskCache

__all__ = ["Matcher"]


class Matcher:
    """Matching of one sequence against a compiled grammar: bytes, and tokens with a vocabulary.

    Never raises on model output: ``accept_*`` returns False and leaves the state unchanged.
    Raises ValueError only on misuse (rolling back more than was accepted, token methods on a
    grammar compiled without a vocabulary). Keeps one history entry per accepted unit (a byte
    for ``accept_bytes``, a token for ``accept_token``, a special token for ``accept_special``),
    so ``rollback(n)`` undoes the last ``n`` units in O(n).

    Accepting an EOS id (when the state accepts and the grammar does not name that token)
    stops the matcher: nothing more is allowed until it is rolled back.

    ``filter``: the matcher of a second grammar moved in lockstep (a grammar
    :meth:`~CompiledGrammar.restricted` by a filter): every unit must be accepted by both,
    masks are the AND of both, and both roll back together. Costs one more advance per unit
    and one more mask fill plus an AND of ceil(V/32) words per step.
    """

    __slots__ = ("_a", "_f", "_history", "_masks", "_scratch", "_state", "_stopped_at")

    #: what :attr:`masks` gives the batch filler for a row whose mask is not its state's
    #: cached mask (a filtered row; a lazy turn's): the filler leaves it to ``fill_bitmask``
    _FILLS_ITSELF: Any = object()

    def __init__(
        self, automaton: Automaton, masks: MaskCache | None = None, filter: Matcher | None = None
    ) -> None:
        self._a = automaton
        self._masks = masks
        self._f = filter
        self._scratch: npt.NDArray[np.int32] | None = None
        self._state: AutomatonState = automaton.initial
        self._history: list[AutomatonState] = []
        self._stopped_at = -1

    @property
    def state(self) -> AutomatonState:
        """The current automaton state (interned; usable as a cache key). With a filter, the
        state of the main grammar only."""
        return self._state

    @property
    def automaton(self) -> Automaton:
        return self._a

    @property
    def masks(self) -> Any:
        """The compiled grammar's mask cache (None without a vocabulary): what
        :func:`toolmask.mask.fill_batch` reads with :attr:`state` to fill many rows at once.
        With a filter, a marker instead: the row's mask is not its state's cached mask, so the
        batch filler leaves the row to :meth:`fill_bitmask`."""
        if self._f is not None and self._masks is not None:
            return self._FILLS_ITSELF
        return self._masks

    @property
    def n_accepted(self) -> int:
        """Units (bytes, tokens, special tokens) accepted so far: what ``rollback`` can undo."""
        return len(self._history)

    @property
    def vocab_size(self) -> int:
        """Width of the logits the masks are for (ValueError without a vocabulary)."""
        return int(self._need_masks().index.size)

    @property
    def stopped(self) -> bool:
        """An EOS token was accepted."""
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
        data = bytes(data)
        f = self._f
        if f is not None and not f.accept_bytes(data):
            return False
        a = self._a
        s = self._state
        trail: list[AutomatonState] = []
        for b in data:
            trail.append(s)
            nxt = a.advance(s, b)
            if nxt is None:
                if f is not None:
                    f.rollback(len(data))
                return False
            s = nxt
        self._history.extend(trail)
        self._state = s
        return True

    def accept_special(self, text: str) -> bool:
        """Accept one special token by its text; counts as one unit for ``rollback``."""
        if self._stopped_at >= 0:
            return False
        s = self._a.advance_special(self._state, text)
        if s is None:
            return False
        if self._f is not None and not self._f.accept_special(text):
            return False
        self._history.append(self._state)
        self._state = s
        return True

    def accept_token(self, tid: int) -> bool:
        """Accept token ``tid`` (one unit for ``rollback``); False leaves the state unchanged.

        A text token advances by all its bytes; a special token by its text where the grammar
        names it; an EOS id is accepted when the state accepts (and then stops the matcher).
        Padding and unknown ids are rejected. O(token bytes) memo lookups when warm.
        """
        masks = self._need_masks()
        if self._stopped_at >= 0:
            return False
        idx = masks.index
        if not 0 <= tid < idx.size:
            return False
        cur = self._state
        nxt: AutomatonState | None
        stop = False
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
                stop = True
        if self._f is not None and not self._f.accept_token(tid):
            return False
        if stop:
            self._stopped_at = len(self._history)
            self._history.append(cur)
            return True
        assert nxt is not None
        self._history.append(cur)
        self._state = nxt
        return True

    def rollback(self, n: int) -> None:
        """Undo the last ``n`` accepted units. ValueError if ``n`` is too big."""
        if n < 0 or n > len(self._history):
            raise ValueError(f"cannot roll back {n} units: only {len(self._history)} accepted")
        if n == 0:
            return
        if self._f is not None:
            self._f.rollback(n)
        self._state = self._history[-n]
        del self._history[-n:]
        if self._stopped_at >= len(self._history):
            self._stopped_at = -1

    def reset(self) -> None:
        """Back to the start of the grammar."""
        if self._f is not None:
            self._f.reset()
        self._state = self._a.initial
        self._history.clear()
        self._stopped_at = -1

    def is_accepting(self) -> bool:
        """The document accepted so far is complete (it may still continue)."""
        if self._f is not None and not self._f.is_accepting():
            return False
        return bool(self._state.accepting)

    def is_finished(self) -> bool:
        """Stopped by EOS, or complete with nothing more acceptable."""
        if self._stopped_at >= 0:
            return True
        if self._f is None:
            return bool(self._a.is_finished(self._state))
        return self.is_accepting() and not self.allowed_bytes() and not self.allowed_specials()

    def allowed_bytes(self) -> int:
        """256-bit mask of the bytes that ``accept_bytes`` would take next (cached by state)."""
        if self._stopped_at >= 0:
            return 0
        own = int(self._a.allowed_bytes(self._state))
        return own & self._f.allowed_bytes() if self._f is not None else own

    def allowed_specials(self) -> frozenset[str]:
        """Special-token texts that ``accept_special`` would take next."""
        if self._stopped_at >= 0:
            return frozenset()
        own = frozenset(self._a.allowed_specials(self._state))
        return own & self._f.allowed_specials() if self._f is not None else own

    def mask(self) -> npt.NDArray[np.int32]:
        """The int32 bitmask of the allowed token ids, read-only (do not modify it). Bit
        ``t % 32`` of word ``t // 32`` is token ``t``."""
        masks = self._need_masks()
        if self._stopped_at >= 0:
            return np.zeros(masks.index.words, dtype=np.int32)
        if self._f is None:
            return masks.get(self._state)
        out = np.empty(masks.index.words, dtype=np.int32)
        self.fill_bitmask(out)
        out.setflags(write=False)
        return out

    def fill_bitmask(self, out: npt.NDArray[np.int32], index: int | None = None) -> None:
        """Write the allowed-token bitmask into ``out`` (int32, ``ceil(V/32)`` words), or into
        row ``index`` of a batch ``out[B, W]``. A cached state costs one copy of the words
        (with a filter: two, and an AND)."""
        masks = self._need_masks()
        target = out if index is None else out[index]
        words = masks.index.words
        if target.shape != (words,):
            raise ValueError(f"bitmask has shape {target.shape}, expected ({words},)")
        if self._stopped_at >= 0:
            target.fill(0)
            return
        masks.fill(self._state, target)
        if self._f is not None:
            scratch = self._scratch
            if scratch is None:
                scratch = self._scratch = np.empty(words, dtype=np.int32)
            self._f.fill_bitmask(scratch)
            np.bitwise_and(target, scratch, out=target)

    def allowed_token_ids(self) -> npt.NDArray[np.int64]:
        """The allowed token ids, sorted."""
        m = self.mask()
        bits = np.unpackbits(m.view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self.vocab_size]).astype(np.int64)

    def forced_bytes(self) -> bytes:
        """The longest byte string every continuation must start with (at most
        ``Limits.max_forced_bytes`` of the automaton's limits).

        Follows the automaton while exactly one byte is allowed, no special token is allowed
        and the state is not accepting. Does not change the matcher.
        """
        if self._stopped_at >= 0:
            return b""
        if self._f is not None:
            return self._forced_with_filter()
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

    def _forced_with_filter(self) -> bytes:
        """:meth:`forced_bytes` over the intersection: step both matchers one byte at a time
        while exactly one byte is allowed by both, then roll back."""
        return self._forced_stepwise(self._a.limits.max_forced_bytes)

    def _forced_stepwise(self, cap: int) -> bytes:
        """:meth:`forced_bytes` through this matcher's own ``accept_bytes``, one byte at a time
        (up to ``cap``), rolled back at the end."""
        out = bytearray()
        while len(out) < cap and not self.is_accepting():
            mask = self.allowed_bytes()
            if mask == 0 or mask & (mask - 1) or self.allowed_specials():
                break
            b = mask.bit_length() - 1
            if not self.accept_bytes(bytes((b,))):  # pragma: no cover - allowed means taken
                break
            out.append(b)
        self.rollback(len(out))
        return bytes(out)

    def __repr__(self) -> str:
        return f"Matcher(accepted={len(self._history)}, state={self._state!r})"
