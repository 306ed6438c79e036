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

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from toolmask._compile import GrammarCompiler

__all__ = ["LRUCache", "active_compiler"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()


class LRUCache(Generic[K, V]):
    """A thread-safe least-recently-used map bounded by ``max_entries``.

    ``put`` keeps the first value stored for a key (two threads building the same entry agree
    on one object); ``get_or_build`` builds outside the lock. ``sizeof`` (optional) reports an
    entry's bytes for :meth:`nbytes`. Cost: a dict lookup and a move-to-end under a lock.
    """

    __slots__ = ("_data", "_lock", "hits", "max_entries", "misses", "name", "sizeof")

    def __init__(
        self, name: str, max_entries: int, sizeof: Callable[[V], int] | None = None
    ) -> None:
        self.name = name
        self.max_entries = max(1, max_entries)
        self.sizeof = sizeof
        self._data: OrderedDict[K, V] = OrderedDict()
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

    def put(self, key: K, value: V) -> V:
        """Store ``value`` unless another thread stored one first; returns the one kept."""
        with self._lock:
            hit = self._data.get(key, _MISSING)
            if hit is not _MISSING:
                self._data.move_to_end(key)
                return hit  # type: ignore[return-value]
            self._data[key] = value
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)
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
            return self._data.popitem(last=False)[1]

    def values(self) -> list[V]:
        """The values, in no particular order (an ``OrderedDict``'s own iteration looks every
        key up again, hashing it: ``dict.values`` reads the storage directly)."""
        with self._lock:
            return list(dict.values(self._data))

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def nbytes(self) -> int:
        """Bytes of the entries as ``sizeof`` reports them (0 without ``sizeof``)."""
        if self.sizeof is None:
            return 0
        return sum(self.sizeof(v) for v in self.values())

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"LRUCache({self.name!r}, {len(self)}/{self.max_entries})"


_active: ContextVar[GrammarCompiler | None] = ContextVar("toolmask_compiler", default=None)


def active_compiler() -> GrammarCompiler:
    """The compiler whose caches are in use here: the one activated in this context, else the
    process default."""
    c = _active.get()
    if c is not None:
        return c
    from toolmask._compile import default_compiler

    return default_compiler()
