"""Tests of the ECMA-262 regex frontend: differential against Python's ``re`` where the dialects
agree, ECMA-specific classes, anchors in odd places, non-BMP code points, errors and limits, the
IR lowering, and the JSON-Schema-Test-Suite ``pattern`` cases."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.grammar.reference import ir_fullmatch
from tests.vendored import SUITE_DIR
from toolmask.errors import GrammarError, GrammarSyntaxError, LimitError
from toolmask.grammar._charset import CharSet
from toolmask.grammar._ir import (
    Grammar,
    RuleRef,
    iter_nodes,
)
from toolmask.grammar._regex import grammar_from_regex, regex_dfa, regex_node, regex_rules
from toolmask.grammar._regex_syntax import SPACE_CHARS, parse_regex
from toolmask.limits import Limits

# -- differential testing against Python's re -----------------------------------------------------

ALPHABET = "ab0_ é🐲."

atoms = st.sampled_from(
    [
        "a",
        "b",
        "0",
        "é",
        "🐲",
        ".",
        "\\.",
        "[ab]",
        "[^a]",
        "[a-c]",
        "[^\\w]",
        "[🐲é]",
        "\\d",
        "\\D",
        "\\w",
        "\\W",
        "\\s",
        "\\S",
        "\\x61",
        "\\u00e9",
        "[\\d.]",
    ]
)
assertions = st.sampled_from(["^", "$", "\\b", "\\B"])
quantifiers = st.sampled_from(["*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "+?", "{0,2}?"])


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(inner, min_size=2, max_size=3).map("".join),
        st.lists(inner, min_size=2, max_size=3).map("|".join),
        inner.map(lambda x: f"(?:{x})"),
        inner.map(lambda x: f"({x})"),
        st.tuples(inner, quantifiers).map(lambda t: f"(?:{t[0]}){t[1]}"),
        st.tuples(atoms, quantifiers).map("".join),
    )


regexes = st.recursive(st.one_of(atoms, assertions), _extend, max_leaves=8)
subjects = st.text(st.sampled_from(ALPHABET), max_size=8)


@settings(max_examples=500, deadline=None)
@given(pattern=regexes, strings=st.lists(subjects, min_size=1, max_size=8))
def test_differential_against_python_re(pattern: str, strings: list[str]) -> None:
    try:
        compiled = re.compile(pattern, re.ASCII)
    except re.error:
        assume(False)
        return
    search = regex_dfa(pattern, search=True)
    full = regex_dfa(pattern, search=False)
    for s in strings:
        if s == "" and "\\B" in pattern:
            continue  # Python < 3.14: \B never matches the empty string; ECMA's does
        assert search.accepts(s) == (compiled.search(s) is not None), (pattern, s)
        assert full.accepts(s) == (compiled.fullmatch(s) is not None), (pattern, s)


# -- lookahead -----------------------------------------------------------------------------------

lookahead_bodies = st.recursive(st.one_of(atoms, assertions), _extend, max_leaves=4)
lookaheads = st.tuples(st.sampled_from(["(?=", "(?!"]), lookahead_bodies).map(
    lambda t: f"{t[0]}{t[1]})"
)
regexes_with_lookahead = st.recursive(
    st.one_of(atoms, assertions, lookaheads), _extend, max_leaves=8
).filter(lambda p: "(?=" in p or "(?!" in p)


@settings(max_examples=400, deadline=None)
@given(pattern=regexes_with_lookahead, strings=st.lists(subjects, min_size=1, max_size=8))
def test_lookahead_differential_against_python_re(pattern: str, strings: list[str]) -> None:
    """Lookaheads anywhere (inside groups, alternatives and repetitions) against Python's re,
    which agrees with ECMA-262 on them for this alphabet."""
    try:
        compiled = re.compile(pattern, re.ASCII)
    except re.error:
        assume(False)
        return
    search = regex_dfa(pattern, search=True)
    full = regex_dfa(pattern, search=False)
    for s in strings:
        if s == "" and "\\B" in pattern:
            continue  # Python < 3.14: \B never matches the empty string; ECMA's does
        assert search.accepts(s) == (compiled.search(s) is not None), (pattern, s)
        assert full.accepts(s) == (compiled.fullmatch(s) is not None), (pattern, s)


LOOKAHEAD_FIXED = [
    "^(?!foo).*",  # the negative lookahead of real schemas
    "^(?!.*--)[a-z-]+$",
    "^(?=.*[0-9])(?=.*[a-z])[a-z0-9]{4,}$",  # password rules
    "^((?!ab).)*$",  # a tempered dot: a lookahead inside a repetition
    "(?!a)\\w",
    "a(?=b)",
    "\\b(?=\\w)x",
    "^(?!$)",
    "(?:(?=a))*b",  # a repetition of nothing but a lookahead
    "x(?=$)|y(?!$)",
    "^(?!(?:x|y)z).{2}$",
]


@pytest.mark.parametrize("pattern", LOOKAHEAD_FIXED)
def test_lookahead_fixed_against_python_re(pattern: str) -> None:
    compiled = re.compile(pattern, re.ASCII)
    rng = random.Random(pattern)
    strings = ["", "a", "ab", "abc", "foo", "foobar", "xfoo", "a--b", "a-b", "abc1", "1234"]
    strings += [
        "".join(rng.choice("abcfoxyz_-019 ") for _ in range(rng.randint(0, 7))) for _ in range(300)
    ]
    search, full = regex_dfa(pattern, search=True), regex_dfa(pattern, search=False)
    for s in strings:
        assert search.accepts(s) == (compiled.search(s) is not None), (pattern, s)
        assert full.accepts(s) == (compiled.fullmatch(s) is not None), (pattern, s)


def test_lookahead_in_schema_patterns() -> None:
    import toolmask as tm

    c = tm.compile(tm.Grammar.from_json_schema({"type": "string", "pattern": "^(?!foo).*"}))
    for s, ok in (("bar", True), ("foo", False), ("food", False), ("fo", True), ("", True)):
        m = c.matcher()
        assert bool(m.accept_bytes(f'"{s}"'.encode()) and m.is_accepting()) == ok, s
    pp = {"type": "object", "patternProperties": {"^(?!x-)": {"type": "integer"}}}
    c = tm.compile(tm.Grammar.from_json_schema(pp))
    for doc, ok in (('{"a":1}', True), ('{"a":"s"}', False), ('{"x-a":"s"}', True)):
        m = c.matcher()
        assert bool(m.accept_bytes(doc.encode()) and m.is_accepting()) == ok, doc


FIXED = [
    "^a*$",
    "a+",
    "^(ab|a)(c|bcd)$",
    "(a|b)*a(a|b){2}",
    "^\\d{3}-\\d{2}$",
    "\\bfoo\\b",
    "\\Bo\\B",
    "^$",
    "x|^y|z$",
    "(^a|b)c",
    "a(b|$)",
    "a^b",
    "a$b",
    "(?:^|_)ab(?:_|$)",
    "^[^_]+_[0-9]+$",
    "(?<name>ab)+",
    "a{2,}b{0,1}?",
    "[a-]",
    "[-a]",
    "[\\-.]",
    "a{,2}",
    "^\\w+(\\s\\w+)*$",
]


@pytest.mark.parametrize("pattern", FIXED)
def test_fixed_patterns_against_python_re(pattern: str) -> None:
    py = pattern.replace("(?<name>", "(?P<name>")
    if pattern == "a{,2}":  # Annex B: '{' that is not a quantifier is literal; Python 3.11 differs
        py = "a\\{,2}"
    compiled = re.compile(py, re.ASCII)
    rng = random.Random(pattern)
    strings = ["", "a", "ab", "abc", "abcd", "foo", "a foo", "xfoo", "_ab_", "ab_"]
    strings += [
        "".join(rng.choice("abcdfoxyz_- 0123") for _ in range(rng.randint(0, 7)))
        for _ in range(300)
    ]
    search, full = regex_dfa(pattern, search=True), regex_dfa(pattern, search=False)
    for s in strings:
        assert search.accepts(s) == (compiled.search(s) is not None), (pattern, s)
        assert full.accepts(s) == (compiled.fullmatch(s) is not None), (pattern, s)


# -- ECMA specifics -----------------------------------------------------------------------------

ECMA_CASES = [
    ("^\\d$", "5", True),
    ("^\\d$", "৪", False),  # BENGALI DIGIT FOUR: \d is ASCII only
    ("^\\D$", "৪", True),
    ("^\\w$", "é", False),
    ("^\\w$", "_", True),
    ("^\\W$", "é", True),
    ("^\\s$", "\ufeff", True),
    ("^\\s$", "\u00a0", True),
    ("^\\s$", "\u1680", True),
    ("^\\s$", "\u2029", True),
    ("^\\s$", "\u000b", True),
    ("^\\s$", "\u0085", False),  # NEL is not ECMA whitespace
    ("^\\s$", "\u180e", False),
    ("^\\s$", "\u200b", False),
    ("^\\S$", "\u0085", True),
    ("^.$", "\r", False),
    ("^.$", "\n", False),
    ("^.$", "\u2028", False),
    ("^.$", "\u0085", True),
    ("^.$", "🐲", True),
    ("^[^]$", "\n", True),
    ("^[]$", "", False),
    ("^\\cJ$", "\n", True),
    ("^\\cj$", "\n", True),
    ("^\\v\\f\\0$", "\x0b\x0c\x00", True),
    ("^\\x41\\u0042\\u{43}$", "ABC", True),
    ("^\\u{1F432}$", "🐲", True),
    ("^\\uD83D\\uDC32$", "🐲", True),
    ("^[\\uD83D\\uDC32]$", "🐲", True),
    ("^🐲*$", "🐲🐲", True),
    ("^🐲*$", "🐲\U0001f433", False),
    ("^[🐲-🐴]{2}$", "🐳🐴", True),
    ("^[🐲-🐴]$", "🐵", False),
    ("^[\\b]$", "\b", True),
    ("^\\$\\^\\/\\{\\}$", "$^/{}", True),
    ("^a{$", "a{", True),
    ("^]}$", "]}", True),
    ("abc$", "abc\n", False),
    ("^\\p{Lu}+$", "ÉA", True),
    ("^\\p{Lu}+$", "éA", False),
    ("^\\P{L}+$", "12", True),
    ("^\\p{gc=Nd}$", "৪", True),
    ("^\\p{ASCII}+$", "abc", True),
    ("^\\p{Any}$", "\n", True),
    ("^[\\p{Nd}a]+$", "a৪", True),
    ("\\Bé", "aé", False),  # é is not a word character: a|é is a boundary
    ("\\bé", "aé", True),
]


@pytest.mark.parametrize(("pattern", "s", "want"), ECMA_CASES)
def test_ecma_semantics(pattern: str, s: str, want: bool) -> None:
    assert regex_dfa(pattern, search=True).accepts(s) == want


def test_space_set_is_ecma() -> None:
    expected = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F}
    expected |= {0x205F, 0x3000, 0xFEFF} | set(range(0x2000, 0x200B))
    assert {cp for lo, hi in SPACE_CHARS.ranges for cp in range(lo, hi + 1)} == expected


ANCHOR_CASES = [
    ("a^", [], ["", "a", "ba"]),
    ("$a", [], ["", "a"]),
    ("^*", None, None),
    ("(^a)", ["a", "ab"], ["ba"]),
    ("(^)*a", ["a", "ba"], []),
    ("(^|x)a", ["a", "xa", "bxa"], ["ba"]),
    ("a(^|$)", ["a", "ba"], ["ab"]),
    ("^$", [""], ["a"]),
    ("$^", [""], ["a"]),
    ("^a|b$", ["a", "ax", "b", "xb"], ["xa", "bx"]),
    ("(?:a|^)b", ["b", "ab", "bc"], ["cb"]),
    ("\\b", ["a", "a b"], ["", " ", "  "]),
    ("\\B", ["", " ", "ab"], ["a"]),
    ("^\\b$", [], ["", "a"]),
    ("^\\B$", [""], ["a"]),
    ("a\\b\\Bb", [], ["ab", "a b"]),
]


@pytest.mark.parametrize(("pattern", "yes", "no"), ANCHOR_CASES)
def test_anchors_in_odd_places(pattern: str, yes: list[str] | None, no: list[str] | None) -> None:
    if yes is None or no is None:
        with pytest.raises(GrammarSyntaxError):
            regex_dfa(pattern, search=True)
        return
    d = regex_dfa(pattern, search=True)
    for s in yes:
        assert d.accepts(s), s
    for s in no:
        assert not d.accepts(s), s


# -- errors and limits --------------------------------------------------------------------------

ERROR_CASES = [
    ("a(?=b(?!c))", 5, "lookahead inside a lookahead"),
    ("a(?=b)*", 6, "nothing to repeat"),
    ("a(?=b", 1, "unterminated lookahead"),
    ("(?<=a)b", 0, "lookbehind"),
    ("(?<!a)b", 0, "lookbehind"),
    ("(a)\\1", 3, "backreference"),
    ("(?<n>a)\\k<n>", 7, "backreference"),
    ("\\p{Script=Latin}", 0, "Unicode property"),
    ("\\p{Nope}", 0, "Unicode property"),
    ("(?i)a", 0, "unsupported group"),
    ("(ab", 0, "unterminated group"),
    ("ab)", 2, "unmatched"),
    ("[ab", 0, "unterminated character class"),
    ("a**", 2, "nothing to repeat"),
    ("*a", 0, "nothing to repeat"),
    ("a|?", 2, "nothing to repeat"),
    ("a{3,1}", 1, "out of order"),
    ("[z-a]", 1, "out of order"),
    ("[\\d-z]", 1, "class escape"),
    ("\\q", 0, "unknown escape"),
    ("\\x4", 0, "hex"),
    ("\\u{110000}", 0, "out of range"),
    ("\\c1", 0, "\\c"),
    ("a\\", 1, "end of pattern"),
    ("\\01", 0, "octal"),
]


@pytest.mark.parametrize(("pattern", "pos", "words"), ERROR_CASES)
def test_syntax_errors(pattern: str, pos: int, words: str) -> None:
    with pytest.raises(GrammarSyntaxError) as ei:
        regex_dfa(pattern, search=True)
    assert ei.value.pos == pos, str(ei.value)
    assert words in ei.value.message
    assert "regex:1:" in str(ei.value)


def test_nesting_limit() -> None:
    with pytest.raises(LimitError) as e:
        parse_regex("(" * 500 + "a" + ")" * 500)
    assert e.value.limit == "max_regex_nesting"
    assert regex_dfa("(" * 30 + "a" + ")" * 30, search=False).accepts("a")
    tight = Limits(max_regex_nesting=4)
    parse_regex("((((a))))", limits=tight)
    with pytest.raises(LimitError):
        parse_regex("(((((a)))))", limits=tight)
    with pytest.raises(LimitError):
        parse_regex("((((" + "(?=a)" + "))))", limits=tight)  # a lookahead is a level too


@pytest.mark.parametrize(
    "pattern",
    [
        "a{1000000000}",
        "(a{1000}){1000}",
        "((ab){100}){100}c{50}",
        "[a-z]{0,50000}",
        "(a|b)*a(a|b){20}",
    ],
)
def test_huge_patterns_raise_limit_error(pattern: str) -> None:
    with pytest.raises(LimitError):
        regex_dfa(pattern, search=False)


def test_small_limits() -> None:
    lim = Limits(max_dfa_states=10)
    assert regex_dfa("a{5}", search=False, limits=lim).accepts("aaaaa")
    with pytest.raises(LimitError):
        regex_dfa("a{50}", search=False, limits=lim)


def test_large_but_fine() -> None:
    d = regex_dfa("^[a-z0-9]{1,2000}$", search=True)
    assert d.accepts("a" * 2000) and not d.accepts("a" * 2001) and not d.accepts("")


# -- lowering to IR ------------------------------------------------------------------------------

IR_PATTERNS = [
    "[a-z]+",
    "^\\d{2,3}$",
    "(ab|c)*d?",
    "🐲|é+",
    "[^a]{1,2}",
    "^a|b$",
    "(a\\b )*b",
    "(^a|b)+",
    "a\\Bb|c\\bd",
    "x(^)?",
    "$",
]


def _strings_for(pattern: str) -> Iterator[str]:
    d = regex_dfa(pattern, search=False)
    rng = random.Random(pattern)
    yield from ["", "a", "b", "ab", "abd", "cd", "a b", "a bb", "🐲", "éé", "12", "123", "x", "ba"]
    for _ in range(30):
        s = d.sample(rng)
        if s is not None:
            yield s
            yield s + "a"
            yield s[:-1]


@pytest.mark.parametrize("pattern", IR_PATTERNS)
def test_regex_node_rules_and_grammar(pattern: str) -> None:
    d = regex_dfa(pattern, search=False)
    node = regex_node(pattern)
    assert not any(isinstance(n, RuleRef) for n in iter_nodes(node))
    entry, rules = regex_rules(pattern, "rx")
    assert all(r.name.startswith("rx") for r in rules)
    g = grammar_from_regex(pattern)
    assert g == Grammar.from_regex(pattern)
    root_rules = tuple(g.rules)
    for s in _strings_for(pattern):
        data = s.encode("utf-8")
        want = d.accepts(s)
        assert ir_fullmatch(node, (), data) == want, (pattern, s)
        assert ir_fullmatch(entry, rules, data) == want, (pattern, s)
        assert ir_fullmatch(RuleRef("root"), root_rules, data) == want, (pattern, s)


def test_regex_node_structural_when_assertion_free() -> None:
    assert str(regex_node("^[a-c]+x?$")) == '[a-c]+ "x"?'
    node, rules = regex_rules("ab*", "p")
    assert rules == ()
    assert str(node) == '"a" "b"*'


def test_regex_node_gives_up_cleanly() -> None:
    # needs a large tree: state elimination over an exponential DFA with assertions
    with pytest.raises((GrammarError, LimitError)):
        regex_node("(a|b)*a(a|b){9}\\b")


@pytest.mark.parametrize("pattern", ["[a-z]{2,3}", "(ab)*c", "a\\b( b)*", "🐲+é"])
def test_through_automaton_if_available(pattern: str) -> None:
    try:
        from toolmask.automaton import build_automaton
    except ImportError:
        pytest.skip("toolmask.automaton.build_automaton is not available yet")
    d = regex_dfa(pattern, search=False)
    a = build_automaton(grammar_from_regex(pattern))
    for s in _strings_for(pattern):
        state = a.advance_bytes(a.initial, s.encode())
        ok = state is not None and a.is_accepting(state)
        assert ok == d.accepts(s), (pattern, s)


# -- JSON-Schema-Test-Suite ------------------------------------------------------------------------

SUITE_FILES = [
    "optional/ecmascript-regex.json",
    "optional/non-bmp-regex.json",
    "pattern.json",
    "patternProperties.json",
]


def _suite_cases() -> Iterator[Any]:
    for name in SUITE_FILES:
        path = SUITE_DIR / name
        for group in json.loads(path.read_text(encoding="utf-8")):
            schema = group["schema"]
            if not isinstance(schema, dict):
                continue
            if "pattern" in schema:
                for t in group["tests"]:
                    if isinstance(t["data"], str):
                        yield pytest.param(
                            "pattern",
                            schema,
                            t["data"],
                            t["valid"],
                            id=f"{name}:{group['description']}:{t['description']}",
                        )
            elif "patternProperties" in schema:
                for t in group["tests"]:
                    if isinstance(t["data"], dict):
                        yield pytest.param(
                            "patternProperties",
                            schema,
                            t["data"],
                            t["valid"],
                            id=f"{name}:{group['description']}:{t['description']}",
                        )


def _pattern_properties_valid(schema: dict[str, Any], data: dict[str, Any]) -> bool:
    """patternProperties / additionalProperties with our regexes; subschemas via jsonschema."""
    pats = schema["patternProperties"]
    addl = schema.get("additionalProperties", True)
    for key, value in data.items():
        matched = [sub for p, sub in pats.items() if regex_dfa(p, search=True).accepts(key)]
        for sub in matched if matched else [addl]:
            if not jsonschema.Draft202012Validator(sub).is_valid(value):
                return False
    return schema.get("type", "object") == "object"


@pytest.mark.parametrize(("kind", "schema", "data", "valid"), list(_suite_cases()))
def test_json_schema_test_suite(kind: str, schema: dict[str, Any], data: Any, valid: bool) -> None:
    if kind == "pattern":
        assert regex_dfa(schema["pattern"], search=True).accepts(data) == valid
    else:
        assert _pattern_properties_valid(schema, data) == valid


def test_suite_present() -> None:
    assert len(list(_suite_cases())) > 40


def test_charset_helpers_consistent() -> None:
    d = regex_dfa("[\\s\\S]", search=False)
    assert d.edges[0][0][0] == CharSet.range(0, 0x10FFFF)
