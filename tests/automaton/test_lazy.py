"""The lazy build: cost follows what is read, not the grammar's automaton size."""

from __future__ import annotations

import time

import pytest

from tests.automaton.ir_grammars import json_grammar
from toolmask.automaton import build_automaton
from toolmask.errors import GrammarError, LimitError
from toolmask.grammar._ir import (
    Grammar,
    Repeat,
    Rule,
    RuleRef,
    Special,
    byte_class,
    byte_range,
    choice,
    lit,
    seq,
    star,
)
from toolmask.limits import Limits


def _huge_rule(name: str) -> Rule:
    # (a|b)* a (a|b){14}: 2^14 DFA positions if it were determinised eagerly
    ab = byte_class(ord("a"), ord("b"))
    return Rule(name, seq(star(ab), lit("a"), Repeat(ab, 14, 14)))


def _timed(g: Grammar, limits: Limits | None = None) -> float:
    t = time.perf_counter()
    if limits is None:
        build_automaton(g)
    else:
        build_automaton(g, limits=limits)
    return time.perf_counter() - t


def test_unreachable_huge_rule_costs_nothing() -> None:
    g = Grammar((Rule("root", lit("ok")), _huge_rule("unused")))
    assert _timed(g) < 0.05
    a = build_automaton(g)
    s = a.advance_bytes(a.initial, b"ok")
    assert s is not None and a.is_finished(s)


def test_reachable_branch_is_built_only_when_entered() -> None:
    g = Grammar((Rule("root", choice(lit("x"), seq(lit("y"), RuleRef("big")))), _huge_rule("big")))
    # small caps: an eager build would need far more positions than this
    lim = Limits(max_automaton_states=500)
    assert _timed(g, lim) < 0.05
    a = build_automaton(g, limits=lim)
    start = a.n_positions
    s = a.advance(a.initial, ord("x"))
    assert s is not None and a.is_accepting(s)
    assert a.n_positions - start < 5
    # entering the big rule and following one path is cheap and exact
    s = a.advance_bytes(a.initial, b"y" + b"ab" * 3 + b"a" + b"b" * 14)
    assert s is not None and a.is_accepting(s)
    assert a.advance_bytes(a.initial, b"y" + b"b" * 15) is not None
    s = a.advance_bytes(a.initial, b"y" + b"b" * 15)
    assert s is not None and not a.is_accepting(s)
    assert a.n_positions < 100


def test_up_front_checks_still_fire_on_unvisited_rules() -> None:
    # left recursion and repetition caps are found by the build, not by the first input
    g = Grammar(
        (
            Rule("root", choice(lit("x"), seq(lit("y"), RuleRef("e")))),
            Rule("e", choice(seq(RuleRef("e"), lit("+")), lit("1"))),
        )
    )
    with pytest.raises(GrammarError, match=r"left recursion: e -> e"):
        build_automaton(g)
    g2 = Grammar(
        (
            Rule("root", choice(lit("x"), seq(lit("y"), RuleRef("r")))),
            Rule("r", Repeat(lit("a"), 0, 101)),
        )
    )
    with pytest.raises(LimitError) as ei:
        build_automaton(g2, limits=Limits(max_repeat_unroll=100))
    assert ei.value.limit == "max_repeat_unroll"


def test_initial_state_is_checked_against_the_caps_at_build_time() -> None:
    # a start rule whose very first position already needs more than the cap
    g = Grammar((Rule("root", choice(*(lit(bytes([c, c])) for c in range(0x41, 0x5B)))),))
    with pytest.raises(LimitError) as ei:
        build_automaton(g, limits=Limits(max_automaton_states=3))
    assert ei.value.limit == "max_automaton_states"


def test_position_cap_reached_while_matching_rejects_and_stays_consistent() -> None:
    # a chain r0 ::= "a" r1 | "" ... : every further "a" is a new position
    n = 40
    rules = [Rule(f"r{i}", choice(seq(lit("a"), RuleRef(f"r{i + 1}")), lit(""))) for i in range(n)]
    g = Grammar((*rules, Rule(f"r{n}", lit(""))), "r0")
    a = build_automaton(g, limits=Limits(max_automaton_states=12))
    results = [a.advance_bytes(a.initial, b"a" * k) for k in range(1, n)]
    assert results[0] is not None  # the first few fit under the cap
    assert results[-1] is None  # later ones are rejected, not raised
    assert a.n_positions <= 12
    # what was built before the cap still works, identically
    assert a.advance_bytes(a.initial, b"a") is results[0]
    assert a.is_accepting(results[0])
    # with the default caps the same grammar is exact
    b = build_automaton(g)
    s = b.advance_bytes(b.initial, b"a" * n)
    assert s is not None and b.is_finished(s)


def test_string_interior_is_one_state_across_keys() -> None:
    # the lowering of a string language that excludes a key: a chain of tail references
    # (s0 -> s2 -> ...) all jumping into the same loop s1; every path into the loop must
    # reach the same interned state, as eager minimisation used to guarantee
    any_char = byte_range(0x20, 0x7E)
    not_q = byte_class((0x20, 0x21), (0x23, 0x7E))
    g = Grammar(
        (
            Rule("root", seq(lit('{"'), RuleRef("s0"), lit('":1}'))),
            Rule("s0", choice(seq(not_q, RuleRef("s1")), seq(lit("k"), RuleRef("s2")))),
            Rule(
                "s2",
                choice(
                    seq(byte_class((0x20, 0x21), (0x23, 0x64), (0x66, 0x7E)), RuleRef("s1")),
                    seq(lit("e"), RuleRef("s3")),
                    lit(""),
                ),
            ),
            Rule("s3", seq(any_char, RuleRef("s1"))),
            Rule("s1", choice(seq(not_q, RuleRef("s1")), lit(""))),
        )
    )
    a = build_automaton(g)
    s_direct = a.advance_bytes(a.initial, b'{"zz')
    s_via_k = a.advance_bytes(a.initial, b'{"kz')
    s_via_ke = a.advance_bytes(a.initial, b'{"kexyz')
    assert s_direct is not None
    assert s_direct is s_via_k is s_via_ke
    assert a.entry_names == ("root",)
    for text, ok in [
        (b'{"k":1}', True),
        (b'{"ke":1}', True),
        (b'{"kex":1}', True),
        (b'{"":1}', False),
    ]:
        s = a.advance_bytes(a.initial, text)
        assert (s is not None and a.is_accepting(s)) == ok, text


def test_specials_are_found_without_building() -> None:
    g = Grammar(
        (Rule("root", choice(lit("x"), seq(lit("y"), RuleRef("t")))), Rule("t", Special("<e>")))
    )
    a = build_automaton(g)
    s = a.advance(a.initial, ord("y"))
    assert s is not None and a.allowed_specials(s) == frozenset({"<e>"})
    s2 = a.advance_special(s, "<e>")
    assert s2 is not None and a.is_finished(s2)


def test_json_grammar_builds_in_milliseconds() -> None:
    g = json_grammar()
    best = min(_timed(g) for _ in range(3))
    assert best < 0.05
