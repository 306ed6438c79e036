"""``fmt="auto"``: the wire format read from a model's own chat template, by proof.

A chat template renders earlier assistant turns the way the model writes them. Detection
renders the template's probe turns (:mod:`toolmask.tools._probe`: one call, two parallel calls,
and one call after reasoning where the template renders reasoning) and asks every registered
format (:data:`~toolmask.tools.formats.FORMATS`, new modules included without edits) to
prove itself on each rendered case:

* its parser reads the calls back exactly (names and arguments, in order), with nothing left in
  the content, no malformed block, and the reasoning text where the case has one;
* its turn grammar takes the rendered bytes under ``tool_choice="required"`` and ``"auto"``
  (parallel calls allowed; the reasoning channel open where the generation prompt opens it).

A format is detected only when it passes every rendered case. When several do, the most
specific wins (:func:`specificity`): first the share of the format's own markers
(:meth:`~toolmask.tools.formats.FormatSpec.own_markers`: open, close, trigger, reasoning
open/close, extra triggers, prose markers where its prose is a message) that the template's
text contains, so a format never wins on a marker the template never mentions (``qwen3``'s
``<think>`` for Qwen 2.5, which ``hermes`` reads as well); then the length of those markers
(the longer, the fewer texts they match); then the share of its chat template's own markers
(turn and role markers: Ling's ``<role>`` against GLM's ``<|user|>``, for formats that write
the same calls in different templates); then the clue table's order
(:data:`~toolmask.tools.formats.RULES`); then registration order.

When no format reads the template's calls, the answer is the prompt-injected ``functools``
format with a warning that names the template and says ``--format`` overrides; a template
that renders no calls at all says so, and then the special-token clues decide (the template
shows nothing to prove), else ``functools``. Without a template, only the special tokens
decide (the clue table), else ``functools`` with a warning.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolmask._compile import compile as compile_grammar
from toolmask.errors import ChatTemplateError, LimitError, SchemaError, ToolmaskError
from toolmask.tools._generic import derive_formats, describe, is_generic, register_generic
from toolmask.tools._probe import PROBE_TOOLS, VARIANTS, Probe, ProbeCase, probe_template
from toolmask.tools._spec import Tool
from toolmask.tools._template import TemplateRenderer, TemplateSource
from toolmask.tools._turn import ToolTurn
from toolmask.tools.formats import AUTO, FORMATS, RULES, FormatSpec, match_clues

__all__ = [
    "FALLBACK",
    "CaseEvidence",
    "FormatEvidence",
    "FormatGuess",
    "detect_format",
    "detection_report",
    "evidence_table",
    "prove_format",
    "resolve_format",
    "specificity",
]

log = logging.getLogger("toolmask.tools")

#: the format used when nothing names one: prompt-injected, it needs no native support
FALLBACK = "functools"


@dataclass(frozen=True, slots=True)
class CaseEvidence:
    """How one format did on one rendered case: ``parsed`` (the calls came back exactly,
    nothing else in the content), ``required`` / ``auto`` (the turn grammar took the bytes;
    ``None`` when not tried because the parse failed), ``detail`` (why not)."""

    case: str
    parsed: bool
    required: bool | None = None
    auto: bool | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.parsed and bool(self.required) and bool(self.auto)


@dataclass(frozen=True, slots=True)
class FormatEvidence:
    """One format's proof over every rendered case."""

    format: str
    cases: tuple[CaseEvidence, ...]

    @property
    def proven(self) -> bool:
        return bool(self.cases) and all(c.ok for c in self.cases)


@dataclass(frozen=True, slots=True)
class FormatGuess:
    """The detected format ``name`` and why.

    ``source``: ``"template"`` (proven on the rendered calls), ``"fallback"`` (the template
    renders calls no format reads), ``"no calls"`` (the template renders no calls; the
    special tokens or the fallback decided), ``"special tokens"`` (no template; a clue among
    the special tokens), ``"none"`` (nothing at all). ``clues``: the texts that decided a
    clue-based answer. ``evidence``: every format's proof (for ``check --template``);
    ``probe``: what the template rendered; ``proven``: the formats that proved themselves, the
    most specific first; ``warning``: what was logged, if anything."""

    name: str
    source: str
    clues: tuple[str, ...] = ()
    evidence: tuple[FormatEvidence, ...] = field(default=(), compare=False, repr=False)
    probe: Probe | None = field(default=None, compare=False, repr=False)
    proven: tuple[str, ...] = ()
    warning: str = ""
    template: str = ""

    @property
    def confident(self) -> bool:
        """Whether the name was proven on the template's own calls."""
        return self.source == "template"

    def __str__(self) -> str:
        if self.source == "template":
            others = [p for p in self.proven if p != self.name]
            tail = f"; also proven: {', '.join(others)}" if others else ""
            return f"{self.name} (proven on the calls the chat template renders{tail})"
        if self.clues:
            return f"{self.name} ({self.source}: {', '.join(map(repr, self.clues))})"
        return f"{self.name} ({self.source})"


