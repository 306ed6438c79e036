"""Tool-call wire formats, one module each, registered by name in :data:`FORMATS`.

``hermes`` (Qwen, Hermes, SmolLM), ``llama3_json`` (Llama 3.x), ``mistral`` (Mistral v3
tokenizers), ``phi4_mini`` (Phi-4-mini) and ``functools`` (prompt-injected, any model).
"""

from __future__ import annotations

from toolmask.tools.formats import (
    deepseek,
    functools,
    gemma4,
    glm,
    gpt_oss,
    hermes,
    kimi,
    llama3_json,
    llama4_pythonic,
    mistral,
    mistral_v11,
    phi4_mini,
    qwen3,
    qwen3_xml,
)
from toolmask.tools.formats._base import FORMATS, WireFormat, get_format, register_format

__all__ = [
    "FORMATS",
    "WireFormat",
    "functools",
    "get_format",
    "hermes",
    "llama3_json",
    "mistral",
    "phi4_mini",
    "qwen3",
    "register_format",
]
