"""Filling the bitmask rows of many matchers in one call: :func:`fill_batch`, :class:`BatchFiller`.

A serving engine samples B sequences per decode step and needs, per step, one ``int32[B, W]``
bitmask (``W = ceil(V / 32)``) and, per row, whether the sequence may end there. One call
fills every row and returns the per-row flags (``ACCEPTING``, ``FINISHED``), so an engine's
end-on-exit logic needs no second pass over the matchers.

With the compiled kernel, the rows go to the calling thread and a small pool of native
threads, with the GIL released, when the work justifies it: a row whose state's mask is cached
costs one copy of ``W`` words (a few µs at 150k tokens), a cold row up to a millisecond. The
default is automatic (the kernel estimates the work from which rows are cached; one more
thread per ~50 µs of it, at most :func:`default_threads`); ``threads=k`` uses exactly
``min(k, rows)``. Rows of one grammar share its caches: cached masks are read in parallel,
new ones are computed one at a time per grammar, and a row whose grammar is busy waits until
the cached rows are done (see ``docs/masks.md``, "Filling a batch", for the locking).

Without the kernel (``TOOLMASK_PURE_PYTHON=1`` at install, or ``TOOLMASK_BACKEND=python``),
the same call fills the rows one after another on the calling thread, through each matcher's
own methods.

A row is anything with the :class:`BatchRow` members (every ``toolmask.Matcher`` is one), or
None for a sequence without constraint (all ones, flags 0). A row whose allowed tokens are its
mask cache's mask at its state (``cached_by_state``: a plain matcher) is read from that cache;
any other row (a filtered or lazy matcher) fills itself (``fill_bitmask``). A row whose matcher
accepted an EOS (``stopped``) is all zeros and both accepting and finished, as its methods say.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from toolmask._kernel import native_module

if TYPE_CHECKING:
    from toolmask.automaton import AutomatonState
    from toolmask.mask._protocol import MaskCache

__all__ = ["BatchFill", "BatchFiller", "BatchRow", "default_threads", "fill_batch"]

#: the environment variable that caps the pool for :func:`default_threads`
THREADS_ENV = "TOOLMASK_FILL_THREADS"
#: the default cap: more threads than this rarely pay for a bitmask copy bound by memory
MAX_DEFAULT_THREADS = 8
#: a row the kernel left to the caller (its masks are the pure-Python reference's, or the row
#: fills itself)
_ROW_PYTHON = 0x80
#: what the kernel is given for a row that fills itself: neither a mask cache (a row it reads)
#: nor None (a row without constraint), so it leaves the row to the caller
_ROW_FILLS_ITSELF = False


class BatchRow(Protocol):
    """What :func:`fill_batch` reads from a row (``toolmask.Matcher`` provides all of it)."""

    @property
    def masks(self) -> MaskCache | None:
        """The mask cache over the row's automaton (None without a vocabulary)."""

    @property
    def cached_by_state(self) -> bool:
        """Whether the row's allowed tokens are :attr:`masks`' mask at :attr:`state` (else
        the filler asks the row to :meth:`fill_bitmask` itself)."""

    @property
    def state(self) -> AutomatonState:
        """The current automaton state."""

    @property
    def stopped(self) -> bool:
        """An EOS token was accepted."""

    def fill_bitmask(self, out: npt.NDArray[np.int32], index: int | None = None) -> None: ...

    def is_accepting(self) -> bool: ...

    def is_finished(self) -> bool: ...


class BatchFill:
    """What one batch fill reports: per-row flags and how it ran (read-only by convention;
    a plain class: it is made once per decode step)."""

    __slots__ = ("cold_rows", "flags", "threads")

    ACCEPTING = 1
    FINISHED = 2

    def __init__(self, flags: npt.NDArray[np.uint8], threads: int, cold_rows: int) -> None:
        #: per row, bit ``ACCEPTING``: the row's document is complete (the sequence may end
        #: here); bit ``FINISHED``: complete and nothing more can follow (or EOS was accepted)
        self.flags = flags
        #: threads that filled rows (1: the calling thread alone)
        self.threads = threads
        #: rows whose mask was computed in this call (not cached before)
        self.cold_rows = cold_rows

    @property
    def accepting(self) -> npt.NDArray[np.bool_]:
        return (self.flags & self.ACCEPTING).astype(np.bool_)

    @property
    def finished(self) -> npt.NDArray[np.bool_]:
        return (self.flags & self.FINISHED).astype(np.bool_)

    def __repr__(self) -> str:
        return (
            f"BatchFill(rows={self.flags.size}, accepting={int(self.accepting.sum())}, "
            f"threads={self.threads}, cold_rows={self.cold_rows})"
        )