def specificity(fmt: FormatSpec, template: str) -> tuple[float, int]:
    """How specific ``fmt`` is for a template whose text is ``template`` (larger is more
    specific): the share of the format's own markers found in the text, then their total
    length. Reads only class attributes every format has, so new formats need nothing."""
    markers = fmt.own_markers()
    if not markers:
        return (0.0, 0)
    found = [m for m in markers if m in template]
    return (len(found) / len(markers), sum(len(m) for m in found))


def _share(markers: Iterable[str], template: str) -> float:
    wanted = {m for m in markers if m}
    return sum(m in template for m in wanted) / len(wanted) if wanted else 0.0


def _clue_rank(name: str, template: str) -> int:
    for i, (rule_name, clues) in enumerate(RULES):
        if rule_name == name and match_clues(template, ((rule_name, clues),)) is not None:
            return i
    return len(RULES)


@functools.lru_cache(maxsize=1)
def _probe_tools() -> tuple[Tool, ...]:
    return tuple(Tool.from_openai(t) for t in PROBE_TOOLS)


@functools.lru_cache(maxsize=256)
def _compiled(fmt: FormatSpec, mode: str, is_open: bool) -> Any:
    """The probe tools' turn grammar of ``fmt`` under ``mode`` (parallel calls allowed),
    compiled; None when it cannot be built. Cached: every template's proof shares it."""
    turn = ToolTurn(_probe_tools(), fmt, mode, reasoning_open=is_open)
    try:
        return compile_grammar(turn.grammar())
    except (SchemaError, LimitError, ToolmaskError):
        return None


def _takes(fmt: FormatSpec, mode: str, is_open: bool, text: str) -> bool:
    compiled = _compiled(fmt, mode, is_open)
    if compiled is None:
        return False
    m = compiled.matcher()
    return bool(m.accept_bytes(text.encode("utf-8")) and m.is_accepting())


def _prove_case(fmt: FormatSpec, case: ProbeCase) -> CaseEvidence:
    """The case proven against the first of its prompts that works (see
    :attr:`ProbeCase.prompts`); the evidence of the first prompt when none does."""
    got = [_prove_with(fmt, case, p) for p in case.prompts or ("",)]
    return next((e for e in got if e.ok), got[0])


def _prove_with(fmt: FormatSpec, case: ProbeCase, prompt: str) -> CaseEvidence:
    tools = _probe_tools()
    is_open = fmt.prompt_opens_reasoning(prompt)
    base = ToolTurn(tools, fmt, "required", reasoning_open=is_open)
    parsed = base.parse(case.text)
    got = [(c.name, c.arguments) for c in parsed.calls]
    want = [(n, dict(a)) for n, a in case.calls]
    why = ""
    if got != want:
        why = f"calls read back: {got}"
    elif parsed.malformed:
        why = f"malformed: {parsed.malformed[0].reason}"
    elif parsed.content.strip():
        why = f"left in the content: {parsed.content.strip()[:60]!r}"
    elif parsed.reasoning != case.reasoning:
        why = f"reasoning read back: {parsed.reasoning[:60]!r}"
    if why:
        return CaseEvidence(case.name, False, detail=why)
    required = _takes(fmt, "required", is_open, case.text)
    took_auto = _takes(fmt, "auto", is_open, case.text)
    detail = "" if required and took_auto else "the turn grammar refuses the rendered bytes"
    return CaseEvidence(case.name, True, required, took_auto, detail)


def prove_format(fmt: str | FormatSpec, probe: Probe) -> FormatEvidence:
    """``fmt``'s proof over the probe's rendered cases (see the module docstring). Cost: one
    parse per case, and two turn grammars compiled and matched per case it parses."""
    f = fmt if isinstance(fmt, FormatSpec) else FORMATS[fmt]
    if not f.has_grammar:
        return FormatEvidence(f.name, ())
    return FormatEvidence(f.name, tuple(_prove_case(f, c) for c in probe.cases))


