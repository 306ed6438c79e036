"""Habits (``FormatSpec.habits``): the other markers a family's models write around the same
calls. Hermes has one, Qwen2.5-Coder's fenced, pretty-printed JSON block, as the model writes it
(bench/quality.py, toolmask-free, BFCL dev ``multiple_107``)::

    ```json
    {
      "name": "calculate_density",
      "arguments": {
        "mass": 45,
        "volume": 15,
        "unit": "kg/m³"
      }
    }
    ```

The grammar admits it wherever a block may start (and only there: never under ``none``), the
parser and the stream parser read it as a call, the lazy turn and a subset's name filter agree
with the eager turn on it, and the call inside is held to its tool's schema like any other. The
same fence holds any JSON a reply shows: it is a call only where its head names a tool of the
turn (``Habit.prose``); anything else in it is prose, in the grammar and in the parser.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

import toolmask as tm
from toolmask.grammar import Special
from toolmask.tools import ToolTurn
from toolmask.tools.formats import BlockMarkers, FormatSpec, Habit, Layout, get_format
from toolmask.tools.formats._json import JsonEnvelope

from ..test_lazy import _token_ids
from ..toolset import NAMES, TOOLS, VALID

HERMES = get_format("hermes")


def fenced(name: str, arguments: dict[str, Any]) -> str:
    """A call the way Qwen2.5-Coder writes it: a ```json fence around the call object, objects
    indented by two spaces, arrays on one line."""

    def dump(value: Any, depth: int) -> str:
        if isinstance(value, dict) and value:
            pad = "  " * (depth + 1)
            items = [f"{pad}{json.dumps(k)}: {dump(v, depth + 1)}" for k, v in value.items()]
            return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"
        return json.dumps(value, ensure_ascii=False)

    return "```json\n" + dump({"name": name, "arguments": arguments}, 0) + "\n```"


def _accepts(compiled: tm.CompiledGrammar, text: str) -> bool:
    m = compiled.matcher()
    return m.accept_bytes(text.encode()) and m.is_accepting()


def test_hermes_lists_its_habits_with_their_evidence() -> None:
    tools, habit = HERMES.habits
    assert (tools.open, tools.close, tools.forced) == ("<tools>", "</tools>", True)
    assert (habit.open, habit.close, habit.forced) == ("```json", "```", False)
    assert "Qwen2.5-Coder" in habit.evidence and "Qwen2.5-Coder" in tools.evidence
    assert HERMES.block_triggers() == ("<tool_call>", "<tools>", "```json")
    assert ToolTurn(TOOLS, "hermes").triggers == ("<tool_call>", "<tools>", "```json")
    own, tags, fence = HERMES.variants
    assert own is HERMES and fence.block.open == "```json" and fence.habits == ()
    assert fence.argument_options["whitespace"] == "flexible"
    assert tags.block.open == "<tools>" and tags.values == HERMES.values  # hermes' own layout


def test_forced_habits_come_first() -> None:
    fence, tools = HERMES.habits[1], HERMES.habits[0]
    with pytest.raises(ValueError, match="forced habits must come first"):
        dataclasses.replace(HERMES, habits=(fence, tools))


def _tools_block(name: str, arguments: dict[str, Any]) -> str:
    return "<tools>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tools>"


