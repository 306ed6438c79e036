"""Tool-call wire formats, one module each, registered by name in :data:`FORMATS`.

``hermes`` (Qwen, Hermes, SmolLM), ``qwen3`` (hermes with ``<think>``), ``qwen3_xml``
(Qwen3-Coder, Qwen3.5+), ``gpt_oss`` (Harmony), ``deepseek_v3`` / ``deepseek_v31`` /
``deepseek_dsml`` (and ``gigachat35``, GigaChat 3.5's DSML markup under the ``｜GCML｜``
mark), ``kimi_k2`` / ``kimi_k3``, ``glm``, ``llama3_json`` (Llama 3.x),
``llama4_pythonic``, ``mistral`` (Mistral v3 tokenizers), ``mistral_v11`` (v11+ ``[TOOL_CALLS]
name[ARGS]``), ``magistral`` (v11 calls after ``<think>`` text), ``gemma4``, ``phi4_mini``
(Phi-4-mini) and ``functools`` (prompt-injected); the JSON-call families, built on
:mod:`._jsoncalls`: ``apertus``, ``apriel``, ``command_r7b`` / ``cohere2`` / ``command_r_plus``,
``functionary_v31``, ``gigachat3`` / ``gigachat31``, ``granite``, ``granite_20b_fc``,
``hunyuan_a13b``, ``internlm2``, ``llama4_json``, ``minimax_m1``, ``nemotron_v2``,
``solar_open`` and ``xlam``; the XML-tag, key/value and Python-call families: ``seed_oss``
(Seed-OSS), ``minimax_m2``, ``minimax_m3``, ``minicpm5``, ``muse_glimmer`` (ATEM), ``hy3``
(Hunyuan Hy3), ``ling`` (Ling 3.0), ``spark`` (Spark 2.5), ``lfm2`` (LFM2 / LFM2.5),
``llama3_pythonic`` (Llama 3.2 pythonic, ToolACE), ``gemma3_pythonic`` and ``functiongemma``;
``functionary_v32`` (Functionary v3.2's ``>>>RECIPIENT`` messages, the first opened by the
prompt).

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
    functiongemma,
    functools,
    gemma4,
    gigachat,
    gigachat35,
    glm,
    gpt_oss,
    granite,
    granite_20b_fc,
    hermes,
    hunyuan,
    hy3,
    internlm2,
    kimi,
    ling,
    llama3_json,
    llama4_json,
    llama4_pythonic,
    magistral,
    minimax_m1,
    minimax_m3,
    mistral,
    mistral_v11,
    muse,
    nemotron_v2,
    phi4_mini,
    pythonic,
    qwen3,
    qwen3_xml,
    seed_oss,
    solar_open,
    spark,
    xlam,
    xml_invoke,
)
from toolmask.tools.formats._base import (
    FORMATS,
    Habit,
    WireFormat,
    get_format,
    register_format,
)
from toolmask.tools.formats._detect import AUTO, RULES, match_clues

__all__ = [
    "AUTO",
    "FORMATS",
    "RULES",
    "Habit",
    "WireFormat",
    "apertus",
    "apriel",
    "command_r",
    "deepseek",
    "functionary",
    "functiongemma",
    "functools",
    "gemma4",
    "get_format",
    "gigachat",
    "gigachat35",
    "glm",
    "gpt_oss",
    "granite",
    "granite_20b_fc",
    "hermes",
    "hunyuan",
    "hy3",
    "internlm2",
    "kimi",
    "ling",
    "llama3_json",
    "llama4_json",
    "llama4_pythonic",
    "magistral",
    "match_clues",
    "minimax_m1",
    "minimax_m3",
    "mistral",
    "mistral_v11",
    "muse",
    "nemotron_v2",
    "phi4_mini",
    "pythonic",
    "qwen3",
    "qwen3_xml",
    "register_format",
    "seed_oss",
    "solar_open",
    "spark",
    "xlam",
    "xml_invoke",
]
