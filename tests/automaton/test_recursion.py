"""Deep recursion: the stack works up to ``max_stack_depth`` and rejects (never raises) past it."""

from __future__ import annotations

from tests.automaton.ir_grammars import brackets, nested
from toolmask.automaton import build_automaton
from toolmask.grammar._ir import Grammar, Rule, RuleRef, choice, lit, seq
from toolmask.limits import Limits


def test_brackets_5000_deep() -> None:
    # after n "(" the live stacks are n return positions, plus the inner rule's start (which
    # wants another "(") when there is room for it
    a = build_automaton(brackets(), limits=Limits(max_stack_depth=5_000))
    doc = b"(" * 5000 + b")" * 5000
    s = a.advance_bytes(a.initial, doc)
    assert s is not None and a.is_accepting(s)
    mid = a.advance_bytes(a.initial, b"(" * 5000)
    assert mid is not None
    assert max(len(st) for st in mid.stacks) == 5000
    assert not a.is_accepting(mid)
    assert a.allowed_bytes(mid) == 1 << ord(")")
    assert a.advance(mid, ord("(")) is None


def test_brackets_beyond_the_depth_cap_are_rejected() -> None:
    a = build_automaton(brackets(), limits=Limits(max_stack_depth=100))
    below = a.advance_bytes(a.initial, b"(" * 99)
    assert below is not None
    assert a.allowed_bytes(below) == (1 << ord("(")) | (1 << ord(")"))
    ok = a.advance(below, ord("("))
    assert ok is not None
    assert a.allowed_bytes(ok) == 1 << ord(")")  # exact: another "(" would die
    assert a.advance(ok, ord("(")) is None
    assert a.advance_bytes(a.initial, b"(" * 101 + b")" * 101) is None
    s = a.advance_bytes(a.initial, b"(" * 100 + b")" * 100)
    assert s is not None and a.is_accepting(s)


def test_non_tail_recursion_depth() -> None:
    a = build_automaton(nested(), limits=Limits(max_stack_depth=3_001))
    doc = b"[" * 3000 + b"x" + b"]" * 3000
    s = a.advance_bytes(a.initial, doc)
    assert s is not None and a.is_accepting(s)
    a2 = build_automaton(nested(), limits=Limits(max_stack_depth=1_000))
    assert a2.advance_bytes(a2.initial, doc) is None


def test_tail_recursion_is_unbounded() -> None:
    # sequences of siblings: "()()()..." never deepens the stack thanks to the tail call
    a = build_automaton(brackets(), limits=Limits(max_stack_depth=4))
    s = a.advance_bytes(a.initial, b"()" * 20_000)
    assert s is not None and a.is_accepting(s)
    assert max(len(st) for st in s.stacks) == 1


def test_mutual_recursion_through_several_rules() -> None:
    g = Grammar(
        (
            Rule("a", choice(seq(lit("<"), RuleRef("b"), lit(">")), lit("."))),
            Rule("b", choice(seq(lit("{"), RuleRef("a"), lit("}")), lit(","))),
        ),
        "a",
    )
    a = build_automaton(g, limits=Limits(max_stack_depth=2_001))
    doc = b"<{" * 1000 + b"." + b"}>" * 1000
    s = a.advance_bytes(a.initial, doc)
    assert s is not None and a.is_accepting(s)
    assert a.advance_bytes(a.initial, b"<{" * 1000 + b"." + b"}>" * 999 + b">") is None


def test_too_many_stacks_is_dead_not_an_error() -> None:
    # a deliberately ambiguous grammar: the number of parses grows with the input
    g = Grammar(
        (
            Rule("s", choice(seq(RuleRef("s2"), RuleRef("s")), lit(""))),
            Rule(
                "s2", choice(seq(lit("a"), RuleRef("s2"), lit("b")), lit("a"), lit("ab"), lit(""))
            ),
        ),
        "s",
    )
    # s2 is nullable and s -> s2 s: left recursion through the nullable s2
    try:
        build_automaton(g)
    except Exception as e:
        assert "left recursion" in str(e)
    g2 = Grammar(
        (
            Rule(
                "x",
                choice(seq(lit("a"), RuleRef("x"), lit("b")), seq(lit("a"), RuleRef("x")), lit("")),
            ),
        ),
        "x",
    )
    a = build_automaton(g2, limits=Limits(max_stacks=8, max_stack_depth=1_000))
    s = a.advance_bytes(a.initial, b"a" * 4)
    assert s is not None
    assert a.advance_bytes(a.initial, b"a" * 40) is None  # more than 8 live parses: dead
    big = build_automaton(g2, limits=Limits(max_stacks=100_000, max_stack_depth=1_000))
    s = big.advance_bytes(big.initial, b"a" * 40 + b"b" * 40)
    assert s is not None and big.is_accepting(s)