def _rank(names: Sequence[str], template: str) -> list[str]:
    order = {n: i for i, n in enumerate(FORMATS)}

    def key(n: str) -> tuple[float, int, float, int, int]:
        share, length = specificity(FORMATS[n], template)
        around = _share(FORMATS[n].template_markers, template)
        return (-share, -length, -around, _clue_rank(n, template), order[n])

    return sorted(names, key=key)


def _from_specials(specials: Iterable[str]) -> tuple[str, tuple[str, ...]] | None:
    text = "\n".join(sorted(set(specials)))
    return match_clues(text) if text else None


def _warn(message: str) -> str:
    """A warning's text (:func:`detect_format` logs it, on every call)."""
    return message


def _detect_template(source: TemplateSource) -> FormatGuess:
    where = source.name
    try:
        renderer = TemplateRenderer(source)
    except ChatTemplateError as e:
        msg = f"{e}; using {FALLBACK} (prompt-injected); pass --format NAME (fmt=) to override"
        return FormatGuess(FALLBACK, "fallback", warning=msg, template=where)
    first: tuple[Probe, tuple[FormatEvidence, ...]] | None = None
    seen_probe: Probe | None = None
    rendered: list[Probe] = []
    families = [f for f in FORMATS.values() if not is_generic(f.name)]
    for variant in VARIANTS:
        probe = probe_template(renderer, variant)
        seen_probe = seen_probe or probe
        if not probe.renders_calls:
            continue
        rendered.append(probe)
        evidence = tuple(prove_format(f, probe) for f in families)
        proven = _rank([e.format for e in evidence if e.proven], source.text)
        if proven:
            return FormatGuess(
                proven[0], "template", (), evidence, probe, tuple(proven), template=where
            )
        if first is None:
            first = (probe, evidence)
    if first is not None:
        probe, evidence = first
        generic, tried = _generic(rendered, evidence, where, source.text)
        if generic is not None:
            return generic
        evidence += tried
        msg = _warn(
            f"the chat template {where} renders tool calls that no format reads back and takes "
            f"as its grammar; using {FALLBACK} (prompt-injected); pass --format NAME (fmt=) "
            "to override"
        )
        return FormatGuess(FALLBACK, "fallback", (), evidence, probe, warning=msg, template=where)
    reason = f" ({seen_probe.error})" if seen_probe is not None and seen_probe.error else ""
    got = _from_specials(source.special_tokens)
    if got is not None:
        msg = _warn(
            f"the chat template {where} renders no tool calls{reason}; using {got[0]}, named by "
            "the special tokens; pass --format NAME (fmt=) to override"
        )
        return FormatGuess(got[0], "no calls", got[1], (), seen_probe, warning=msg, template=where)
    msg = _warn(
        f"the chat template {where} renders no tool calls{reason}; using {FALLBACK} "
        "(prompt-injected); pass --format NAME (fmt=) to override"
    )
    return FormatGuess(FALLBACK, "no calls", (), (), seen_probe, warning=msg, template=where)


def _generic(
    probes: Sequence[Probe], evidence: tuple[FormatEvidence, ...], where: str, text: str
) -> tuple[FormatGuess | None, tuple[FormatEvidence, ...]]:
    """The generic format derived from the first probe whose rendering proves one
    (:mod:`toolmask.tools._generic`), registered, as a guess with a warning that names its
    markers; else None and the evidence of every derived format tried."""
    tried: list[FormatEvidence] = []
    for probe in probes:
        for spec in derive_formats(probe, text):
            if any(e.format == spec.name for e in tried):
                continue
            got = prove_format(spec, probe)
            if not got.proven:
                tried.append(got)
                continue
            spec = register_generic(spec)
            msg = _warn(
                f"the chat template {where} renders tool calls that no family format reads; "
                f"using {spec.name}, a format derived from its rendering ({describe(spec)}) "
                "and proven on its calls; pass --format NAME (fmt=) to override"
            )
            guess = FormatGuess(
                spec.name, "template", (), (*evidence, got), probe, (spec.name,), msg, where
            )
            return guess, ()
    return None, tuple(tried)


@functools.lru_cache(maxsize=64)
def _detect_cached(source: TemplateSource) -> FormatGuess:
    return _detect_template(source)


