"""``compile`` and :class:`GrammarCompiler`: a grammar becomes a :class:`CompiledGrammar`
(automaton, post-decode checks and, with a vocabulary, token masks).

A :class:`GrammarCompiler` owns every cache that compiling and matching fill: compiled grammars,
automata (shared by every vocabulary), vocabulary indexes, the masks each compiled grammar
caches, and a :class:`~toolmask._cache.CacheSet` of named caches (the grammar and schema
stages' memos, the tool layer's schema grammars, validators and sanitizer patterns), under one
byte budget (``Limits.max_cache_bytes``). It passes its cache set down: ``with
compiler.activate():`` makes it the active compiler (``tm.compile``, the tool layer) and its
caches the ones the stages below memoise in; stages that take ``caches=`` get it as an
argument. Nothing below this layer knows the compiler. ``tm.compile`` uses the active
compiler: the process default (:func:`default_compiler`, which owns the shared cache set the
memos use outside any ``activate()``) unless another one was activated. The server holds its
own.

The kernel (native or the pure-Python reference) is chosen once, when the compiler is made
(:func:`toolmask._kernels.choose_kernel`); see ``docs/masks.md``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from toolmask._cache import SHARED, CacheSet, LRUCache
from toolmask._kernel import BackendName
from toolmask._pointer import json_pointer
from toolmask.grammar import Grammar
from toolmask.limits import DEFAULT_LIMITS, Limits
from toolmask.schema import make_validator

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

    from toolmask._kernels import Kernel
    from toolmask.automaton import Automaton, AutomatonState
    from toolmask.mask import MaskCache, VocabIndex
    from toolmask.vocab import Vocabulary

__all__ = [
    "CompiledGrammar",
    "GrammarCompiler",
    "Matcher",
    "active_compiler",
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
    named caches of :attr:`caches` (the tool layer's ``max_schema_grammars`` /
    ``max_validators`` / ``max_sanitizer_patterns``, the memos' ``max_language_memos`` /
    ``max_memo_entries``), and ``max_cache_bytes`` for all of it together (each compiled
    grammar's masks are bounded by ``max_mask_cache_bytes`` on their own). ``backend``:
    ``"native"``, ``"python"`` or None for :func:`toolmask.mask.backend`. ``caches``: the
    cache set to own (a new one by default; the process default compiler owns
    :data:`toolmask._cache.SHARED`).

    Thread-safe: compiles may run on several threads while matchers decode on others; two
    threads compiling the same grammar agree on one :class:`CompiledGrammar`.
    """

    def __init__(
        self,
        *,
        limits: Limits = DEFAULT_LIMITS,
        backend: str | None = None,
        max_cache_bytes: int | None = None,
        caches: CacheSet | None = None,
    ) -> None:
        # the automaton and mask implementations load with the first compiler, not on import
        from toolmask._kernels import choose_kernel

        self.limits = limits
        self._backend: Kernel = choose_kernel(backend)
        self.backend: BackendName = self._backend.name
        self.max_cache_bytes = (
            limits.max_cache_bytes if max_cache_bytes is None else max_cache_bytes
        )
        #: the named caches this compiler owns and passes down (memos, the tool layer's)
        self.caches = CacheSet(limits) if caches is None else caches
        self._compiled: LRUCache[tuple[str, Limits, str | None], CompiledGrammar] = LRUCache(
            "compiled", limits.max_compiled_grammars
        )
        self._automata: LRUCache[tuple[str, Limits], Automaton] = LRUCache(
            "automata", limits.max_compiled_grammars
        )
        self._indexes: LRUCache[str, VocabIndex] = LRUCache(
            "vocab_indexes", limits.max_vocab_indexes, _index_bytes
        )
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
        keyed = self._backend.read(grammar)
        key = (keyed.key, lim, vocab.fingerprint if vocab is not None else None)
        hit = self._compiled.get(key)
        if hit is not None:
            return hit
        akey = (keyed.key, lim)
        automaton = self._automata.get(akey)
        if automaton is None:
            automaton = self._automata.put(akey, keyed.build(lim))
        masks: MaskCache | None = None
        if vocab is not None:
            index = self.vocab_index(vocab)
            masks = self._backend.mask_cache(automaton, index, lim.max_mask_cache_bytes)
        compiled = self._compiled.put(
            key, CompiledGrammar(grammar, automaton, masks, backend=self.backend)
        )
        self._trim()
        return compiled

    def vocab_index(self, vocab: Vocabulary) -> VocabIndex:
        """The index of ``vocab`` for this backend (tries, token tables, run tables), built
        once per fingerprint and kept in the ``max_vocab_indexes`` LRU (each keeps
        ``max_run_tables`` run tables)."""
        tables = self.limits.max_run_tables
        return self._indexes.get_or_build(
            vocab.fingerprint, lambda: self._backend.vocab_index(vocab, max_run_tables=tables)
        )

    # -- caches -----------------------------------------------------------------------------------
    def cache(
        self,
        name: str,
        *,
        limit: str,
        entry_bytes: Callable[[Any], int] | None = None,
        sizeof: Callable[[Any], int] | None = None,
    ) -> LRUCache[Any, Any]:
        """The named cache ``name`` of :attr:`caches` (created on first use), bounded by the
        ``Limits`` field ``limit`` of this compiler's limits; ``entry_bytes`` measures a value
        when it is stored, ``sizeof`` whenever the budget is checked (a value that grows, such
        as a lazily built automaton), for :meth:`memory` and the byte budget. For the layers
        above: the tool layer keeps its schema grammars, validators and sanitizer patterns
        here, so that :meth:`clear` and :meth:`memory` cover them."""
        return self.caches.cache(name, limit=limit, entry_bytes=entry_bytes, sizeof=sizeof)

    @contextmanager
    def activate(self) -> Iterator[GrammarCompiler]:
        """Make this compiler the active one in this thread or task (for ``tm.compile`` and the
        tool layer's caches), and its :attr:`caches` the ones the stages below memoise in,
        until the block ends."""
        token = _active.set(self)
        try:
            with self.caches.use():
                yield self
        finally:
            _active.reset(token)

    def memory(self) -> dict[str, int]:
        """Bytes held, by part: ``automata``, ``masks`` (every compiled grammar's cached masks),
        ``vocab_indexes``, ``memos`` (the named caches that measure their entries), and
        ``total``; plus the entry counts of the caches (``compiled``, and one per named
        cache)."""
        automata: dict[int, Automaton] = {}
        masks = 0
        compiled = self._compiled.values()
        for c in compiled:
            automata[id(c.automaton)] = c.automaton
            if c.masks is not None:
                masks += c.masks.memory_bytes()
        for a in self._automata.values():
            automata[id(a)] = a
        auto_bytes = sum(a.memory_bytes() for a in automata.values())
        index_bytes = self._indexes.nbytes()
        memo_bytes = self.caches.nbytes()
        out = {
            "automata": auto_bytes,
            "masks": masks,
            "vocab_indexes": index_bytes,
            "memos": memo_bytes,
            "total": auto_bytes + masks + index_bytes + memo_bytes,
            "compiled": len(compiled),
        }
        out.update(self.caches.counts())
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
        if total > self.max_cache_bytes:
            total -= self.caches.trim(total - self.max_cache_bytes)
        self._last_total = total

    def clear(self) -> None:
        """Forget everything cached (compiled grammars, automata, indexes, named caches)."""
        self._compiled.clear()
        self._automata.clear()
        self._last_total, self._since_trim = self.max_cache_bytes, 0
        self._indexes.clear()
        self.caches.clear()

    def __repr__(self) -> str:
        return (
            f"GrammarCompiler(backend={self.backend!r}, compiled={len(self._compiled)}, "
            f"vocab_indexes={len(self._indexes)})"
        )


