"""Model backends. Each lives in its own module and imports its engine lazily, behind an error
that names the extra to install: ``toolmask.backends.llama_cpp`` (extra ``llama``) and
``toolmask.backends.transformers`` (extra ``transformers``). What they share is here: the
:class:`Backend` protocol (what the agent and the server call) and :class:`DecodingBackend`,
the base a new in-process engine subclasses (a :class:`toolmask.decoding.ModelEngine` whose
``generate`` runs the requested decoding mode). The result types they return and the
:class:`ReasoningBudget` are :mod:`toolmask.decoding`'s, re-exported here."""

from __future__ import annotations

from toolmask.backends._base import Backend, DecodingBackend
from toolmask.decoding import (
    Generation,
    OnToken,
    ReasoningBudget,
    StepDistortion,
    check_compiled_for,
)
from toolmask.errors import ContextOverflowError

__all__ = [
    "Backend",
    "ContextOverflowError",
    "DecodingBackend",
    "Generation",
    "OnToken",
    "ReasoningBudget",
    "StepDistortion",
    "check_compiled_for",
]
