"""Token masks over a vocabulary: which token ids may come next in an automaton state.

Two implementations compute the same masks: the compiled kernel (``toolmask._native``, see
:mod:`toolmask.mask._native`) and the pure-Python reference (``TokenTrie``, ``compute_mask``,
``MaskCache``). :func:`backend` says which one ``tm.compile`` uses. :func:`fill_batch` (and
:class:`BatchFiller`) fill the rows of many matchers in one call, on native threads where the
work pays for them. See ``docs/masks.md``.
"""

from __future__ import annotations

from toolmask._kernel import backend
from toolmask.mask._batch import BatchFill, BatchFiller, BatchRow, default_threads, fill_batch
from toolmask.mask._compute import MaskCache, VocabIndex, compute_mask, loop_set, vocab_index
from toolmask.mask._trie import TokenTrie

__all__ = [
    "BatchFill",
    "BatchFiller",
    "BatchRow",
    "MaskCache",
    "TokenTrie",
    "VocabIndex",
    "backend",
    "compute_mask",
    "default_threads",
    "fill_batch",
    "loop_set",
    "vocab_index",
]
