"""``fmt="auto"``: a format is detected only when it proves itself on the calls the model's own
chat template renders; otherwise the prompt-injected fallback, with a warning.

Small templates show each rule here; ``test_detect_templates.py`` runs every vendored real
template."""

from __future__ import annotations

import json
import logging

import pytest
from canitoolcall.fixtures import load_family

from toolmask.errors import ToolError
from toolmask.tools import (
    FORMATS,
    TemplateSource,
    ToolTurn,
    detect_format,
    get_format,
    load_chat_template,
    resolve_format,
)
from toolmask.tools._detect import FALLBACK, specificity
from toolmask.tools._probe import PROBE_CASES

from ..vendored import chat_template
from .canitoolcall_glue import _FORMAT_BY_MODEL, FAMILIES
from .test_probe import TEMPLATES


def _own_template(name: str) -> str:
    """A ChatML template whose assistant turns hold ``name``'s own rendering of the probe's
    calls (:meth:`FormatSpec.render_calls`), its markers named in a comment as a real template
    of the family would name them."""
    fmt = FORMATS[name]
    # a format with one call per turn has templates that render the first call only
    keep = None if fmt.layout.parallel_calls else 1
    one, two = (
        json.dumps(fmt.render_calls(list(PROBE_CASES[c])[:keep])) for c in ("one", "two")
    )  # JSON string literals are Jinja string literals
    # its own markers, and the turn markers of its template that no other format claims as its
    # own (Ling's and Spark's templates are what sets them apart from GLM, whose calls they write)
    others = {m for n, f in FORMATS.items() if n != name for m in f.own_markers()}
    marks = " ".join([*fmt.own_markers(), *(m for m in fmt.template_markers if m not in others)])
    return (
        "{# " + marks + " #}"
        "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}"
        "{% if m.tool_calls %}{{ " + one + " if m.tool_calls | length == 1 else " + two + " }}"
        "{% else %}{{ m.content }}{% endif %}{{ '<|im_end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )


#: formats whose render_calls is not a whole turn their grammar takes alone (Kimi K3's turn is
#: sections around the calls; see test_detect_templates for its real template)
_NOT_A_TURN = {"kimi_k3"}


@pytest.mark.parametrize("name", sorted(set(FORMATS) - _NOT_A_TURN))
def test_every_format_proves_itself_on_its_own_calls(name: str) -> None:
    guess = detect_format(_own_template(name))
    assert guess.name == name and guess.confident, (str(guess), guess.warning)
    assert all(e.proven for e in guess.evidence if e.format in guess.proven)


def test_the_most_specific_of_the_proven() -> None:
    # Qwen 2.5's shape: hermes and qwen3 both read it; <think> is nowhere in the template
    guess = detect_format(TEMPLATES["hermes"])
    assert (guess.name, guess.proven) == ("hermes", ("hermes", "qwen3"))
    assert specificity(FORMATS["hermes"], TEMPLATES["hermes"]) == (1.0, 23)
    assert specificity(FORMATS["qwen3"], TEMPLATES["hermes"]) == (0.5, 23)
    # Qwen 3's renders reasoning: only a format that reads it back as reasoning proves itself
    guess = detect_format(TEMPLATES["qwen3"])
    assert (guess.name, guess.proven) == ("qwen3", ("qwen3",))
    hermes = next(e for e in guess.evidence if e.format == "hermes")
    bad = next(c for c in hermes.cases if c.case == "reasoning")
    assert not bad.parsed and "left in the content" in bad.detail


def test_arguments_given_as_json_text_when_the_template_wants_them() -> None:
    guess = detect_format(TEMPLATES["json arguments"])
    assert guess.name == "hermes" and guess.confident
    assert guess.probe is not None and guess.probe.variant.arguments == "json"


def test_calls_no_format_reads_get_the_fallback_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = TemplateSource(TEMPLATES["unknown"], origin="/models/odd/template.jinja")
    with caplog.at_level(logging.WARNING, logger="toolmask.tools"):
        guess = detect_format(source)
    assert (guess.name, guess.source, guess.confident) == (FALLBACK, "fallback", False)
    assert "template.jinja renders tool calls that no format reads" in guess.warning
    assert "--format" in guess.warning
    assert any(guess.warning in r.message for r in caplog.records)
    assert guess.probe is not None and guess.probe.renders_calls
    assert not any(e.proven for e in guess.evidence)


#: FunctionGemma's documented turn (written here from its format guide: the official template is
#: not vendored): calls in ``<start_function_call>`` with ``<escape>`` strings, then the hand-off
#: ``<start_function_response>`` where a turn would end (engines stop there)
FUNCTIONGEMMA_SHAPE = (
    "{%- macro val(v) -%}{%- if v is string -%}<escape>{{ v }}<escape>"
    "{%- else -%}{{ v | tojson }}{%- endif -%}{%- endmacro -%}"
    "{{ bos_token }}{%- for m in messages -%}"
    "{%- if m.role == 'user' -%}<start_of_turn>user\n{{ m.content }}<end_of_turn>\n"
    "{%- elif m.role == 'assistant' -%}<start_of_turn>model\n"
    "{%- if m.tool_calls -%}{%- for tc in m.tool_calls -%}"
    "<start_function_call>call:{{ tc.function.name }}{{ '{' }}"
    "{%- for k, v in tc.function.arguments.items() -%}"
    "{{ k }}:{{ val(v) }}{{ ',' if not loop.last }}{%- endfor -%}"
    "{{ '}' }}<end_function_call>{%- endfor -%}<start_function_response>"
    "{%- else -%}{{ m.content }}<end_of_turn>\n{%- endif -%}"
    "{%- elif m.role == 'tool' -%}response:{{ m.name }}{{ '{' }}value:<escape>"
    "{{ m.content }}<escape>{{ '}' }}<end_function_response>"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<start_of_turn>model\n{%- endif -%}"
)


def test_functiongemma_hands_the_turn_to_the_tool() -> None:
    # the probe knows <start_function_response> as the end of the model's turn: before, the
    # functiongemma format read the calls but the marker was left in the content
    guess = detect_format(FUNCTIONGEMMA_SHAPE)
    assert guess.name == "functiongemma" and guess.confident, (str(guess), guess.warning)


def test_a_template_that_renders_no_calls_says_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolmask.tools"):
        guess = detect_format(TEMPLATES["no calls"])
    assert (guess.name, guess.source) == (FALLBACK, "no calls")
    assert "renders no tool calls" in guess.warning and "--format" in guess.warning
    # the special tokens may still name the family (the template shows nothing to prove)
    guess = detect_format(TEMPLATES["no calls"], ["<|im_start|>", "<tool_call>"])
    assert (guess.name, guess.source, guess.clues) == ("hermes", "no calls", ("<tool_call>",))


def test_the_embedded_model_is_chatml_without_tool_calls() -> None:
    from toolmask.models import TEST_MODEL, resolve_model

    guess = detect_format(load_chat_template(resolve_model(TEST_MODEL)))
    assert (guess.name, guess.source, guess.clues) == ("hermes", "no calls", ("<|im_start|>",))
    assert "SmolLM2" in guess.warning


@pytest.mark.parametrize("slug", FAMILIES)
def test_every_family_from_its_special_tokens_without_a_template(slug: str) -> None:
    family = load_family(slug)
    expected = {fmt for fam, _prefix, fmt in _FORMAT_BY_MODEL if fam == slug}
    guess = detect_format(None, family.markers)
    assert guess.source == "special tokens"
    assert guess.name in expected, (slug, str(guess))


def test_the_template_wins_over_the_special_tokens() -> None:
    # Kimi K3's vocabulary may keep K2's section tokens; its template proves K3
    source = load_chat_template(chat_template("llama.cpp/Kimi-K3.jinja"))
    specials = ["<|tool_calls_section_begin|>", "<|open|>", "<|sep|>"]
    assert detect_format(source, specials).name == "kimi_k3"
    assert detect_format(None, ["<|tool_calls_section_begin|>"]).name == "kimi_k2"


def test_nothing_at_all_gets_the_fallback_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolmask.tools"):
        guess = detect_format(None, ["<start_of_turn>"])
    assert (guess.name, guess.source) == (FALLBACK, "none")
    assert any("using functools" in r.message for r in caplog.records)
    assert resolve_format("auto") == FALLBACK


def test_resolve_keeps_a_named_format() -> None:
    assert resolve_format("glm", TEMPLATES["hermes"]) == "glm"
    assert resolve_format("auto", TEMPLATES["hermes"]) == "hermes"
    with pytest.raises(ToolError, match="resolve_format"):
        get_format("auto")
    with pytest.raises(ToolError, match="resolve_format"):
        ToolTurn([], "auto")


def test_a_template_that_does_not_compile_gets_the_fallback() -> None:
    guess = detect_format("{% if %}")
    assert guess.name == FALLBACK and "does not compile" in guess.warning
