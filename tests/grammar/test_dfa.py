"""Tests of the code-point DFA: algebra against per-string membership, multipleOf against Decimal
arithmetic, limits, and the lowering to IR (raw UTF-8 and canonical JSON string escapes). The
JSON-specific languages (``multiple_of_dfa``, the JSON string encoder) live in
``toolmask.schema._json_text`` and are tested here with the automata they build on."""

from __future__ import annotations

import itertools
import json
import random
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.grammar.reference import ir_fullmatch
from toolmask.errors import LimitError
from toolmask.grammar._charset import ANY_CHAR, CharSet
from toolmask.grammar._fsm import Dfa, dfa_to_node, dfa_to_rules
from toolmask.grammar._ir import (
    ByteClass,
    Choice,
    Grammar,
    Rule,
    RuleRef,
    iter_nodes,
)
from toolmask.grammar._nfa import EOL, Nfa
from toolmask.grammar._regex import regex_dfa
from toolmask.limits import Limits
from toolmask.schema._json_text import json_string_char, json_string_node, multiple_of_dfa

# -- the automaton, when it is there --------------------------------------------------------------


def automaton_accepts(grammar: Grammar, data: bytes) -> bool | None:
    """Through toolmask.automaton.build_automaton when it exists (None otherwise)."""
    try:
        from toolmask.automaton import build_automaton
    except ImportError:
        return None
    a = build_automaton(grammar)
    st_ = a.advance_bytes(a.initial, data)
    return st_ is not None and bool(a.is_accepting(st_))


# -- helpers ------------------------------------------------------------------------------------

AB = "abc"


def all_strings(alphabet: str, max_len: int) -> list[str]:
    return ["".join(t) for n in range(max_len + 1) for t in itertools.product(alphabet, repeat=n)]


STRINGS = all_strings(AB, 5)

POOL = [
    "a*",
    "(ab)*",
    "a|bc",
    "(a|b)*c",
    "[ab]{2,3}",
    "",
    "[]",
    "c+b?",
    "(a|b)*a(a|b)",
    "((ab|ba)c)*",
]


def dfa(p: str) -> Dfa:
    return regex_dfa(p, search=False)


# -- construction and algebra -------------------------------------------------------------------


def test_basic_constructors() -> None:
    assert Dfa.empty().is_empty()
    assert not Dfa.epsilon().is_empty()
    assert Dfa.epsilon().accepts("") and not Dfa.epsilon().accepts("a")
    lit = Dfa.literal("h🐲")
    assert lit.accepts("h🐲") and not lit.accepts("h") and not lit.accepts("h🐲h")
    lits = Dfa.literals(["ab", "abc", "", "x"])
    assert {s for s in ["", "a", "ab", "abc", "x", "xa"] if lits.accepts(s)} == {
        "",
        "ab",
        "abc",
        "x",
    }
    anys = Dfa.any_string(CharSet.of("ab"))
    assert anys.accepts("") and anys.accepts("abba") and not anys.accepts("abc")
    assert Dfa.char(CharSet.of("a")).accepts("a")
    assert Dfa.char(CharSet()).is_empty()


def test_length() -> None:
    d = Dfa.length(2, 4)
    for s in ["", "a", "ab", "🐲🐲🐲", "abcd", "abcde"]:
        assert d.accepts(s) == (2 <= len(s) <= 4)
    unbounded = Dfa.length(3, None, CharSet.of("ab"))
    for s in all_strings("abc", 5):
        assert unbounded.accepts(s) == (len(s) >= 3 and "c" not in s)
    assert Dfa.length(3, 2).is_empty()
    assert Dfa.length(0, None, CharSet()).accepts("")
    assert Dfa.length(1, None, CharSet()).is_empty()


