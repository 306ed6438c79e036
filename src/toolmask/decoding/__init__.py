"""Decoding modes: how a reply is drawn from a model under a grammar, one module per mode.

A mode is a :class:`Decoder` (``decode(engine, request) -> Generation``) registered by name in
the table below; the engine is any :class:`ModelEngine` (every backend is one), the request a
:class:`DecodeRequest` (the prompt, the grammar, :class:`~toolmask.sampling.SamplingParams`
for the token sampler, :class:`DecodingParams` for the mode and its budgets). Callers choose a
decoder by name (``generate(..., decoding="exact")``, ``Agent(..., decoding=...)``, the
server's ``sampling`` field, ``toolmask serve --sampling``) and never branch on it.

The built-in modes (``docs/sampling.md``):

* :mod:`~toolmask.decoding.plain`: mask, renormalise, draw each token; jump over forced text;
* :mod:`~toolmask.decoding.exact`: finite branches chosen by their whole sequence's
  probability; call or prose first under ``auto`` by the model's probability of a call;
* :mod:`~toolmask.decoding.aligned`: sequential Monte Carlo over particles, beam search when
  greedy.

Adding a mode is one module with a decoder class and one row in the table below, or one
:func:`register_mode` call from any module (a test registers a toy mode that way). What the
modes share is here once: the token loop (``_loop``), the finite branches (``_branch``,
``_scoring``) and their bounded lookup (``_lookup``), call or prose first (``_opening``).
"""

from __future__ import annotations

from toolmask.decoding._engine import ModelEngine, forced_tokens, logits_by_trie
from toolmask.decoding._opening import (
    call_opener,
    choose_opening,
    opener_tokens,
    opening_odds,
)
from toolmask.decoding._protocol import (
    Decoder,
    DecodeRequest,
    DecoderFactory,
    Decoders,
    DecodingParams,
    Opening,
    check_compiled_for,
    check_prompt,
    mode_names,
    register_mode,
    resolve_params,
    unregister_mode,
)
from toolmask.decoding._reasoning import ReasoningBudget
from toolmask.decoding._result import Generation, OnToken, StepDistortion
from toolmask.decoding.aligned import AlignedDecoder
from toolmask.decoding.exact import ExactDecoder
from toolmask.decoding.plain import PlainDecoder

# the table of modes: name -> the class that makes one decoder per engine
register_mode("plain", PlainDecoder)
register_mode("exact", ExactDecoder)
register_mode("aligned", AlignedDecoder)

__all__ = [
    "AlignedDecoder",
    "DecodeRequest",
    "Decoder",
    "DecoderFactory",
    "Decoders",
    "DecodingParams",
    "ExactDecoder",
    "Generation",
    "ModelEngine",
    "OnToken",
    "Opening",
    "PlainDecoder",
    "ReasoningBudget",
    "StepDistortion",
    "call_opener",
    "check_compiled_for",
    "check_prompt",
    "choose_opening",
    "forced_tokens",
    "logits_by_trie",
    "mode_names",
    "opener_tokens",
    "opening_odds",
    "register_mode",
    "resolve_params",
    "unregister_mode",
]
