"""A wire format registered from outside the package, no other file touched: a spec (data) and
a codec of its own, and everything the tool layer does with a format works for it: the turn
grammar, the parser (batch and streamed), the renderer, the sanitizer, detection by proof on a
chat template that renders its calls. A second toy is data only, on an existing codec."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

import toolmask as tm
from toolmask.grammar import Node, lit, seq
from toolmask.tools import (
    FORMATS,
    StreamParser,
    ToolTurn,
    detect_format,
    parse_turn,
    register_format,
    sanitize_tool_output,
    sequential_call_id,
    unregister_format,
)
from toolmask.tools.formats import Block, CodecBase, FormatSpec, Habit, Kit, ToolLike
from toolmask.tools.formats._json import JsonEnvelope
from toolmask.tools.formats._read import bad_block, done, json_end, loads, skip_ws
from toolmask.tools.formats._spec import BlockMarkers, Layout, Reasoning

from .rendered import ONE, TOOLS, TWO

_HEAD = re.compile(r"([A-Za-z_][\w.-]*) ")


@dataclass(frozen=True, slots=True)
class Arrows(CodecBase):
    """``NAME {json}`` between the block's markers, one call per block."""

    def call_grammar(self, spec: FormatSpec, tool: ToolLike, index: int, kit: Kit) -> Node:
        return seq(lit(tool.name + " "), kit.json(tool.parameters, f"a{index}_"))

    def render_calls(self, spec: FormatSpec, calls: Sequence[tuple[str, object]]) -> str:
        b = spec.block
        return "\n".join(f"{b.open}{n} {spec.values.dump(a)}{b.close}" for n, a in calls)

    def read_block(
        self,
        spec: FormatSpec,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool,
        schemas: Mapping[str, Any] | None,
    ) -> Block:
        b = spec.block
        start = k + len(b.open)
        m = _HEAD.match(text, start)
        if m is None:
            if not final and " " not in text[start:]:
                return Block("pending")
            return bad_block(text, start, b.close, "expected NAME {", final)
        end = json_end(text, m.end()) if text.startswith("{", m.end()) else None
        if end is None:
            return Block("pending") if not final else bad_block(text, start, b.close, "cut", final)
        args, err = loads(text[m.end() : end])
        if err is not None or not isinstance(args, dict):
            return bad_block(text, start, b.close, err or "not an object", final)
        j = skip_ws(text, end)
        if text.startswith(b.close, j):
            return Block("ok", j + len(b.close), [done(m.group(1), args)])
        if not final and b.close.startswith(text[j:]):
            return Block("pending")
        return bad_block(text, start, b.close, f"expected {b.close!r}", final)


TOY = FormatSpec(
    "toy_arrows",
    Arrows(),
    BlockMarkers("<%", "%>"),
    reasoning=Reasoning("<muse>", "</muse>"),
    template_markers=("<|toy_turn|>", "<|toy_end|>"),
)
#: data only: hermes' call objects between other markers, in a list
TOY_DATA = FormatSpec(
    "toy_data",
    JsonEnvelope(),
    BlockMarkers("[[calls]]", "[[/calls]]"),
    Layout(list_open="[", list_close="]", separator=","),
)

#: hermes' calls with a model's habit besides: the same calls in a ```json fence
TOY_HABIT = FormatSpec(
    "toy_habit",
    JsonEnvelope(),
    BlockMarkers("<call>", "</call>", after_open="\n", before_close="\n"),
    habits=(Habit("```json", "```", after_open="\n", before_close="\n"),),
)

#: a chat template that renders assistant calls the toy way (and nothing else special)
TEMPLATE = (
    "{% for m in messages %}<|toy_turn|>{{ m.role }}\n"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}"
    "<%{{ c.function.name }} {{ c.function.arguments | tojson }}%>"
    "{% if not loop.last %}\n{% endif %}{% endfor %}"
    "{% else %}{{ m.content }}{% endif %}<|toy_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|toy_turn|>assistant\n{% endif %}"
)


