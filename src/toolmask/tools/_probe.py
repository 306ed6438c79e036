"""The probe: what a model writes for a tool-calling turn, read from its own chat template.

A chat template renders earlier assistant turns the way the model was trained to write them.
:func:`probe_template` renders a fixed conversation (one user question, then an assistant turn
holding the probe calls) and cuts out the assistant's part: the rendered conversation minus
the prompt that ``add_generation_prompt=True`` renders for the same question, minus the
template's end-of-turn marker (the token the model stops with, not part of its reply).

Cases (:data:`PROBE_CASES`): ``one`` (``get_weather(city="Paris", days=3)``), ``two`` (that call
and ``get_time(city="Tokyo")``, parallel) and ``reasoning`` (the one call after the reasoning
text :data:`PROBE_REASONING`, given as ``reasoning_content``; kept only where the template
renders it).

A template that renders no calls in the conversation's last message (vLLM's Nemotron JSON
template drops a final assistant message, and keeps only its text for the prompt to continue)
is rendered once more with the calls mid-history: the same assistant turn followed by a tool
result for each call (:data:`PROBE_RESULT`). The turn is cut out the same way, and also before
the first result's text (the tool turn that follows is not the model's); the case says
``mid_history``.

Templates disagree on how a call must be given to them, so the probe has
:data:`VARIANTS`, tried in order by detection: arguments as a dict (transformers' convention)
or as a JSON string (OpenAI's), call ids of nine alphanumeric characters (Mistral's templates
refuse others) or ``functions.NAME:IDX`` (Kimi K2's templates print the id as the call's
name), and the message's content ``""`` or null (DeepSeek R1's template renders calls only
then).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmask.errors import ChatTemplateError
from toolmask.tools._template import TemplateRenderer

__all__ = [
    "END_MARKERS",
    "PROBE_CASES",
    "PROBE_QUESTION",
    "PROBE_REASONING",
    "PROBE_RESULT",
    "PROBE_TOOLS",
    "TEMPLATE_INPUTS",
    "VARIANTS",
    "Probe",
    "ProbeCase",
    "Variant",
    "probe_call_id",
    "probe_template",
]

#: the probe's tools (OpenAI shape)
PROBE_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather forecast for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name."},
                    "days": {"type": "integer", "description": "Days to forecast."},
                },
                "required": ["city", "days"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the local time in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city name."}},
                "required": ["city"],
            },
        },
    },
)

PROBE_QUESTION = "What is the weather in Paris for the next 3 days, and the time in Tokyo?"
PROBE_REASONING = "The user wants a forecast, so I call get_weather."
_TEXT = "It will be sunny."
#: what the probe's tool results say, for the calls rendered mid-history (``{i}``: the call)
PROBE_RESULT = "probe result {i}"

#: case name -> the calls of the assistant turn
PROBE_CASES: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "one": (("get_weather", {"city": "Paris", "days": 3}),),
    "two": (("get_weather", {"city": "Paris", "days": 3}), ("get_time", {"city": "Tokyo"})),
    "reasoning": (("get_weather", {"city": "Paris", "days": 3}),),
}

#: end-of-turn markers of chat templates (the stop token a model ends a turn with), besides
#: the one the template itself puts after a plain answer; the earliest after the calls ends it
END_MARKERS: tuple[str, ...] = (
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|eot|>",
    "<|eom|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "</s>",
    "<eos>",
    "<end_of_turn>",
    "<turn|>",
    "<|tool_response>",
    # FunctionGemma's hand-off to the tool: its template writes it right after the calls, and
    # engines stop there (an additional stop sequence, as Gemma 4's <|tool_response>)
    "<start_function_response>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<｜end▁of▁sentence｜>",
    "<|END_OF_TURN_TOKEN|>",
    "<|end_of_msg|>",
    "<|observation|>",
    "<|end_of_role|>",
    "<｜hy_eos:opensource｜>",
    "[e~[",
    # the next turn's opener: a template that writes no end marker after the calls (Command
    # R+ renders its next system turn right after them) still ends the turn there
    "<|START_OF_TURN_TOKEN|>",
    "<|im_start|>",
    "<|start_header_id|>",
    "<start_of_turn>",
    "<|turn>",
    "<｜User｜>",
    "[INST]",
    "<|user|>",
)


def _functions_json() -> str:
    return json.dumps([t["function"] for t in PROBE_TOOLS], indent=4)


#: variables some templates read besides transformers' context, and what the probe gives them
#: when a render says they are undefined (Firefunction v2 reads ``functions``, the tools'
#: function objects as JSON text, and ``datetime``, as its model card tells callers to pass)
TEMPLATE_INPUTS: dict[str, Callable[[], Any]] = {
    "functions": _functions_json,
    "datetime": lambda: "2025-01-01",
}


@dataclass(frozen=True, slots=True)
class Variant:
    """How the probe gives its calls to a template: ``arguments`` ``"dict"`` or ``"json"``
    (a JSON string), ``ids`` ``"alnum"`` (nine alphanumeric characters) or ``"functions"``
    (``functions.NAME:IDX``), the assistant message's ``content`` ``""`` or ``None`` (OpenAI's
    null, which DeepSeek R1's template requires to render calls at all)."""

    arguments: str = "dict"
    ids: str = "alnum"
    content: str | None = ""

    def __str__(self) -> str:
        args = "arguments as a dict" if self.arguments == "dict" else "arguments as JSON text"
        ids = "ids of 9 alphanumerics" if self.ids == "alnum" else "ids functions.NAME:IDX"
        content = "" if self.content is not None else ", content null"
        return f"{args}, {ids}{content}"