def _index_bytes(index: VocabIndex) -> int:
    return index.memory_bytes()


_default: GrammarCompiler | None = None
_default_lock = threading.Lock()
_active: ContextVar[GrammarCompiler | None] = ContextVar("toolmask_compiler", default=None)


def default_compiler() -> GrammarCompiler:
    """The process-wide compiler ``tm.compile`` uses when no other one is active; it owns the
    shared cache set (:data:`toolmask._cache.SHARED`) the memos use outside any
    ``activate()``."""
    global _default
    c = _default
    if c is None:
        with _default_lock:
            if _default is None:
                _default = GrammarCompiler(caches=SHARED)
            c = _default
    return c


def active_compiler() -> GrammarCompiler:
    """The compiler in use here: the one activated in this thread or task
    (:meth:`GrammarCompiler.activate`), else :func:`default_compiler`."""
    c = _active.get()
    return c if c is not None else default_compiler()


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

    __slots__ = ("_validators", "automaton", "backend", "filter", "grammar", "masks")

    grammar: Grammar
    automaton: Automaton
    masks: MaskCache | None
    #: ``"native"`` (compiled kernel) or ``"python"`` (reference): the compiler's backend
    backend: BackendName
    #: a second compiled grammar every matcher also runs (see :meth:`restricted`), or None
    filter: CompiledGrammar | None

    def __init__(
        self,
        grammar: Grammar,
        automaton: Automaton,
        masks: MaskCache | None = None,
        *,
        backend: BackendName,
        filter: CompiledGrammar | None = None,
    ) -> None:
        self.grammar = grammar
        self.automaton = automaton
        self.masks = masks
        self.backend = backend
        self.filter = filter
        self._validators: list[Validator] | None = None

    def restricted(self, filter: CompiledGrammar) -> CompiledGrammar:
        """This grammar intersected with ``filter``: a document is accepted when both accept
        it, and a token is allowed when both allow it (the AND of the two bitmasks). Exact:
        both automata are deterministic over the same input, so the pair of their states is
        the state of the intersection, and a token's bytes advance the pair when they advance
        each. Nothing is compiled: the automata and their mask caches are shared with ``self``
        and ``filter`` (the tool layer keeps one turn over every tool and applies an allowed
        subset as a small name filter, see ``docs/tools.md``). ``filter`` must be compiled
        for the same vocabulary (or both without one). O(1)."""
        return CompiledGrammar(
            self.grammar,
            self.automaton,
            self.masks,
            backend=self.backend,
            filter=self._with_filter(filter),
        )

    def _with_filter(self, filter: CompiledGrammar) -> CompiledGrammar:
        """The filter a restriction of this grammar by ``filter`` runs: ``filter``, or this
        grammar's own filter restricted by it. ValueError unless ``filter`` was compiled for
        the same vocabulary (or both without one)."""
        if (self.masks is None) != (filter.masks is None) or (
            self.vocab is not None
            and filter.vocab is not None
            and self.vocab.fingerprint != filter.vocab.fingerprint
        ):
            raise ValueError("a filter must be compiled for the same vocabulary")
        return filter if self.filter is None else self.filter.restricted(filter)

    @property
    def vocab(self) -> Vocabulary | None:
        """The vocabulary the masks are computed for (None: byte-level matching only)."""
        return self.masks.index.vocab if self.masks is not None else None

    def matcher(self) -> Matcher:
        """A fresh matcher at the start of the grammar (one per sequence). O(1)."""
        f = self.filter
        return Matcher(self.automaton, self.masks, f.matcher() if f is not None else None)

    def memory(self) -> dict[str, int]:
        """Bytes this compiled grammar holds: ``automaton`` (positions, states and their
        transition memos, built lazily as input explores it) and ``masks`` (the cached masks;
        the vocabulary's shared tables are counted by the compiler, once per vocabulary)."""
        masks = self.masks.memory_bytes() if self.masks is not None else 0
        return {"automaton": self.automaton.memory_bytes(), "masks": masks}

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

    def _get_validators(self) -> list[Validator]:
        vs = self._validators
        if vs is None:
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


def _error_sort_key(err: ValidationError) -> tuple[list[str], str]:
    return [str(p) for p in err.absolute_path], str(err.message)


def _pointer(path: Iterable[str | int]) -> str:
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
