"""Token masks over a vocabulary: which token ids may come next in an automaton state.

:class:`VocabIndex` and :class:`MaskCache` are the protocols the compiler uses; two
implementations compute the same masks: the compiled kernel's (:class:`NativeVocabIndex`,
:class:`NativeMaskCache`, over ``toolmask._native``) and the pure-Python reference
(:class:`PythonVocabIndex`, :class:`PythonMaskCache`, with :class:`TokenTrie`,
:func:`compute_mask`). :func:`backend` says which one ``tm.compile`` uses by default. See
``docs/masks.md``.
"""

from __future__ import annotations

from toolmask._kernel import backend
from toolmask.mask._compute import PythonMaskCache, PythonVocabIndex, compute_mask, loop_set
from toolmask.mask._native import NativeMaskCache, NativeVocabIndex
from toolmask.mask._protocol import MaskCache, TokenFlags, VocabIndex
from toolmask.mask._trie import TokenTrie

__all__ = [
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
    "loop_set",
]
