"""Glue between canitoolcall's fixtures and toolmask's parsers (batch and streaming).

A fixture names its family and, in ``models[0]``, the reference model, which selects the
sub-format; the generation prompt (the fixture's own, else the family default for that model)
says whether the template left the reasoning channel open. :func:`parse_batch` and
:func:`parse_stream` return canitoolcall ``ParseResult`` objects; :func:`evaluate` runs every
check of the suite over the batch parse and the streams and returns the case status.

Streams: no tokenizer of these families is at hand offline, so the units are characters with
every marker of the family (and of the toolmask format) kept whole, which is how a tokenizer
whose vocabulary has the markers as special tokens splits them; the default strategies (one,
special, token, rand:1..5:8) then group these units. ``char:1`` (markers split) runs too, as a
synthetic stream that canitoolcall does not count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from canitoolcall import checks
from canitoolcall.chunking import DEFAULT_STRATEGIES, ChunkStrategy, split, split_text
from canitoolcall.fixtures import Family, Fixture, load_fixtures
from canitoolcall.pytest_plugin import family_for
from canitoolcall.results import Observation, ParsedToolCall, ParseResult, Status

from toolmask.tools import FORMATS, ParsedTurn, StreamParser, parse_turn, sequential_call_id
from toolmask.tools.formats import FormatSpec

__all__ = [
    "FAMILIES",
    "evaluate",
    "evaluate_modes",
    "format_for",
    "parse_batch",
    "parse_stream",
    "setup_for",
]

FAMILIES = (
    "qwen3-hermes",
    "qwen3-xml",
    "gpt-oss",
    "deepseek",
    "kimi",
    "glm",
    "llama",
    "mistral",
    "gemma4",
)

# (family, prefix of models[0]) -> toolmask format name; first match wins
_FORMAT_BY_MODEL: tuple[tuple[str, str, str], ...] = (
    ("qwen3-hermes", "", "qwen3"),
    ("qwen3-xml", "", "qwen3_xml"),
    ("gpt-oss", "", "gpt_oss"),
    ("deepseek", "deepseek-ai/DeepSeek-V3-", "deepseek_v3"),
    ("deepseek", "deepseek-ai/DeepSeek-V3.1", "deepseek_v31"),
    ("deepseek", "deepseek-ai/DeepSeek-V4.1", "deepseek_v41"),
    ("deepseek", "deepseek-ai/DeepSeek-V4", "deepseek_v4"),
    ("deepseek", "deepseek-ai/DeepSeek-", "deepseek_dsml"),
    ("kimi", "moonshotai/Kimi-K3", "kimi_k3"),
    ("kimi", "moonshotai/Kimi-K2", "kimi_k2"),
    ("glm", "", "glm"),
    ("llama", "meta-llama/Llama-4", "llama4_pythonic"),
    ("llama", "meta-llama/Llama-3", "llama3_json"),
    ("mistral", "mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
    ("mistral", "mistralai/Magistral-Small-2506", "magistral"),
    ("mistral", "mistralai/", "mistral_v11"),
    ("gemma4", "", "gemma4"),
)


def format_for(fx: Fixture) -> str | None:
    """The toolmask format name for a fixture, or None when toolmask has none."""
    for fam, prefix, name in _FORMAT_BY_MODEL:
        if fx.family == fam and fx.models[0].startswith(prefix):
            return name if name in FORMATS else None
    return None


def generation_prompt(fx: Fixture, family: Family | None) -> str:
    if fx.generation_prompt is not None:
        return fx.generation_prompt
    if family is not None:
        for ref in family.reference_models:
            if ref.repo == fx.models[0]:
                return ref.default_generation_prompt or ""
    return ""


def setup_for(fx: Fixture) -> tuple[FormatSpec, bool, dict[str, Any]] | None:
    """(format, reasoning open after the prompt, tool name -> parameters schema), or None."""
    name = format_for(fx)
    if name is None:
        return None
    fmt = FORMATS[name]
    prompt = generation_prompt(fx, family_for(fx))
    tools = {
        t["function"]["name"]: t["function"].get("parameters") or {}
        for t in fx.tools
        if isinstance(t.get("function"), dict) and isinstance(t["function"].get("name"), str)
    }
    return fmt, fmt.prompt_opens_reasoning(prompt), tools


def _result(parsed: ParsedTurn) -> ParseResult:
    calls = tuple(ParsedToolCall(c.name, c.arguments_json) for c in parsed.calls)
    return ParseResult(parsed.content or None, parsed.reasoning or None, calls)


def parse_batch(fx: Fixture) -> ParseResult:
    got = setup_for(fx)
    assert got is not None, f"{fx.id}: no toolmask format"
    fmt, reasoning_open, tools = got
    return _result(
        parse_turn(
            fx.raw_output,
            fmt,
            id_factory=sequential_call_id,
            reasoning_open=reasoning_open,
            schemas=tools,
        )
    )


def _accumulate(deltas: list[Any], parser: StreamParser) -> ParseResult:
    """The parse a client rebuilds from the deltas alone."""
    content: list[str] = []
    reasoning: list[str] = []
    names: dict[int, str] = {}
    args: dict[int, list[str]] = {}
    for d in deltas:
        if d.reasoning is not None:
            reasoning.append(d.reasoning)
        elif d.index is None:
            content.append(d.content or "")
        else:
            if d.name is not None:
                names[d.index] = d.name
            args.setdefault(d.index, []).append(d.arguments or "")
    calls = tuple(ParsedToolCall(names[i], "".join(args[i])) for i in sorted(names))
    return ParseResult("".join(content) or None, "".join(reasoning) or None, calls)


def parse_stream(fx: Fixture, chunks: Sequence[str]) -> ParseResult:
    got = setup_for(fx)
    assert got is not None, f"{fx.id}: no toolmask format"
    fmt, reasoning_open, tools = got
    p = StreamParser(
        fmt, id_factory=sequential_call_id, reasoning_open=reasoning_open, schemas=tools
    )
    deltas: list[Any] = []
    for c in chunks:
        deltas += p.feed(c)
    deltas += p.finish()
    return _accumulate(deltas, p)


@cache
def _unit_re(markers: tuple[str, ...]) -> re.Pattern[str]:
    alts = "|".join(re.escape(m) for m in sorted(markers, key=lambda m: (-len(m), m)))
    return re.compile(f"(?:{alts})|.", re.S) if alts else re.compile(".", re.S)


def units(fx: Fixture) -> tuple[list[str], set[str]]:
    """``raw_output`` split into characters, markers kept whole; and the marker set."""
    fam = family_for(fx)
    markers = set(fam.markers if fam is not None else ())
    got = setup_for(fx)
    if got is not None:
        markers |= {m for m in got[0].markers() if m.startswith(("<", "["))}
    return _unit_re(tuple(sorted(markers))).findall(fx.raw_output), markers


SYNTHETIC = (ChunkStrategy("char", seed=1),)


def streams(fx: Fixture) -> dict[str, ParseResult]:
    us, markers = units(fx)
    out: dict[str, ParseResult] = {}
    for s in DEFAULT_STRATEGIES:
        groups = split(us, s, special=markers)
        out[s.id] = parse_stream(fx, ["".join(g) for g in groups])
    for s in SYNTHETIC:
        out[s.id] = parse_stream(fx, split_text(fx.raw_output, s))
    return out


def evaluate(fx: Fixture) -> tuple[Status, list[str]]:
    """canitoolcall's case status for toolmask on ``fx`` and the failing rows."""
    status, _, _, bad = evaluate_modes(fx)
    return status, bad


