"""``compile`` and :class:`GrammarCompiler`: a grammar becomes a :class:`CompiledGrammar`
(automaton, post-decode checks and, with a vocabulary, token masks).

A :class:`GrammarCompiler` owns every cache that compiling and matching fill: compiled grammars,
automata (shared by every vocabulary), vocabulary indexes, the masks each compiled grammar
caches, and named caches for the tool layer (schema grammars, validators, sanitizer patterns),
under one byte budget (``Limits.max_cache_bytes``). ``tm.compile`` uses the active compiler
(see :func:`toolmask._cache.active_compiler`): the process default unless another one was
activated with ``with compiler.activate():``. The server holds its own.

Two backends compute the same thing: ``"native"``, the compiled kernel ``toolmask._native``
(the default when it is built), and ``"python"``, the pure-Python reference
(``TOOLMASK_BACKEND=python`` or ``GrammarCompiler(backend="python")``); see ``docs/masks.md``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from toolmask._cache import LRUCache, _active, active_compiler
from toolmask._kernel import Backend, resolve_backend
from toolmask._pointer import json_pointer
from toolmask.grammar._ir import Grammar
from toolmask.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from toolmask.vocab import Vocabulary

__all__ = [
    "CompiledGrammar",
    "GrammarCompiler",
    "Matcher",
    "clear_cache",
    "compile",
    "default_compiler",
]

#: the default for :meth:`Matcher.forced_bytes` (``Limits.max_forced_bytes``)
MAX_FORCED = DEFAULT_LIMITS.max_forced_bytes


class GrammarCompiler:
    """Compiles grammars and owns every cache that compiling and matching fill.

    ``limits`` are the default compile limits and bound the caches: ``max_compiled_grammars``
    compiled grammars (and as many automata), ``max_vocab_indexes`` vocabulary indexes, the
    tool layer's ``max_schema_grammars`` / ``max_validators`` / ``max_sanitizer_patterns``,
    and ``max_cache_bytes`` for all of it together (each compiled grammar's masks are bounded
    by ``max_mask_cache_bytes`` on their own). ``backend``: ``"native"``, ``"python"`` or
    None for :func:`toolmask.mask.backend`.

    Thread-safe: compiles may run on several threads while matchers decode on others; two
    threads compiling the same grammar agree on one :class:`CompiledGrammar`.
    """

    def __init__(
        self,
        *,
        limits: Limits = DEFAULT_LIMITS,
        backend: str | None = None,
        max_cache_bytes: int | None = None,
    ) -> None:
        self.limits = limits
        self.backend: Backend = resolve_backend(backend)
        self.max_cache_bytes = (
            limits.max_cache_bytes if max_cache_bytes is None else max_cache_bytes
        )
        self._compiled: LRUCache[tuple[str, Limits, str | None], CompiledGrammar] = LRUCache(
            "compiled", limits.max_compiled_grammars
        )
        self._automata: LRUCache[tuple[str, Limits], Any] = LRUCache(
            "automata", limits.max_compiled_grammars
        )
        self._indexes: LRUCache[str, Any] = LRUCache(
            "vocab_indexes", limits.max_vocab_indexes, _index_bytes
        )
        self._named: dict[str, LRUCache[Any, Any]] = {}
        self._lock = threading.Lock()
        # what _trim measured last, and the compiles since (it measures at intervals)
        self._last_total = self.max_cache_bytes  # not measured yet: the next compile does
        self._since_trim = 0

    # -- compiling --------------------------------------------------------------------------------
    def compile(
        self, grammar: Grammar, vocab: Vocabulary | None = None, *, limits: Limits | None = None
    ) -> CompiledGrammar:
        """Compile ``grammar`` for byte-level matching, and for token masks when ``vocab`` is
        given; cached by (grammar, limits, vocabulary fingerprint).

        Raises GrammarError / LimitError as :func:`toolmask.automaton.build_automaton` does.
        Cost on a miss: reading the grammar and building its initial state (the automaton is
        lazy, see ``docs/automaton.md``) plus the vocabulary index once per vocabulary; on a
        hit: one pass over the grammar to key it (in C for the native backend).
        """
        lim = self.limits if limits is None else limits
        flat: Any = None
        if self.backend == "native":
            from toolmask.automaton._native import flatten

            flat = flatten(grammar)
            fp = _native_key(flat, grammar)
        else:
            fp = grammar.fingerprint()
        key = (fp, lim, vocab.fingerprint if vocab is not None else None)
        hit = self._compiled.get(key)
        if hit is not None:
            return hit
        akey = (fp, lim)
        automaton = self._automata.get(akey)
        if automaton is None:
            if flat is not None:
                from toolmask.automaton._native import native_from_flat

                automaton = native_from_flat(flat, grammar, lim)
            else:
                from toolmask.automaton import build_automaton

                automaton = build_automaton(grammar, limits=lim)
            automaton = self._automata.put(akey, automaton)
        masks: Any = None
        if vocab is not None:
            index = self.vocab_index(vocab)
            if self.backend == "native":
                from toolmask.mask._native import NativeMaskCache

                masks = NativeMaskCache(automaton, index, lim.max_mask_cache_bytes)
            else:
                from toolmask.mask import MaskCache

                masks = MaskCache(automaton, index, lim.max_mask_cache_bytes)
        compiled = self._compiled.put(key, CompiledGrammar(grammar, automaton, masks))
        self._trim()
        return compiled

    def vocab_index(self, vocab: Vocabulary) -> Any:
        """The index of ``vocab`` for this backend (tries, token tables, run tables), built
        once per fingerprint and kept in the ``max_vocab_indexes`` LRU (each keeps
        ``max_run_tables`` run tables)."""
        tables = self.limits.max_run_tables
        if self.backend == "native":
            from toolmask.mask._native import NativeVocabIndex

            build: Callable[[], Any] = lambda: NativeVocabIndex(  # noqa: E731
                vocab, max_run_tables=tables
            )
        else:
            from toolmask.mask import VocabIndex

            build = lambda: VocabIndex(vocab, max_run_tables=tables)  # noqa: E731
        return self._indexes.get_or_build(vocab.fingerprint, build)

    # -- caches -----------------------------------------------------------------------------------
    def cache(
        self, name: str, *, limit: str, entry_bytes: Callable[[Any], int] | None = None
    ) -> LRUCache[Any, Any]:
        """The named cache ``name`` owned by this compiler (created on first use), bounded by
        the ``Limits`` field ``limit`` of this compiler's limits; ``entry_bytes`` measures a
        value when it is stored, for :meth:`memory` and the byte budget. For the other layers:
        the tool layer keeps its schema grammars, validators and sanitizer patterns here, the
        schema and grammar layers their memos (:func:`toolmask._cache.compiler_memo`), so that
        :meth:`clear` and :meth:`memory` cover them."""
        c = self._named.get(name)
        if c is None:
            with self._lock:
                c = self._named.get(name)
                if c is None:
                    c = LRUCache(name, int(getattr(self.limits, limit)), entry_bytes=entry_bytes)
                    self._named[name] = c
        return c

    @contextmanager
    def activate(self) -> Iterator[GrammarCompiler]:
        """Make this compiler the active one in this thread or task (for ``tm.compile`` and the
        tool layer's caches) until the block ends."""
        token = _active.set(self)
        try:
            yield self
        finally:
            _active.reset(token)

    def memory(self) -> dict[str, int]:
        """Bytes held, by part: ``automata``, ``masks`` (every compiled grammar's cached masks),
        ``vocab_indexes``, ``memos`` (the named caches that measure their entries), and
        ``total``; plus the entry counts of the caches (``compiled``, and one per named
        cache)."""
        automata: dict[int, Any] = {}
        masks = 0
        compiled = self._compiled.values()
        for c in compiled:
            automata[id(c.automaton)] = c.automaton
            if c.masks is not None:
                masks += c.masks.memory_bytes()
        for a in self._automata.values():
            automata[id(a)] = a
        auto_bytes = sum(_automaton_bytes(a) for a in automata.values())
        index_bytes = self._indexes.nbytes()
        memo_bytes = sum(c.nbytes() for c in list(self._named.values()))
        out = {
            "automata": auto_bytes,
            "masks": masks,
            "vocab_indexes": index_bytes,
            "memos": memo_bytes,
            "total": auto_bytes + masks + index_bytes + memo_bytes,
            "compiled": len(compiled),
        }
        for name, named in sorted(self._named.items()):
            out[name] = len(named)
        return out

    def _trim(self) -> None:
        """While the caches hold more than ``max_cache_bytes``: drop the least recently used
        compiled grammars (and their automata), the last one always staying, then the oldest
        entries of the measured named caches (the memos), largest cache first. Runs after each
        compile (memos filled by building a grammar alone are trimmed at the next compile).

        Measuring asks every cached grammar its size (O(cached grammars), 10-30 µs for a
        dozen), so while the last measure was under half of ``max_cache_bytes`` the next ones
        are spaced out: one per ``max(8, len(compiled) // 16)`` compiles (amortised O(16) per
        compile); past half, every compile measures. A compile adds an automaton's initial
        state and some memos, far below half the budget in 8 compiles; the masks grow while
        matchers decode, between compiles, whatever the spacing."""
        self._since_trim += 1
        if self._last_total < self.max_cache_bytes // 2 and self._since_trim < max(
            8, len(self._compiled) // 16
        ):
            return
        self._since_trim = 0
        total = self.memory()["total"]
        while total > self.max_cache_bytes and len(self._compiled) > 1:
            self._compiled.pop_oldest()
            if len(self._automata) > 1:
                self._automata.pop_oldest()
            total = self.memory()["total"]
        memos = sorted(
            (c for c in list(self._named.values()) if c.nbytes() > 0),
            key=LRUCache.nbytes,
            reverse=True,
        )
        for c in memos:
            while total > self.max_cache_bytes:
                before = c.nbytes()
                if c.pop_oldest() is None:
                    break
                total -= before - c.nbytes()
        self._last_total = total

    def clear(self) -> None:
        """Forget everything cached (compiled grammars, automata, indexes, named caches)."""
        self._compiled.clear()
        self._automata.clear()
        self._last_total, self._since_trim = self.max_cache_bytes, 0
        self._indexes.clear()
        for c in list(self._named.values()):
            c.clear()

    def __repr__(self) -> str:
        return (
            f"GrammarCompiler(backend={self.backend!r}, compiled={len(self._compiled)}, "
            f"vocab_indexes={len(self._indexes)})"
        )