def test_a_fenced_call_is_a_call() -> None:
    turn = ToolTurn(TOOLS, "hermes", "auto")
    compiled = tm.compile(turn.grammar())
    for name in NAMES:
        for args in VALID[name]:
            text = fenced(name, args)
            assert _accepts(compiled, text), text
            parsed = turn.parse(text)
            assert [(c.name, c.arguments) for c in parsed.calls] == [(name, args)]
            assert parsed.content == "" and parsed.malformed == ()
            assert turn.validate(parsed.calls[0]) == []
    # the template's own block, a fenced one, and the fence written on one line
    both = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>\n'
        + fenced("get_weather", {"city": "Rome"})
        + '\n```json\n{"name": "get_weather", "arguments": {"city": "Bern"}}\n```\n'
    )
    assert _accepts(compiled, both)
    assert [c.arguments["city"] for c in turn.parse(both).calls] == ["Oslo", "Rome", "Bern"]


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "get_weather"}}]
)
def test_a_forced_call_is_written_in_the_tags(choice: Any) -> None:
    """The fence is the model's way into a call it chose to make; where the turn forces a
    call, the grammar holds it to the format's own tags and the habits marked ``forced``
    (``<tools>``, where Qwen2.5-Coder-1.5B goes when its fence is not admitted): with the
    fence admitted there, the model took it and wrote one call where the tags led it to
    several. The parser still reads a fenced call, whatever the turn's choice."""
    turn = ToolTurn(TOOLS, "hermes", choice)
    compiled = tm.compile(turn.grammar())
    tags = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    fence = fenced("get_weather", {"city": "Paris"})
    tools = _tools_block("get_weather", {"city": "Rome"})
    assert _accepts(compiled, tags) and _accepts(compiled, tools)
    assert _accepts(compiled, tools + "\n" + tags)  # parallel calls, in either markers
    assert not _accepts(compiled, fence)
    assert not _accepts(compiled, tags + "\n" + fence)
    assert not _accepts(compiled, _tools_block("get_weather", {"city": "Rome", "x": 1}))
    assert [c.arguments for c in turn.parse(fence).calls] == [{"city": "Paris"}]
    assert [c.arguments for c in turn.parse(tools).calls] == [{"city": "Rome"}]
    # and nothing of the fence is built: the rules are those of hermes with its forced habit
    # alone (before: 202 rules where 103 are used, the fence's flexible-layout argument parts)
    forced = [r.name for r in turn.grammar().rules]
    bare = dataclasses.replace(HERMES, habits=HERMES.habits[:1])
    assert forced == [r.name for r in ToolTurn(TOOLS, bare, choice).grammar().rules]
    assert len(forced) < len(ToolTurn(TOOLS, "hermes", "auto").grammar().rules)


def test_prose_then_a_fenced_call_under_auto() -> None:
    turn = ToolTurn(TOOLS, "hermes", "auto")
    compiled = tm.compile(turn.grammar())
    text = "I will look it up.\n\n" + fenced("get_weather", {"city": "Paris"})
    assert _accepts(compiled, text)
    parsed = turn.parse(text)
    assert parsed.content == "I will look it up." and parsed.calls[0].name == "get_weather"


def test_the_call_inside_a_fence_is_held_to_its_schema() -> None:
    compiled = tm.compile(ToolTurn(TOOLS, "hermes", "auto").grammar())
    good = fenced("get_weather", {"city": "Paris", "unit": "celsius"})
    assert _accepts(compiled, good)
    for bad in (
        fenced("get_weather", {"city": "Paris", "country": "FR"}),  # undeclared key
        fenced("get_weather", {"city": "Paris", "unit": "kelvin"}),  # not in the enum
        fenced("get_weather", {"unit": "celsius"}),  # the required key left out
        fenced("search_web", {"query": "x", "limit": 0}),  # below the minimum
        '```json\n{"name": "get_weather"}\n```',  # a tool named, then no arguments
    ):
        assert not _accepts(compiled, bad), bad


#: fences that name no tool of the turn: JSON a reply shows, prose in grammar and parser
PROSE_FENCES = (
    '```json\n{\n  "name": "Alice",\n  "age": 30\n}\n```',  # a name that is no tool's
    fenced("get_wether", {"city": "Paris"}),  # no such tool: not forced into one
    fenced("get_weather_v2", {"city": "Paris"}),  # a tool's name is only a prefix of it
    "```json\n[" + fenced("get_weather", {"city": "Paris"})[8:-4] + "]\n```",  # a list
    '```json\n{\n  "x": 1\n}\n```',  # not a call object
    "```json\n```",  # empty
)


@pytest.mark.parametrize("text", PROSE_FENCES)
def test_a_fence_that_names_no_tool_is_prose(text: str) -> None:
    """A fence is a call only where its head names a tool of the turn (``Habit.prose``,
    toolmask.tools._fences): the JSON a model shows the user is not turned into a call to a
    tool it never meant, in the grammar (the mask) or the parser, batch or streamed."""
    turn = ToolTurn(TOOLS, "hermes", "auto")
    compiled = tm.compile(turn.grammar())
    for reply in (text, "Here it is:\n" + text + "\nDone.", text + "\n" + text):
        assert _accepts(compiled, reply), reply
        parsed = turn.parse(reply)
        assert parsed.calls == () and parsed.malformed == () and parsed.content == reply
        for size in (1, 3, 7):
            sp = turn.stream_parser()
            streamed = ""
            for i in range(0, len(reply), size):
                streamed += "".join(d.content or "" for d in sp.feed(reply[i : i + size]))
            streamed += "".join(d.content or "" for d in sp.finish())
            assert sp.result == parsed and streamed == reply
    # a call after such a fence is still a call, held to its schema
    call = fenced("get_weather", {"city": "Paris"})
    assert _accepts(compiled, text + "\n" + call)
    parsed = turn.parse(text + "\n" + call)
    assert parsed.content == text and [c.name for c in parsed.calls] == ["get_weather"]
    assert not _accepts(compiled, text + "\n" + fenced("get_weather", {"town": "Paris"}))


