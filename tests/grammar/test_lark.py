"""Lark (llguidance dialect) frontend and printer."""

from __future__ import annotations

import importlib.util

import pytest

from tests.grammar.reference import matches, same_language
from toolmask.errors import GrammarError, GrammarSyntaxError
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
    lit,
    seq,
)
from toolmask.grammar._charset import CharSet, utf8_node
from toolmask.grammar._gbnf import parse_gbnf
from toolmask.grammar._lark import (
    COMMON_TERMINALS,
    lark_rule_name,
    lark_terminal_name,
    parse_lark,
    to_lark,
)
from toolmask.grammar.passes import simplify

HAS_REGEX = importlib.util.find_spec("toolmask.grammar._regex") is not None
needs_regex = pytest.mark.skipif(not HAS_REGEX, reason="toolmask.grammar._regex not built yet")

# -- grammars ------------------------------------------------------------------------------------

ARITH_LARK = r"""
// arithmetic, left-recursive as llguidance prefers
start: expr
?expr: expr "+" term
    | expr "-" term
    | term
?term: term "*" factor | term "/" factor | factor
?factor: NUMBER | "(" expr ")" | "-" factor
%import common.NUMBER
"""

JSON_LARK = r"""
%llguidance {}
start: value
?value: object
      | array
      | string
      | SIGNED_NUMBER      -> number
      | "true" | "false" | "null"
array  : "[" [value ("," value)*] "]"
object : "{" [pair ("," pair)*] "}"
pair   : string ":" value
string : ESCAPED_STRING
%import common (ESCAPED_STRING, SIGNED_NUMBER)
"""

UNICODE_LARK = r"""
start: GREEK " " NQ " " TAIL <|im_end|>
GREEK: /[α-ω]/+
NQ: /[^"\\]/~1..3
TAIL: "é\u00e9😀\x41" | "a".."f" | "ok"i
"""

REPEAT_LARK = r"""
start: a~3 b{2,} c~1..4 d{,2} e{2} f* g+ [h] i?
a: "a"
b: "b"
c: "cc"
d: "d" | "D"
e: ("e" "E")
f: /[f-h]/
g: "\t\r\n\\\""
h: "h"
i: "i"
"""

CORPUS = [ARITH_LARK, JSON_LARK, UNICODE_LARK, REPEAT_LARK]


# -- parsing -------------------------------------------------------------------------------------


def test_parse_rules_and_terminals() -> None:
    g = parse_lark(ARITH_LARK)
    assert g.start == "start"
    assert g.rule_names == ["start", "expr", "term", "factor", "NUMBER"]
    for ok in (b"1+2*3", b"(1.5e3-2)/-4", b"7"):
        assert matches(g, ok), ok
    for bad in (b"1+", b"(1", b"1 + 2", b""):
        assert not matches(g, bad), bad


def test_parse_json() -> None:
    g = parse_lark(JSON_LARK)
    for ok in (b'{"a":[1,-2.5e3,true,null,"x\\"y"]}', b"[]", b'"\xc3\xa9"'):
        assert matches(g, ok), ok
    for bad in (b"{", b'{"a"}', b"[1,]", b'"a\nb"'):
        assert not matches(g, bad), bad


def test_parse_strings_ranges_and_case_insensitive() -> None:
    g = parse_lark(UNICODE_LARK)
    tail = g["TAIL"].body
    assert isinstance(tail, Choice)
    assert lit("éé😀A") in tail.items
    only_tail = Grammar((Rule("root", tail),))
    assert matches(only_tail, b"c")
    assert matches(only_tail, b"oK")
    assert not matches(only_tail, b"g")


def test_parse_string_escapes() -> None:
    g = parse_lark(r'start: "\x41\u00e9\U0001F600\n\r\t\\\"\'\0"')
    assert g["start"].body == lit("Aé😀\n\r\t\\\"'\0")


def test_parse_unicode_regex_classes_without_regex_module() -> None:
    g = parse_lark(UNICODE_LARK)
    assert g["GREEK"].body == Repeat(utf8_node(CharSet.range(ord("α"), ord("ω"))), 1, None)
    assert g["NQ"].body == Repeat(utf8_node(CharSet.of('"\\').complement()), 1, 3)


