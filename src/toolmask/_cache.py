"""Bounded caches, and which :class:`~toolmask.GrammarCompiler` owns them right now.

Every cache toolmask keeps lives in one :class:`~toolmask.GrammarCompiler` (compiled grammars,
automata, vocabulary indexes, masks, and the tool layer's schema grammars, validators and
sanitizer patterns), so one object bounds them, reports their size and empties them.
``tm.compile`` and the tool layer use the *active* compiler: the one made current by
``with compiler.activate():`` in this thread or task (a :class:`contextvars.ContextVar`), else
the process default (:func:`toolmask.default_compiler`).

This module is import-light (no numpy, no kernel) so that any layer can reach its caches.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from toolmask._compile import GrammarCompiler

__all__ = ["LRUCache", "active_compiler", "compiler_memo"]

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


F = TypeVar("F", bound=Callable[..., Any])


def compiler_memo(name: str, *, limit: str, entry_bytes: Callable[[Any], int]) -> Callable[[F], F]:
    """Memoise a pure function in the active compiler's named cache ``name`` (bounded by the
    :class:`~toolmask.limits.Limits` field ``limit``, its values measured by ``entry_bytes``
    for the compiler's byte budget) instead of a module-level ``lru_cache``, so that one
    object bounds, reports and empties it. The positional arguments are the key (hashable);
    a result must not be None. Cost of a hit: a context-variable read, two dict lookups and a
    move-to-end, no lock (about 0.7 µs where ``lru_cache`` takes 0.4 µs, most of both being
    the key's hash): for memos called per schema node or DFA edge, not per byte or per
    automaton state."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            c = _active.get()
            if c is None:
                c = active_compiler()
            cache = c._named.get(name)
            if cache is None:
                cache = c.cache(name, limit=limit, entry_bytes=entry_bytes)
            hit = cache.lookup(args)
            if hit is None:
                hit = cache.put(args, fn(*args))
            return hit

        return call  # type: ignore[return-value]

    return wrap


_active: ContextVar[GrammarCompiler | None] = ContextVar("toolmask_compiler", default=None)


def active_compiler() -> GrammarCompiler:
    """The compiler whose caches are in use here: the one activated in this context, else the
    process default."""
    c = _active.get()
    if c is not None:
        return c
    global _default_compiler
    if _default_compiler is None:
        from toolmask._compile import default_compiler

        _default_compiler = default_compiler
    return _default_compiler()


_default_compiler: Callable[[], GrammarCompiler] | None = None