def default_threads() -> int:
    """The pool cap a :class:`BatchFiller` uses by default: ``$TOOLMASK_FILL_THREADS`` when
    set, else ``min(8, CPUs available to this process)``."""
    env = os.environ.get(THREADS_ENV, "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"{THREADS_ENV}={env!r}: expected a positive integer") from None
        if n < 1:
            raise ValueError(f"{THREADS_ENV}={env!r}: expected a positive integer")
        return n
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_DEFAULT_THREADS, cpus))


def _check_threads(threads: int) -> int:
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be a positive integer, not {threads!r}")
    return threads


class BatchFiller:
    """Fills ``int32[rows, W]`` bitmasks for many matchers in one call (see the module
    docstring). ``threads``: the cap of the automatic choice (default
    :func:`default_threads`). Thread-safe; one per engine is enough."""

    __slots__ = ("threads",)

    def __init__(self, *, threads: int | None = None) -> None:
        self.threads = default_threads() if threads is None else _check_threads(threads)

    def fill(
        self,
        rows: Sequence[BatchRow | None],
        out: npt.NDArray[np.int32],
        *,
        threads: int | None = None,
    ) -> BatchFill:
        """Write row ``i`` of ``out`` (C-contiguous ``int32[>= len(rows), W]``) for
        ``rows[i]`` and return the per-row flags. ``threads``: None for the automatic choice
        (up to this filler's cap), or exactly that many (at most one per row).

        Cost: per cached row one copy of ``W`` words; per cold row its mask's computation;
        plus ~0.2 µs of Python per row to read the rows. Raises ValueError for a row compiled
        without a vocabulary or a bitmask of the wrong shape; never on model output."""
        if not isinstance(rows, list):
            rows = list(rows)
        n = len(rows)
        # per row, what the kernel reads: the mask cache of a row cached by state, None for
        # no constraint (or no vocabulary, refused below), else a row that fills itself
        masks = [
            None if r is None else r.masks if r.cached_by_state else _fills_itself(r.masks)
            for r in rows
        ]
        if masks.count(None) != rows.count(None):
            bad = next(i for i, r in enumerate(rows) if r is not None and r.masks is None)
            raise ValueError(
                f"row {bad}: this grammar was compiled without a vocabulary: "
                "use tm.compile(grammar, vocab)"
            )
        if out.ndim != 2 or out.shape[0] < n:
            raise ValueError(f"bitmask has shape {out.shape}, expected ({n}, W) or more rows")
        if not n:
            return BatchFill(np.zeros(0, dtype=np.uint8), 1, 0)
        if _native_rows(masks):
            flags = np.empty(n, dtype=np.uint8)  # the kernel writes every row's flags
            states = [None if r is None or r.stopped else r.state for r in rows]
            cap = self.threads if threads is None else _check_threads(threads)
            used, cold, left = native_module().fill_batch(
                masks, states, out, flags, cap, threads is not None
            )
            python = np.flatnonzero(flags & _ROW_PYTHON).tolist() if left else []
        else:
            flags = np.zeros(n, dtype=np.uint8)
            used, cold = 1, 0
            python = [i for i, r in enumerate(rows) if r is not None]
            for i, r in enumerate(rows):
                if r is None:
                    out[i].fill(-1)
        for i in python:
            row = rows[i]
            assert row is not None
            row.fill_bitmask(out, i)
            flags[i] = (BatchFill.ACCEPTING if row.is_accepting() else 0) | (
                BatchFill.FINISHED if row.is_finished() else 0
            )
        return BatchFill(flags, int(used), int(cold))


def _fills_itself(masks: MaskCache | None) -> bool | None:
    """What the kernel is given for a row that fills itself (None: no vocabulary)."""
    return None if masks is None else _ROW_FILLS_ITSELF


def _native_rows(masks: list[MaskCache | bool | None]) -> bool:
    """Whether any row's masks are the compiled kernel's (a process may hold both kernels):
    the rows say which path fills them, not the process's default."""
    try:
        native_module()
    except ImportError:
        return False
    return any(getattr(m, "native", None) is not None for m in masks)


_DEFAULT: BatchFiller | None = None


def fill_batch(
    rows: Sequence[BatchRow | None], out: npt.NDArray[np.int32], *, threads: int | None = None
) -> BatchFill:
    """:meth:`BatchFiller.fill` with a process-wide filler (cap :func:`default_threads`)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = BatchFiller()
    return _DEFAULT.fill(rows, out, threads=threads)
