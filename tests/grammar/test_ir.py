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
    Node,
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


# -- seq / choice against their definitions ------------------------------------------------------


def _seq_by_definition(*items: Node) -> Node:
    """seq() as its docstring defines it: each item's parts (a sequence's items, else the item)
    in order, empty literals dropped, adjacent literals fused, NOTHING for a part that matches
    nothing."""
    flat: list[Node] = []
    for it in items:
        for p in it.items if isinstance(it, Seq) else (it,):
            if isinstance(p, Bytes):
                if not p.value:
                    continue
                if flat and isinstance(flat[-1], Bytes):
                    flat[-1] = Bytes(flat[-1].value + p.value)
                    continue
            elif (isinstance(p, ByteClass) and p.mask == 0) or p == NOTHING:
                return NOTHING
            flat.append(p)
    return EMPTY if not flat else flat[0] if len(flat) == 1 else Seq(tuple(flat))


def _choice_by_definition(*items: Node) -> Node:
    """choice() as defined: each item's alternatives in order, empty classes dropped, repeats
    dropped, the one-byte alternatives merged into one class where the first of them was."""
    flat: list[Node] = []
    for it in items:
        for p in it.items if isinstance(it, Choice) else (it,):
            if not (isinstance(p, ByteClass) and p.mask == 0) and p not in flat:
                flat.append(p)

    def one_byte(p: Node) -> int | None:
        if isinstance(p, ByteClass):
            return p.mask
        return 1 << p.value[0] if isinstance(p, Bytes) and len(p.value) == 1 else None

    masks = [one_byte(p) for p in flat]
    if sum(m is not None for m in masks) > 1:
        first = next(i for i, m in enumerate(masks) if m is not None)
        mask = 0
        for m in masks:
            mask |= m or 0
        merged = ByteClass(mask)
        rest = [p for p, m in zip(flat, masks, strict=True) if m is None]
        flat = [*rest[:first], merged, *rest[first:]]
    return NOTHING if not flat else flat[0] if len(flat) == 1 else Choice(tuple(flat))


def test_seq_and_choice_agree_with_their_definitions() -> None:
    """The constructors' fast paths (a sequence made by seq() spliced whole, two alternatives
    without the general loop) give what the definitions give, on random items: literals
    (empty, one byte, longer), classes (empty too), references, sequences made by seq() and
    sequences made directly (not normalised: empty or adjacent literals, an empty class)."""
    import random

    rng = random.Random(7)
    atoms: list[Node] = [
        EMPTY,
        lit("a"),
        lit("b"),
        lit("xy"),
        byte_class(0x30),
        byte_class((0x41, 0x5A)),
        ByteClass(0),
        RuleRef("r"),
        RuleRef("s"),
        star(lit("q")),
        NOTHING,
    ]

    def node(depth: int) -> Node:
        k = rng.randrange(6 if depth else 3)
        if k < 3:
            return rng.choice(atoms)
        parts = [node(depth - 1) for _ in range(rng.randrange(1, 4))]
        if k == 3:
            return seq(*parts)
        if k == 4:
            return choice(*parts)
        return Seq(tuple(parts))  # made directly: not normalised

    for _ in range(3000):
        items = [node(2) for _ in range(rng.randrange(0, 5))]
        assert seq(*items) == _seq_by_definition(*items), items
        assert choice(*items) == _choice_by_definition(*items), items
        # a sequence made by seq() spliced into another, and the same items made directly
        made = seq(*items)
        if isinstance(made, Seq):
            direct = Seq(made.items)
            for lead in atoms:
                assert seq(lead, made, lead) == seq(lead, direct, lead)
