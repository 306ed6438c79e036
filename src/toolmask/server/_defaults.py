"""What a request gets for the parameters it leaves out: the model's recommended sampling, and a
server-wide ``max_tokens``.

OpenAI's defaults (temperature 1, no limit but the context) suit large hosted models; on a small
local model they give nonsense arguments and a rambling reply that holds the single worker for
minutes. As vLLM does with a model's ``generation_config.json``, ``toolmask serve`` takes the
sampling a model recommends from its GGUF metadata (``general.sampling.temp``, ``.top_p``,
``.top_k``, ``.min_p``) and falls back to :data:`BUILTIN` for what the model does not say.
Explicit ``toolmask serve`` flags override both; a request's own values override everything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

__all__ = ["BUILTIN", "GGUF_SAMPLING_KEYS", "ServerDefaults", "gguf_sampling"]

#: GGUF metadata key -> ServerDefaults field
GGUF_SAMPLING_KEYS: dict[str, str] = {
    "general.sampling.temp": "temperature",
    "general.sampling.top_p": "top_p",
    "general.sampling.top_k": "top_k",
    "general.sampling.min_p": "min_p",
}


@dataclass(frozen=True, slots=True)
class ServerDefaults:
    """Values for the parameters a request leaves out.

    ``temperature``/``top_p``/``top_k``/``min_p``: sampling (see
    :class:`~toolmask.sampling.SamplingParams`); ``max_tokens``: the completion budget of a
    request without ``max_tokens`` / ``max_completion_tokens`` (None: the rest of the context);
    ``reasoning_budget``: the reasoning tokens of a request without ``reasoning_budget``
    (None: no bound); ``sampling``: the decoding mode of a request without ``sampling``
    (:func:`toolmask.decoding.mode_names`; ``serve --sampling``); ``source``: where the
    sampling values came from, for logs and ``/health``.
    """

    temperature: float = 0.2
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    max_tokens: int | None = 512
    reasoning_budget: int | None = None
    sampling: str = "plain"
    source: str = "toolmask defaults"

    def resolve(self, metadata: Mapping[str, Any], **flags: Any) -> ServerDefaults:
        """These defaults, then the model's GGUF ``general.sampling.*`` values, then the
        explicit ``flags`` (None = not given) on top."""
        out = self
        model = gguf_sampling(metadata)
        if model:
            out = replace(out, **model, source="model metadata (" + ", ".join(sorted(model)) + ")")
        given = {k: v for k, v in flags.items() if v is not None}
        unknown = set(given) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"unknown server defaults: {sorted(unknown)}")
        if given:
            out = replace(out, **given, source=f"{out.source}; flags ({', '.join(sorted(given))})")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: the defaults when neither the model nor the command line says otherwise (llama.cpp's and
#: llama-cpp-python's tool-calling sampler at a low temperature)
BUILTIN = ServerDefaults()


def gguf_sampling(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The sampling a GGUF recommends: ``{field: value}`` for each ``general.sampling.*`` key
    present with a usable value (a top_k of 0 or less, or an out-of-range value, is ignored)."""
    out: dict[str, Any] = {}
    for key, name in GGUF_SAMPLING_KEYS.items():
        raw = metadata.get(key)
        if raw is None or isinstance(raw, bool):
            continue
        try:
            value = float(raw)
        except (TypeError, ValueError):
            continue
        if not math.isfinite(value):
            continue
        if name == "top_k":
            if value >= 1:
                out[name] = int(value)
        elif name == "temperature":
            if 0 <= value <= 2:
                out[name] = value
        elif name == "top_p":
            if 0 < value <= 1:
                out[name] = value
        elif 0 <= value <= 1:
            out[name] = value
    return out
