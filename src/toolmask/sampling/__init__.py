"""Sampling: from (masked) logits to a token id.

Bitmasks use xgrammar's layout (int32 ``[ceil(V / 32)]``, bit ``t % 32`` of word ``t // 32``), so
masks from toolmask and from xgrammar are interchangeable. numpy only; torch tensors are accepted
where documented and torch is imported lazily. :class:`TorchSampler` is the numpy
:class:`Sampler`'s twin on the logits' device (mask, filters and draw in torch; only the token id
crosses to the CPU). See ``docs/sampling.md``.
"""

from __future__ import annotations

from toolmask.sampling._apply import apply_bitmask
from toolmask.sampling._bitmask import (
    bitmask_from_ids,
    bitmask_size,
    bitmask_to_bool,
    bitmask_to_ids,
    new_bitmask,
)
from toolmask.sampling._hf import MatcherLike, TransformersLogitsProcessor, make_logits_processor
from toolmask.sampling._sampler import Sampler, SamplingParams
from toolmask.sampling._torch import DeviceBitmask, TorchSampler, apply_bitmask_torch

__all__ = [
    "DeviceBitmask",
    "MatcherLike",
    "Sampler",
    "SamplingParams",
    "TorchSampler",
    "TransformersLogitsProcessor",
    "apply_bitmask",
    "apply_bitmask_torch",
    "bitmask_from_ids",
    "bitmask_size",
    "bitmask_to_bool",
    "bitmask_to_ids",
    "make_logits_processor",
    "new_bitmask",
]