#: the variants detection tries, in order (see the module docstring)
VARIANTS: tuple[Variant, ...] = (
    Variant("dict", "alnum"),
    Variant("json", "alnum"),
    Variant("dict", "functions"),
    Variant("json", "functions"),
    Variant("dict", "alnum", None),
    Variant("json", "alnum", None),
)


@dataclass(frozen=True, slots=True)
class ProbeCase:
    """One rendered case: ``text`` is what the model writes for the turn (the end-of-turn
    marker ``end`` cut off), ``calls`` what it holds, ``reasoning`` the reasoning text it
    holds (``""`` for the call-only cases), ``prompts`` the prompts the text may continue
    (the generation prompt, and its assistant header alone where the template renders
    history without the generation prompt's prefill)."""

    name: str
    calls: tuple[tuple[str, dict[str, Any]], ...]
    text: str
    end: str = ""
    reasoning: str = ""
    prompts: tuple[str, ...] = ()
    #: the calls were rendered mid-history (before tool results), not as the last message
    mid_history: bool = False


@dataclass(frozen=True, slots=True)
class Probe:
    """What :func:`probe_template` read from one template with one :class:`Variant`.

    ``prompt`` is the generation prompt the turn continues; ``cases`` the rendered cases
    whose text holds every call name (``reasoning`` only where the template renders the
    reasoning text); ``error`` why the template could not be rendered; ``notes`` what the
    renderer had to do (the mutable fallback, a generation prompt that is not a prefix)."""

    variant: Variant
    prompt: str = ""
    cases: tuple[ProbeCase, ...] = ()
    error: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def renders_calls(self) -> bool:
        """Whether the template wrote the probe's calls at all."""
        return any(c.name != "reasoning" for c in self.cases)


def _tools() -> list[dict[str, Any]]:
    """The probe tools (OpenAI shape), fresh copies."""
    return json.loads(json.dumps(PROBE_TOOLS))  # type: ignore[no-any-return]


def probe_call_id(variant: Variant, name: str, i: int) -> str:
    """The id the probe gives its ``i``-th call (named ``name``) under ``variant``."""
    if variant.ids == "functions":
        return f"functions.{name}:{i}"
    return f"call{i:04d}{'abcdefghij'[i % 10]}"  # 9 alphanumerics, as Mistral requires