def test_a_fence_commits_where_its_head_names_a_tool() -> None:
    """Byte for byte: until the name's closing quote both readings stay open, so the mask
    offers both; from there on the fence is a call and the mask holds it to the schema."""
    turn = ToolTurn(TOOLS, "hermes", "auto")
    compiled = tm.compile(turn.grammar())
    m = compiled.matcher()
    assert m.accept_bytes(b'```json\n{ "name" :  "get_weather')
    assert m.allowed_bytes() & (1 << ord('"')) and m.allowed_bytes() & (1 << ord("_"))
    assert m.accept_bytes(b'"')
    assert not m.allowed_bytes() & (1 << ord("}"))  # a call now: its arguments must follow
    # a fence cut inside a call's head is prose; cut after the head, a malformed call
    assert turn.parse('```json\n{"name": "get_wea').content == '```json\n{"name": "get_wea'
    cut = turn.parse('```json\n{"name": "get_weather", "arguments": {"ci')
    assert cut.calls == () and len(cut.malformed) == 1


def test_past_the_names_budget_any_name_makes_a_fence_a_call() -> None:
    """Over :data:`~toolmask.tools._fences.MAX_NAME_BYTES` of names, the prose grammar does
    not hold a trie of them: any name in a fence's head makes it a call (and the grammar then
    holds it to a real tool); other JSON in a fence is prose as below the budget."""
    from toolmask.tools._fences import MAX_NAME_BYTES

    many = [tm.Tool(f"tool_number_{i:04d}", {"type": "object"}) for i in range(80)]
    assert sum(len(t.name) + 2 for t in many) > MAX_NAME_BYTES
    turn = ToolTurn(many, "hermes", "auto")
    compiled = tm.compile(turn.grammar())
    assert not _accepts(compiled, '```json\n{"name": "Alice", "age": 30}\n```')
    assert _accepts(compiled, '```json\n{"x": 1}\n```')
    assert _accepts(compiled, '```json\n{"name": "tool_number_0007", "arguments": {}}\n```')


def test_under_none_a_fence_is_prose() -> None:
    turn = ToolTurn(TOOLS, "hermes", "none")
    compiled = tm.compile(turn.grammar())
    text = "Here is the JSON:\n" + fenced("get_weather", {"city": "Paris"})
    assert _accepts(compiled, text)
    parsed = turn.parse(text)
    assert parsed.calls == () and parsed.malformed == () and parsed.content == text
    # the template's own marker stays out of prose, as before
    assert not _accepts(compiled, "<tool_call>")


def test_under_none_the_turn_may_ask_for_words() -> None:
    """``habit_prose=False`` (an agent's answer step, the server's ``none``): the reply may not
    open with the fence, so the model that would write its call there writes words; a fence
    after words is text, as the parser reads it under ``none``."""
    turn = ToolTurn(TOOLS, "hermes", "none")
    words = turn.with_options(turn.options.replace(habit_prose=False))
    compiled = tm.compile(words.grammar())
    text = "Here is the JSON:\n" + fenced("get_weather", {"city": "P"})
    assert _accepts(compiled, text) and words.parse(text).content == text
    assert not _accepts(compiled, "```json") and not _accepts(compiled, fenced("get_weather", {}))
    assert _accepts(compiled, "It is 21 degrees in Paris. ```python\nx = 1\n```")
    assert words.options.key() != turn.options.key()  # its own cache entries
    # words are asked for: not the fence's backticks alone (what a model set on its fence
    # writes when "json" is kept out), not nothing
    for bad in ("```", "\n```", " ```python\nx = 1\n```", "", " \n"):
        assert not _accepts(compiled, bad), bad
    assert _accepts(compiled, "`x` is 1.")
    # the turn without the option is unchanged: a fence, or nothing, is a reply
    plain = tm.compile(turn.grammar())
    assert _accepts(plain, "```") and _accepts(plain, "")


