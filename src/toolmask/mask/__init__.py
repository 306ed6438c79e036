"""Token masks over a vocabulary: which token ids may come next in an automaton state.

``TokenTrie`` is built once per vocabulary (inside :func:`vocab_index`); ``compute_mask`` walks
it with the automaton; ``MaskCache`` keeps one bitmask per automaton state. See ``docs/masks.md``.
"""

from __future__ import annotations

from toolmask.mask._compute import MaskCache, VocabIndex, compute_mask, loop_set, vocab_index
from toolmask.mask._trie import TokenTrie

__all__ = ["MaskCache", "TokenTrie", "VocabIndex", "compute_mask", "loop_set", "vocab_index"]