def _assistant(
    variant: Variant, calls: Sequence[tuple[str, Mapping[str, Any]]], reasoning: str
) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": variant.content,
        "tool_calls": [
            {
                "id": probe_call_id(variant, name, i),
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": dict(args) if variant.arguments == "dict" else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(calls)
        ],
    }
    if reasoning:
        msg["reasoning_content"] = reasoning
    return msg


def _results(variant: Variant, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Any]:
    """A tool message for each call (OpenAI's shape, with the name some templates read)."""
    return [
        {
            "role": "tool",
            "tool_call_id": probe_call_id(variant, name, i),
            "name": name,
            "content": PROBE_RESULT.format(i=i),
        }
        for i, (name, _) in enumerate(calls)
    ]


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _boundary(text: str, k: int) -> int:
    """``k`` moved back to just after a marker's end (``>``, ``]``) or a newline, so that a
    cut never splits a marker (``<think>`` and ``</think>`` share ``<``)."""
    while k > 0 and text[k - 1] not in ">]\n":
        k -= 1
    return k


def _tail(rendered: str) -> str:
    """What follows the question's last appearance (the whole text when it is missing)."""
    i = rendered.rfind(PROBE_QUESTION)
    return rendered[i + len(PROBE_QUESTION) :] if i >= 0 else rendered


def _loose_prefix(p: str, f: str) -> int | None:
    """Where ``p`` ends in ``f`` when ``p`` is a prefix of ``f`` up to the length of whitespace
    runs (templates without whitespace control indent the generation prompt and the history
    differently); None when it is not."""
    i = j = 0
    ws = " \t\r\n"
    while True:
        while i < len(p) and p[i] in ws:
            i += 1
        if i == len(p):
            return j
        while j < len(f) and f[j] in ws:
            j += 1
        if j == len(f) or p[i] != f[j]:
            return None
        i += 1
        j += 1


def _turn(prompt: str, answer: str, full: str) -> tuple[str, tuple[str, ...], bool]:
    """What the model writes for the turn the template rendered as ``full`` (``answer``: the
    same conversation with a plain answer), the prompts that text continues (the first the
    generation prompt itself), and whether the generation prompt is a prefix of the turn.

    Both are aligned after the question (some templates render the last user turn otherwise
    once an answer follows it), then, failing an exact prefix, up to whitespace runs. Where
    the generation prompt ends with text the history renders otherwise (a prefilled
    ``<think>``, an empty thought channel), the turn is cut after the assistant header the
    renders share: the longest tail of the prefill the turn starts with is dropped (the
    model wrote it already); where the turn starts with none of it, the text continues either
    the whole prompt (GLM 4.7's ``</think>`` closes the prefilled ``<think>``) or the header
    alone (DeepSeek R1's history drops the reasoning it prefills)."""
    p, f = _tail(prompt), _tail(full)
    if f.startswith(p):
        return f[len(p) :], (prompt,), True
    loose = _loose_prefix(p, f)
    if loose is not None:
        return f[loose:], (prompt,), False
    k = min(_common_prefix(p, f), _common_prefix(p, _tail(answer)))
    k = _boundary(p, k)
    prefill, rest = p[k:], f[k:]
    for i in range(len(prefill)):
        tail = prefill[i:]
        if rest.startswith(tail) and (i == 0 or tail[0] in "<["):
            return rest[len(tail) :], (prompt,), False
    header = prompt[: len(prompt) - len(prefill)]
    return rest, (prompt, header), False