def test_asked_for_words_a_reply_opens_neither_like_a_bare_call_nor_a_fence() -> None:
    """Found on Qwen2.5-Coder-1.5B through the server: at an answer step the model writes its
    call as hermes' bare object, and with only ``{"name"`` kept out it wrote ``{"name`` and
    stopped (32 of 48 answers). Asked for words, the reply may not open with ``{``; JSON and
    fences may follow words (a fence naming a tool kept out there cut the same model inside
    the name: ``Here's how: ```json {"name": "calculate`` on 21 of 48 answers)."""
    turn = ToolTurn(TOOLS, "hermes", "none")
    words = tm.compile(turn.with_options(turn.options.replace(habit_prose=False)).grammar())
    for bad in ('{"name', "{", ' \n{"x": 1}', '{"name": "Alice"}'):
        assert not _accepts(words, bad), bad
    assert _accepts(words, 'The weather: {"city": "Paris"}.')
    assert _accepts(words, 'Config:\n```json\n{"name": "Alice", "age": 30}\n```')
    assert _accepts(words, "Call:\n" + fenced("get_weather", {"city": "P"}))
    # the turn without the option keeps only the bare call's whole start out, as before
    plain = tm.compile(turn.grammar())
    assert _accepts(plain, '{"x": 1}') and not _accepts(plain, '{"name": "Alice"}')


def test_a_fence_whose_call_is_malformed_is_kept_as_content() -> None:
    turn = ToolTurn(TOOLS, "hermes", "auto")
    text = 'Example: ```json\n{"name": "get_weather", "arguments": {"city": }}\n```'
    parsed = turn.parse(text)
    assert parsed.calls == () and parsed.content == text
    assert parsed.malformed[0].text == text[len("Example: ") :]


def test_the_stream_parser_reads_fences_like_the_parser() -> None:
    turn = ToolTurn(TOOLS, "hermes", "auto")
    text = "Checking.\n" + fenced("search_web", {"query": "toolmask", "limit": 3}) + "\n"
    text += fenced("get_weather", {"city": "Lima"})
    for size in (1, 3, 7, 64):
        sp = turn.stream_parser()
        for i in range(0, len(text), size):
            sp.feed(text[i : i + size])
        sp.finish()
        got, want = sp.result, turn.parse(text)
        assert got.content == want.content == "Checking."
        assert [(c.name, c.arguments) for c in got.calls] == [
            (c.name, c.arguments) for c in want.calls
        ]
        assert [c.name for c in got.calls] == ["search_web", "get_weather"]
        assert got.malformed == want.malformed == ()


@pytest.fixture(scope="module")
def qwen3_vocab() -> tm.Vocabulary:
    return tm.Vocabulary.from_quicktok("qwen3")


@pytest.mark.parametrize("subset", [False, True])
def test_lazy_and_filtered_masks_equal_the_eager_masks_on_a_fence(
    qwen3_vocab: tm.Vocabulary, subset: bool
) -> None:
    sp = frozenset(qwen3_vocab.special.values())
    choice: Any = "auto"
    if subset:
        choice = {"type": "allowed_tools", "mode": "auto", "tools": NAMES[:3]}
    turn = ToolTurn(TOOLS, "hermes", choice, special_tokens=sp)
    with tm.GrammarCompiler().activate():
        lazy = turn.compile(qwen3_vocab, lazy=True)
        eager = tm.compile(turn.grammar(), qwen3_vocab)
    text = "Sure.\n" + fenced(NAMES[0], VALID[NAMES[0]][0]) + "\n"
    text += fenced(NAMES[2], VALID[NAMES[2]][-1])
    ml, me = lazy.matcher(), eager.matcher()
    for tid in _token_ids(qwen3_vocab, [text]):
        assert (ml.mask() == me.mask()).all(), qwen3_vocab.token_bytes[tid]
        assert ml.accept_token(tid) and me.accept_token(tid)
    assert ml.is_accepting() and me.is_accepting()
    if subset:  # a tool outside the subset is refused in a fence too
        m = lazy.matcher()
        assert not m.accept_bytes(fenced(NAMES[4], VALID[NAMES[4]][0]).encode())