def test_parse_repetition_forms() -> None:
    g = parse_lark(REPEAT_LARK)
    body = g["start"].body
    assert isinstance(body, Seq)
    reps = [(i.min, i.max) for i in body.items if isinstance(i, Repeat)]
    assert reps == [(3, 3), (2, None), (1, 4), (0, 2), (2, 2), (0, None), (1, None), (0, 1), (0, 1)]


def test_special_tokens_and_alias_and_options() -> None:
    g = parse_lark('start[capture]: <|python_tag|> x -> y\nx.2: "x"\n')
    assert g["start"].body == seq(Special("<|python_tag|>"), RuleRef("x"))


def test_common_imports() -> None:
    g = parse_lark("start: WS INT CNAME\n%import common (WS, INT, CNAME)")
    assert matches(g, b" \t42_abc9")
    assert "ESCAPED_STRING" in COMMON_TERMINALS


def test_import_with_alias() -> None:
    g = parse_lark("start: N\n%import common.INT -> N")
    assert matches(g, b"12")


@needs_regex
def test_general_regex_terminals() -> None:
    g = parse_lark(r'start: /[a-z]+(-[a-z]+)*/ "." /\d{2}/ /a\/b/')
    assert matches(g, b"ab-cd.12a/b")
    assert not matches(g, b"ab-.12a/b")


@needs_regex
def test_regex_errors_point_into_the_regex() -> None:
    with pytest.raises(GrammarSyntaxError) as info:
        parse_lark('start: "x"\nA: /ab(c/')
    assert info.value.line == 2
    assert info.value.message.startswith("in regex: ")


def test_regex_flags_are_rejected() -> None:
    with pytest.raises(GrammarSyntaxError, match="flags") as info:
        parse_lark("start: /[a-z]/i")
    assert (info.value.line, info.value.column) == (1, 15)


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ("start: foo\n", 1, 8, "undefined name 'foo'"),
        ('item: "x"\n', 1, 10, "missing start rule 'start'"),
        ('start: "x"\n%ignore " "\n', 2, 1, "%ignore is not supported"),
        ('start: x\nx: %json {"type": "object"}', 2, 4, "%json"),
        ("start: @sub", 1, 8, "subgrammar"),
        ("start: <[128010]>", 1, 8, "token ids"),
        ('start: A\nA: "a" b\nb: "b"', 2, 8, "terminal A cannot refer to rule b"),
        ("start: A\nA: <|x|>", 2, 1, "terminal A cannot contain a special token"),
        ('start[lazy]: "x"', 1, 6, "lexeme option 'lazy'"),
        ('start: "abc', 1, 8, "unterminated string"),
        ('start: "\\q"', 1, 9, "unknown escape"),
        ('start: "a"~3..1', 1, 11, "bad repetition"),
        ('start: "a"{3,1}', 1, 11, "bad repetition"),
        ('start: ("a"', 1, 8, "unclosed '('"),
        ('start: "a"\nstart: "b"', 2, 1, "defined twice"),
        ("%import foo.BAR", 1, 9, "only '%import common'"),
        ("start: X\n%import common.NOPE", 2, 16, "common.NOPE is not supported"),
        ('start{x}: "a"', 1, 6, "templates"),
        ('start: "a" )', 1, 12, "unexpected ')'"),
    ],
)
def test_syntax_errors_have_line_and_column(
    text: str, line: int, column: int, fragment: str
) -> None:
    with pytest.raises(GrammarSyntaxError) as info:
        parse_lark(text)
    err = info.value
    assert fragment in err.message
    assert (err.line, err.column) == (line, column)
    assert str(err).startswith(f"lark:{line}:{column}: ")


# -- printing ------------------------------------------------------------------------------------


def test_print_terminals_and_rules() -> None:
    text = to_lark(parse_lark(ARITH_LARK))
    assert text == (
        "start: expr\n"
        'expr: expr "+" term | expr "-" term | term\n'
        'term: term "*" factor | term "/" factor | factor\n'
        'factor: NUMBER | "(" expr ")" | "-" factor\n'
        'NUMBER: /[0-9]/+ /[Ee]/ /[+\\-]/? /[0-9]/+ | (/[0-9]/+ "." /[0-9]/* | "." /[0-9]/+)'
        " (/[Ee]/ /[+\\-]/? /[0-9]/+)? | /[0-9]/+\n"
    )