@pytest.mark.parametrize(("p", "q"), list(itertools.product(POOL, POOL)))
def test_algebra_against_membership(p: str, q: str) -> None:
    a, b = dfa(p), dfa(q)
    inter = a.intersect(b)
    uni = a.union(b)
    diff = a.difference(b)
    comp = a.complement(CharSet.of(AB))
    for s in STRINGS:
        x, y = a.accepts(s), b.accepts(s)
        assert inter.accepts(s) == (x and y), s
        assert uni.accepts(s) == (x or y), s
        assert diff.accepts(s) == (x and not y), s
        assert comp.accepts(s) == (not x), s
    # laws on canonical minimal DFAs: equal languages give equal objects
    assert comp.complement(CharSet.of(AB)) == a.intersect(Dfa.any_string(CharSet.of(AB)))
    assert a.union(b) == b.union(a)
    assert a.intersect(b) == b.intersect(a)
    u = CharSet.of(AB)
    assert uni.complement(u) == a.complement(u).intersect(b.complement(u))
    assert a.difference(b) == a.intersect(b.complement(ANY_CHAR))


@pytest.mark.parametrize(("p", "q"), [(p, q) for p in POOL[:6] for q in POOL[:6]])
def test_concat_and_star(p: str, q: str) -> None:
    a, b = dfa(p), dfa(q)
    cat = a.concat(b)
    for s in all_strings(AB, 4):
        want = any(a.accepts(s[:i]) and b.accepts(s[i:]) for i in range(len(s) + 1))
        assert cat.accepts(s) == want, s
    assert cat == dfa(f"(?:{p})(?:{q})")
    assert a.star() == dfa(f"(?:{p})*")


def test_minimize_is_canonical() -> None:
    assert dfa("(a|b)*") == dfa("(a*b*)*") == dfa("[ab]*")
    assert dfa("a{0,3}") == dfa("|a|aa|aaa")
    assert dfa("[]") == Dfa.empty()
    assert dfa("") == Dfa.epsilon()
    assert dfa("(a|b)*a(a|b)").n_states == 4
    assert dfa("x*").is_equivalent(dfa("(x|xx)*"))


def test_is_finite() -> None:
    assert dfa("ab|c{3}").is_finite()
    assert not dfa("ab*").is_finite()
    assert dfa("[]*").is_finite()


def test_unminimized_input() -> None:
    a, b = CharSet.of("a"), CharSet.of("b")
    # states 1 and 2 are equivalent, state 3 is dead, state 4 unreachable
    d = Dfa(
        (((a, 1), (b, 2)), ((a, 1), (b, 3)), ((a, 2), (b, 3)), ((a, 3),), ((a, 0),)),
        frozenset({1, 2, 4}),
    )
    m = d.minimize()
    assert m.n_states == 2
    for s in all_strings("ab", 5):
        assert m.accepts(s) == d.accepts(s)


def test_nfa_with_assertions() -> None:
    nfa = Nfa()
    s, m, e = nfa.add_state(), nfa.add_state(), nfa.add_state()
    nfa.add_char(s, CharSet.of("a"), m)
    nfa.add_eps(m, e, EOL)
    nfa.add_char(m, CharSet.of("b"), e)
    nfa.start, nfa.accept = s, e
    d = Dfa.from_nfa(nfa)
    assert d.accepts("a") and d.accepts("ab") and not d.accepts("abb")


def test_sample() -> None:
    rng = random.Random(1)
    for p in [*POOL, "[🐲-🐴]{2}x", "\\w+@\\d{2,}"]:
        d = dfa(p)
        for _ in range(20):
            s = d.sample(rng)
            if d.is_empty():
                assert s is None
            else:
                assert s is not None and d.accepts(s), (p, s)


# -- limits -------------------------------------------------------------------------------------


def test_limits() -> None:
    small = Limits(max_dfa_states=50)
    with pytest.raises(LimitError) as ei:
        Dfa.length(0, 100, limits=small)
    assert ei.value.limit == "max_dfa_states"
    with pytest.raises(LimitError):
        Dfa.length(0, 10**9)
    with pytest.raises(LimitError):
        regex_dfa("(a|b)*a(a|b){8}", search=False, limits=small)
    a = regex_dfa("[a-z]{0,30}", search=False)
    b = regex_dfa("(?:[a-z]{7})*", search=False)
    with pytest.raises(LimitError):
        a.intersect(b, limits=Limits(max_dfa_states=20))
    assert a.intersect(b).accepts("abcdefgabcdefg")
    with pytest.raises(LimitError):
        Dfa.literals(["".join(t) for t in itertools.product("abc", repeat=5)], limits=small)
    with pytest.raises(LimitError):
        multiple_of_dfa(Decimal(123457), integer_only=True, limits=small)
    with pytest.raises(LimitError):
        multiple_of_dfa(Decimal("1e100000"), integer_only=True)


