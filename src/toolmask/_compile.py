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
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from toolmask._cache import SHARED, CacheSet, LRUCache
from toolmask._kernel import BackendName
from toolmask._matcher import FilteredMatcher, Matcher, PlainMatcher
from toolmask._pointer import json_pointer
from toolmask.grammar import Grammar
from toolmask.limits import DEFAULT_LIMITS, Limits
from toolmask.schema import make_validator

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

    from toolmask._kernels import Kernel
    from toolmask.automaton import Automaton
    from toolmask.mask import MaskCache, VocabIndex
    from toolmask.vocab import Vocabulary

__all__ = [
    "CompiledGrammar",
    "GrammarCompiler",
    "Matcher",
    "TurnCache",
    "active_compiler",
    "clear_cache",
    "compile",
    "default_compiler",
    "turn_cache",
]


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
        #: the tool layer's caches, one service it is handed (see :class:`TurnCache`)
        self.turns = TurnCache(self)
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


class TurnCache:
    """The tool layer's caches of one compiler (``compiler.turns``): everything on the way from
    a tool list to a compiled turn, in named caches of the compiler's :attr:`~GrammarCompiler.
    caches` (so each is bounded by its ``Limits`` field, measured in the compiler's byte budget
    and emptied by :meth:`GrammarCompiler.clear`). It knows the tool layer's keys and values as
    opaque data; the tool layer takes it as an argument all the way down (its public entry
    points get it from :func:`turn_cache`).

    ``canonical(value)``: the canonical JSON of a JSON value (a tool's parameters schema), made
    once per object and kept (identity-checked) in ``tools.fingerprints``: the one
    serialisation every other key is made from (a tool's part, its schema's grammar, its
    validator, the turn over a list of tools). The named caches: ``schema_grammars``
    (``Limits.max_schema_grammars``), ``parts`` (``max_tool_parts``), ``lists``, ``turns``
    (``max_compiled_turns``; turns measured as they grow) and ``slots`` (the name slots of each
    tool list's filters, ``max_compiled_turns``), ``validators`` (``max_validators``),
    ``sanitizers`` (``max_sanitizer_patterns``). Thread-safe as the caches are."""

    __slots__ = ("compiler",)

    def __init__(self, compiler: GrammarCompiler) -> None:
        self.compiler = compiler

    @property
    def limits(self) -> Limits:
        """The owning compiler's default limits."""
        return self.compiler.limits

    def _cache(self, name: str, limit: str, **kw: Any) -> LRUCache[Any, Any]:
        return self.compiler.cache(name, limit=limit, **kw)

    @property
    def schema_grammars(self) -> LRUCache[Any, Any]:
        return self._cache("tools.schema_grammars", "max_schema_grammars")

    @property
    def parts(self) -> LRUCache[Any, Any]:
        return self._cache("tools.parts", "max_tool_parts")

    @property
    def lists(self) -> LRUCache[Any, Any]:
        return self._cache("tools.lists", "max_compiled_turns")

    @property
    def turns(self) -> LRUCache[Any, Any]:
        return self._cache("tools.turns", "max_compiled_turns", sizeof=_compiled_bytes)

    @property
    def slots(self) -> LRUCache[Any, Any]:
        return self._cache("tools.name_slots", "max_compiled_turns")

    @property
    def validators(self) -> LRUCache[Any, Any]:
        return self._cache("tools.validators", "max_validators")

    @property
    def sanitizers(self) -> LRUCache[Any, Any]:
        return self._cache("tools.sanitizer_patterns", "max_sanitizer_patterns")

    def canonical(self, value: Any, *, keep: bool = True) -> str:
        """``json.dumps(value, sort_keys=True)`` (other values by their ``repr``), once per
        object: kept with the object itself, so an object that is gone cannot lend its id to
        another. ``keep=False``: looked up, but not kept on a miss (a value made for one use,
        such as a parameter's subschema). O(1) on a hit, O(size of the value) on a miss."""
        cache = self._cache("tools.fingerprints", "max_tool_parts")
        hit: tuple[Any, str] | None = cache.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        text = json.dumps(value, sort_keys=True, default=repr)
        if keep:
            cache.put(id(value), (value, text))
        return text

    def compile(
        self, grammar: Grammar, vocab: Vocabulary | None, limits: Limits
    ) -> CompiledGrammar:
        """The owning compiler's :meth:`~GrammarCompiler.compile`."""
        return self.compiler.compile(grammar, vocab, limits=limits)

    def activate(self) -> AbstractContextManager[GrammarCompiler]:
        """The owning compiler's :meth:`~GrammarCompiler.activate` (work that runs later, on
        another thread, in its caches: a lazy turn compiling a tool)."""
        return self.compiler.activate()

    def __repr__(self) -> str:
        return f"TurnCache({self.compiler!r})"


def _compiled_bytes(c: CompiledGrammar) -> int:
    return sum(c.memory().values())


def turn_cache(compiler: GrammarCompiler | None = None) -> TurnCache:
    """The turn cache the tool layer works in: ``compiler``'s, else the one of the compiler in
    use here (:func:`active_compiler`). The tool layer's public entry points call this once and
    pass the cache down; nothing below them looks a compiler up."""
    return (compiler if compiler is not None else active_compiler()).turns


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
        """A fresh matcher at the start of the grammar (one per sequence): a
        :class:`~toolmask._matcher.PlainMatcher`, run in lockstep with the filter's matcher (a
        :class:`~toolmask._matcher.FilteredMatcher`) when the grammar is :meth:`restricted`.
        O(1)."""
        m = PlainMatcher(self.automaton, self.masks)
        f = self.filter
        return m if f is None else FilteredMatcher(m, f.matcher())

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
