"""Wire formats: the registry, stable prompts, markers."""

from __future__ import annotations

from typing import Any

import pytest

from toolmask.tools import FORMATS, FormatSpec, ToolTurn, get_format, register_format
from toolmask.tools._generic import is_generic
from toolmask.tools.formats import BlockMarkers

from .toolset import NAMES, TOOLS

#: the formats with a generation grammar (the others parse only, see test_canitoolcall)
# the family formats: generic formats derived and registered by other tests of the process aside
GRAMMAR_FORMATS = sorted(n for n, f in FORMATS.items() if f.has_grammar and not is_generic(n))


CHOICES: list[Any] = [
    "auto",
    "none",
    "required",
    {"type": "function", "function": {"name": "book_flight"}},
    {"type": "allowed_tools", "mode": "auto", "tools": NAMES[:2]},
    {"type": "allowed_tools", "mode": "required", "tools": NAMES[3:]},
]


def test_registry() -> None:
    assert GRAMMAR_FORMATS == [
        "apertus", "apriel", "cohere2", "command_r7b", "command_r_plus", "deepseek_dsml",
        "deepseek_v3", "deepseek_v31", "deepseek_v4", "deepseek_v41", "falcon3", "functionary_v2",
        "functionary_v25", "functionary_v31", "functionary_v32", "functiongemma", "functools",
        "gemma3_pythonic", "gemma4", "gigachat3", "gigachat31", "gigachat35", "glm", "gpt_oss",
        "granite", "granite_20b_fc", "hermes", "hunyuan_a13b", "hy3", "hyperclovax_seed",
        "internlm2", "jamba", "kimi_k2", "kimi_k3", "lfm2", "lfm2_json", "ling", "llama3_json",
        "llama3_pythonic",
        "llama4", "llama4_json", "llama4_pythonic", "magistral", "minicpm3", "minicpm5",
        "minimax_m1", "minimax_m2", "minimax_m3", "mistral", "mistral_v11", "muse_glimmer",
        "nemotron_v2", "olmo3", "phi4_mini", "qwen25_coder", "qwen3", "qwen3_xml", "seed_oss",
        "solar_open", "spark", "xlam",
    ]  # fmt: skip
    # every family format has a generation grammar
    assert sorted(n for n in FORMATS if not is_generic(n)) == GRAMMAR_FORMATS
    assert get_format("hermes") is FORMATS["hermes"]
    assert get_format(FORMATS["mistral"]) is FORMATS["mistral"]
    with pytest.raises(ValueError, match="registered twice"):
        register_format(FormatSpec("hermes", FORMATS["hermes"].codec, BlockMarkers("<x>")))
    with pytest.raises(ValueError, match="overlaps itself"):
        FormatSpec("overlap", FORMATS["hermes"].codec, BlockMarkers("abab"))
    with pytest.raises(ValueError, match="must start with the open marker"):
        FormatSpec("other", FORMATS["hermes"].codec, BlockMarkers("<a>", trigger="<b>"))


@pytest.mark.parametrize("fmt", GRAMMAR_FORMATS)
def test_prompt_is_byte_identical_across_tool_choices(fmt: str) -> None:
    prompts = set()
    for choice in CHOICES:
        for parallel in (True, False):
            turn = ToolTurn(TOOLS, fmt, choice, parallel_tool_calls=parallel)
            prompts.add(turn.prompt().encode())
    assert len(prompts) == 1
    (prompt,) = prompts
    for name in NAMES:  # every tool is advertised, whatever may be called
        assert f'"{name}"'.encode() in prompt


@pytest.mark.parametrize("fmt", GRAMMAR_FORMATS)
def test_markers(fmt: str) -> None:
    f = FORMATS[fmt]
    markers = f.markers()
    assert f.block.open in markers and f.trigger_text in markers
    assert list(markers) == sorted(markers, key=lambda m: (-len(m), m))
    example = f.render_call("get_time", {})
    # a format whose blocks may start bare renders them so (Llama 4's ``[f()]``; Muse Glimmer's
    # `` to=f``: the reader skips whitespace before a bare start)
    start = f.block.bare_start
    bare = bool(start) and example.lstrip(" \t\r\n").startswith(start)
    assert example.startswith(f.block.open) or bare
