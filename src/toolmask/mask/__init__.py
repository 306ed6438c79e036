"""Token masks over a vocabulary: which token ids may come next in an automaton state.

:class:`VocabIndex` and :class:`MaskCache` are the protocols the compiler uses; two
implementations compute the same masks: the compiled kernel's (:class:`NativeVocabIndex`,
:class:`NativeMaskCache`, over ``toolmask._native``) and the pure-Python reference
(:class:`PythonVocabIndex`, :class:`PythonMaskCache`, with :class:`TokenTrie`,
:func:`compute_mask`). :func:`backend` says which one ``tm.compile`` uses by default.
:func:`fill_batch` (and :class:`BatchFiller`) fill the rows of many matchers in one call, on
native threads where the work pays for them. See ``docs/masks.md``.
"""

from __future__ import annotations

from toolmask._kernel import backend
from toolmask.mask._batch import BatchFill, BatchFiller, BatchRow, default_threads, fill_batch
from toolmask.mask._compute import PythonMaskCache, PythonVocabIndex, compute_mask, loop_set
from toolmask.mask._native import PREWARM_FORMATS, NativeMaskCache, NativeVocabIndex
from toolmask.mask._protocol import MaskCache, TokenFlags, VocabIndex
from toolmask.mask._trie import TokenTrie

__all__ = [
    "PREWARM_FORMATS",
    "BatchFill",
    "BatchFiller",
    "BatchRow",
    "MaskCache",
    "NativeMaskCache",
    "NativeVocabIndex",
    "PythonMaskCache",
    "PythonVocabIndex",
    "TokenFlags",
    "TokenTrie",
    "VocabIndex",
    "backend",
    "compute_mask",
    "default_threads",
    "fill_batch",
    "loop_set",
]
