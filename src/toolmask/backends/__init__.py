"""Model backends. Each lives in its own module and imports its engine lazily, behind an error
that names the extra to install: ``toolmask.backends.llama_cpp`` (extra ``llama``) and
``toolmask.backends.transformers`` (extra ``transformers``). What they share (the
:class:`Generation` result, the :class:`Backend` protocol, the ``on_token`` hook, the
distortion meter's :class:`StepDistortion`, the :class:`ReasoningBudget`, and
:class:`DecodingBackend`, the decode loop a new engine plugs into) is here."""

from __future__ import annotations

from toolmask.backends._base import (
    Backend,
    ContextOverflowError,
    DecodingBackend,
    Generation,
    OnToken,
    ReasoningBudget,
    StepDistortion,
    check_compiled_for,
    opener_tokens,
)
from toolmask.backends._scoring import choose_opening

__all__ = [
    "Backend",
    "ContextOverflowError",
    "DecodingBackend",
    "Generation",
    "OnToken",
    "ReasoningBudget",
    "StepDistortion",
    "check_compiled_for",
    "choose_opening",
    "opener_tokens",
]
