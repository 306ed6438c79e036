"""Turns made of per-tool parts, and allowed subsets as a name filter (issue 25).

* a turn over tools seen before compiles no tool again, and a new subset compiles only its
  name filter (counted through the compiler's cache counts);
* caps apply per tool, naming it (``e.tool``, pointer), and the turn's ``max_rules`` counts
  the envelope only;
* a subset through ``ToolTurn.compile`` (the turn over every tool intersected with the
  subset's name filter) accepts and refuses exactly as a fresh compile of that subset's own
  grammar: every format and mode of ``test_grammar``'s table, and random subsets byte by byte;
* the prompt stays byte-identical whatever the subset.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmask as tm
from toolmask.errors import LimitError, SchemaError
from toolmask.grammar import Special
from toolmask.tools import ToolTurn, get_format

from .completions import Piece, accepts, render
from .test_grammar import CELLS, THOUGHT, Mode, _good_and_bad, _has_reasoning, _id, _turn
from .toolset import NAMES, TOOLS, VALID


def _counts(c: tm.GrammarCompiler) -> dict[str, int]:
    m = c.memory()
    return {k: m.get(k, 0) for k in ("compiled", "tools.parts", "tools.schema_grammars")}


#: hermes' variants: its own tags, then its habits' <tools> and fence
VARIANTS = len(get_format("hermes").variants)
#: their argument layouts (the tags' and <tools>' json.dumps spacing, the fence's pretty-printing)
LAYOUTS = len({repr(sorted(v.argument_options.items())) for v in get_format("hermes").variants})


def test_a_second_turn_over_the_same_tools_compiles_nothing_new() -> None:
    compiler = tm.GrammarCompiler()
    with compiler.activate():
        ToolTurn(TOOLS, "hermes", "auto").compile()
        first = _counts(compiler)
        # a part per tool and layout of the format's variants (its tags, whose parts <tools>
        # shares, and its fence's)
        assert first["tools.parts"] == len(TOOLS) * LAYOUTS < len(TOOLS) * VARIANTS
        assert first["compiled"] == 1
        # a new turn object over the same tools: nothing is compiled
        ToolTurn(TOOLS, "hermes", "auto").compile()
        assert _counts(compiler) == first
        # a subset: the turn over every tool is shared, only the subset's filter is compiled
        subset = {"type": "allowed_tools", "mode": "auto", "tools": NAMES[:2]}
        ToolTurn(TOOLS, "hermes", subset).compile()
        after = _counts(compiler)
        assert after["tools.parts"] == first["tools.parts"]
        # no tool schema compiled again; the filters' any-value grammar, once per layout (the
        # tags' json.dumps spacing, the fence's pretty-printing)
        assert after["tools.schema_grammars"] == first["tools.schema_grammars"] + LAYOUTS
        assert after["compiled"] == first["compiled"] + 1
        # another subset: its filter only
        other = {"type": "allowed_tools", "mode": "auto", "tools": NAMES[1:4]}
        ToolTurn(TOOLS, "hermes", other).compile()
        assert _counts(compiler) == {**after, "compiled": after["compiled"] + 1}
        after = _counts(compiler)
        # the same subsets again, and the whole set again: cache hits only
        ToolTurn(TOOLS, "hermes", subset).compile()
        ToolTurn(TOOLS, "hermes", other).compile()
        ToolTurn(TOOLS, "hermes", "auto").compile()
        assert _counts(compiler) == after
        # the parts are shared by the grammar of another mode over the same tools
        ToolTurn(TOOLS, "hermes", "required").grammar()
        assert _counts(compiler)["tools.parts"] == first["tools.parts"]


def test_parts_are_shared_across_turns_of_different_tool_lists() -> None:
    compiler = tm.GrammarCompiler()
    with compiler.activate():
        ToolTurn(TOOLS[:3], "hermes").grammar()
        assert _counts(compiler)["tools.parts"] == 3 * LAYOUTS
        ToolTurn(TOOLS[2:], "hermes").grammar()  # one tool in common
        assert _counts(compiler)["tools.parts"] == len(TOOLS) * LAYOUTS


def _tool(name: str, n_props: int) -> dict[str, Any]:
    props = {f"p{i}": {"type": "string"} for i in range(n_props)}
    return {"name": name, "parameters": {"type": "object", "properties": props}}


def test_a_tool_over_max_rules_is_named() -> None:
    """A tool whose own part has more rules than max_rules is refused by name; the others are
    far under it and their sum is over it, which is allowed."""
    small = [_tool(f"small_{i}", 2) for i in range(40)]
    big = _tool("big_one", 9)  # 9 properties in any order: hundreds of rules
    limits = tm.Limits(max_rules=200)
    compiler = tm.GrammarCompiler(limits=limits)
    with compiler.activate():
        turn = ToolTurn(small, "hermes", schema_options={"limits": limits})
        compiled = turn.compile()
        assert len(turn.grammar().rules) > limits.max_rules  # the sum is over the cap
        m = compiled.matcher()
        assert m.accept_bytes(b'<tool_call>\n{"name": "small_3", "arguments": {"p1": "x"}}')
        every = ToolTurn([*small, big], "hermes", schema_options={"limits": limits})
        with pytest.raises(LimitError) as info:
            every.compile(lazy=False)
        # lazily: when a reply enters its arguments
        m = every.compile(lazy=True).matcher()
        with pytest.raises(LimitError) as later:
            m.accept_bytes(b'<tool_call>\n{"name": "big_one", "arguments": ')
        assert later.value.tool == "big_one"
    e = info.value
    assert e.tool == "big_one"
    assert e.limit == "max_rules"
    assert e.pointer is not None
    assert "big_one" in str(e)


def test_a_tool_whose_schema_fails_is_named_with_its_pointer() -> None:
    bad = {
        "name": "broken",
        "parameters": {"type": "object", "properties": {"x": {"type": "no-such-type"}}},
    }
    with pytest.raises(SchemaError) as info:
        ToolTurn([*TOOLS, tm.Tool.from_openai(bad)], "hermes").compile()
    assert info.value.tool == "broken"
    assert info.value.pointer == "/properties/x"


def test_the_envelope_has_its_own_max_rules() -> None:
    """Hermes' auto envelope has 35 rules (root, 30 of prose, which avoids the ``<tools>``
    opener, and a ```` ```json ```` fence or a bare start whose call's head names one of the
    tools, calls, bare_calls, call, which the ``<tools>`` blocks share, h2_call, the fence's);
    each tool's part here 2, once per layout of the format's variants (its tags and
    ``<tools>``, its fence)."""
    empty = {"type": "object", "properties": {}, "additionalProperties": False}
    tools = [{"name": f"t{i}", "parameters": empty} for i in range(20)]
    fits = tm.Limits(max_rules=35)
    assert len(ToolTurn(tools, "hermes", schema_options={"limits": fits}).grammar().rules) == 115
    ToolTurn(tools, "hermes", schema_options={"limits": fits}).compile()
    limits = tm.Limits(max_rules=34)
    with pytest.raises(LimitError, match="envelope") as info:
        ToolTurn(tools, "hermes", schema_options={"limits": limits}).compile()
    assert info.value.tool is None


@pytest.mark.parametrize("cell", CELLS, ids=[_id(c) for c in CELLS])
def test_compiled_turn_table(cell: tuple[str, Mode, bool, bool]) -> None:
    """``test_grammar``'s table through ``ToolTurn.compile``: for a subset, the turn over
    every tool restricted by the subset's name filter; the same verdicts."""
    fmt_name, mode, parallel, reasoning = cell
    turn = _turn(fmt_name, mode, parallel, reasoning=reasoning)
    compiled = turn.compile()
    assert (compiled.filter is not None) == (0 < len(mode.allowed) < len(NAMES))
    good, bad = _good_and_bad(turn, mode, parallel)
    if _has_reasoning(fmt_name) and reasoning:
        from .completions import reasoning_text

        thought = reasoning_text(turn.format, THOUGHT)
        good = [(f"reasoning, {lb}", [thought, *p]) for lb, p in good]
        bad = [(f"reasoning, {lb}", [thought, *p]) for lb, p in bad]
    for label, pieces in good:
        assert accepts(compiled.matcher(), pieces), f"rejected valid completion ({label})"
    for label, pieces in bad:
        assert not accepts(compiled.matcher(), pieces), f"accepted bad completion ({label})"


def _walk(a: tm.CompiledGrammar, b: tm.CompiledGrammar, pieces: list[Piece]) -> tuple[bool, bool]:
    """Feed both matchers unit by unit, checking that they allow the same bytes and special
    tokens at every step while both are alive; their final verdicts."""
    ma, mb = a.matcher(), b.matcher()
    for p in pieces:
        units: list[Any] = [p] if isinstance(p, Special) else [bytes([x]) for x in p.encode()]
        for u in units:
            assert ma.allowed_bytes() == mb.allowed_bytes()
            assert ma.allowed_specials() == mb.allowed_specials()
            if isinstance(u, Special):
                ra, rb = ma.accept_special(u.text), mb.accept_special(u.text)
            else:
                ra, rb = ma.accept_bytes(u), mb.accept_bytes(u)
            assert ra == rb
            if not ra:
                return False, False
    assert ma.is_finished() == mb.is_finished()
    return ma.is_accepting(), mb.is_accepting()


PROPERTY_FORMATS = ["hermes", "qwen3_xml", "mistral_v11", "llama4_pythonic", "kimi_k2", "glm"]


@settings(max_examples=30, deadline=None)
@given(
    fmt=st.sampled_from(PROPERTY_FORMATS),
    allowed=st.sets(st.sampled_from(NAMES), min_size=1, max_size=len(NAMES) - 1),
    required=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_a_subset_switch_accepts_exactly_what_a_fresh_compile_accepts(
    fmt: str, allowed: set[str], required: bool, seed: int
) -> None:
    choice = {
        "type": "allowed_tools",
        "mode": "required" if required else "auto",
        "tools": sorted(allowed),
    }
    turn = ToolTurn(TOOLS, fmt, choice)
    switched = turn.compile()
    assert switched.filter is not None
    fresh = tm.GrammarCompiler().compile(turn.grammar())  # the subset's own grammar
    rng = random.Random(seed)
    for name in NAMES:
        args = VALID[name][rng.randrange(len(VALID[name]))]
        other = VALID[rng.choice(NAMES)][0]
        for a in (args, other):
            verdict = _walk(switched, fresh, render(turn.format, [(name, a)]))
            assert verdict[0] == verdict[1], (name, a)
            if a is args and verdict[0]:
                assert name in allowed


def test_prompt_is_byte_identical_across_subsets() -> None:
    rng = random.Random(7)
    prompts = set()
    for _ in range(10):
        sub = rng.sample(NAMES, rng.randrange(1, len(NAMES)))
        turn = ToolTurn(TOOLS, "hermes", {"type": "allowed_tools", "tools": sub})
        turn.compile()
        prompts.add(turn.prompt().encode())
    prompts.add(ToolTurn(TOOLS, "hermes", "auto").prompt().encode())
    assert len(prompts) == 1


@pytest.fixture(scope="module")
def qwen3_vocab() -> tm.Vocabulary:
    return tm.Vocabulary.from_quicktok("qwen3")


def test_filter_masks_equal_a_fresh_compile(qwen3_vocab: tm.Vocabulary) -> None:
    """With a vocabulary, the masks of a subset turn (the AND of the turn over every tool and
    the subset's filter) are the fresh subset grammar's, token for token."""
    sp = frozenset(qwen3_vocab.special.values())
    sub = {"type": "allowed_tools", "mode": "required", "tools": ["get_weather", "search_web"]}
    turn = ToolTurn(TOOLS, "hermes", sub, special_tokens=sp)
    switched = turn.compile(qwen3_vocab)
    fresh = tm.GrammarCompiler().compile(turn.grammar(), qwen3_vocab)
    ma, mb = switched.matcher(), fresh.matcher()
    for m in (ma, mb):
        assert m.accept_special("<tool_call>")
    for text in ("\n", '{"name": "', "get", "_weather", '", "arguments": {"city": "Oslo"}}'):
        assert (ma.mask() == mb.mask()).all(), text
        assert ma.accept_bytes(text.encode()) and mb.accept_bytes(text.encode())
    assert (ma.mask() == mb.mask()).all()
    ma.reset()
    assert ma.accept_special("<tool_call>") and ma.accept_bytes(b'\n{"name": "')
    (book,) = qwen3_vocab.encode_greedy(b"book")  # book_flight: advertised, not allowed
    assert not ma.accept_token(book)
    (get,) = qwen3_vocab.encode_greedy(b"get")
    assert ma.accept_token(get)


def test_two_thousand_tools_compile_under_the_default_limits() -> None:
    """Their rules together are past the default max_rules (20,000); each tool's are far under
    it, which is what the cap counts. (bench/many_tools.py compiles 2,000 JSONSchemaBench
    tools the same way.)"""
    tools = []
    for i in range(2000):
        props = {f"k{i}_{j}": {"type": ["string", "integer"][j % 2]} for j in range(4)}
        params = {"type": "object", "properties": props, "required": [f"k{i}_0"]}
        tools.append({"name": f"tool_{i}", "parameters": params})
    compiler = tm.GrammarCompiler()
    with compiler.activate():
        turn = ToolTurn(tools, "hermes", "required")
        eager = turn.compile(lazy=False)  # every schema up front
        lazy = turn.compile()  # the default over LAZY_MIN_TOOLS tools
    assert len(turn.grammar().rules) > tm.DEFAULT_LIMITS.max_rules
    # the whole grammar compiled as one is refused, and the error names the way that works
    with pytest.raises(LimitError, match=r"ToolTurn\.compile\(vocab\)") as err:
        tm.compile(turn.grammar())
    assert err.value.limit == "max_rules"
    for compiled in (eager, lazy):
        m = compiled.matcher()
        call = b'<tool_call>\n{"name": "tool_1234", "arguments": {"k1234_0": "x"}}'
        assert m.accept_bytes(call)
        assert not m.accept_bytes(b', "k1235_0"')  # another tool's key