def evaluate_modes(fx: Fixture) -> tuple[Status, Status, Status, list[str]]:
    """The case status over every check, then over the batch parse's rows alone and over the
    streams' rows alone (``stream_equals_nonstream`` and ``split_invariance`` count for the
    streams), and the failing rows."""
    if setup_for(fx) is None:
        u = Status.UNSUPPORTED
        return u, u, u, ["no toolmask format"]
    fam = family_for(fx)
    try:
        nonstream = parse_batch(fx)
        obs = Observation(nonstream, streams(fx), synthetic=frozenset(s.id for s in SYNTHETIC))
    except Exception as e:  # a toolmask crash is a finding, reported as a failure
        f = Status.FAIL
        return f, f, f, [f"crash: {type(e).__name__}: {e}"]
    rows = checks.run_checks(fx, fam, obs)
    status = checks.case_status(rows, obs.synthetic)
    batch = checks.case_status([r for r in rows if r.strategy == "nonstream"], obs.synthetic)
    stream = checks.case_status([r for r in rows if r.strategy != "nonstream"], obs.synthetic)
    bad = [
        f"{r.check}[{r.strategy}]: {r.status.value} {r.detail or ''}"
        for r in rows
        if r.status in (Status.FAIL, Status.ERROR, Status.SOFT_PASS)
        and not checks.is_synthetic(r.strategy, obs.synthetic)
    ]
    return status, batch, stream, bad


