"""``compile``: a grammar becomes a :class:`CompiledGrammar` (automaton, post-decode checks and,
with a vocabulary, token masks).

Automata are cached by ``(grammar.fingerprint(), limits)`` and compiled grammars by that plus
the vocabulary's fingerprint, both in bounded LRUs: the same tools across turns and requests
reuse the automaton, its memoised transitions and every mask already computed.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from toolmask._pointer import json_pointer
from toolmask.automaton import Automaton, State, build_automaton
from toolmask.grammar._ir import Grammar
from toolmask.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from toolmask.mask import MaskCache
    from toolmask.vocab import Vocabulary

__all__ = ["CompiledGrammar", "Matcher", "compile"]

#: entries kept by the compile cache (and by the automaton cache)
CACHE_SIZE = 64
#: longest run that :meth:`Matcher.forced_bytes` returns
MAX_FORCED = 4096

_cache: OrderedDict[tuple[str, Limits, str | None], CompiledGrammar] = OrderedDict()
_automata: OrderedDict[tuple[str, Limits], Automaton] = OrderedDict()
_cache_lock = threading.Lock()


def _lru_get(cache: OrderedDict[Any, Any], key: Any) -> Any:
    with _cache_lock:
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
        return hit


def _lru_put(cache: OrderedDict[Any, Any], key: Any, value: Any) -> Any:
    """Insert unless another thread won the race; returns the one object kept for ``key``."""
    with _cache_lock:
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return hit
        cache[key] = value
        while len(cache) > CACHE_SIZE:
            cache.popitem(last=False)
        return value


def compile(
    grammar: Grammar, vocab: Vocabulary | None = None, *, limits: Limits = DEFAULT_LIMITS
) -> CompiledGrammar:
    """Compile ``grammar`` for byte-level matching, and for token masks when ``vocab`` is given.

    Cached by ``(fingerprint, limits, vocab fingerprint)`` (LRU, 64 entries); the automaton is
    shared by every vocabulary. Raises GrammarError / LimitError as
    :func:`toolmask.automaton.build_automaton` does. Cost: the automaton build on a miss (lazy,
    see ``docs/automaton.md``), the vocabulary index once per vocabulary (see
    ``docs/masks.md``); O(grammar size) on a hit (the fingerprint).
    """
    fp = grammar.fingerprint()
    key = (fp, limits, vocab.fingerprint if vocab is not None else None)
    hit = _lru_get(_cache, key)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    akey = (fp, limits)
    automaton = _lru_get(_automata, akey)
    if automaton is None:
        automaton = _lru_put(_automata, akey, build_automaton(grammar, limits=limits))
    masks = None
    if vocab is not None:
        from toolmask.mask import MaskCache, vocab_index

        masks = MaskCache(automaton, vocab_index(vocab), limits.max_mask_cache_bytes)
    compiled = CompiledGrammar(grammar, automaton, masks)
    return _lru_put(_cache, key, compiled)  # type: ignore[no-any-return]


def clear_cache() -> None:
    """Forget every cached compiled grammar and automaton (tests, memory pressure)."""
    with _cache_lock:
        _cache.clear()
        _automata.clear()


class CompiledGrammar:
    """A grammar with its automaton (and mask cache, when compiled with a vocabulary).

    Share it between threads and sequences; one :meth:`matcher` per sequence.
    """

    __slots__ = ("_validators", "automaton", "grammar", "masks")

    grammar: Grammar
    automaton: Automaton
    masks: MaskCache | None

    def __init__(
        self, grammar: Grammar, automaton: Automaton, masks: MaskCache | None = None
    ) -> None:
        self.grammar = grammar
        self.automaton = automaton
        self.masks = masks
        self._validators: list[Any] | None = None

    @property
    def vocab(self) -> Vocabulary | None:
        """The vocabulary the masks are computed for (None: byte-level matching only)."""
        return self.masks.index.vocab if self.masks is not None else None

    def matcher(self) -> Matcher:
        """A fresh matcher at the start of the grammar (one per sequence). O(1)."""
        return Matcher(self.automaton, self.masks)

    def validate(self, doc: bytes | str) -> list[str]:
        """Run the grammar's post-decode checks on a finished document.

        Returns one string per problem, ``"at <json pointer>: <message>"`` (``(root)`` for the
        document itself), or a single parse error with its position; ``[]`` means valid. A
        grammar without checks returns ``[]`` without parsing. Cost: one JSON parse plus the
        jsonschema validation.
        """
        if not self.grammar.checks:
            return []
        try:
            text = doc.decode("utf-8") if isinstance(doc, (bytes, bytearray)) else doc
        except UnicodeDecodeError as e:
            return [f"invalid UTF-8 at byte {e.start}: {e.reason}"]
        try:
            value = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as e:
            return [f"invalid JSON at line {e.lineno} column {e.colno} (char {e.pos}): {e.msg}"]
        except ValueError as e:
            return [f"invalid JSON: {e}"]
        errors: list[str] = []
        for validator in self._get_validators():
            for err in sorted(validator.iter_errors(value), key=_error_sort_key):
                errors.append(f"at {_pointer(err.absolute_path)}: {err.message}")
        return errors

    def _get_validators(self) -> list[Any]:
        vs = self._validators
        if vs is None:
            from toolmask.schema._validate import make_validator

            vs = [make_validator(check) for check in self.grammar.checks]
            self._validators = vs
        return vs

    def __repr__(self) -> str:
        return (
            f"CompiledGrammar(start={self.grammar.start!r}, rules={len(self.grammar.rules)}, "
            f"positions={self.automaton.n_positions}, checks={len(self.grammar.checks)}"
            + (f", vocab_size={self.masks.index.size}" if self.masks is not None else "")
            + ")"
        )


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _error_sort_key(err: Any) -> tuple[list[str], str]:
    return [str(p) for p in err.absolute_path], str(err.message)


def _pointer(path: Any) -> str:
    return json_pointer(path) or "(root)"


class Matcher:
    """Matching of one sequence against a compiled grammar: bytes, and tokens with a vocabulary.

    Never raises on model output: ``accept_*`` returns False and leaves the state unchanged.
    Raises ValueError only on misuse (rolling back more than was accepted, token methods on a
    grammar compiled without a vocabulary). Keeps one history entry per accepted unit (a byte
    for ``accept_bytes``, a token for ``accept_token``, a special token for ``accept_special``),
    so ``rollback(n)`` undoes the last ``n`` units in O(n).

    Accepting an EOS id (when the state accepts and the grammar does not name that token)
    stops the matcher: nothing more is allowed until it is rolled back.
    """

    __slots__ = ("_a", "_history", "_masks", "_state", "_stopped_at")

    def __init__(self, automaton: Automaton, masks: MaskCache | None = None) -> None:
        self._a = automaton
        self._masks = masks
        self._state: State = automaton.initial
        self._history: list[State] = []
        self._stopped_at = -1

    @property
    def state(self) -> State:
        """The current automaton state (interned; usable as a cache key)."""
        return self._state

    @property
    def automaton(self) -> Automaton:
        return self._a

    @property
    def n_accepted(self) -> int:
        """Units (bytes, tokens, special tokens) accepted so far: what ``rollback`` can undo."""
        return len(self._history)

    @property
    def vocab_size(self) -> int:
        """Width of the logits the masks are for (ValueError without a vocabulary)."""
        return self._need_masks().index.size

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
        a = self._a
        s: State | None = self._state
        trail: list[State] = []
        for b in data:
            assert s is not None
            trail.append(s)
            s = a.advance(s, b)
            if s is None:
                return False
        assert s is not None
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
        vocab = idx.vocab
        cur = self._state
        nxt: State | None
        text = vocab.special.get(tid)
        if text is not None:
            nxt = self._a.advance_special(cur, text)
            if nxt is None:
                if tid in vocab.eos_ids and cur.accepting:
                    self._stopped_at = len(self._history)
                    self._history.append(cur)
                    return True
                return False
        elif idx.text[tid]:
            nxt = self._a.advance_bytes(cur, vocab.token_bytes[tid])
            if nxt is None:
                return False
        elif tid in vocab.eos_ids and cur.accepting:
            self._stopped_at = len(self._history)
            self._history.append(cur)
            return True
        else:
            return False
        self._history.append(cur)
        self._state = nxt
        return True

    def rollback(self, n: int) -> None:
        """Undo the last ``n`` accepted units. ValueError if ``n`` is too big."""
        if n < 0 or n > len(self._history):
            raise ValueError(f"cannot roll back {n} units: only {len(self._history)} accepted")
        if n == 0:
            return
        self._state = self._history[-n]
        del self._history[-n:]
        if self._stopped_at >= len(self._history):
            self._stopped_at = -1

    def reset(self) -> None:
        """Back to the start of the grammar."""
        self._state = self._a.initial
        self._history.clear()
        self._stopped_at = -1

    def is_accepting(self) -> bool:
        """The document accepted so far is complete (it may still continue)."""
        return self._state.accepting

    def is_finished(self) -> bool:
        """Stopped by EOS, or complete with nothing more acceptable."""
        return self._stopped_at >= 0 or self._a.is_finished(self._state)

    def allowed_bytes(self) -> int:
        """256-bit mask of the bytes that ``accept_bytes`` would take next (cached by state)."""
        if self._stopped_at >= 0:
            return 0
        return self._a.allowed_bytes(self._state)

    def allowed_specials(self) -> frozenset[str]:
        """Special-token texts that ``accept_special`` would take next."""
        if self._stopped_at >= 0:
            return frozenset()
        return self._a.allowed_specials(self._state)

    def mask(self) -> npt.NDArray[np.int32]:
        """The read-only int32 bitmask of the allowed token ids (cached per state; do not
        modify it). Bit ``t % 32`` of word ``t // 32`` is token ``t``."""
        masks = self._need_masks()
        if self._stopped_at >= 0:
            return np.zeros(masks.index.words, dtype=np.int32)
        return masks.get(self._state)

    def fill_bitmask(self, out: npt.NDArray[np.int32], index: int | None = None) -> None:
        """Write the allowed-token bitmask into ``out`` (int32, ``ceil(V/32)`` words), or into
        row ``index`` of a batch ``out[B, W]``. O(1) dict lookup plus a copy when cached."""
        m = self.mask()
        target = out if index is None else out[index]
        if target.shape != m.shape:
            raise ValueError(f"bitmask has shape {target.shape}, expected {m.shape}")
        np.copyto(target, m)

    def allowed_token_ids(self) -> npt.NDArray[np.int64]:
        """The allowed token ids, sorted."""
        m = self.mask()
        bits = np.unpackbits(m.view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self._need_masks().index.size]).astype(np.int64)

    def forced_bytes(self) -> bytes:
        """The longest byte string every continuation must start with (at most MAX_FORCED).

        Follows the automaton while exactly one byte is allowed, no special token is allowed
        and the state is not accepting. Does not change the matcher.
        """
        a = self._a
        s = self._state
        out = bytearray()
        if self._stopped_at >= 0:
            return b""
        while len(out) < MAX_FORCED and not s.accepting:
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
        return f"Matcher(accepted={len(self._history)}, state={self._state!r})"
