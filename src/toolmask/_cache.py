"""Bounded caches: :class:`LRUCache`, the named caches of a :class:`CacheSet`, and the memos
that keep their results in the cache set in use.

A :class:`~toolmask.GrammarCompiler` owns one :class:`CacheSet` (``compiler.caches``) and passes
it down: the stages below take it as an argument (``compile_json_schema(..., caches=...)``)
and, while they run, it is the *cache set in use* for their memos (:func:`memo`), a
:class:`contextvars.ContextVar` of this module that :meth:`CacheSet.use` sets for a block
(``compiler.activate()`` does too). Outside any such block the memos use the process-wide
:data:`SHARED` set, which the process's default compiler owns. Nothing here knows the compiler:
it sits at the bottom of the layers (``docs/architecture.md``), importing only ``limits``, so
that every stage can keep its memos in caches that one object bounds, reports and empties.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = ["SHARED", "CacheSet", "LRUCache", "current_caches", "memo", "using"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()


class LRUCache(Generic[K, V]):
    """A thread-safe least-recently-used map bounded by ``max_entries``.

    ``put`` keeps the first value stored for a key (two threads building the same entry agree
    on one object); ``get_or_build`` builds outside the lock. Bytes, for :meth:`nbytes`:
    ``sizeof`` (optional) reports an entry's bytes when asked (for values that grow after they
    are stored); ``entry_bytes`` (optional) measures an immutable value once, when it is
    stored. Cost: a dict lookup and a move-to-end under a lock.
    """

    __slots__ = (
        "_bytes",
        "_data",
        "_lock",
        "_sizes",
        "entry_bytes",
        "hits",
        "max_entries",
        "misses",
        "name",
        "sizeof",
    )

    def __init__(
        self,
        name: str,
        max_entries: int,
        sizeof: Callable[[V], int] | None = None,
        *,
        entry_bytes: Callable[[V], int] | None = None,
    ) -> None:
        self.name = name
        self.max_entries = max(1, max_entries)
        self.sizeof = sizeof
        self.entry_bytes = entry_bytes
        self._data: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._data.get(key, _MISSING)
            if hit is _MISSING:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return hit  # type: ignore[return-value]

    def lookup(self, key: K) -> V | None:
        """:meth:`get` without the lock or the counters, for memos on compile paths: one dict
        lookup and a move-to-end, each atomic under the GIL (a key dropped between the two by
        another thread reads as a miss)."""
        data = self._data
        hit = data.get(key, _MISSING)
        if hit is _MISSING:
            return None
        try:
            data.move_to_end(key)
        except KeyError:
            return None
        return hit  # type: ignore[return-value]

    def put(self, key: K, value: V) -> V:
        """Store ``value`` unless another thread stored one first; returns the one kept."""
        size = self.entry_bytes(value) if self.entry_bytes is not None else 0
        with self._lock:
            hit = self._data.get(key, _MISSING)
            if hit is not _MISSING:
                self._data.move_to_end(key)
                return hit  # type: ignore[return-value]
            self._data[key] = value
            if size:
                self._sizes[key] = size
                self._bytes += size
            while len(self._data) > self.max_entries:
                self._drop_oldest()
            return value

    def _drop_oldest(self) -> V:
        key, value = self._data.popitem(last=False)
        self._bytes -= self._sizes.pop(key, 0)
        return value

    def get_or_build(self, key: K, build: Callable[[], V]) -> V:
        hit = self.get(key)
        if hit is not None:
            return hit
        return self.put(key, build())

    def pop_oldest(self) -> V | None:
        """Drop the least recently used entry (None when empty)."""
        with self._lock:
            if not self._data:
                return None
            return self._drop_oldest()

    def values(self) -> list[V]:
        """The values, in no particular order (an ``OrderedDict``'s own iteration looks every
        key up again, hashing it: ``dict.values`` reads the storage directly)."""
        with self._lock:
            return list(dict.values(self._data))

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._sizes.clear()
            self._bytes = 0

    def nbytes(self) -> int:
        """Bytes of the entries as ``sizeof`` reports them now plus as ``entry_bytes`` measured
        them when stored (0 without either)."""
        live = 0 if self.sizeof is None else sum(self.sizeof(v) for v in self.values())
        return live + self._bytes

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"LRUCache({self.name!r}, {len(self)}/{self.max_entries})"


class CacheSet:
    """Named :class:`LRUCache` s, each bounded by a field of ``limits``, measured for one byte
    budget: the caches a compiler owns beside its compiled grammars (the stages' memos, the
    tool layer's schema grammars, validators and sanitizer patterns; per-part automata keyed by
    their own fingerprint fit the same way, measured by ``sizeof``).

    Thread-safe: caches are created under a lock; each cache locks itself. Cost of
    :meth:`cache` once created: one dict lookup.
    """

    __slots__ = ("_lock", "_named", "limits")

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._named: dict[str, LRUCache[Any, Any]] = {}
        self._lock = threading.Lock()

    def cache(
        self,
        name: str,
        *,
        limit: str,
        entry_bytes: Callable[[Any], int] | None = None,
        sizeof: Callable[[Any], int] | None = None,
    ) -> LRUCache[Any, Any]:
        """The cache ``name`` (created on first use), bounded by the ``Limits`` field ``limit``
        of :attr:`limits`; ``entry_bytes`` measures a value once when it is stored, ``sizeof``
        each time the bytes are asked (values that grow after they are stored)."""
        c = self._named.get(name)
        if c is None:
            with self._lock:
                c = self._named.get(name)
                if c is None:
                    bound = int(getattr(self.limits, limit))
                    c = LRUCache(name, bound, sizeof, entry_bytes=entry_bytes)
                    self._named[name] = c
        return c

    def counts(self) -> dict[str, int]:
        """Entries per cache, by name (sorted)."""
        return {name: len(c) for name, c in sorted(self._named.items())}

    def nbytes(self) -> int:
        """Bytes of every cache's entries, as each measures them (see :meth:`LRUCache.nbytes`)."""
        return sum(c.nbytes() for c in list(self._named.values()))

    def trim(self, excess: int) -> int:
        """Drop the least recently used entries of the measured caches, largest cache first,
        until ``excess`` bytes are freed or nothing measured is left; returns the bytes freed.
        O(entries dropped + caches)."""
        freed = 0
        measured = sorted(
            (c for c in list(self._named.values()) if c.nbytes() > 0),
            key=LRUCache.nbytes,
            reverse=True,
        )
        for c in measured:
            while freed < excess:
                before = c.nbytes()
                if c.pop_oldest() is None:
                    break
                freed += before - c.nbytes()
        return freed

    def clear(self) -> None:
        """Empty every cache (they stay, with their bounds)."""
        for c in list(self._named.values()):
            c.clear()

    @contextmanager
    def use(self) -> Iterator[CacheSet]:
        """Make this the cache set the memos use in this thread or task until the block ends."""
        token = _in_use.set(self)
        try:
            yield self
        finally:
            _in_use.reset(token)

    def __repr__(self) -> str:
        return f"CacheSet({len(self._named)} caches, {self.nbytes()} bytes)"