def _native_key(flat: Any, grammar: Grammar) -> str:
    """Cache key of a grammar on the native backend: a digest of the kernel's canonical
    serialisation (nodes by content, rule bodies, start), the rule names, the special texts
    and the post-decode checks. O(grammar size), hashing at C speed."""
    h = hashlib.blake2b(flat.key, digest_size=32)
    h.update(b"\0".join(r.name.encode("utf-8", "surrogatepass") for r in grammar.rules))
    h.update(b"\1" + repr(grammar.checks).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _automaton_bytes(a: Any) -> int:
    mb = getattr(a, "memory_bytes", None)
    if mb is not None:
        return int(mb())
    # the pure-Python automaton: a rough estimate (positions and interned states with memos)
    return int(a.n_positions) * 600 + int(a.cached_states()) * 1200


def _index_bytes(index: Any) -> int:
    mb = getattr(index, "memory_bytes", None)
    return int(mb()) if mb is not None else 0


_default: GrammarCompiler | None = None
_default_lock = threading.Lock()


def default_compiler() -> GrammarCompiler:
    """The process-wide compiler ``tm.compile`` uses when no other one is active."""
    global _default
    c = _default
    if c is None:
        with _default_lock:
            if _default is None:
                _default = GrammarCompiler()
            c = _default
    return c


def compile(
    grammar: Grammar, vocab: Vocabulary | None = None, *, limits: Limits = DEFAULT_LIMITS
) -> CompiledGrammar:
    """Compile ``grammar`` with the active :class:`GrammarCompiler` (the process default unless
    one was activated): byte-level matching, and token masks when ``vocab`` is given.

    Cached by ``(grammar, limits, vocabulary fingerprint)``; the automaton is shared by every
    vocabulary. Raises GrammarError / LimitError as
    :func:`toolmask.automaton.build_automaton` does. Cost: the automaton's initial state on a
    miss (lazy, see ``docs/automaton.md``), the vocabulary index once per vocabulary (see
    ``docs/masks.md``); O(grammar size) on a hit.
    """
    return active_compiler().compile(grammar, vocab, limits=limits)


def clear_cache() -> None:
    """Forget everything the default compiler cached (tests, memory pressure)."""
    default_compiler().clear()


class CompiledGrammar:
    """A grammar with its automaton (and mask cache, when compiled with a vocabulary).

    Share it between threads and sequences; one :meth:`matcher` per sequence.
    """

    __slots__ = ("_validators", "automaton", "grammar", "masks")

    grammar: Grammar
    automaton: Any
    masks: Any

    def __init__(self, grammar: Grammar, automaton: Any, masks: Any = None) -> None:
        self.grammar = grammar
        self.automaton = automaton
        self.masks = masks
        self._validators: list[Any] | None = None

    @property
    def vocab(self) -> Vocabulary | None:
        """The vocabulary the masks are computed for (None: byte-level matching only)."""
        return self.masks.index.vocab if self.masks is not None else None

    @property
    def backend(self) -> Backend:
        """``"native"`` (compiled kernel) or ``"python"`` (reference)."""
        return "native" if type(self.automaton).__module__ == "toolmask._native" else "python"

    def matcher(self) -> Matcher:
        """A fresh matcher at the start of the grammar (one per sequence). O(1)."""
        return Matcher(self.automaton, self.masks)

    def memory(self) -> dict[str, int]:
        """Bytes this compiled grammar holds: ``automaton`` (positions, states and their
        transition memos, built lazily as input explores it) and ``masks`` (the cached masks;
        the vocabulary's shared tables are counted by the compiler, once per vocabulary)."""
        masks = self.masks.memory_bytes() if self.masks is not None else 0
        return {"automaton": _automaton_bytes(self.automaton), "masks": masks}

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
            + f", backend={self.backend!r})"
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

    def __init__(self, automaton: Any, masks: Any = None) -> None:
        self._a = automaton
        self._masks = masks
        self._state: Any = automaton.initial
        self._history: list[Any] = []
        self._stopped_at = -1

    @property
    def state(self) -> Any:
        """The current automaton state (interned; usable as a cache key)."""
        return self._state

    @property
    def automaton(self) -> Any:
        return self._a

    @property
    def masks(self) -> Any:
        """The compiled grammar's mask cache (None without a vocabulary): what
        :func:`toolmask.mask.fill_batch` reads with :attr:`state` to fill many rows at once."""
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

    def _need_masks(self) -> Any:
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
        s: Any = self._state
        trail: list[Any] = []
        for b in data:
            trail.append(s)
            s = a.advance(s, b)
            if s is None:
                return False
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
        cur = self._state
        nxt: Any
        if idx.text[tid]:
            nxt = masks.advance_token(cur, tid)
            if nxt is None:
                return False
        else:
            vocab = idx.vocab
            text = vocab.special.get(tid)
            nxt = self._a.advance_special(cur, text) if text is not None else None
            if nxt is None:
                if tid in vocab.eos_ids and cur.accepting:
                    self._stopped_at = len(self._history)
                    self._history.append(cur)
                    return True
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
        return bool(self._state.accepting)

    def is_finished(self) -> bool:
        """Stopped by EOS, or complete with nothing more acceptable."""
        return self._stopped_at >= 0 or bool(self._a.is_finished(self._state))

    def allowed_bytes(self) -> int:
        """256-bit mask of the bytes that ``accept_bytes`` would take next (cached by state)."""
        if self._stopped_at >= 0:
            return 0
        return int(self._a.allowed_bytes(self._state))

    def allowed_specials(self) -> frozenset[str]:
        """Special-token texts that ``accept_special`` would take next."""
        if self._stopped_at >= 0:
            return frozenset()
        return frozenset(self._a.allowed_specials(self._state))

    def mask(self) -> npt.NDArray[np.int32]:
        """The int32 bitmask of the allowed token ids, read-only (do not modify it). Bit
        ``t % 32`` of word ``t // 32`` is token ``t``."""
        masks = self._need_masks()
        if self._stopped_at >= 0:
            return np.zeros(masks.index.words, dtype=np.int32)
        return masks.get(self._state)  # type: ignore[no-any-return]

    def fill_bitmask(self, out: npt.NDArray[np.int32], index: int | None = None) -> None:
        """Write the allowed-token bitmask into ``out`` (int32, ``ceil(V/32)`` words), or into
        row ``index`` of a batch ``out[B, W]``. A cached state costs one copy of the words."""
        masks = self._need_masks()
        target = out if index is None else out[index]
        words = masks.index.words
        if target.shape != (words,):
            raise ValueError(f"bitmask has shape {target.shape}, expected ({words},)")
        if self._stopped_at >= 0:
            target.fill(0)
            return
        masks.fill(self._state, target)

    def allowed_token_ids(self) -> npt.NDArray[np.int64]:
        """The allowed token ids, sorted."""
        m = self.mask()
        bits = np.unpackbits(m.view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self._need_masks().index.size]).astype(np.int64)

    def forced_bytes(self) -> bytes:
        """The longest byte string every continuation must start with (at most
        ``Limits.max_forced_bytes`` of the automaton's limits).

        Follows the automaton while exactly one byte is allowed, no special token is allowed
        and the state is not accepting. Does not change the matcher.
        """
        a = self._a
        s = self._state
        out = bytearray()
        if self._stopped_at >= 0:
            return b""
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
        return f"Matcher(accepted={len(self._history)}, state={self._state!r})"
