"""The turn grammar, table-driven: every format x tool_choice mode x parallel on/off x
reasoning on/off.

For each cell, completions that obey the mode are accepted by the compiled grammar and parse to
calls whose names are allowed and whose arguments validate; completions that break it (a call
under ``none``, no call under ``required``, a disallowed tool, two calls with parallel off,
another tool's arguments) are rejected. With reasoning on, every completion starts with the
format's reasoning channel and gets the same verdict ("reason, then call"); with it off, a
completion that reasons is rejected.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

import pytest

import toolmask as tm
from toolmask.grammar import Special, iter_nodes
from toolmask.tools import FORMATS, ToolTurn, sequential_call_id

from .completions import Call, Piece, accepts, custom_turn, reasoning_text, render, text_of
from .toolset import INVALID, NAMES, TOOLS, VALID

#: the formats with a generation grammar (the others parse only, see test_canitoolcall)
GRAMMAR_FORMATS = sorted(n for n, f in FORMATS.items() if f.has_grammar)


@dataclass(frozen=True)
class Mode:
    label: str
    tool_choice: Any
    allowed: tuple[str, ...]  # callable tools
    required: bool  # at least one call


SUBSET = ("get_weather", "book_flight", "add_todos")
MODES = [
    Mode("none", "none", (), False),
    Mode("auto", "auto", tuple(NAMES), False),
    Mode("required", "required", tuple(NAMES), True),
    Mode(
        "function",
        {"type": "function", "function": {"name": "create_event"}},
        ("create_event",),
        True,
    ),
    Mode(
        "allowed_auto",
        {
            "type": "allowed_tools",
            "mode": "auto",
            "tools": [{"type": "function", "name": n} for n in SUBSET],
        },
        SUBSET,
        False,
    ),
    Mode(
        "allowed_required",
        {"type": "allowed_tools", "mode": "required", "tools": list(SUBSET)},
        SUBSET,
        True,
    ),
]

PROSE = "Sure, let me look that up for you.\n"
THOUGHT = "The user wants data; a tool has it.\nI will call it."
CELLS = list(itertools.product(GRAMMAR_FORMATS, MODES, [True, False], [True, False]))


def _id(cell: tuple[str, Mode, bool, bool]) -> str:
    fmt, mode, parallel, reasoning = cell
    p = "parallel" if parallel else "single"
    return f"{fmt}-{mode.label}-{p}-{'reasoning' if reasoning else 'plain'}"


def _has_reasoning(fmt: str) -> bool:
    f = FORMATS[fmt]
    # a channel closes; its opener is the reply's own or, in a custom turn, a message header
    return bool(f.reasoning_end) and (bool(f.reasoning_start) or custom_turn(f))


def _turn(
    fmt: str,
    mode: Mode,
    parallel: bool,
    special: frozenset[str] = frozenset(),
    *,
    reasoning: bool = True,
    reasoning_open: bool = False,
) -> ToolTurn:
    return ToolTurn(
        TOOLS,
        fmt,
        mode.tool_choice,
        parallel_tool_calls=parallel,
        special_tokens=special,
        id_factory=sequential_call_id,
        reasoning=reasoning,
        reasoning_open=reasoning_open,
    )


def _roundtrips(turn: ToolTurn, name: str, args: dict[str, Any]) -> bool:
    parsed = turn.parse(turn.format.render_calls([(name, args)]))
    return [(c.name, c.arguments) for c in parsed.calls] == [(name, args)]


def _strings(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, str | dict | list) else json.dumps(v) for k, v in args.items()}


def _good_and_bad(
    turn: ToolTurn, mode: Mode, parallel: bool
) -> tuple[list[tuple[str, list[Piece]]], list[tuple[str, list[Piece]]]]:
    fmt = turn.format
    sp = turn.special_tokens
    allowed = list(mode.allowed)
    disallowed = [n for n in NAMES if n not in allowed]
    good: list[tuple[str, list[Piece]]] = []
    bad: list[tuple[str, list[Piece]]] = []

    def calls(names: list[str]) -> list[Call]:
        return [(n, VALID[n][i % len(VALID[n])]) for i, n in enumerate(names)]

    if not mode.required:
        good.append(("prose only", render(fmt, [], prose=PROSE, special_tokens=sp)))
        if not custom_turn(fmt):  # a Harmony turn is at least one message
            good.append(("empty reply", []))
    else:
        bad.append(("prose only", render(fmt, [], prose=PROSE, special_tokens=sp)))
        bad.append(("empty reply", []))
    if allowed:
        first = allowed[0]
        one = calls([first])
        good.append(("one call", render(fmt, one, special_tokens=sp)))
        for n in allowed:  # every allowed tool with each of its valid argument objects
            for args in VALID[n]:
                # a value the format cannot write (a raw-text value holding the format's own
                # close marker) reads back differently: the grammar must refuse it
                ok = _roundtrips(turn, n, args)
                (good if ok else bad).append(
                    (f"call {n}", render(fmt, [(n, args)], special_tokens=sp))
                )
        if fmt.block.bare_start and not custom_turn(fmt):
            good.append(("bare call", render(fmt, one, special_tokens=sp, bare=True)))
        prose_then_call = render(fmt, one, prose=PROSE, special_tokens=sp)
        (bad if mode.required else good).append(("prose then call", prose_then_call))
        two = calls([allowed[0], allowed[-1]])
        # a family whose template renders one call per turn (GigaChat) never gets two
        many = parallel and fmt.layout.parallel_calls
        (good if many else bad).append(("two calls", render(fmt, two, special_tokens=sp)))
        # name of one tool with the arguments of another, and arguments its schema rejects
        other = next(n for n in NAMES if n != first and VALID[n][0] != VALID[first][0])
        bad.append(
            ("other tool's args", render(fmt, [(first, VALID[other][0])], special_tokens=sp))
        )
        for args in INVALID[first]:
            if fmt.render_calls([(first, args)]) == fmt.render_calls([(first, _strings(args))]):
                continue  # a raw-text value: 3 and "3" are the same text
            bad.append(("invalid args", render(fmt, [(first, args)], special_tokens=sp)))
        # text after the calls: the end of the turn, except where the template renders content
        # after them (Gemma 4)
        after = good if fmt.layout.prose_after_calls else bad
        after.append(("call then prose", [*render(fmt, one, special_tokens=sp), " done."]))
        # the model's own ending: a newline (or a few whitespace bytes) after the last block
        for tail in ("\n", "\n\n", " \n"):
            good.append((f"call then {tail!r}", [*render(fmt, one, special_tokens=sp), tail]))
        after.append(("whitespace run", [*render(fmt, one, special_tokens=sp), "\n" * 9]))
        # keys in the order the model picks, each at most once
        for n in allowed:
            for args in VALID[n]:
                if len(args) > 1 and _roundtrips(turn, n, args):
                    flipped = dict(reversed(list(args.items())))
                    good.append(
                        (f"keys reordered {n}", render(fmt, [(n, flipped)], special_tokens=sp))
                    )
        dup = render(fmt, [(first, VALID[first][0])], special_tokens=sp)
        key = next(iter(VALID[first][0]), None)
        if key is not None and f'"{key}": ' in text_of(dup):
            text = text_of(dup)
            k = f'"{key}": '
            at = text.index(k)
            end = text.index("}", at)
            doubled = text[:end] + ", " + text[at:end] + text[end:]
            bad.append(("duplicate key", [doubled]))
    else:
        bad.append(("call under none", render(fmt, calls([NAMES[0]]), special_tokens=sp)))
        if fmt.block.bare_start and not custom_turn(fmt):
            bad.append(("bare call under none", render(fmt, calls([NAMES[0]]), bare=True)))
    for n in disallowed[:2]:
        if allowed:
            bad.append((f"disallowed {n}", render(fmt, calls([n]), special_tokens=sp)))
    bad.append(("unknown tool", render(fmt, [("no_such_tool", {})], special_tokens=sp)))
    return good, bad


@pytest.mark.parametrize("cell", CELLS, ids=[_id(c) for c in CELLS])
def test_turn_grammar_table(cell: tuple[str, Mode, bool, bool]) -> None:
    fmt_name, mode, parallel, reasoning = cell
    turn = _turn(fmt_name, mode, parallel, reasoning=reasoning)
    compiled = tm.compile(turn.grammar())
    good, bad = _good_and_bad(turn, mode, parallel)
    assert good and bad
    if _has_reasoning(fmt_name):
        thought = reasoning_text(turn.format, THOUGHT)
        if reasoning:  # reason, then the same verdict
            good = [(f"reasoning, {lb}", [thought, *p]) for lb, p in good]
            bad = [(f"reasoning, {lb}", [thought, *p]) for lb, p in bad]
        else:  # no channel: a reply that reasons is refused
            bad += [(f"reasoning, {lb}", [thought, *p]) for lb, p in good]
    for label, pieces in good:
        assert accepts(compiled.matcher(), pieces), f"rejected valid completion ({label})"
        parsed = turn.parse(text_of(pieces))
        assert not parsed.malformed, label
        if label.startswith("reasoning, "):
            assert parsed.reasoning == THOUGHT, label
        assert (len(parsed.calls) >= 1) or not mode.required
        if not parallel:
            assert len(parsed.calls) <= 1
        for call in parsed.calls:
            assert call.name in mode.allowed
            assert turn.validate(call) == [], (label, call)
    for label, pieces in bad:
        assert not accepts(compiled.matcher(), pieces), f"accepted bad completion ({label})"


@pytest.mark.parametrize("fmt_name", GRAMMAR_FORMATS)
def test_special_token_markers(fmt_name: str) -> None:
    """Markers that are special tokens become Special nodes; their text no longer matches."""
    fmt = FORMATS[fmt_name]
    special = frozenset(m for m in (fmt.block.open, fmt.block.close) if m)
    mode = MODES[1]  # auto
    turn = _turn(fmt_name, mode, True, special)
    g = turn.grammar()
    texts = {n.text for r in g.rules for n in iter_nodes(r.body) if isinstance(n, Special)}
    assert texts == special
    compiled = tm.compile(g)
    calls = [("get_weather", VALID["get_weather"][0]), ("calculate", VALID["calculate"][0])]
    calls = calls if fmt.layout.parallel_calls else calls[:1]  # GigaChat: one call per turn
    as_tokens = render(fmt, calls, prose=PROSE, special_tokens=special)
    assert accepts(compiled.matcher(), as_tokens)
    as_text = render(fmt, calls, prose=PROSE)
    assert not accepts(compiled.matcher(), as_text)
    parsed = turn.parse(text_of(as_tokens))
    assert [c.name for c in parsed.calls] == [n for n, _ in calls]


@pytest.mark.parametrize(
    "fmt_name",
    [f for f in GRAMMAR_FORMATS if FORMATS[f].reasoning_start and FORMATS[f].reasoning_end],
)
@pytest.mark.parametrize("mode", [MODES[1], MODES[2]], ids=["auto", "required"])
def test_reasoning_opened_by_the_prompt(fmt_name: str, mode: Mode) -> None:
    """A prompt that ends inside the channel: the reply reasons, closes it, then follows
    ``tool_choice``; a reply that does not close the channel is not a turn."""
    turn = _turn(fmt_name, mode, True, reasoning_open=True)
    fmt = turn.format
    compiled = tm.compile(turn.grammar())
    call = render(fmt, [("get_weather", VALID["get_weather"][0])])
    thought = reasoning_text(fmt, THOUGHT, opened=True)
    assert accepts(compiled.matcher(), [thought, *call])
    parsed = turn.parse(text_of([thought, *call]))
    assert parsed.reasoning == THOUGHT and [c.name for c in parsed.calls] == ["get_weather"]
    assert turn.for_prompt("<|im_start|>assistant\n").parse(text_of(call)).calls
    assert not accepts(compiled.matcher(), call)  # the channel must be closed first
    assert accepts(compiled.matcher(), [fmt.reasoning_end, *call])  # an empty channel


@pytest.mark.parametrize("fmt_name", [f for f in GRAMMAR_FORMATS if not custom_turn(FORMATS[f])])
def test_prose_cannot_contain_the_trigger(fmt_name: str) -> None:
    fmt = FORMATS[fmt_name]
    turn = _turn(fmt_name, MODES[0], True)  # none
    m = tm.compile(turn.grammar()).matcher()
    assert m.accept_bytes(b"Plain text, with { braces } and \xc3\xa9 accents. ")
    trigger = min(fmt.parse_triggers(habits=False), key=len)  # under none habits are prose
    assert not m.accept_bytes(trigger.encode())
    assert m.accept_bytes(trigger[:-1].encode())


def test_name_and_arguments_are_one_choice() -> None:
    """After a name, only that tool's argument grammar is live (checked byte by byte)."""
    turn = _turn("hermes", MODES[2], True)
    m = tm.compile(turn.grammar()).matcher()
    assert m.accept_bytes(b'<tool_call>\n{"name": "get_time", "arguments": ')
    assert m.forced_bytes() == b"{}}"  # then whitespace (up to max_trailing_ws) and the close
    assert m.accept_bytes(b"{}}\n\n") and m.forced_bytes() == b""
    assert m.accept_bytes(b"<") and m.forced_bytes() == b"/tool_call>"


