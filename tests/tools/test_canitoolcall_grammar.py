"""Grammar acceptance over canitoolcall's fixtures: for every fixture whose expected parse has
complete calls, the turn grammar built from its tools accepts the model's exact ``raw_output``
under ``auto``, and under ``required`` when the output has no prose (``canitoolcall_glue.
grammar_accepts``: parallel calls on, reasoning as the generation prompt left it, the family's
special markers as single tokens where the grammar has a marker, else as text).

A fixture the grammar does not accept is listed in :data:`GAPS` with the reason a generation
grammar should not admit it (or the work not done), and must still be refused: a fixed gap
fails until it leaves the list. Every format has a generation grammar.
"""

from __future__ import annotations

import pytest

from toolmask.tools import FORMATS

from .canitoolcall_glue import (
    all_fixtures,
    format_for,
    grammar_accepts,
    grammar_modes,
    has_complete_calls,
)

_VLLM = "an engine test's hand-written string, not what the model's template renders"
_CLOSE = "a raw-text value holding the format's own close marker: the reader ends there"
_TAGS = (
    "a raw-text value holding </parameter> or </function>: the grammar keeps a value free of the "
    "tags that may end one (the parser tells them apart by what follows; a grammar that admits "
    "them lets a model that meant to close the parameter run on inside the value)"
)
_AFTER = "text after the last call: the turn ends with the calls"

#: fixture id (or ``id@mode`` for one mode) -> why its raw_output is not (and should not be) a
#: turn the grammar generates
GAPS: dict[str, str] = {
    "qwen3-xml/q38-marker-in-arguments": _TAGS,
    "qwen3-xml/coder-marker-in-arguments": _TAGS,
    "kimi/k3-control-marker-text-in-value": _CLOSE,
    "glm/glm45-ollama-content-after-call": _AFTER,
    "qwen3-xml/bug-coder-text-after-call": _AFTER,
    "gpt-oss/vllm-call-then-final": "a final message after <|call|>, the model's stop token",
    "glm/glm47-vllm-whitespace-only-content@required": "5 whitespace bytes before the call",
    "kimi/k2i-vllm-multiline-json": "indented arguments JSON (" + _VLLM + ")",
    "kimi/k2i-vllm-id-without-functions-prefix": "a call id without functions. (" + _VLLM + ")",
    "kimi/k2i-vllm-content-after-tool-section": "a space before <|tool_call_end|>, " + _AFTER,
    "llama/l3-vllm-brackets-in-strings": "a key the tool schema does not declare",
    "llama/l3-meta-python-tag-type-function": 'indented JSON with a "type" key before the name',
    "mistral/vllm-v3-no-space": '"arguments":{ mixed with json.dumps spacing (' + _VLLM + ")",
    "mistral/vllm-v3-arguments-before-name": "arguments before the name (a quirk)",
    "mistral/vllm-v3-name-inside-arguments": "arguments before the name (a quirk)",
    "mistral/vllm-v3-parallel": '"arguments":{ mixed with json.dumps spacing (' + _VLLM + ")",
    "mistral/vllm-v3-content-before-call": '"arguments":{ mixed spacing (' + _VLLM + ")",
    "qwen3-hermes/vllm-no-newlines-no-spaces": 'compact envelope {"name":...,"arguments"...',
    "gemma4/sglang-nested-array-with-spaces": '"," and ", " mixed in one call (' + _VLLM + ")",
    "gemma4/vllm-dotted-function-name": "a tool name with a dot: Tool keeps OpenAI's "
    "[a-zA-Z0-9_-]{1,64} (the grammar would write it)",
}

CASES = [
    (fx, mode)
    for fx in all_fixtures()
    if has_complete_calls(fx) and format_for(fx) is not None
    for mode in grammar_modes(fx)
]


@pytest.mark.parametrize("case", CASES, ids=[f"{fx.id}-{mode}" for fx, mode in CASES])
def test_grammar_accepts_the_raw_output(case: tuple[object, str]) -> None:
    fx, mode = case
    why = grammar_accepts(fx, mode)  # type: ignore[arg-type]
    fid = fx.id  # type: ignore[attr-defined]
    if fid in GAPS or f"{fid}@{mode}" in GAPS:
        assert why is not None, f"{fid} is accepted now: remove it from GAPS"
    else:
        assert why is None, why


def test_acceptance_floor() -> None:
    """At least 90% of all the fixtures with complete calls accepted in every mode (326 of
    346 measured)."""
    assert all(FORMATS[format_for(fx) or ""].has_grammar for fx, _ in CASES)
    by_fixture: dict[str, bool] = {}
    for fx, mode in CASES:
        ok = grammar_accepts(fx, mode) is None
        by_fixture[fx.id] = by_fixture.get(fx.id, True) and ok
    accepted = {i for i, ok in by_fixture.items() if ok}
    assert len(accepted) >= 0.90 * len(by_fixture), (len(accepted), len(by_fixture))


def test_gaps_are_fixtures_with_calls() -> None:
    ids = {fx.id for fx, _ in CASES} | {f"{fx.id}@{mode}" for fx, mode in CASES}
    assert set(GAPS) <= ids