def _cut_end(text: str, end: str, last_name: str) -> tuple[str, str]:
    """``text`` up to the model's end of turn, and what was cut: the first end-of-turn marker
    after the last call's name, the template's own (``end``, what follows a plain answer) or
    one of :data:`END_MARKERS`. The model stops there, whatever the template renders after
    it; a marker before the calls stays (GigaChat closes the empty assistant message with its
    own and opens a ``function call`` message)."""
    after = max(text.rfind(last_name), 0)
    markers = {end.strip(" \t\r\n"), *END_MARKERS} - {""}
    hits = [k for k in (text.find(m, after) for m in markers) if k >= 0]
    if not hits:
        return text, ""
    k = min(hits)
    return text[:k], text[k:]


def _case(
    name: str,
    calls: tuple[tuple[str, dict[str, Any]], ...],
    reasoning: str,
    renders: tuple[str, str, str],
    end: str,
    notes: list[str],
    *,
    mid: bool = False,
) -> ProbeCase | None:
    """The case cut out of ``renders`` (the generation prompt, the plain answer, the rendered
    turn), or None when it does not hold every call (and the reasoning); ``mid``: the turn was
    rendered before tool results, and is cut before the first result's text too."""
    body, prompts, is_prefix = _turn(*renders)
    if mid:
        result = body.find(PROBE_RESULT.format(i=0))
        body = body[:result] if result >= 0 else body
    if not is_prefix:
        note = "the generation prompt is not a prefix of the rendered turn"
        if note not in notes:
            notes.append(note)
    text, cut = _cut_end(body, end, calls[-1][0])
    if not all(n in text for n, _ in calls) or (reasoning and reasoning not in text):
        return None
    if mid:
        note = "the calls are rendered mid-history only (the last message drops them)"
        if note not in notes:
            notes.append(note)
    return ProbeCase(name, calls, text, cut, reasoning, prompts, mid)


def probe_template(
    renderer: TemplateRenderer, variant: Variant = VARIANTS[0], **extra: Any
) -> Probe:
    """Render the probe conversation with ``renderer`` (see the module docstring); ``extra``
    variables reach the template. Never raises for a template that fails: the
    :class:`Probe` says why. Cost: five renders."""
    tools = _tools()
    user = {"role": "user", "content": PROBE_QUESTION}
    notes: list[str] = []
    extra = dict(extra)
    while True:
        try:
            prompt = renderer.render([user], tools=tools, add_generation_prompt=True, **extra)
            answer = renderer.render(
                [user, {"role": "assistant", "content": _TEXT}], tools=tools, **extra
            )
            break
        except ChatTemplateError as e:
            missing = next(
                (k for k in TEMPLATE_INPUTS if f"'{k}' is undefined" in str(e) and k not in extra),
                None,
            )
            if missing is None:
                return Probe(variant, error=str(e))
            extra[missing] = TEMPLATE_INPUTS[missing]()
            notes.append(f"the template reads the variable {missing!r}: given the probe's tools")
    said = _turn(prompt, answer, answer)[0]
    end = said[said.find(_TEXT) + len(_TEXT) :] if _TEXT in said else ""
    cases: list[ProbeCase] = []
    errors: list[str] = []
    for name, calls in PROBE_CASES.items():
        reasoning = PROBE_REASONING if name == "reasoning" else ""
        turn = [user, _assistant(variant, calls, reasoning)]
        try:
            full = renderer.render(turn, tools=tools, **extra)
        except ChatTemplateError as e:
            errors.append(f"{name}: {e}")
            continue
        case = _case(name, calls, reasoning, (prompt, answer, full), end, notes)
        if case is None:  # no calls in the last message: render them mid-history
            try:
                full = renderer.render([*turn, *_results(variant, calls)], tools=tools, **extra)
            except ChatTemplateError:
                continue
            case = _case(name, calls, reasoning, (prompt, answer, full), end, notes, mid=True)
        if case is not None:
            cases.append(case)
    if renderer.mutated:
        notes.append(
            "rendered with mutable lists (the template calls list.append, as minja allows)"
        )
    return Probe(variant, prompt, tuple(cases), "; ".join(errors), tuple(notes))
