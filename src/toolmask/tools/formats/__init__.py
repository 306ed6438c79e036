"""Tool-call wire formats: each a :class:`FormatSpec` (data) read by a :class:`Codec` (one per
call notation), one module per format, registered by name in :data:`FORMATS`.

The formats: ``hermes`` (Qwen, Hermes, SmolLM), ``qwen3`` (hermes with ``<think>``),
``qwen3_xml`` (Qwen3-Coder, Qwen3.5+), ``gpt_oss`` (Harmony), ``deepseek_v3`` / ``deepseek_v31``
/ ``deepseek_dsml`` / ``deepseek_v4`` / ``deepseek_v41`` (and ``gigachat35``, GigaChat 3.5's
DSML markup under the ``｜GCML｜`` mark), ``kimi_k2`` / ``kimi_k3``, ``glm``, ``llama3_json``
(Llama 3.x), ``llama4_pythonic``, ``mistral`` (Mistral v3 tokenizers), ``mistral_v11`` (v11+
``[TOOL_CALLS]name[ARGS]``), ``magistral`` (v11 calls after ``<think>`` text), ``gemma4``,
``phi4_mini`` (Phi-4-mini) and ``functools`` (prompt-injected); the JSON-call families:
``apertus``, ``apriel``, ``command_r7b`` / ``cohere2`` / ``command_r_plus``, ``falcon3``,
``functionary_v25`` / ``functionary_v31``, ``gigachat3`` / ``gigachat31``, ``granite``,
``granite_20b_fc``, ``hunyuan_a13b``, ``internlm2``, ``jamba``, ``llama4`` (Llama 4's own
template) / ``llama4_json`` (vLLM's), ``minimax_m1``, ``nemotron_v2``, ``solar_open`` and
``xlam``; the XML-tag, key/value and Python-call families: ``seed_oss`` (Seed-OSS),
``minimax_m2``, ``minimax_m3``, ``minicpm5``, ``muse_glimmer`` (ATEM), ``hy3`` (Hunyuan Hy3),
``ling`` (Ling 3.0), ``spark`` (Spark 2.5), ``lfm2`` (LFM2 / LFM2.5), ``llama3_pythonic`` (Llama
3.2 pythonic, ToolACE), ``gemma3_pythonic`` and ``functiongemma``; ``functionary_v32``
(Functionary v3.2's ``>>>RECIPIENT`` messages, the first opened by the prompt) and
``functionary_v2`` (Functionary v2's ``<|from|>`` / ``<|recipient|>`` / ``<|content|>``
messages).

The package is a leaf of the tool layer: it imports nothing of :mod:`toolmask.tools` outside
itself (a tool is read through :class:`ToolLike`; the kit's schema compiler is passed in).
Formats never import each other: what several share is a codec (:mod:`._json`, :mod:`._xml`,
:mod:`._keyvalue`, :mod:`._pythonic`, :mod:`._objects`, :mod:`._marked`, :mod:`._dsml`,
:mod:`._messages`, :mod:`._recipient`; :mod:`._tagged`, the formats derived from a rendering) or
a chat template's texts (:mod:`._chat`); the readers every codec uses are in :mod:`._read`.

``auto`` is not a format but a request: :func:`toolmask.tools.resolve_format` /
:func:`toolmask.tools.detect_format` prove a format on the calls a model's chat template renders;
:data:`RULES` (the clue table) only orders equally specific formats and reads special tokens.
"""

from __future__ import annotations

from toolmask.tools.formats._detect import AUTO, RULES, match_clues
from toolmask.tools.formats._kit import Kit, SchemaGrammar, marker_node
from toolmask.tools.formats._read import Block, Call, json_type
from toolmask.tools.formats._registry import (
    BUILTIN,
    FORMATS,
    get_format,
    load_builtin,
    module_of,
    register_format,
    unregister_format,
)
from toolmask.tools.formats._rename import prefix_rules
from toolmask.tools.formats._spec import (
    BlockMarkers,
    Codec,
    CodecBase,
    FormatSpec,
    Habit,
    Layout,
    Prompt,
    Reasoning,
    ToolLike,
    Values,
    builds_own_turn,
)

__all__ = [
    "AUTO",
    "BUILTIN",
    "FORMATS",
    "RULES",
    "Block",
    "BlockMarkers",
    "Call",
    "Codec",
    "CodecBase",
    "FormatSpec",
    "Habit",
    "Kit",
    "Layout",
    "Prompt",
    "Reasoning",
    "SchemaGrammar",
    "ToolLike",
    "Values",
    "builds_own_turn",
    "get_format",
    "json_type",
    "marker_node",
    "match_clues",
    "module_of",
    "prefix_rules",
    "register_format",
    "unregister_format",
]

load_builtin()