def all_fixtures() -> list[Fixture]:
    return load_fixtures(None, families=list(FAMILIES))


# -- grammar acceptance -------------------------------------------------------------------------

#: per family, the markers that are single special tokens of its vocabulary (from the models'
#: tokenizer files: added tokens); other markers (``<function=``, ``｜DSML｜``) are plain text
SPECIAL_TOKENS: dict[str, tuple[str, ...]] = {
    "qwen3-hermes": ("<tool_call>", "</tool_call>", "<think>", "</think>"),
    "qwen3-xml": ("<tool_call>", "</tool_call>", "<think>", "</think>"),
    "gpt-oss": (
        "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|call|>",
        "<|return|>",
    ),
    "deepseek": (
        "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
        "<｜tool▁call▁end｜>", "<｜tool▁sep｜>", "<think>", "</think>",
    ),
    "kimi": (
        "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
        "<|tool_call_end|>", "<|tool_call_argument_begin|>", "<think>", "</think>",
        "<|open|>", "<|close|>", "<|sep|>",
    ),
    "glm": (
        "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
        "<think>", "</think>",
    ),
    "llama": ("<|python_tag|>", "<|python_start|>", "<|python_end|>"),
    "mistral": ("[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]"),
    "gemma4": ("<|tool_call>", "<tool_call|>", '<|"|>', "<|channel>", "<channel|>", "<|think|>"),
}  # fmt: skip


def has_complete_calls(fx: Fixture) -> bool:
    """A fixture whose expected parse has calls and whose output is neither cut off nor
    malformed: the output a grammar should admit."""
    return bool(
        fx.expected is not None
        and fx.expected.tool_calls
        and "truncated" not in fx.tags
        and "malformed" not in fx.tags
        and fx.expected_error is None
    )


def grammar_modes(fx: Fixture) -> tuple[str, ...]:
    """``auto``, and ``required`` when the output has no prose."""
    content = fx.expected.content if fx.expected is not None else None
    return ("auto",) if content and content.strip() else ("auto", "required")


def pieces(fx: Fixture) -> list[Any]:
    """``raw_output`` as text pieces and :class:`Special` tokens (the family's special
    markers)."""
    from toolmask.grammar import Special

    special = SPECIAL_TOKENS.get(fx.family, ())
    if not special:
        return [fx.raw_output]
    pat = re.compile("|".join(re.escape(m) for m in sorted(special, key=len, reverse=True)))
    out: list[Any] = []
    pos = 0
    for m in pat.finditer(fx.raw_output):
        if m.start() > pos:
            out.append(fx.raw_output[pos : m.start()])
        out.append(Special(m.group()))
        pos = m.end()
    if pos < len(fx.raw_output):
        out.append(fx.raw_output[pos:])
    return out


def grammar_accepts(fx: Fixture, mode: str) -> str | None:
    """None when the turn grammar built from the fixture's tools (``tool_choice=mode``,
    parallel calls on, reasoning as the prompt left it) accepts ``raw_output`` exactly, else
    the reason it does not."""
    import toolmask as tm
    from toolmask.tools import ToolTurn

    got = setup_for(fx)
    if got is None:
        return "no toolmask format"
    fmt, reasoning_open, _ = got
    if not fmt.has_grammar:
        return f"format {fmt.name} has no grammar"
    try:
        turn = ToolTurn(
            fx.tools,
            fmt,
            mode,
            parallel_tool_calls=True,
            special_tokens=SPECIAL_TOKENS.get(fx.family, ()),
            reasoning_open=reasoning_open,
        )
        m = tm.compile(turn.grammar()).matcher()
    except Exception as e:  # a schema the compiler refuses is a finding
        return f"grammar: {type(e).__name__}: {e}"
    done = b""
    for p in pieces(fx):
        # a marker is one special token where the grammar has a marker, else its text (a
        # marker's text inside an argument string is text tokens in the model's output)
        if not isinstance(p, str) and m.accept_special(p.text):
            done += p.text.encode()
            continue
        data = (p if isinstance(p, str) else p.text).encode("utf-8")
        for i in range(len(data)):
            if not m.accept_bytes(data[i : i + 1]):
                return f"rejected {data[i : i + 20]!r} after {done[-50:]!r}"
            done += data[i : i + 1]
    if not m.is_accepting():
        return f"incomplete at the end: {done[-40:]!r}"
    return None
