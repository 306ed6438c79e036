"""The probe: what a model writes for a tool-calling turn, cut out of its own chat template.

Small templates show each rule; the vendored real templates show the cases that made the rules
(a prefilled ``<think>``, history without the prefill, indentation, a user turn rendered again,
what a template writes after the model's end of turn)."""

from __future__ import annotations

from typing import Any

import pytest

from toolmask.tools import TemplateRenderer, load_chat_template, probe_template
from toolmask.tools._probe import PROBE_QUESTION, PROBE_REASONING, PROBE_RESULT, VARIANTS

from ..vendored import chat_template

# ChatML that writes each call as Hermes does (Qwen 2.5's shape), reasoning in <think> when the
# message has it (Qwen 3's); the arguments through tojson, as a dict must be given
_CALL = (
    '{{ \'<tool_call>\\n{"name": "\' + c.function.name + \'", "arguments": \' '
    "+ (c.function.arguments | tojson) + '}\\n</tool_call>' }}"
)
_THINK = (
    "{% if m.reasoning_content %}{{ '<think>\\n' + m.reasoning_content + '\\n</think>\\n\\n' }}"
    "{% endif %}"
)
_CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}{% if not loop.first %}{{ '\\n' }}"
    "{% endif %}" + _CALL + "{% endfor %}{% else %}{{ m.content }}{% endif %}"
    "{{ '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