def test_a_lazy_forced_turn_builds_no_fence_and_masks_as_the_eager_one(
    qwen3_vocab: tm.Vocabulary,
) -> None:
    sp = frozenset(qwen3_vocab.special.values())
    choice = {"type": "allowed_tools", "mode": "required", "tools": NAMES[:3]}
    turn = ToolTurn(TOOLS, "hermes", choice, special_tokens=sp)
    with tm.GrammarCompiler().activate():
        lazy = turn.compile(qwen3_vocab, lazy=True)
        eager = tm.compile(turn.grammar(), qwen3_vocab)
    call = {"query": "toolmask docs", "limit": 5}
    body = f'\n{{"name": "{NAMES[1]}", "arguments": {json.dumps(call)}}}\n'
    pieces = [Special("<tool_call>"), body, Special("</tool_call>")]
    ml, me = lazy.matcher(), eager.matcher()
    for tid in _token_ids(qwen3_vocab, pieces):
        assert (ml.mask() == me.mask()).all(), qwen3_vocab.token_bytes[tid]
        assert ml.accept_token(tid) and me.accept_token(tid)
    assert ml.is_accepting() and me.is_accepting()
    assert not lazy.matcher().accept_bytes(fenced(NAMES[1], call).encode())


def test_habits_are_checked_when_a_format_is_made() -> None:
    with pytest.raises(ValueError, match="overlap"):
        FormatSpec(
            "test_habits_overlap",
            JsonEnvelope(),
            BlockMarkers("<call>", "</call>"),
            habits=(Habit("<call", ">"),),  # overlaps the format's own opener
        )
    with pytest.raises(ValueError, match="one call per block"):
        FormatSpec(
            "test_habits_listed",
            JsonEnvelope(),
            BlockMarkers("<calls>", "</calls>"),
            Layout(list_open="[", list_close="]", separator=","),
            habits=(Habit("```json", "```"),),
        )


def test_a_reply_may_start_with_the_bare_call_object() -> None:
    """Qwen2.5-Coder-0.5B's other habit: the call object itself, first in the reply, with no
    marker (``tests/server/test_default_model.py`` sees it through the server). Then more
    blocks may follow; prose may not start with a call's head naming a tool, but may start
    with ``{``."""
    turn = ToolTurn(TOOLS, "hermes", "auto")
    compiled = tm.compile(turn.grammar())
    bare = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}'
    assert _accepts(compiled, bare) and _accepts(compiled, bare + "\n")
    parsed = turn.parse(bare)
    assert [(c.name, c.arguments) for c in parsed.calls] == [
        ("get_weather", {"city": "Paris", "unit": "celsius"})
    ]
    then = bare + "\n" + fenced("search_web", {"query": "x"})
    assert _accepts(compiled, then)
    assert [c.name for c in turn.parse(then).calls] == ["get_weather", "search_web"]
    # a tool the turn does not have: the reply is prose (BlockMarkers.bare_named, below)
    assert _accepts(compiled, '{"name": "nope", "arguments": {}}')
    assert turn.parse('{"name": "nope", "arguments": {}}').calls == ()
    # bare only at the start: later, the same object is prose
    assert _accepts(compiled, "Sure. " + bare)
    assert turn.parse("Sure. " + bare).calls == ()
    assert _accepts(compiled, '{"a": 1} is a JSON object.')
    assert turn.parse('{"a": 1} is a JSON object.').calls == ()


@pytest.mark.parametrize(
    ("reply", "names"),
    [
        ('{"name": "Alice", "age": 30}', []),  # a JSON answer: no tool is named
        ('{"name": "get_weather_v2", "arguments": {}}', []),  # no such tool
        ('{"city": "Paris"}', []),
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}', ["get_weather"]),
        ('{ "name" : "search_web", "arguments": {"query": "x"}}', None),  # a head, not in layout
    ],
)
def test_a_bare_reply_is_a_call_only_where_it_names_a_tool(
    reply: str, names: list[str] | None
) -> None:
    """Hermes' bare block (Qwen2.5-Coder-0.5B starts a reply with the call object itself,
    ``BlockMarkers.bare_named``): a reply that is a JSON object is a call only where its head
    names a tool of the turn, as a fence is; else it is the answer, word for word."""
    turn = ToolTurn(TOOLS, "hermes", "auto")
    compiled = tm.compile(turn.grammar())
    parsed = turn.parse(reply)
    if names is None:  # a call's head in a layout the bare block does not take: refused
        assert not _accepts(compiled, reply)
        return
    assert _accepts(compiled, reply)
    assert [c.name for c in parsed.calls] == names
    assert parsed.content == ("" if names else reply) and parsed.malformed == ()
    for size in (1, 3, 7):
        sp = turn.stream_parser()
        for i in range(0, len(reply), size):
            sp.feed(reply[i : i + size])
        sp.finish()
        got = sp.result
        assert (got.content, [c.name for c in got.calls]) == (parsed.content, names)