def test_print_unicode() -> None:
    text = to_lark(parse_lark(UNICODE_LARK))
    assert "GREEK: /[α-ω]/+\n" in text
    assert 'NQ: /[^"\\\\]/~1..3\n' in text
    assert text.startswith('start: GREEK " " NQ " " TAIL <|im_end|>\n')


@pytest.mark.parametrize("text", CORPUS)
def test_printer_is_canonical(text: str) -> None:
    g = parse_lark(text)
    printed = to_lark(g)
    again = parse_lark(printed)
    assert to_lark(again) == printed
    same_language(g, again)


@pytest.mark.parametrize("text", CORPUS)
def test_print_simplified(text: str) -> None:
    g = parse_lark(text)
    again = parse_lark(to_lark(simplify(g)))
    same_language(g, again, seed=3)


def test_gbnf_to_lark_round_trip() -> None:
    g = parse_gbnf(
        r"""
root ::= "[" ws (item ("," ws item)*)? "]"
item ::= "\"" [^"\\\x00-\x1F]* "\"" | [0-9]+ | [α-ω]{2,3}
ws ::= [ \t\n]*
"""
    )
    lark = to_lark(g)
    assert lark.startswith("start: ")
    same_language(g, parse_lark(lark))


def test_names() -> None:
    assert lark_rule_name("jsonValue") == "json_value"
    assert lark_rule_name("9lives") == "r9_lives"
    assert lark_rule_name("a-b") == "a_b"
    assert lark_terminal_name("jsonString") == "JSON_STRING"
    assert lark_terminal_name("__") == "T"
    g = Grammar(
        (
            Rule("root", seq(RuleRef("start"), RuleRef("Item"), RuleRef("rec"))),
            Rule("start", lit("s")),
            Rule("Item", seq(lit("i"), RuleRef("rec"))),
            Rule("rec", Choice((lit("r"), seq(lit("("), RuleRef("rec"), lit(")"))))),
        ),
    )
    assert to_lark(g) == (
        "start: START item rec\n"  # 'start' is taken by the start rule, its own name is free
        'START: "s"\n'
        'item: "i" rec\n'
        'rec: "r" | "(" rec ")"\n'
    )


def test_terminals_are_not_nullable_nor_special() -> None:
    g = Grammar(
        (
            Rule("root", seq(RuleRef("opt"), RuleRef("tok"), RuleRef("word"))),
            Rule("opt", Repeat(lit("x"), 0, 1)),
            Rule("tok", seq(Special("<|a|>"), lit("y"))),
            Rule("word", Repeat(lit("w"), 1, None)),
        ),
    )
    assert to_lark(g) == ('start: opt tok WORD\nopt: "x"?\ntok: <|a|> "y"\nWORD: "w"+\n')


def test_empty_and_nothing() -> None:
    g = Grammar((Rule("root", Choice((Bytes(b""), lit("a")))), Rule("n", Choice(()))))
    text = to_lark(g)
    assert text == 'start: "a"?\nN: /[^\\x00-\\u{10FFFF}]/\n'
    assert parse_lark(text)["N"].body == Choice(())


def test_control_characters_in_literals() -> None:
    g = Grammar((Rule("root", lit("a\x00b\u2028")),))
    text = to_lark(g)
    assert text == 'start: "a" /\\x00/ "b" /\\u2028/\n'
    assert matches(parse_lark(text), "a\x00b\u2028".encode())


def test_byte_level_constructs_are_rejected() -> None:
    with pytest.raises(GrammarError, match="code points"):
        to_lark(Grammar((Rule("root", ByteClass(1 << 0xFF)),)))
    with pytest.raises(GrammarError, match="special token"):
        to_lark(Grammar((Rule("root", Special("[TOOL_CALLS]")),)))


# -- llguidance acceptance (extra; skipped when missing) -------------------------------------------


@pytest.mark.parametrize("text", CORPUS)
def test_llguidance_accepts_printed_lark(text: str) -> None:
    llguidance = pytest.importorskip("llguidance")
    grammar = llguidance.grammar_from("lark", to_lark(parse_lark(text)))
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    assert not is_error, messages


@pytest.mark.parametrize("text", CORPUS)
def test_llguidance_accepts_our_input_corpus(text: str) -> None:
    llguidance = pytest.importorskip("llguidance")
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(
        llguidance.grammar_from("lark", text)
    )
    assert not is_error, messages