def detect_format(
    chat_template: str | TemplateSource | None = None, special_tokens: Iterable[str] = ()
) -> FormatGuess:
    """The wire format of a model from its chat template (Jinja text or a
    :class:`TemplateSource`, see :func:`load_chat_template`) and its special-token texts; see
    the module docstring. Needs jinja2 when there is a template (``toolmask[templates]``).
    Cached by template (64 entries). Cost on a miss: about 20 renders and, per format that
    parses a case, two turn grammars compiled and matched."""
    specials = tuple(sorted(set(special_tokens)))
    if isinstance(chat_template, TemplateSource):
        source = chat_template
        if specials and not source.special_tokens:
            source = TemplateSource(
                source.text, source.origin, source.bos_token, source.eos_token, specials
            )
    else:
        source = TemplateSource(chat_template or "", special_tokens=specials)
    if source.text.strip():
        guess = _detect_cached(source)
    else:
        got = _from_specials(source.special_tokens)
        if got is not None:
            return FormatGuess(got[0], "special tokens", got[1])
        msg = (
            f"no chat template and no special token names a tool-call format; using {FALLBACK} "
            "(prompt-injected); pass --format NAME (fmt=) if the model writes another"
        )
        guess = FormatGuess(FALLBACK, "none", warning=msg)
    if guess.warning:
        log.warning("format auto: %s", guess.warning)
    return guess


def resolve_format(
    fmt: str,
    chat_template: str | TemplateSource | None = None,
    special_tokens: Iterable[str] = (),
) -> str:
    """``fmt`` itself, or for ``"auto"`` the detected format's name (see :func:`detect_format`;
    a proven format is logged at INFO, anything else at WARNING)."""
    if fmt != AUTO:
        return fmt
    guess = detect_format(chat_template, special_tokens)
    if guess.confident:
        log.info("format auto: %s", guess)
    return guess.name


def _near(c: CaseEvidence) -> bool:
    """The format read some call back (right or not) or left only something else over."""
    return c.parsed or not c.detail.startswith("calls read back: []")


def _mark(ok: bool | None) -> str:
    return "-" if ok is None else ("yes" if ok else "NO")


def detection_report(guess: FormatGuess) -> str:
    """``guess`` as text for people (``toolmask check --template``): the decision, the turns
    the template rendered (what the model writes, the end-of-turn marker cut), and per format
    that read any call back: parsed? / grammar takes the bytes under required? / auto? per
    case, with the reason where not; the formats that read nothing are named in one line."""
    lines = [f"template: {guess.template or '(none)'}", f"detected: {guess}"]
    probe = guess.probe
    if probe is not None:
        lines.append(f"probe: {probe.variant}")
        lines += [f"note: {n}" for n in probe.notes]
        if probe.error:
            lines.append(f"render error: {probe.error}")
        if probe.cases:
            lines.append("rendered turns (what the model writes; the end-of-turn marker cut):")
            for pc in probe.cases:
                lines.append(f"  {pc.name}: {pc.text!r}")
                lines.append(f"  {' ' * len(pc.name)}  end: {pc.end!r}")
        else:
            lines.append("rendered turns: none (the template renders no tool calls)")
    read = [e for e in guess.evidence if any(_near(c) for c in e.cases)]
    rest = [e.format for e in guess.evidence if e not in read]
    if read:
        lines.append("evidence (parsed / required grammar / auto grammar, per case):")
        for e in read:
            verdict = "PROVEN" if e.proven else "refused"
            lines.append(f"  {e.format}: {verdict}")
            for c in e.cases:
                row = f"    {c.case}: {_mark(c.parsed)} / {_mark(c.required)} / {_mark(c.auto)}"
                lines.append(row + (f"  ({c.detail})" if c.detail else ""))
    if rest:
        lines.append(f"no calls read back by: {', '.join(rest)}")
    if guess.clues:
        lines.append(f"clues: {', '.join(map(repr, guess.clues))}")
    if guess.warning:
        lines.append(f"warning: {guess.warning}")
    return "\n".join(lines) + "\n"


def evidence_table(guess: FormatGuess) -> list[Mapping[str, Any]]:
    """``guess``'s evidence as rows (format, case, parsed, required, auto, detail)."""
    return [
        {
            "format": e.format,
            "case": c.case,
            "parsed": c.parsed,
            "required": c.required,
            "auto": c.auto,
            "detail": c.detail,
        }
        for e in guess.evidence
        for c in e.cases
    ]
