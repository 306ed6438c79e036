"""The grammar IR: smart constructors, invariants, printing, hashing."""

from __future__ import annotations

import pytest

from toolmask.errors import GrammarError
from toolmask.grammar import (
    EMPTY,
    NOTHING,
    ByteClass,
    Bytes,
    Choice,
    Grammar,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    Special,
    byte_class,
    byte_range,
    choice,
    lit,
    opt,
    plus,
    repeat,
    seq,
    star,
)


def test_seq_flattens_and_fuses_literals() -> None:
    assert seq(lit("a"), seq(lit("b"), RuleRef("x")), lit("")) == Seq((Bytes(b"ab"), RuleRef("x")))
    assert seq() == EMPTY
    assert seq(lit("a"), NOTHING) == NOTHING
    assert seq(lit("a")) == Bytes(b"a")


def test_choice_flattens_dedupes_and_merges_single_bytes() -> None:
    assert choice(lit("a"), choice(lit("b"), lit("a"))) == byte_class(ord("a"), ord("b"))
    assert choice(lit("ab"), lit("ab")) == Bytes(b"ab")
    assert choice() == NOTHING
    assert choice(NOTHING, lit("x")) == Bytes(b"x")


def test_repeat_shortcuts() -> None:
    assert repeat(lit("a"), 1, 1) == Bytes(b"a")
    assert repeat(lit("a"), 0, 0) == EMPTY
    assert repeat(NOTHING, 0, None) == EMPTY
    assert repeat(NOTHING, 1, None) == NOTHING
    assert (opt(lit("a")), star(lit("a")), plus(lit("a"))) == (
        Repeat(Bytes(b"a"), 0, 1),
        Repeat(Bytes(b"a"), 0, None),
        Repeat(Bytes(b"a"), 1, None),
    )
    with pytest.raises(ValueError, match="bounds"):
        Repeat(Bytes(b"a"), 3, 1)


def test_byte_class() -> None:
    c = byte_class(0x41, (0x61, 0x63))
    assert c.ranges() == [(0x41, 0x41), (0x61, 0x63)]
    assert 0x62 in c and 0x64 not in c
    assert c.negate().negate() == c
    assert byte_range(0, 255).negate().is_empty()
    with pytest.raises(ValueError):
        ByteClass(1 << 256)


def test_grammar_invariants() -> None:
    with pytest.raises(GrammarError, match="defined twice"):
        Grammar((Rule("root", EMPTY), Rule("root", EMPTY)))
    with pytest.raises(GrammarError, match="start rule"):
        Grammar((Rule("a", EMPTY),))
    with pytest.raises(GrammarError, match="undefined rule"):
        Grammar((Rule("root", RuleRef("b")),))


def test_with_rule_replaces_one_body_and_checks_it() -> None:
    g = Grammar(
        (Rule("root", seq(lit("a"), RuleRef("x"))), Rule("x", lit("b")), Rule("y", lit("c")))
    )
    h = g.with_rule("x", choice(lit("d"), RuleRef("y")))
    assert h == Grammar(
        (
            Rule("root", seq(lit("a"), RuleRef("x"))),
            Rule("x", choice(lit("d"), RuleRef("y"))),
            Rule("y", lit("c")),
        )
    )
    assert h["x"].body == choice(lit("d"), RuleRef("y")) and g["x"].body == lit("b")
    assert h.rule_names == g.rule_names and h.start == g.start
    with pytest.raises(GrammarError, match="undefined rule"):
        g.with_rule("x", RuleRef("nowhere"))
    with pytest.raises(GrammarError, match="not defined"):
        g.with_rule("z", lit("e"))


def test_printing_and_hashing() -> None:
    g = Grammar(
        (
            Rule("x", lit("b")),
            Rule("root", seq(lit('a"'), opt(choice(RuleRef("x"), lit("cd"))), Special("<t>"))),
        )
    )
    assert str(g) == 'root ::= "a\\"" (x | "cd")? <\'<t>\'>\nx ::= "b"\n'
    same = Grammar(g.rules, g.start)
    assert same == g and hash(same) == hash(g)
    assert same.fingerprint() == g.fingerprint()
    assert Grammar(g.rules, "x").fingerprint() != g.fingerprint()
    assert str(Choice(())) == "[]"