@pytest.fixture
def toys() -> Iterator[None]:
    for spec in (TOY, TOY_DATA, TOY_HABIT):
        register_format(spec)
    try:
        yield
    finally:
        for spec in (TOY, TOY_DATA, TOY_HABIT):
            unregister_format(spec.name)
    assert "toy_arrows" not in FORMATS


@pytest.mark.usefixtures("toys")
@pytest.mark.parametrize("name", ["toy_arrows", "toy_data", "toy_habit"])
def test_grammar_parser_and_renderer_agree(name: str) -> None:
    for calls in (ONE, TWO):
        text = "Let me look.\n" + FORMATS[name].render_calls(calls)
        turn = ToolTurn(TOOLS, name, "auto", id_factory=sequential_call_id)
        m = tm.compile(turn.grammar()).matcher()
        assert m.accept_bytes(text.encode()) and m.is_accepting()
        got = turn.parse(text)
        assert [(c.name, c.arguments) for c in got.calls] == calls
        assert got.content == "Let me look." and not got.malformed
        stream = turn.stream_parser()
        for i in range(0, len(text), 3):
            stream.feed(text[i : i + 3])
        stream.finish()
        assert stream.result == got
    required = tm.compile(ToolTurn(TOOLS, name, "required").grammar()).matcher()
    assert not required.accept_bytes(b"Let me look.")  # a call first
    bad = FORMATS[name].render_calls([("no_such_tool", {})])
    assert (
        not tm.compile(ToolTurn(TOOLS, name, "auto").grammar()).matcher().accept_bytes(bad.encode())
    )


@pytest.mark.usefixtures("toys")
def test_reasoning_and_malformed_blocks() -> None:
    text = '<muse>think</muse>\nok <%get_weather {"city": 1%> tail'
    got = parse_turn(text, FORMATS["toy_arrows"], id_factory=sequential_call_id)
    assert got.reasoning == "think"
    assert not got.calls and got.malformed
    assert got.content == 'ok <%get_weather {"city": 1%> tail'
    s = StreamParser(FORMATS["toy_arrows"])
    s.feed(text)
    s.finish()
    assert s.result.malformed == got.malformed


@pytest.mark.usefixtures("toys")
def test_sanitizer_breaks_its_markers() -> None:
    out = sanitize_tool_output("<% a %> <|toy_end|> <muse>", "toy_arrows")
    for marker in ("<%", "%>", "<|toy_end|>", "<muse>"):
        assert marker not in out


@pytest.mark.usefixtures("toys")
def test_detection_proves_it_on_its_template() -> None:
    pytest.importorskip("jinja2")
    guess = detect_format(TEMPLATE)
    assert guess.name == "toy_arrows" and guess.confident
    assert guess.proven == ("toy_arrows",)


@pytest.mark.usefixtures("toys")
def test_a_habit_is_read_and_admitted_wherever_a_block_may_start() -> None:
    habit = '```json\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n```'
    for mode in ("auto", "required"):
        for text in ("Sure.\n" + habit, habit) if mode == "auto" else (habit,):
            turn = ToolTurn(TOOLS, "toy_habit", mode, id_factory=sequential_call_id)
            got = turn.parse(text)  # read under every choice
            assert [(c.name, c.arguments) for c in got.calls] == ONE
            assert not got.malformed and got.content in ("Sure.", "")
            m = tm.compile(turn.grammar()).matcher()
            # admitted under auto only: a forced call is written in the format's own markers
            assert (m.accept_bytes(text.encode()) and m.is_accepting()) == (mode == "auto")
    # under auto prose never holds the habit's opener; under none it is plain text
    note = 'see ```json\n{"x": 1}\n```'
    auto = tm.compile(ToolTurn(TOOLS, "toy_habit", "auto").grammar()).matcher()
    assert not auto.accept_bytes(note.encode())
    none = ToolTurn(TOOLS, "toy_habit", "none")
    prose = tm.compile(none.grammar()).matcher()
    assert prose.accept_bytes(note.encode()) and prose.is_accepting()
    assert none.parse(note).content == note and none.parse(note).calls == ()
    # the fences are no control markers: tool output keeps them
    assert sanitize_tool_output("```json\n{}\n```", "toy_habit") == "```json\n{}\n```"