# -- multipleOf ----------------------------------------------------------------------------------

_INT_RE = regex_dfa("-?(0|[1-9][0-9]*)", search=False)
_NUM_RE = regex_dfa("-?(0|[1-9][0-9]*)(\\.[0-9]+)?", search=False)

number_texts = st.builds(
    lambda neg, i, frac: ("-" if neg else "") + i + (("." + frac) if frac is not None else ""),
    st.booleans(),
    st.one_of(st.just("0"), st.from_regex(r"\A[1-9][0-9]{0,6}\Z")),
    st.one_of(st.none(), st.from_regex(r"\A[0-9]{1,6}\Z"), st.from_regex(r"\A0{1,4}\Z")),
)
divisors = st.sampled_from(
    ["1", "2", "3", "7", "10", "0.5", "0.01", "0.25", "1.5", "0.0001", "12", "2.5e1", "1e-3", "0.3"]
)


@settings(max_examples=400, deadline=None)
@given(k=divisors, text=number_texts, integer_only=st.booleans())
def test_multiple_of_against_decimal(k: str, text: str, integer_only: bool) -> None:
    d = multiple_of_dfa(Decimal(k), integer_only=integer_only)
    value = Decimal(text)
    want = value % Decimal(k) == 0
    if integer_only:
        want = want and value == value.to_integral_value()
    assert d.accepts(text) == want, (k, text)


@pytest.mark.parametrize("k", ["1", "3", "0.5", "0.01", "7.5"])
@pytest.mark.parametrize("integer_only", [False, True])
def test_multiple_of_syntax(k: str, integer_only: bool) -> None:
    d = multiple_of_dfa(Decimal(k), integer_only=integer_only)
    syntax = _NUM_RE if not integer_only else regex_dfa("-?(0|[1-9][0-9]*)(\\.0+)?", search=False)
    assert d.difference(syntax).is_empty()  # never looser than the number syntax
    for bad in ["", "-", "01", "1.", ".5", "+1", "1e3", "--1", "0x10", " 1", "1 "]:
        assert not d.accepts(bad), bad
    for good in ["0", "-0", "0.0", "-0.000"]:
        assert d.accepts(good), good
    if k == "1":
        # every integer literal is a multiple of 1
        assert _INT_RE.difference(d).is_empty()


def test_multiple_of_fraction_digits() -> None:
    d = multiple_of_dfa(Decimal("0.01"), integer_only=False)
    for ok in ["1.23", "1.2", "1.230000", "100", "-5.10"]:
        assert d.accepts(ok), ok
    for bad in ["1.234", "0.001", "1.2301"]:
        assert not d.accepts(bad), bad
    assert multiple_of_dfa(Decimal("1"), integer_only=True).accepts("12.000")
    assert not multiple_of_dfa(Decimal("1"), integer_only=True).accepts("12.5")
    with pytest.raises(ValueError):
        multiple_of_dfa(Decimal(0), integer_only=True)
    with pytest.raises(ValueError):
        multiple_of_dfa(Decimal(-2), integer_only=True)


# -- lowering -----------------------------------------------------------------------------------


def lower_matches(d: Dfa, s: str, encoding: str) -> bool:
    node, rules = dfa_to_rules(d, "t", encoding="raw" if encoding == "raw" else json_string_char)
    if encoding == "raw":
        data = s.encode("utf-8")
    else:
        data = json.dumps(s, ensure_ascii=False)[1:-1].encode("utf-8")
    return ir_fullmatch(node, rules, data)


