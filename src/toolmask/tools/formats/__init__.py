"""Tool-call wire formats, one module each, registered by name in :data:`FORMATS`.

``hermes`` (Qwen, Hermes, SmolLM), ``qwen3`` (hermes with ``<think>``), ``qwen3_xml``
(Qwen3-Coder, Qwen3.5+), ``gpt_oss`` (Harmony), ``deepseek_v3`` / ``deepseek_v31`` /
``deepseek_dsml``, ``kimi_k2`` / ``kimi_k3``, ``glm``, ``llama3_json`` (Llama 3.x),
``llama4_pythonic``, ``mistral`` (Mistral v3 tokenizers), ``mistral_v11`` (v11+ ``[TOOL_CALLS]
name[ARGS]``), ``magistral`` (v11 calls after ``<think>`` text), ``gemma4``, ``phi4_mini``
(Phi-4-mini) and ``functools`` (prompt-injected); XML-tag, key/value and Python-call families:
``seed_oss`` (Seed-OSS), ``minimax_m2``, ``minimax_m3``, ``minicpm5``, ``muse_glimmer`` (ATEM),
``hy3`` (Hunyuan Hy3), ``ling`` (Ling 3.0), ``spark`` (Spark 2.5), ``lfm2`` (LFM2 / LFM2.5),
``llama3_pythonic`` (Llama 3.2 pythonic, ToolACE), ``gemma3_pythonic`` and ``functiongemma``.

``auto`` is not a format but a request: :func:`resolve_format` / :func:`detect_format` read the
format from a model's chat template and special tokens (see :mod:`._detect`).
"""

from __future__ import annotations

from toolmask.tools.formats import (
    deepseek,
    functiongemma,
    functools,
    gemma4,
    glm,
    gpt_oss,
    hermes,
    hunyuan,
    kimi,
    ling,
    llama3_json,
    llama4_pythonic,
    magistral,
    minimax_m3,
    mistral,
    mistral_v11,
    muse,
    phi4_mini,
    pythonic,
    qwen3,
    qwen3_xml,
    seed_oss,
    spark,
    xml_invoke,
)
from toolmask.tools.formats._base import FORMATS, WireFormat, get_format, register_format
from toolmask.tools.formats._detect import AUTO, FormatGuess, detect_format, resolve_format

__all__ = [
    "AUTO",
    "FORMATS",
    "FormatGuess",
    "WireFormat",
    "deepseek",
    "detect_format",
    "functiongemma",
    "functools",
    "gemma4",
    "get_format",
    "glm",
    "gpt_oss",
    "hermes",
    "hunyuan",
    "kimi",
    "ling",
    "llama3_json",
    "llama4_pythonic",
    "magistral",
    "minimax_m3",
    "mistral",
    "mistral_v11",
    "muse",
    "phi4_mini",
    "pythonic",
    "qwen3",
    "qwen3_xml",
    "register_format",
    "resolve_format",
    "seed_oss",
    "spark",
    "xml_invoke",
]
