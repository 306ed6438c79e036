"""The one entry point that masks logits, numpy or torch (:func:`apply_bitmask`)."""

from __future__ import annotations

from typing import Any, TypeVar

from toolmask.sampling._bitmask import _is_torch, apply_bitmask_numpy
from toolmask.sampling._torch import apply_bitmask_tensor

__all__ = ["apply_bitmask"]

_L = TypeVar("_L")


def apply_bitmask(logits: _L, bitmask: Any, *, inplace: bool = False) -> _L:
    """Set every logit whose token the bitmask disallows to ``-inf``; return the result.

    ``logits`` is a float array ``[V]`` or ``[B, V]``; ``bitmask`` is ``[W]`` (shared by all rows)
    or ``[B, W]``, int32. ``V`` must be at most ``32 * W``; bits for ids ``>= V`` are ignored.
    Without ``inplace`` a new array is returned and ``logits`` is untouched.

    ``logits`` may also be a ``torch.Tensor`` on any device (``bitmask`` then numpy or torch
    int32); the mask is moved to the tensor's device and unpacked there. torch is imported only in
    that case.

    Raises ``ValueError`` on incompatible shapes, ``TypeError`` on non-float logits or a
    non-int32 mask. Cost: O(B * V) - one unpack of the mask and five branch-free passes
    (about 0.25 ms at V = 152k on a 2-core AVX2 VM, vs 0.9 ms for ``np.where``).
    """
    if _is_torch(logits):
        return apply_bitmask_tensor(logits, bitmask, inplace=inplace)  # type: ignore[no-any-return]
    return apply_bitmask_numpy(logits, bitmask, inplace=inplace)
