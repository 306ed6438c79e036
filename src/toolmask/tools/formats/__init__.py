"""Tool-call wire formats, one module each, registered by name in :data:`FORMATS`.

``hermes`` (Qwen, Hermes, SmolLM), ``qwen3`` (hermes with ``<think>``), ``qwen3_xml``
(Qwen3-Coder, Qwen3.5+), ``gpt_oss`` (Harmony), ``deepseek_v3`` / ``deepseek_v31`` /
``deepseek_dsml``, ``kimi_k2`` / ``kimi_k3``, ``glm``, ``llama3_json`` (Llama 3.x),
``llama4_pythonic``, ``mistral`` (Mistral v3 tokenizers), ``mistral_v11`` (v11+ ``[TOOL_CALLS]
name[ARGS]``), ``magistral`` (v11 calls after ``<think>`` text), ``gemma4``, ``phi4_mini``
(Phi-4-mini) and ``functools`` (prompt-injected); the JSON-call families of issue 23, built on
:mod:`._jsoncalls`: ``apertus``, ``apriel``, ``command_r7b`` / ``cohere2`` / ``command_r_plus``,
``functionary_v31``, ``gigachat3`` / ``gigachat31``, ``granite``, ``granite_20b_fc``,
``hunyuan_a13b``, ``internlm2``, ``llama4_json``, ``minimax_m1``, ``nemotron_v2``,
``solar_open`` and ``xlam``.

``auto`` is not a format but a request: :func:`toolmask.tools.resolve_format` /
:func:`toolmask.tools.detect_format` prove a format on the calls a model's chat template renders;
:data:`RULES` (the clue table) only orders equally specific formats and reads special tokens.
"""

from __future__ import annotations

from toolmask.tools.formats import (
    apertus,
    apriel,
    command_r,
    deepseek,
    functionary,
    functools,
    gemma4,
    gigachat,
    glm,
    gpt_oss,
    granite,
    granite_20b_fc,
    hermes,
    hunyuan,
    internlm2,
    kimi,
    llama3_json,
    llama4_json,
    llama4_pythonic,
    magistral,
    minimax_m1,
    mistral,
    mistral_v11,
    nemotron_v2,
    phi4_mini,
    qwen3,
    qwen3_xml,
    solar_open,
    xlam,
)
from toolmask.tools.formats._base import FORMATS, WireFormat, get_format, register_format
from toolmask.tools.formats._detect import AUTO, RULES, match_clues

__all__ = [
    "AUTO",
    "FORMATS",
    "RULES",
    "WireFormat",
    "apertus",
    "apriel",
    "command_r",
    "deepseek",
    "functionary",
    "functools",
    "gemma4",
    "get_format",
    "gigachat",
    "glm",
    "gpt_oss",
    "granite",
    "granite_20b_fc",
    "hermes",
    "hunyuan",
    "internlm2",
    "kimi",
    "llama3_json",
    "llama4_json",
    "llama4_pythonic",
    "magistral",
    "match_clues",
    "minimax_m1",
    "mistral",
    "mistral_v11",
    "nemotron_v2",
    "phi4_mini",
    "qwen3",
    "qwen3_xml",
    "register_format",
    "solar_open",
    "xlam",
]