def test_call_grammar_starts_at_the_trigger() -> None:
    turn = _turn("mistral", MODES[1], True)
    m = tm.compile(turn.call_grammar()).matcher()
    assert m.accept_bytes(b'[TOOL_CALLS][{"name": "get_time", "arguments": {}}]')
    assert m.is_accepting()
    assert turn.triggers == ("[TOOL_CALLS]",)


def test_llama3_reply_starting_with_brace_is_a_call() -> None:
    turn = _turn("llama3_json", MODES[1], True)
    m = tm.compile(turn.grammar()).matcher()
    assert m.accept_bytes(b"{")
    assert not m.accept_bytes(b'"answer"')


def test_schema_options_reach_the_arguments() -> None:
    turn = ToolTurn(TOOLS[:1], "hermes", "required", schema_options={"whitespace": "flexible"})
    m = tm.compile(turn.grammar()).matcher()
    text = '<tool_call>\n{"name": "get_weather", "arguments": { "city" : "Paris" }}\n</tool_call>'
    assert m.accept_bytes(text.encode()) and m.is_accepting()


@pytest.mark.parametrize("fmt", GRAMMAR_FORMATS)
def test_a_tool_schema_that_fails_names_the_tool_and_the_place(fmt: str) -> None:
    ok = {"type": "function", "function": {"name": "ok", "parameters": {"type": "object"}}}
    # array parameters: every format writes them as JSON (strings may be raw text)
    # (a lookbehind: refused; a backreference compiles since the grammar reads it as a superset)
    lookbehind = {"type": "array", "items": {"type": "string", "pattern": "^(?<=a)b$"}}
    blowup = {"type": "array", "items": {"type": "string", "pattern": "(a|b)*a(a|b){24}"}}

    def tool(name: str, s: Any) -> dict[str, Any]:
        params = {"type": "object", "properties": {"s": s}, "required": ["s"]}
        return {"type": "function", "function": {"name": name, "parameters": params}}

    with pytest.raises(tm.SchemaError) as e:
        ToolTurn([ok, tool("bad", lookbehind)], fmt, "auto").grammar()
    assert e.value.tool == "bad" and e.value.pointer == "/properties/s/items"
    assert str(e.value).startswith("tool 'bad': #/properties/s/items (pattern): ")
    with pytest.raises(tm.LimitError) as lim:
        ToolTurn([ok, tool("big", blowup)], fmt, "required").grammar()
    assert lim.value.tool == "big" and lim.value.pointer == "/properties/s/items"
    assert lim.value.limit == "max_dfa_states"
