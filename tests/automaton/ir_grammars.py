"""Hand-written IR grammars and a brute-force reference recogniser for the automaton tests."""

from __future__ import annotations

from functools import cache

from toolmask.grammar._charset import MAX_CP, CharSet, utf8_node
from toolmask.grammar._ir import (
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

Symbol = int | str  # a byte, or the text of a special token


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


# -- reference recogniser -------------------------------------------------------------------------


def reference_accepts(grammar: Grammar, symbols: list[Symbol] | bytes) -> bool:
    """Does ``grammar`` derive exactly ``symbols``? Memoised top-down search over end positions.

    Terminates for grammars without left recursion (the automaton rejects the others).
    """
    syms: tuple[Symbol, ...] = tuple(symbols)
    n = len(syms)

    @cache
    def ends(node: Node, i: int) -> frozenset[int]:
        if isinstance(node, Bytes):
            v = node.value
            j = i + len(v)
            return frozenset((j,)) if j <= n and syms[i:j] == tuple(v) else frozenset()
        if isinstance(node, ByteClass):
            s = syms[i] if i < n else None
            return frozenset((i + 1,)) if isinstance(s, int) and s in node else frozenset()
        if isinstance(node, Special):
            return frozenset((i + 1,)) if i < n and syms[i] == node.text else frozenset()
        if isinstance(node, Seq):
            cur = frozenset((i,))
            for item in node.items:
                cur = frozenset(e for p in cur for e in ends(item, p))
            return cur
        if isinstance(node, Choice):
            return frozenset(e for item in node.items for e in ends(item, i))
        if isinstance(node, RuleRef):
            return ends(grammar[node.name].body, i)
        assert isinstance(node, Repeat)
        layer = frozenset((i,))
        out: set[int] = set(layer) if node.min == 0 else set()
        seen: set[int] = set(out)
        k = 0
        while layer and (node.max is None or k < node.max):
            k += 1
            layer = frozenset(e for p in layer for e in ends(node.item, p))
            if k >= node.min:
                if node.max is None and layer <= seen:
                    break
                out |= layer
                seen |= layer
        return frozenset(out)

    return n in ends(grammar[grammar.start].body, 0)


__all__ = [
    "brackets",
    "json_grammar",
    "nested",
    "reference_accepts",
    "right_linear",
    "single",
]