LOWER_PATTERNS = [
    "[a-z]*",
    "\\d{2,4}",
    "(ab|c)*d",
    '[^"\\\\]*',
    "\\s+",
    '[\\x00-\\x1f"\\\\]{1,3}',
    ".{0,3}",
    "[🐲é\\u2028\\x7f]+x?",
    "(a\\b|b)*",
]


@pytest.mark.parametrize("p", LOWER_PATTERNS)
@pytest.mark.parametrize("encoding", ["raw", "json_string"])
def test_lowering_against_dfa(p: str, encoding: str) -> None:
    d = dfa(p)
    rng = random.Random(p)
    samples = ["", "a", "ab", "abd", '"', "\\", "\n\t", "\x00\x1f", "🐲", "é\u2028", "\x7f", "12"]
    samples += [s for s in (d.sample(rng) for _ in range(30)) if s is not None]
    for s in samples:
        assert lower_matches(d, s, encoding) == d.accepts(s), (p, s)


def test_rules_shape() -> None:
    node, rules = dfa_to_rules(dfa("(ab)*"), "p", encoding="raw")
    assert node == RuleRef("p_s0")
    assert [r.name for r in rules] == ["p_s0", "p_s1"]
    assert str(rules[0]) == 'p_s0 ::= "a" p_s1 | ""'
    assert str(rules[1]) == 'p_s1 ::= "b" p_s0'
    # acyclic and small: one inline node, no rules
    node, rules = dfa_to_rules(dfa("ab|c"), "p", encoding="raw")
    assert rules == ()
    assert not any(isinstance(n, RuleRef) for n in iter_nodes(node))
    # empty language
    node, rules = dfa_to_rules(Dfa.empty(), "p", encoding="raw")
    assert rules == () and node == Choice(())
    # edges to the same target are merged into one alternative
    _, rules = dfa_to_rules(dfa("[ac-e]*"), "q", encoding="raw")
    assert str(rules[0]) == 'q_s0 ::= [ac-e] q_s0 | ""'
    g = Grammar((Rule("root", node), *rules))
    assert "root" in g


def test_dfa_to_node_state_elimination() -> None:
    for p in ["(a\\b )*", "(ab|c)*d", "x(y+z)*"]:
        d = dfa(p)
        node = dfa_to_node(d)
        assert node is not None
        for s in [*all_strings("abcdxyz ", 3), "a a ", "abcabd", "xyyzyz"]:
            assert ir_fullmatch(node, (), s.encode()) == d.accepts(s), (p, s)
    assert dfa_to_node(dfa("(a|b)*a(a|b){6}"), max_nodes=50) is None


ESCAPE_CASES = {
    '"': b'\\"',
    "\\": b"\\\\",
    "\b": b"\\b",
    "\f": b"\\f",
    "\n": b"\\n",
    "\r": b"\\r",
    "\t": b"\\t",
    "\x00": b"\\u0000",
    "\x1f": b"\\u001f",
    "\x0b": b"\\u000b",
    "\x7f": b"\x7f",
    "\u2028": "\u2028".encode(),
    "/": b"/",
    "é": "é".encode(),
}


@pytest.mark.parametrize(("ch", "encoded"), list(ESCAPE_CASES.items()))
def test_json_string_escapes(ch: str, encoded: bytes) -> None:
    assert json.dumps(ch, ensure_ascii=False)[1:-1].encode() == encoded
    node = json_string_node(ANY_CHAR)
    assert ir_fullmatch(node, (), encoded)
    one = json_string_node(CharSet.of(ch))
    assert ir_fullmatch(one, (), encoded)
    other = json_string_node(ANY_CHAR - CharSet.of(ch))
    assert not ir_fullmatch(other, (), encoded)