#: the cache set the memos use outside any :meth:`CacheSet.use` block; the process's default
#: compiler (``toolmask.default_compiler()``) owns it
SHARED = CacheSet()

_in_use: ContextVar[CacheSet | None] = ContextVar("toolmask_caches", default=None)


def current_caches() -> CacheSet:
    """The cache set in use here: the one a :meth:`CacheSet.use` block set, else
    :data:`SHARED`."""
    c = _in_use.get()
    return SHARED if c is None else c


@contextmanager
def using(caches: CacheSet | None) -> Iterator[CacheSet]:
    """``caches.use()``, or the cache set already in use when ``caches`` is None: what an entry
    point that takes ``caches=`` wraps its work in."""
    if caches is None:
        yield current_caches()
    else:
        with caches.use():
            yield caches


F = TypeVar("F", bound=Callable[..., Any])


def memo(name: str, *, limit: str, entry_bytes: Callable[[Any], int]) -> Callable[[F], F]:
    """Memoise a pure function in the cache ``name`` of the cache set in use
    (:func:`current_caches`), bounded by the :class:`~toolmask.limits.Limits` field ``limit``,
    its values measured by ``entry_bytes`` for the owner's byte budget: instead of a
    module-level ``lru_cache``, so that the compiler that owns the cache set bounds, reports
    and empties it. The positional arguments are the key (hashable); a result must not be
    None. Cost of a hit: a context-variable read, two dict lookups and a move-to-end, no lock
    (about 0.7 µs where ``lru_cache`` takes 0.4 µs, most of both being the key's hash): for
    memos called per schema node or DFA edge, not per byte or per automaton state."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            caches = _in_use.get()
            if caches is None:
                caches = SHARED
            cache = caches._named.get(name)
            if cache is None:
                cache = caches.cache(name, limit=limit, entry_bytes=entry_bytes)
            hit = cache.lookup(args)
            if hit is None:
                hit = cache.put(args, fn(*args))
            return hit

        return call  # type: ignore[return-value]

    return wrap
