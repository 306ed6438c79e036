"""The registry: which formats exist, by name, each in the module of the same name.

:data:`BUILTIN` is the one list of the formats toolmask ships: format ``NAME`` is the ``SPEC``
of module ``toolmask.tools.formats.NAME``, loaded in this order (the last tie-break of format
detection). :func:`register_format` adds a format from anywhere (a plug-in, a test), and
:data:`FORMATS` holds every registered one, by name.
"""

from __future__ import annotations

import importlib

from toolmask.errors import ToolError
from toolmask.tools.formats._spec import FormatSpec

__all__ = [
    "BUILTIN",
    "FORMATS",
    "get_format",
    "load_builtin",
    "module_of",
    "register_format",
    "unregister_format",
]

#: the built-in formats, in registration order; format ``NAME`` is ``SPEC`` in module ``NAME``
BUILTIN: tuple[str, ...] = (
    "apertus",
    "apriel",
    "command_r7b",
    "cohere2",
    "command_r_plus",
    "deepseek_v3",
    "deepseek_v31",
    "deepseek_dsml",
    "deepseek_v4",
    "deepseek_v41",
    "functionary_v2",
    "functionary_v25",
    "functionary_v31",
    "functionary_v32",
    "falcon3",
    "gemma4",
    "functiongemma",
    "functools",
    "gigachat3",
    "gigachat31",
    "gigachat35",
    "glm",
    "gpt_oss",
    "granite",
    "granite_20b_fc",
    "hermes",
    "hunyuan_a13b",
    "hy3",
    "hyperclovax_seed",
    "internlm2",
    "jamba",
    "kimi_k2",
    "kimi_k3",
    "ling",
    "llama3_json",
    "llama4",
    "llama4_json",
    "llama4_pythonic",
    "mistral_v11",
    "magistral",
    "minimax_m1",
    "minimax_m3",
    "mistral",
    "qwen3_xml",
    "seed_oss",
    "minimax_m2",
    "minicpm3",
    "minicpm5",
    "muse_glimmer",
    "nemotron_v2",
    "olmo3",
    "phi4_mini",
    "lfm2",
    "lfm2_json",
    "llama3_pythonic",
    "gemma3_pythonic",
    "qwen3",
    "qwen25_coder",
    "solar_open",
    "spark",
    "xlam",
)

#: format name -> format; every registered format
FORMATS: dict[str, FormatSpec] = {}


def module_of(name: str) -> str:
    """The module a built-in format is defined in."""
    return f"{__package__}.{name}"


def register_format(spec: FormatSpec) -> FormatSpec:
    """Register ``spec`` under its name (ValueError when the name is taken); returns it."""
    if spec.name in FORMATS:
        raise ValueError(f"wire format {spec.name!r} is registered twice")
    FORMATS[spec.name] = spec
    return spec


def unregister_format(name: str) -> None:
    """Forget the format ``name`` (a plug-in's or a test's; KeyError when unknown)."""
    del FORMATS[name]


def load_builtin() -> None:
    """Register every format of :data:`BUILTIN` (once), from the module of its name."""
    for name in BUILTIN:
        if name not in FORMATS:
            spec = importlib.import_module(module_of(name)).SPEC
            if spec.name != name:
                raise ValueError(f"module {module_of(name)} registers {spec.name!r}, not {name!r}")
            register_format(spec)


def get_format(fmt: str | FormatSpec) -> FormatSpec:
    """The registered format called ``fmt`` (a :class:`FormatSpec` passes through)."""
    if isinstance(fmt, FormatSpec):
        return fmt
    try:
        return FORMATS[fmt]
    except KeyError:
        if fmt == "auto":
            raise ToolError(
                "format 'auto' is read from a model's chat template: resolve it with "
                "toolmask.tools.resolve_format(fmt, chat_template, special_tokens) (Agent and "
                "create_app do so from their backend)",
                where="format",
            ) from None
        raise ToolError(
            f"unknown tool-call format {fmt!r}; known: {sorted(FORMATS)}", where="format"
        ) from None
