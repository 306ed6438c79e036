"""Grammar passes: each preserves the language; UTF-8 class reconstruction."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.grammar.reference import matches, same_language, sample
from toolmask.grammar import (
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
    choice,
    lit,
    seq,
)
from toolmask.grammar._charset import ANY_CHAR, CharSet, utf8_node
from toolmask.grammar._gbnf import parse_gbnf
from toolmask.grammar.passes import fuse, inline_rules, remove_dead_rules, simplify, utf8_classes
from toolmask.grammar.passes.fuse import fuse_node
from toolmask.grammar.passes.utf8_classes import charset_of, decode_product, lead_length, products

# -- corpus --------------------------------------------------------------------------------------

GRAMMARS = {
    "json": r"""
root ::= value
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" (pair ("," pair)*)? "}"
pair ::= string ":" value
array ::= "[" (value ("," value)*)? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" hex{4})
hex ::= [0-9a-fA-F]
number ::= "-"? int frac? exp?
int ::= "0" | [1-9] [0-9]*
frac ::= "." [0-9]+
exp ::= [eE] [-+]? [0-9]+
unused ::= "never"
""",
    "arith": r"""
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")"
""",
    "unicode": r"""
root ::= a b c
a ::= [α-γ] | [δ-ω] | "x"
b ::= [^"\\]{1,2}
c ::= "é" | [😀-🙏] | .
""",
}


@pytest.fixture(params=sorted(GRAMMARS))
def grammar(request: pytest.FixtureRequest) -> Grammar:
    return parse_gbnf(GRAMMARS[request.param])


PASSES: list[Callable[[Grammar], Grammar]] = [
    remove_dead_rules,
    inline_rules,
    fuse,
    utf8_classes,
    simplify,
]


@pytest.mark.parametrize("pass_", PASSES, ids=lambda p: p.__name__)
def test_pass_preserves_language(grammar: Grammar, pass_: Callable[[Grammar], Grammar]) -> None:
    out = pass_(grammar)
    assert isinstance(out, Grammar)
    assert out.start == grammar.start
    same_language(grammar, out)


def test_simplify_is_idempotent(grammar: Grammar) -> None:
    once = simplify(grammar)
    assert simplify(once) == once


# -- dead rules ----------------------------------------------------------------------------------


def test_remove_dead_rules() -> None:
    g = parse_gbnf(GRAMMARS["json"])
    out = remove_dead_rules(g)
    assert "unused" not in out
    assert out.rule_names == [n for n in g.rule_names if n != "unused"]
    assert remove_dead_rules(out) is out


# -- inline --------------------------------------------------------------------------------------


def test_inline_single_use_non_recursive() -> None:
    g = parse_gbnf('root ::= a b b\na ::= "x" c\nb ::= "y"\nc ::= "z"')
    out = inline_rules(g)
    assert out.rule_names == ["root", "b"]
    assert out["root"].body == seq(lit("xz"), RuleRef("b"), RuleRef("b"))


def test_inline_keeps_recursive_and_start() -> None:
    g = parse_gbnf('root ::= list\nlist ::= "(" list ")" | ""')
    out = inline_rules(g)
    assert out.rule_names == ["root", "list"]
    g2 = parse_gbnf('root ::= "a" root | "b"')
    assert inline_rules(g2) == g2


# -- fuse ----------------------------------------------------------------------------------------


def test_fuse_flattens_and_fuses() -> None:
    raw = Seq(
        (
            Bytes(b"a"),
            Seq((ByteClass(1 << ord("b")), Bytes(b"c"))),
            Choice((Bytes(b"x"), Choice((Bytes(b"y"), ByteClass(1 << ord("z")))))),
        )
    )
    assert fuse_node(raw) == Seq((Bytes(b"abc"), byte_class(ord("x"), ord("y"), ord("z"))))


def test_fuse_drops_trivial_repeat_and_nothing() -> None:
    assert fuse_node(Repeat(Bytes(b"a"), 1, 1)) == Bytes(b"a")
    assert fuse_node(Seq((Bytes(b"a"), Choice(())))) == Choice(())
    assert fuse_node(Choice((Bytes(b"a"), Choice(())))) == Bytes(b"a")


# -- utf8 classes --------------------------------------------------------------------------------


def test_lead_length() -> None:
    assert lead_length(byte_class((0, 0x7F)).mask) == 1
    assert lead_length(byte_class((0xC2, 0xDF)).mask) == 2
    assert lead_length(byte_class(0xE0, 0xEF).mask) == 3
    assert lead_length(byte_class(0xF0, 0xF4).mask) == 4
    assert lead_length(byte_class(0x41, 0xC3).mask) is None
    assert lead_length(byte_class(0x80).mask) is None
    assert lead_length(byte_class(0xC0).mask) is None  # never valid
    assert lead_length(byte_class(0xF5).mask) is None


def test_decode_product() -> None:
    cont = byte_class((0x80, 0xBF)).mask
    assert decode_product((byte_class(0xCE).mask, byte_class((0xB1, 0xBF)).mask)) == CharSet.range(
        ord("α"), ord("ο")
    )
    assert decode_product((byte_class(0xE0).mask, cont, cont)) is None  # overlong forms
    assert decode_product((byte_class(0xED).mask, cont, cont)) is None  # surrogates
    assert decode_product((byte_class(0xF4).mask, cont, cont, cont)) is None  # above U+10FFFF
    assert decode_product((byte_class(0xCE).mask,)) is None  # incomplete
    assert decode_product((cont,)) is None  # lone continuation


def test_charset_of_mixed_choice() -> None:
    node = choice(lit("é"), utf8_node(CharSet.of("ab")), lit("ü"))
    assert charset_of(node) == CharSet.of("abéü")
    assert charset_of(seq(lit("a"), lit("b"))) is None  # two characters
    assert charset_of(RuleRef("x")) is None
    assert charset_of(Repeat(lit("a"), 0, None)) is None


def test_products_limit() -> None:
    big = Seq(tuple(Choice((Bytes(b"a"), Bytes(b"bb"))) for _ in range(12)))
    assert products(big) is None
    assert products(Seq(tuple(Choice((Bytes(b"a"), Bytes(b"bb"))) for _ in range(3)))) is not None


def test_utf8_classes_merges_alternatives() -> None:
    g = parse_gbnf('root ::= [α-γ] | [δ-ω] | "ab"')
    out = utf8_classes(g)
    body = out["root"].body
    assert isinstance(body, Choice)
    assert body.items[:2] == utf8_node(CharSet.range(ord("α"), ord("ω"))).items  # type: ignore[union-attr]
    assert charset_of(Choice(tuple(i for i in body.items if i != lit("ab")))) == CharSet.range(
        ord("α"), ord("ω")
    )
    assert lit("ab") in body.items


def test_utf8_classes_leaves_byte_level_alone() -> None:
    g = Grammar((Rule("root", choice(ByteClass(1 << 0xFF), lit("a"), Special("<x>"))),))
    assert utf8_classes(g) == g


_code_points = st.integers(0, 0x10FFFF)
_ranges = st.lists(st.tuples(_code_points, _code_points), max_size=6)


@given(_ranges)
def test_charset_round_trips_through_utf8(ranges: list[tuple[int, int]]) -> None:
    cs = CharSet.from_ranges((min(a, b), max(a, b)) for a, b in ranges)
    expected = cs - CharSet.range(0xD800, 0xDFFF)
    node = utf8_node(cs)
    got = charset_of(node)
    assert got == expected
    assert charset_of(fuse_node(node)) == expected


def test_any_char_round_trips() -> None:
    assert charset_of(utf8_node(ANY_CHAR)) == ANY_CHAR - CharSet.range(0xD800, 0xDFFF)


def test_reference_matcher_sanity() -> None:
    g = parse_gbnf(GRAMMARS["arith"])
    assert matches(g, b"1+(2*3)")
    assert not matches(g, b"1+")
    assert sample(g, random.Random(0)) is not None