TEMPLATES = {
    "hermes": _CHATML,
    "qwen3": _CHATML.replace("{% if m.tool_calls %}", _THINK + "{% if m.tool_calls %}", 1),
    # ChatML that knows no tools (SmolLM2's shape): calls are not rendered
    "no calls": (
        "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    ),
    # calls in a shape no format reads
    "unknown": _CHATML.replace(_CALL, "{{ 'CALL ' + c.function.name + ' ' + c.id }}"),
    # a template that wants the arguments as JSON text (Functionary v3.2's kind)
    "json arguments": _CHATML.replace("(c.function.arguments | tojson)", "c.function.arguments"),
}


def _probe(text: str, variant: int = 0) -> dict[str, str]:
    p = probe_template(TemplateRenderer(text), VARIANTS[variant])
    return {c.name: c.text for c in p.cases}


def test_the_turn_is_cut_between_the_generation_prompt_and_the_end_marker() -> None:
    p = probe_template(TemplateRenderer(TEMPLATES["hermes"]))
    assert p.prompt.endswith(PROBE_QUESTION + "<|im_end|>\n<|im_start|>assistant\n")
    one, two = p.cases
    assert one.text == (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n'
        "</tool_call>"
    )
    assert one.end == "<|im_end|>\n" and one.prompts == (p.prompt,)
    assert two.text.count("<tool_call>") == 2 and two.calls[1] == ("get_time", {"city": "Tokyo"})
    assert not p.notes and not p.error


def test_the_reasoning_case_only_where_the_template_renders_it() -> None:
    assert "reasoning" not in _probe(TEMPLATES["hermes"])
    text = _probe(TEMPLATES["qwen3"])["reasoning"]
    assert text.startswith(f"<think>\n{PROBE_REASONING}\n</think>\n\n<tool_call>")


def test_a_template_that_renders_no_calls() -> None:
    p = probe_template(TemplateRenderer(TEMPLATES["no calls"]))
    assert not p.cases and not p.renders_calls and not p.error


# ChatML whose last assistant message is dropped (vLLM's Nemotron JSON template's kind): its calls
# show only mid-history, before the tool results
_DROPS_LAST = _CHATML.replace(
    "{% for m in messages %}",
    "{% for m in messages %}{% if not (loop.last and m.role == 'assistant') %}",
    1,
).replace("{{ '<|im_end|>\\n' }}{% endfor %}", "{{ '<|im_end|>\\n' }}{% endif %}{% endfor %}", 1)


def test_calls_the_last_message_drops_are_read_mid_history() -> None:
    assert not probe_template(TemplateRenderer(TEMPLATES["no calls"])).cases
    p = probe_template(TemplateRenderer(_DROPS_LAST))
    one, two = p.cases
    assert one.mid_history and two.mid_history
    assert one.text == _probe(TEMPLATES["hermes"])["one"]  # cut before the tool turn
    assert one.end.startswith("<|im_end|>\n<|im_start|>tool\n")
    assert PROBE_RESULT.format(i=0) not in two.text and two.text.count("<tool_call>") == 2
    assert any("mid-history" in n for n in p.notes)
    # a template that renders the calls last is read there, as before
    assert not any(c.mid_history for c in probe_template(TemplateRenderer(_CHATML)).cases)


def test_arguments_as_json_text_are_a_variant() -> None:
    # the template adds the arguments to a string: a dict fails, JSON text renders
    text = TEMPLATES["json arguments"]
    p = probe_template(TemplateRenderer(text), VARIANTS[0])
    assert not p.cases and "can only concatenate str" in p.error
    one = _probe(text, 1)["one"]
    assert '"arguments": {"city": "Paris", "days": 3}' in one


def test_call_ids_are_nine_alphanumerics_or_kimi_style() -> None:
    assert (
        _probe(TEMPLATES["unknown"])["two"] == "CALL get_weather call0000a\nCALL get_time call0001b"
    )
    two = _probe(TEMPLATES["unknown"], 2)["two"]
    assert two == "CALL get_weather functions.get_weather:0\nCALL get_time functions.get_time:1"


def test_a_template_that_fails_says_why() -> None:
    p = probe_template(TemplateRenderer("{{ raise_exception('no tools here') }}"))
    assert not p.cases and "no tools here" in p.error


# -- the real templates that made the rules -------------------------------------------------------
def _real(name: str) -> dict[str, Any]:
    """The probe of a vendored template: ``"probe"`` and its cases by name."""
    p = probe_template(TemplateRenderer(load_chat_template(chat_template(name))))
    return {"probe": p, **{c.name: c for c in p.cases}}


def test_a_prefilled_think_that_history_closes() -> None:
    # GLM 4.7: the prompt ends with <think>; history writes </think> before the calls
    got = _real("llama.cpp/GLM-4.7-Flash.jinja")
    one = got["one"]
    assert one.text.startswith("</think><tool_call>get_weather<arg_key>")
    assert one.prompts[0].endswith("<|assistant|><think>")
    reasoning = got["reasoning"]
    assert reasoning.text.startswith(PROBE_REASONING + "</think>")


def test_a_prefill_that_history_drops() -> None:
    # llama.cpp's DeepSeek R1 template prefills <think>\n; history writes the calls alone, so
    # the text continues the assistant header too
    one = _real("llama.cpp/llama-cpp-deepseek-r1.jinja")["one"]
    assert one.text.startswith("<｜tool▁calls▁begin｜>")
    prompt, header = one.prompts
    assert prompt.endswith("<｜Assistant｜><think>\n") and header.endswith("<｜Assistant｜>")


def test_a_template_that_drops_the_last_message() -> None:
    # vLLM's Nemotron JSON template renders a final assistant message's text only (for the
    # prompt to continue): the calls are read mid-history, up to its end of turn
    got = _real("vllm-upstream/tool_chat_template_nemotron_json.jinja")
    one = got["one"]
    assert one.mid_history and one.text.startswith("<TOOLCALL>[{")
    assert one.text.rstrip().endswith("]</TOOLCALL>") and one.end.startswith("<SPECIAL_12>")
    assert "reasoning" not in got  # its history drops the reasoning


def test_a_prefill_that_history_repeats_in_part() -> None:
    # DeepSeek V3.2 (llama.cpp's copy): the prompt ends <think></think>, history writes
    # </think> then the calls: the text starts after it
    one = _real("llama.cpp/deepseek-ai-DeepSeek-V3.2.jinja")["one"]
    assert one.text.startswith("\n\n<｜DSML｜function_calls>")


def test_indentation_differs_between_prompt_and_history() -> None:
    # vLLM's DeepSeek V3.1 template has no whitespace control
    one = _real("vllm/tool_chat_template_deepseekv31.jinja")["one"]
    assert one.text.startswith("          <｜tool▁calls▁begin｜>")
    assert one.text.endswith("<｜tool▁call▁end｜>    <｜tool▁calls▁end｜>")


def test_the_user_turn_rendered_again() -> None:
    # vLLM's parallel Mistral template moves the tools once an answer follows the question
    one = _real("vllm/tool_chat_template_mistral_parallel.jinja")["one"]
    assert one.text.startswith('[TOOL_CALLS] [{"name": "get_weather"')


@pytest.mark.parametrize(
    ("name", "tail", "end"),
    [
        # the template writes a new turn after the model's end marker: cut at the marker
        ("llama.cpp/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "<|END_ACTION|>",
         "<|END_OF_TURN_TOKEN|>"),
        # no end marker, the next turn's opener follows the calls
        ("llama.cpp/CohereForAI-c4ai-command-r-plus-tool_use.jinja", "]```\n",
         "<|START_OF_TURN_TOKEN|>"),
        # Gemma 4 stops at <|tool_response> after its calls
        ("llama.cpp/google-gemma-4-31B-it.jinja", "<tool_call|>", "<|tool_response>"),
    ],
)  # fmt: skip
def test_the_turn_ends_at_the_first_end_marker_after_the_calls(
    name: str, tail: str, end: str
) -> None:
    one = _real(name)["one"]
    assert one.text.endswith(tail) and one.end.startswith(end)


def test_an_end_marker_before_the_calls_stays() -> None:
    # GigaChat 3 closes the empty assistant message and opens a "function call" message
    one = _real("llama.cpp/GigaChat3-10B-A1.8B.jinja")["one"]
    assert one.text.startswith("<|message_sep|>\n\nfunction call<|role_sep|>\n{")


def test_template_variables_beyond_transformers() -> None:
    # Firefunction v2 reads `functions` and `datetime`
    got = _real("llama.cpp/fireworks-ai-llama-3-firefunction-v2.jinja")
    assert got["one"].text.startswith(" functools[")
    assert any("'functions'" in n for n in got["probe"].notes)


def test_list_append_renders_as_llama_cpp_does() -> None:
    got = _real("llama.cpp/Kimi-K2-Instruct.jinja")
    assert any("mutable" in n for n in got["probe"].notes)
    assert "functions.get_weather:0" in got["one"].text
