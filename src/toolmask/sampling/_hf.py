"""Optional adapter: constrain ``transformers`` generation with toolmask (or any) matchers.

Importing this module imports neither torch nor transformers; torch is imported (by
:func:`~toolmask.sampling.apply_bitmask`) on the first call of the processor. The adapter needs
only torch at run time; it follows the ``transformers.LogitsProcessor`` call protocol by shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from toolmask.sampling._apply import apply_bitmask
from toolmask.sampling._bitmask import bitmask_size

__all__ = ["MatcherLike", "TransformersLogitsProcessor", "make_logits_processor"]


@runtime_checkable
class MatcherLike(Protocol):
    """What the adapter needs from a matcher: one per sequence, advanced token by token."""

    @property
    def vocab_size(self) -> int:
        """Number of token ids the matcher's bitmask covers."""
        ...

    def accept_token(self, tid: int) -> bool:
        """Advance by one token; ``False`` (state unchanged) if the grammar rejects it."""
        ...

    def fill_bitmask(self, out: npt.NDArray[np.int32]) -> None:
        """Write the allowed-token bitmask (int32 ``[ceil(vocab_size / 32)]``) into ``out``."""
        ...

    def is_finished(self) -> bool:
        """True once the sequence is complete and takes no more tokens."""
        ...


class TransformersLogitsProcessor:
    """A ``transformers.LogitsProcessor``: masks each row's scores with that row's matcher.

    ``matchers[i]`` follows batch row ``i``. The first call records the prompt length and feeds
    nothing; every later call feeds each row's newest token (``input_ids[i, -1]``) to its matcher,
    then refills the bitmasks and sets disallowed scores to ``-inf``. Rows whose matcher is
    finished are neither fed nor masked (``generate`` pads them). Score columns beyond the
    matchers' ``vocab_size`` (models often pad the embedding matrix) are disallowed.

    One processor serves one ``generate`` call; make a new one (fresh matchers) for the next.
    Raises ``RuntimeError`` if a generated token is rejected by its matcher (something after this
    processor changed the scores) or if ``input_ids`` does not grow by one token per call.
    Cost per step: B ``fill_bitmask`` calls, one host-to-device copy of ``B * V / 8`` bytes, and
    one masked fill on the scores' device.
    """

    def __init__(self, matchers: Sequence[MatcherLike]) -> None:
        if not matchers:
            raise ValueError("TransformersLogitsProcessor needs at least one matcher")
        sizes = {int(m.vocab_size) for m in matchers}
        if len(sizes) != 1:
            raise ValueError(f"matchers disagree on vocab_size: {sorted(sizes)}")
        self._matchers = list(matchers)
        self._vocab_size = sizes.pop()
        self._words = bitmask_size(self._vocab_size)
        self._seq_len: int | None = None
        self._prompt_len: int | None = None
        self._bitmask: npt.NDArray[np.int32] | None = None

    @property
    def vocab_size(self) -> int:
        """The matchers' vocabulary size."""
        return self._vocab_size

    @property
    def prompt_length(self) -> int | None:
        """Length of ``input_ids`` on the first call; ``None`` before it."""
        return self._prompt_len

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        batch, seq_len = int(input_ids.shape[0]), int(input_ids.shape[1])
        if batch != len(self._matchers) or int(scores.shape[0]) != batch:
            raise ValueError(
                f"batch of {batch} rows (scores {tuple(scores.shape)}) but "
                f"{len(self._matchers)} matchers"
            )
        if self._seq_len is None:
            self._prompt_len = seq_len
        else:
            if seq_len != self._seq_len + 1:
                raise RuntimeError(
                    f"input_ids grew from {self._seq_len} to {seq_len} tokens; a processor "
                    "follows one generate() call, one token per step"
                )
            newest = input_ids[:, -1].tolist()
            for row, (m, tid) in enumerate(zip(self._matchers, newest, strict=True)):
                if m.is_finished():
                    continue
                if not m.accept_token(int(tid)):
                    raise RuntimeError(f"row {row}: token {tid} was rejected by its matcher")
        self._seq_len = seq_len

        width = max(int(scores.shape[-1]), self._vocab_size)
        total_words = bitmask_size(width)
        if self._bitmask is None or self._bitmask.shape != (batch, total_words):
            self._bitmask = np.zeros((batch, total_words), dtype=np.int32)
        bm = self._bitmask
        bm.fill(0)
        for row, m in enumerate(self._matchers):
            if m.is_finished():
                bm[row].fill(-1)  # leave finished rows unconstrained
            else:
                m.fill_bitmask(bm[row, : self._words])
        # apply_bitmask imports torch lazily and moves the mask to the scores' device
        return apply_bitmask(scores, bm, inplace=False)


def make_logits_processor(
    matcher_factory: Callable[[], MatcherLike], *, batch_size: int = 1
) -> TransformersLogitsProcessor:
    """A :class:`TransformersLogitsProcessor` with ``batch_size`` fresh matchers.

    ``matcher_factory`` is typically ``compiled.matcher`` where
    ``compiled = toolmask.compile(grammar, vocab)``.
    Use it as ``model.generate(..., logits_processor=LogitsProcessorList([proc]))``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return TransformersLogitsProcessor([matcher_factory() for _ in range(batch_size)])
