"""What the token-mask stage offers the compiler, whichever implementation computes the masks.

A :class:`VocabIndex` is what one vocabulary costs once (tries, token tables, shared run
tables); a :class:`MaskCache` computes and caches the bitmasks of one automaton over one
index. Two implementations satisfy both: the pure-Python reference
(:class:`~toolmask.mask.PythonVocabIndex`, :class:`~toolmask.mask.PythonMaskCache`) and the
compiled kernel's (:class:`~toolmask.mask.NativeVocabIndex`,
:class:`~toolmask.mask.NativeMaskCache`). Each mask cache takes the automaton of its own
implementation; the compiler pairs them (``GrammarCompiler(backend=...)``).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from toolmask.automaton import Automaton, AutomatonState
from toolmask.vocab import Vocabulary

__all__ = ["MaskCache", "TokenFlags", "VocabIndex"]


class TokenFlags(Protocol):
    """Per token id, truthy for a text token (its bytes can be matched): ``bytes`` or a numpy
    bool array."""

    def __getitem__(self, tid: int, /) -> object: ...


@runtime_checkable
class VocabIndex(Protocol):
    """A vocabulary's tables for mask computation, built once per vocabulary."""

    @property
    def vocab(self) -> Vocabulary: ...

    @property
    def size(self) -> int:
        """The width of the logits (``vocab.vocab_size``)."""
        ...

    @property
    def words(self) -> int:
        """int32 words of one bitmask: ``ceil(size / 32)``."""
        ...

    @property
    def text(self) -> TokenFlags: ...

    def memory_bytes(self) -> int:
        """Bytes held (tries, token tables, the run tables built so far)."""
        ...


@runtime_checkable
class MaskCache(Protocol):
    """The bitmasks of one automaton over one vocabulary index, computed on first use and
    cached by state (bounded in bytes). A cached state costs one copy of ``index.words``
    words in both implementations."""

    @property
    def automaton(self) -> Automaton: ...

    @property
    def index(self) -> VocabIndex: ...

    def fill(self, state: AutomatonState, out: npt.NDArray[np.int32], /) -> None:
        """Write the bitmask of ``state`` into ``out`` (int32, ``index.words`` words)."""
        ...

    def get(self, state: AutomatonState, /) -> npt.NDArray[np.int32]:
        """The bitmask of ``state``, read-only."""
        ...

    def advance_token(self, state: AutomatonState, tid: int, /) -> AutomatonState | None:
        """The state after text token ``tid``'s bytes, or None."""
        ...

    def memory_bytes(self) -> int:
        """Bytes of the cached masks (the index's shared tables count with the index)."""
        ...

    def stats(self) -> dict[str, int]:
        """Counters (hits, misses, cached states, ...)."""
        ...

    def clear(self) -> None: ...

    def __len__(self) -> int: ...
