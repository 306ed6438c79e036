"""Hand-written IR grammars and a brute-force reference recogniser for the automaton tests."""

from __future__ import annotations

from toolmask.grammar._charset import MAX_CP, CharSet, utf8_node
from toolmask.grammar._ir import (
    Grammar,
    Node,
    Rule,
    RuleRef,
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


def json_grammar() -> Grammar:
    """RFC 8259 JSON (any value, optional whitespace), valid UTF-8 only, in IR."""
    ws = star(byte_class(0x20, 0x09, 0x0A, 0x0D))
    hexd = byte_class((0x30, 0x39), (0x41, 0x46), (0x61, 0x66))
    plain = utf8_node(CharSet.from_ranges([(0x20, 0x21), (0x23, 0x5B), (0x5D, MAX_CP)]))
    escape = seq(lit("\\"), choice(byte_class(*b'"\\/bfnrt'), seq(lit("u"), repeat(hexd, 4, 4))))
    digits = plus(byte_range(0x30, 0x39))
    rules = [
        Rule("root", seq(RuleRef("ws"), RuleRef("value"), RuleRef("ws"))),
        Rule("ws", ws),
        Rule(
            "value",
            choice(
                RuleRef("object"),
                RuleRef("array"),
                RuleRef("string"),
                RuleRef("number"),
                lit("true"),
                lit("false"),
                lit("null"),
            ),
        ),
        Rule(
            "object",
            seq(
                lit("{"),
                RuleRef("ws"),
                opt(
                    seq(
                        RuleRef("member"),
                        star(seq(RuleRef("ws"), lit(","), RuleRef("ws"), RuleRef("member"))),
                        RuleRef("ws"),
                    )
                ),
                lit("}"),
            ),
        ),
        Rule(
            "member",
            seq(RuleRef("string"), RuleRef("ws"), lit(":"), RuleRef("ws"), RuleRef("value")),
        ),
        Rule(
            "array",
            seq(
                lit("["),
                RuleRef("ws"),
                opt(
                    seq(
                        RuleRef("value"),
                        star(seq(RuleRef("ws"), lit(","), RuleRef("ws"), RuleRef("value"))),
                        RuleRef("ws"),
                    )
                ),
                lit("]"),
            ),
        ),
        Rule("string", seq(lit('"'), star(RuleRef("char")), lit('"'))),
        Rule("char", choice(plain, escape)),
        Rule(
            "number",
            seq(
                opt(lit("-")),
                choice(lit("0"), seq(byte_range(0x31, 0x39), star(byte_range(0x30, 0x39)))),
                opt(seq(lit("."), digits)),
                opt(seq(byte_class(*b"eE"), opt(byte_class(*b"+-")), digits)),
            ),
        ),
    ]
    return Grammar(tuple(rules), "root")


def brackets() -> Grammar:
    """Balanced parentheses: ``b ::= "(" b ")" b | ""`` (the second ``b`` is a tail call)."""
    return Grammar(
        (Rule("b", choice(seq(lit("("), RuleRef("b"), lit(")"), RuleRef("b")), lit(""))),),
        "b",
    )


def nested() -> Grammar:
    """``n ::= "[" n "]" | "x"``: recursion that is never a tail call."""
    return Grammar((Rule("n", choice(seq(lit("["), RuleRef("n"), lit("]")), lit("x"))),), "n")


def right_linear() -> Grammar:
    """The shape the schema compiler lowers string DFAs to: ``[a-z]([0-9][a-z])*`` as rules."""
    return Grammar(
        (
            Rule("root", seq(lit('"'), RuleRef("str3_s0"), lit('"'))),
            Rule("str3_s0", choice(seq(byte_range(0x61, 0x7A), RuleRef("str3_s1")), lit(""))),
            Rule("str3_s1", seq(byte_range(0x30, 0x39), RuleRef("str3_s0"))),
        ),
        "root",
    )


def single(body: Node) -> Grammar:
    return Grammar((Rule("root", body),), "root")


__all__ = [
    "brackets",
    "json_grammar",
    "nested",
    "right_linear",
    "single",
]
