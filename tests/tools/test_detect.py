"""``fmt="auto"``: the format read from a model's chat template and special tokens.

Templates are not needed, markers suffice: a template renders earlier calls the way the model
writes them, so every format is recognised from its own markers and a rendered call; every
canitoolcall family from its ``family.json`` markers taken as special tokens; an unknown model
gets hermes with a warning.
"""

from __future__ import annotations

import logging

import pytest
from canitoolcall.fixtures import load_family

from toolmask.errors import ToolError
from toolmask.tools import FORMATS, ToolTurn, detect_format, get_format, resolve_format
from toolmask.tools.formats._detect import RULES

from .canitoolcall_glue import _FORMAT_BY_MODEL, FAMILIES


def _template(name: str) -> str:
    """What a chat template of the format holds: its call and reasoning markers and a call in
    history (not the role markers it shares with other families' templates)."""
    fmt = FORMATS[name]
    own = (fmt.open, fmt.close, fmt.trigger, fmt.reasoning_start, fmt.reasoning_end)
    return " ".join(own) + "\n" + fmt.render_call("get_weather", {"city": "Paris"})


#: the formats the clue table names (the JSON-call families of issue 23 are detected by
#: rendering the model's template, not by clues)
CLUED = sorted({name for name, _clues in RULES})


@pytest.mark.parametrize("name", CLUED)
def test_every_format_from_its_template_markers(name: str) -> None:
    guess = detect_format(_template(name))
    assert guess.name == name and guess.source == "template", str(guess)


@pytest.mark.parametrize("slug", FAMILIES)
def test_every_family_from_its_special_tokens(slug: str) -> None:
    family = load_family(slug)
    expected = {fmt for fam, _prefix, fmt in _FORMAT_BY_MODEL if fam == slug}
    guess = detect_format(None, family.markers)
    assert guess.source == "special tokens"
    assert guess.name in expected, (slug, str(guess))


@pytest.mark.parametrize(
    ("template", "name"),
    [
        # Qwen2.5's ChatML with <tool_call>, Qwen3's with <think> too
        ("<|im_start|>system\n<tools></tools> <tool_call>\n</tool_call><|im_end|>", "hermes"),
        ("<|im_start|>{{ '<think>' }} <tool_call>", "qwen3"),
        ("<|im_start|>user\n{{ content }}<|im_end|>", "hermes"),  # ChatML, no tools: SmolLM2
        ("<tool_call><function=NAME><parameter=x>", "qwen3_xml"),  # not hermes: more specific
        ("<tool_call>{{ k }}<arg_key>k</arg_key>", "glm"),
        ("[TOOL_CALLS][{{ calls|tojson }}]", "mistral"),
        ("[TOOL_CALLS]{{ name }}[ARGS]{{ args }}", "mistral_v11"),
    ],
)
def test_shared_markers_go_to_the_specific_family(template: str, name: str) -> None:
    assert detect_format(template).name == name


def test_the_template_wins_over_the_special_tokens() -> None:
    # Kimi K3's vocabulary may keep K2's section tokens; its template names K3
    specials = ["<|tool_calls_section_begin|>", "<|open|>", "<|sep|>"]
    assert detect_format("{{ '<|open|>' }}tools{{ '<|sep|>' }}", specials).name == "kimi_k3"
    assert detect_format("no markers here", ["<|tool_calls_section_begin|>"]).name == "kimi_k2"


def test_an_unknown_model_gets_hermes_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolmask.tools"):
        guess = detect_format("{{ bos_token }}<start_of_turn>user", ["<start_of_turn>"])
    assert guess.name == "hermes" and guess.source == "fallback"
    assert any("using hermes" in r.message for r in caplog.records)
    assert resolve_format("auto") == "hermes"


def test_resolve_keeps_a_named_format() -> None:
    assert resolve_format("glm", _template("gemma4")) == "glm"
    assert resolve_format("auto", _template("gemma4")) == "gemma4"
    with pytest.raises(ToolError, match="resolve_format"):
        get_format("auto")
    with pytest.raises(ToolError, match="resolve_format"):
        ToolTurn([], "auto")
