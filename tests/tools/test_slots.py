"""Name slots (issue 38): a subset's name filter writes its calls once, with a choice of names.

* the trie of names is the choice of the names: the same bytes allowed at every step, names
  that are prefixes of others included;
* a template that writes the name twice on one path, or under a repetition, or not at all, is
  refused (the choice of names would then not be the union of the calls);
* in every format with a grammar, auto and required: the filter written with slots and the
  filter written call by call allow the same bytes and special tokens at every step of calls
  to allowed and to other tools; the formats whose calls differ only in the name (hermes and
  the JSON envelopes) do use the slots;
* the slots read from a lazy turn's ``any`` grammar are the ones built from the tools;
* names that are prefixes of one another: a subset switch accepts what a fresh compile of the
  subset's grammar accepts.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest

import toolmask as tm
from toolmask.grammar import Grammar, Rule, RuleRef, choice, lit, repeat, seq
from toolmask.tools import FORMATS, LazyTurnGrammar, Tool, ToolTurn, get_format
from toolmask.tools._grammar import build_name_filter, name_slots
from toolmask.tools._slots import SLOT_NAME, names_choice, split_slot

from .completions import render
from .test_parts import _walk
from .toolset import NAMES, TOOLS, VALID

GRAMMAR_FORMATS = sorted(n for n in FORMATS if get_format(n).has_grammar)


def _byte_grammar(node: tm.grammar.Node) -> tm.CompiledGrammar:
    return tm.GrammarCompiler().compile(Grammar((Rule("root", node),)))


@pytest.mark.parametrize("count", [3, 8, 60])
def test_the_choice_of_names_accepts_exactly_the_names(count: int) -> None:
    # 8 and more: both automaton builders read the choice as its trie
    base = ["get", "get_x", "get_xy", "gel", "a", "ab", "b-c", "zz9"]
    names = (base + [f"get_x{i}" for i in range(count)])[:count]
    trie = _byte_grammar(names_choice(reversed(names)))
    flat = _byte_grammar(choice(*(lit(n) for n in names)))
    texts = {n[:i] + x for n in names for i in range(len(n) + 1) for x in ("", "_", "y", "x")}
    for text in sorted(texts):
        mt, mf = trie.matcher(), flat.matcher()
        for b in text.encode():
            assert mt.allowed_bytes() == mf.allowed_bytes(), text
            ok = mt.accept_bytes(bytes([b]))
            assert ok == mf.accept_bytes(bytes([b])), text
            if not ok:
                break
        else:
            assert mt.is_accepting() == mf.is_accepting() == (text in names), text


def test_a_template_must_write_the_name_once_on_every_path() -> None:
    slot = lit(SLOT_NAME)
    assert split_slot(seq(lit("{"), slot, lit("}"))) is not None
    assert split_slot(choice(seq(lit("a"), slot), seq(lit("b"), slot))) is not None
    assert split_slot(seq(slot, lit(","), slot)) is None  # twice on one path
    assert split_slot(repeat(seq(lit(","), slot), 0, 3)) is None  # under a repetition
    assert split_slot(lit("no name")) is None
    assert split_slot(seq(lit(f"<{SLOT_NAME}>{SLOT_NAME}"))) is None
    assert split_slot(seq(RuleRef("r"), slot)) is not None


@pytest.mark.parametrize("mode", ["auto", "required"])
@pytest.mark.parametrize("fmt", GRAMMAR_FORMATS)
def test_a_filter_with_slots_allows_what_the_filter_call_by_call_allows(
    fmt: str, mode: str
) -> None:
    allowed = NAMES[1:4]
    turn = ToolTurn(TOOLS, fmt, {"type": "allowed_tools", "mode": mode, "tools": allowed})
    compiler = tm.GrammarCompiler()
    cache = compiler.turns
    with compiler.activate():
        slots = name_slots(turn.tools, turn.format, mode, turn.options, cache)
        args = (turn.tools, turn.format, turn.tool_choice, turn.options, cache)
        plain = compiler.compile(build_name_filter(*args))
        slotted = compiler.compile(build_name_filter(*args, slots=slots))
    if fmt in ("hermes", "qwen3", "llama3_json", "mistral"):
        assert slots.names == set(NAMES)
    for name in NAMES:
        calls = [(name, VALID[name][0])]
        two = [(allowed[0], VALID[allowed[0]][0]), (name, VALID[name][-1])]
        for c in (calls, two):
            verdict = _walk(plain, slotted, render(turn.format, c))
            assert verdict[0] == verdict[1], (name, c)


@pytest.mark.parametrize("mode", ["auto", "required"])
@pytest.mark.parametrize("fmt", ["hermes", "llama3_json", "kimi_k2", "mistral"])
def test_a_subset_over_the_same_slots_is_the_shell_with_its_names(fmt: str, mode: str) -> None:
    """The second and later subsets over one list's slots are the first filter with its
    choice of names replaced: the same grammar, rule for rule, as one written from scratch."""
    turn = ToolTurn(TOOLS, fmt, mode)
    compiler = tm.GrammarCompiler()
    cache = compiler.turns
    with compiler.activate():
        slots = name_slots(turn.tools, turn.format, mode, turn.options, cache)
        assert slots.names
        subsets = [NAMES[1:4], NAMES[:1], NAMES[2:], list(reversed(NAMES[::2]))]
        for i, allowed in enumerate(subsets):
            sub = turn.with_tool_choice({"type": "allowed_tools", "mode": mode, "tools": allowed})
            args = (sub.tools, sub.format, sub.tool_choice, sub.options, cache)
            fresh = dataclasses.replace(slots, shells={})  # nothing written over it yet
            want = build_name_filter(*args, slots=fresh)
            got = build_name_filter(*args, slots=slots)
            assert len(slots.shells) == 1
            assert got == want, (i, allowed)
            assert got.rules == want.rules and got.hint == want.hint


def test_the_slots_of_a_lazy_turn_are_those_built_from_the_tools() -> None:
    turn = ToolTurn(TOOLS, "hermes", "required")
    compiler = tm.GrammarCompiler()
    with compiler.activate():
        lazy = turn.compile(lazy=True)
        assert isinstance(lazy, LazyTurnGrammar)
        base = lazy.lazy_turn
        cache = compiler.turns
        read = name_slots(
            turn.tools, turn.format, "required", turn.options, cache, (base.any, base.call_rules)
        )
        built = name_slots(turn.tools, turn.format, "required", turn.options, cache)
    assert read.names == built.names == set(NAMES)
    assert read.templates == built.templates


@pytest.mark.parametrize("fmt", ["hermes", "llama3_json", "kimi_k2"])
def test_names_that_are_prefixes_of_each_other(fmt: str) -> None:
    names = ["get", "get_x", "get_xy", "gel", "ge"]
    tools = [Tool(n, parameters={"type": "object", "properties": {}}) for n in names]
    for k in (1, 2, 3):
        for sub in itertools.combinations(names, k):
            choice_ = {"type": "allowed_tools", "mode": "required", "tools": list(sub)}
            turn = ToolTurn(tools, fmt, choice_)
            switched = turn.compile(lazy=True)
            assert switched.filter is not None
            fresh = tm.GrammarCompiler().compile(turn.grammar())
            for name in names:
                verdict = _walk(switched, fresh, render(turn.format, [(name, {})]))
                assert verdict[0] == verdict[1] == (name in sub), (sub, name)