def test_json_string_classes_near_ascii() -> None:
    """A class's node accepts the canonical escape of exactly its code points: printable ASCII
    classes without a quote or backslash (one byte class, the common pattern classes), classes
    that reach the escapes or past ASCII (the general route)."""
    rng = random.Random(7)
    texts = {cp: json.dumps(chr(cp), ensure_ascii=False)[1:-1].encode() for cp in range(0x180)}
    classes = [CharSet.of([(0x61, 0x7A)]), CharSet.of([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7F)])]
    for _ in range(150):
        parts: list[tuple[int, int]] = []
        for _ in range(rng.randint(1, 3)):
            a = rng.randint(0, 0x150)
            parts.append((a, min(a + rng.randint(0, 30), 0x17F)))
        classes.append(CharSet.of(parts))
    for cs in classes:
        node = json_string_node(cs)
        for cp, text in texts.items():
            assert ir_fullmatch(node, (), text) == (cp in cs), (cs, cp)
    assert isinstance(json_string_node(CharSet.of([(0x61, 0x7A)])), ByteClass)


@pytest.mark.parametrize(
    "non_canonical", [b"\\u0041", b"\\/", b"\\u000A", b"\\u000a", b"\\u00e9", b"\n", b'"', b"\\"]
)
def test_json_string_rejects_non_canonical(non_canonical: bytes) -> None:
    node, rules = dfa_to_rules(Dfa.any_string(), "s", encoding=json_string_char)
    assert not ir_fullmatch(node, rules, non_canonical)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=12))
def test_json_string_any_text(s: str) -> None:
    node, rules = dfa_to_rules(Dfa.any_string(), "s", encoding=json_string_char)
    data = json.dumps(s, ensure_ascii=False)[1:-1].encode()
    assert ir_fullmatch(node, rules, data)
    lim = Dfa.length(0, 5)
    node, rules = dfa_to_rules(lim, "l", encoding=json_string_char)
    assert ir_fullmatch(node, rules, data) == (len(s) <= 5)


def test_through_automaton_if_available() -> None:
    cases = [("[a-z]{2,3}", ["ab", "abc", "a", "abcd", "aB"]), ("(ab)*", ["", "ab", "aba"])]
    for p, strings in cases:
        d = dfa(p)
        node, rules = dfa_to_rules(d, "x", encoding=json_string_char)
        g = Grammar((Rule("root", node), *rules))
        for s in strings:
            got = automaton_accepts(g, s.encode())
            if got is None:
                pytest.skip("toolmask.automaton.build_automaton is not available yet")
            assert got == d.accepts(s), (p, s)


# -- unions of many automata, finite languages ---------------------------------------------


def test_union_all_equals_the_chain_of_products() -> None:
    rng = random.Random(1)
    pool = [
        "^a+b$",
        "ab",
        "^(ab|cd)*$",
        "x.z",
        "^[0-9]{2,4}$",
        "\\bword\\b",
        "^(?!no)[a-z]+$",
        "q$",
        "^$",
        "[^a]",
    ]
    for _ in range(30):
        picks = rng.sample(pool, rng.randrange(1, 6))
        dfas = [regex_dfa(p, search=True) for p in picks]
        chained = dfas[0]
        for d in dfas[1:]:
            chained = chained.union(d)
        assert Dfa.union_all(dfas) == chained, picks


def test_many_unanchored_patterns_do_not_blow_up_the_subset_construction() -> None:
    """The union of n unanchored patterns reaches subsets that differ only in which operands
    have matched already (2**n of them); a subset with a state that accepts everything is one
    state, so the construction stays as small as the minimal automaton."""
    dfas = [regex_dfa(f"w{i}x", search=True) for i in range(60)]
    limits = Limits(max_dfa_states=2_000)
    u = Dfa.union_all(dfas, limits=limits)
    assert u.accepts("..w17x..") and not u.accepts("w17") and u.accepts("w59xw60")


@pytest.mark.parametrize(
    ("pattern", "strings"),
    [
        ("^(ab|c)[xy]$", ["abx", "aby", "cx", "cy"]),
        ("^$", [""]),
        ("^a?b?$", ["", "a", "ab", "b"]),
        ("^a+$", None),  # infinite
        ("^[a-z]{2}$", None),  # 676 strings, past the limit
        ("x", None),  # a search: anything around it
    ],
)
def test_strings_of_a_finite_language(pattern: str, strings: list[str] | None) -> None:
    got = regex_dfa(pattern, search=True).strings(64)
    assert (sorted(got) if got is not None else None) == strings
    assert Dfa.empty().strings(64) == []
