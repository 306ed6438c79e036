"""build_automaton: structure, exactness on small grammars, errors and caps."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.automaton.ir_grammars import brackets, nested, right_linear, single
from tests.grammar.reference import matches as reference_accepts
from toolmask.automaton import Automaton, State, build_automaton
from toolmask.errors import GrammarError, LimitError
from toolmask.grammar._ir import (
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
    choice,
    lit,
    opt,
    repeat,
    seq,
    star,
)
from toolmask.limits import Limits


def accepts(a: Automaton, data: bytes) -> bool:
    s = a.advance_bytes(a.initial, data)
    return s is not None and a.is_accepting(s)


def alive(a: Automaton, data: bytes) -> bool:
    return a.advance_bytes(a.initial, data) is not None


# -- basics ---------------------------------------------------------------------------------------


def test_literal_and_prefixes() -> None:
    a = build_automaton(single(lit("hello")))
    assert accepts(a, b"hello")
    assert not accepts(a, b"hell")
    assert alive(a, b"hell")
    assert not alive(a, b"help")
    assert not alive(a, b"hello!")
    s = a.advance_bytes(a.initial, b"hello")
    assert s is not None and a.is_finished(s)
    assert a.allowed_bytes(a.initial) == 1 << ord("h")


def test_empty_language_is_dead_from_the_start() -> None:
    a = build_automaton(single(NOTHING))
    assert not a.is_accepting(a.initial)
    assert a.initial.is_dead
    assert a.allowed_bytes(a.initial) == 0
    assert a.advance(a.initial, ord("a")) is None


def test_empty_string_grammar() -> None:
    a = build_automaton(single(lit("")))
    assert a.is_accepting(a.initial)
    assert a.is_finished(a.initial)
    assert a.advance(a.initial, 0) is None


def test_never_raises_on_any_byte() -> None:
    a = build_automaton(brackets())
    s = a.initial
    for b in range(256):
        a.advance(s, b)
    assert a.advance_bytes(s, bytes(range(256))) is None


def test_unproductive_branch_is_pruned() -> None:
    g = Grammar(
        (
            Rule("root", choice(seq(lit("a"), RuleRef("loop")), lit("b"))),
            Rule("loop", seq(lit("x"), RuleRef("loop"))),  # no base case: empty language
        )
    )
    a = build_automaton(g)
    assert a.allowed_bytes(a.initial) == 1 << ord("b")
    # a raw Seq containing NOTHING (not normalised by seq()) is pruned as well
    a = build_automaton(single(Choice((Seq((lit("a"), Choice(()))), lit("c")))))
    assert a.allowed_bytes(a.initial) == 1 << ord("c")


# -- ambiguity and nondeterminism -----------------------------------------------------------------


def test_ambiguous_shared_prefix() -> None:
    a = build_automaton(single(choice(seq(lit("ab"), lit("c")), seq(lit("a"), lit("bd")))))
    assert accepts(a, b"abc")
    assert accepts(a, b"abd")
    assert not accepts(a, b"ab")
    s = a.advance_bytes(a.initial, b"ab")
    assert s is not None
    assert a.allowed_bytes(s) == (1 << ord("c")) | (1 << ord("d"))


def test_call_and_byte_edge_at_the_same_position() -> None:
    # the recursive rule is a call target; "a" both starts the call and is a byte edge
    g = Grammar(
        (
            Rule("root", choice(seq(RuleRef("n"), lit("c")), seq(lit("a"), lit("bd")))),
            Rule("n", choice(seq(lit("a"), RuleRef("n"), lit("b")), lit("ab"))),
        )
    )
    a = build_automaton(g)
    for text in [b"abc", b"abd", b"aabbc", b"aaabbbc"]:
        assert accepts(a, text) == reference_accepts(g, text), text
    s = a.advance_bytes(a.initial, b"a")
    assert s is not None and len(s.stacks) >= 2
    s = a.advance_bytes(a.initial, b"ab")
    assert s is not None
    assert a.allowed_bytes(s) == (1 << ord("c")) | (1 << ord("d"))


def test_ambiguous_recursion_deduplicates_stacks() -> None:
    # S -> S' S' ... highly ambiguous: ("a" | "aa")* via recursion
    g = Grammar((Rule("s", choice(seq(choice(lit("a"), lit("aa")), RuleRef("s")), lit(""))),), "s")
    a = build_automaton(g)
    s = a.advance_bytes(a.initial, b"a" * 200)
    assert s is not None and a.is_accepting(s)
    assert len(s.stacks) <= 4


# -- nullable rules -------------------------------------------------------------------------------


def test_nullable_rules_and_calls() -> None:
    g = Grammar(
        (
            Rule("root", seq(RuleRef("opt_a"), RuleRef("rec"), RuleRef("opt_a"), lit("!"))),
            Rule("opt_a", opt(lit("a"))),
            Rule("rec", choice(seq(lit("("), RuleRef("rec"), lit(")")), lit(""))),
        )
    )
    a = build_automaton(g)
    for text in [b"!", b"a!", b"aa!", b"()!", b"a(())a!", b"(a)!", b"aaa!", b"(()!"]:
        assert accepts(a, text) == reference_accepts(g, text), text


def test_star_of_nullable_called_rule_terminates() -> None:
    g = Grammar(
        (
            Rule("root", seq(star(RuleRef("x")), lit("."))),
            Rule("x", choice(seq(lit("("), RuleRef("x"), lit(")")), lit(""))),
        )
    )
    a = build_automaton(g)
    for text in [b".", b"().", b"()(()).", b"(.", b"())."]:
        assert accepts(a, text) == reference_accepts(g, text), text


# -- left recursion -------------------------------------------------------------------------------


def test_direct_left_recursion() -> None:
    g = Grammar((Rule("expr", choice(seq(RuleRef("expr"), lit("+"), lit("1")), lit("1"))),), "expr")
    with pytest.raises(GrammarError, match=r"left recursion: expr -> expr"):
        build_automaton(g)


def test_indirect_left_recursion_names_the_cycle() -> None:
    g = Grammar(
        (
            Rule("expr", choice(seq(RuleRef("term"), lit("+")), lit("1"))),
            Rule("term", choice(seq(RuleRef("expr"), lit("*")), lit("2"))),
        ),
        "expr",
    )
    with pytest.raises(GrammarError, match=r"left recursion: expr -> term -> expr"):
        build_automaton(g)


def test_left_recursion_through_nullable_prefix() -> None:
    g = Grammar(
        (
            Rule("a", choice(seq(RuleRef("maybe"), RuleRef("a"), lit("x")), lit("y"))),
            Rule("maybe", opt(lit("m"))),
        ),
        "a",
    )
    with pytest.raises(GrammarError, match=r"left recursion: a -> a"):
        build_automaton(g)


def test_right_recursion_is_fine() -> None:
    g = Grammar((Rule("r", choice(seq(lit("x"), RuleRef("r")), lit("."))),), "r")
    a = build_automaton(g)
    assert accepts(a, b"xxxx.")


# -- repeats --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("lo", "hi"), [(3, 5), (0, 2), (2, 2), (0, 0), (1, None), (4, None)])
def test_repeat_bounds_are_exact(lo: int, hi: int | None) -> None:
    a = build_automaton(single(seq(Repeat(lit("ab"), lo, hi), lit("!"))))
    for k in range(0, 9):
        want = k >= lo and (hi is None or k <= hi)
        assert accepts(a, b"ab" * k + b"!") == want, (lo, hi, k)


def test_repeat_of_nullable_item() -> None:
    g = single(seq(Repeat(opt(lit("a")), 2, 3), lit("!")))
    a = build_automaton(g)
    for k in range(5):
        assert accepts(a, b"a" * k + b"!") == (k <= 3), k


def test_repeat_unroll_limit_is_exact() -> None:
    lim = Limits(max_repeat_unroll=100)
    build_automaton(single(Repeat(lit("a"), 0, 100)), limits=lim)
    with pytest.raises(LimitError) as ei:
        build_automaton(single(Repeat(lit("a"), 0, 101)), limits=lim)
    assert ei.value.limit == "max_repeat_unroll"


def test_huge_repeat_fails_fast() -> None:
    with pytest.raises(LimitError) as ei:
        build_automaton(single(Repeat(lit("a"), 10**12, None)))
    assert ei.value.limit == "max_repeat_unroll"


def test_nested_repeats_hit_the_state_cap() -> None:
    # each repeat is within max_repeat_unroll, their product is not
    body = Repeat(Repeat(Repeat(byte_class((0x61, 0x7A)), 0, 1000), 0, 1000), 0, 1000)
    with pytest.raises(LimitError) as ei:
        build_automaton(single(body))
    assert ei.value.limit == "max_automaton_states"


def test_subset_explosion_is_rejected_at_the_state_cap() -> None:
    # (a|b)* a (a|b){n}: the DFA needs 2^n positions. The build is lazy, so it succeeds at
    # once; exploring every path creates positions until the cap, and past it advance rejects
    # (returns None) instead of raising: matchers never raise on input.
    ab = byte_class(ord("a"), ord("b"))
    body = seq(star(ab), lit("a"), Repeat(ab, 16, 16))
    a = build_automaton(single(body), limits=Limits(max_automaton_states=2_000))
    assert a.n_positions < 10
    layer: set[State] = {a.initial}
    rejected = 0
    for _ in range(18):
        nxt: set[State] = set()
        for s in layer:
            for b in b"ab":
                t = a.advance(s, b)  # "a"/"b" are always allowed by the grammar itself
                if t is None:
                    rejected += 1
                else:
                    nxt.add(t)
        layer = nxt
    assert rejected > 0
    assert a.n_positions <= 2_000
    # one path stays cheap and exact
    small = build_automaton(single(body))
    assert accepts(small, b"ba" + b"ab" * 8)
    assert not accepts(small, b"bb" + b"ab" * 8)


def test_compile_deadline() -> None:
    body = seq(*(Repeat(byte_class((0x61, 0x7A)), 0, 500) for _ in range(20)))
    with pytest.raises(LimitError) as ei:
        build_automaton(single(body), limits=Limits(max_compile_seconds=0.0))
    assert ei.value.limit == "max_compile_seconds"


def test_too_many_rules() -> None:
    rules = tuple(Rule(f"r{i}", lit("x")) for i in range(11))
    with pytest.raises(LimitError) as ei:
        build_automaton(Grammar(rules, "r0"), limits=Limits(max_rules=10))
    assert ei.value.limit == "max_rules"


def _doubling_chain(n: int) -> Grammar:
    rules = [
        Rule(f"r{i}", seq(RuleRef(f"r{i + 1}"), lit(","), RuleRef(f"r{i + 1}"))) for i in range(n)
    ]
    rules.append(Rule(f"r{n}", choice(lit("x"), lit("y"))))
    return Grammar(tuple(rules), "r0")


def test_inlining_grows_linearly_not_exponentially() -> None:
    # r{i} uses r{i+1} twice: full inlining would need 2^n positions (2^48 here)
    a_small = build_automaton(_doubling_chain(24))
    a_big = build_automaton(_doubling_chain(48))
    assert a_big.n_positions <= 3 * a_small.n_positions
    assert alive(a_big, b"x,y,x,x,y")
    s = a_small.advance_bytes(a_small.initial, b",".join(b"x" for _ in range(2**12)))
    assert s is not None and not a_small.is_accepting(s)


# -- specials -------------------------------------------------------------------------------------


def test_special_edges() -> None:
    g = single(seq(Special("<tool_call>"), lit("{}"), Special("</tool_call>")))
    a = build_automaton(g)
    s = a.initial
    assert a.allowed_bytes(s) == 0
    assert a.allowed_specials(s) == frozenset({"<tool_call>"})
    assert a.advance_special(s, "</tool_call>") is None
    assert a.advance_special(s, "nope") is None
    s2 = a.advance_special(s, "<tool_call>")
    assert s2 is not None
    s3 = a.advance_bytes(s2, b"{}")
    assert s3 is not None and not a.is_accepting(s3)
    s4 = a.advance_special(s3, "</tool_call>")
    assert s4 is not None and a.is_accepting(s4) and a.is_finished(s4)
    assert not a.is_finished(s3)


def test_specials_inside_recursion() -> None:
    g = Grammar((Rule("r", choice(seq(Special("<"), RuleRef("r"), Special(">")), lit("x"))),), "r")
    a = build_automaton(g)
    s: State | None = a.initial
    for _ in range(5):
        assert s is not None
        s = a.advance_special(s, "<")
    assert s is not None
    s = a.advance(s, ord("x"))
    for _ in range(5):
        assert s is not None and not a.is_accepting(s)
        assert a.allowed_specials(s) == frozenset({">"})
        s = a.advance_special(s, ">")
    assert s is not None and a.is_accepting(s)


# -- interning ------------------------------------------------------------------------------------


def test_states_are_interned_and_hashable() -> None:
    a = build_automaton(single(seq(choice(lit("ab"), lit("ba"), lit("cc")), star(lit("z")))))
    s1 = a.advance_bytes(a.initial, b"ab")
    s2 = a.advance_bytes(a.initial, b"ba")
    assert s1 is not None and s1 is s2
    assert hash(s1) == hash(s2)
    assert {s1: 1}[s2] == 1
    # the self-loop returns the same object
    assert a.advance(s1, ord("z")) is a.advance_bytes(s1, b"zzz")


def test_interning_across_recursion_depth() -> None:
    a = build_automaton(brackets())
    s1 = a.advance_bytes(a.initial, b"(()")
    s2 = a.advance_bytes(a.initial, b"(()()")
    s3 = a.advance_bytes(a.initial, b"(")
    assert s1 is s2 is s3


def test_memo_is_filled_per_atom() -> None:
    a = build_automaton(single(seq(lit('"'), star(byte_class((0x61, 0x7A))), lit('"'))))
    s = a.advance(a.initial, ord('"'))
    assert s is not None
    t = a.advance(s, ord("q"))
    assert t is s
    assert all(a.advance(s, b) is s for b in range(0x61, 0x7B))


# -- structure: inlining, regular groups, TCO -----------------------------------------------------


def test_right_linear_group_is_one_regular_dfa() -> None:
    g = right_linear()
    a = build_automaton(g)
    assert a.entry_names == ("root",)  # the group is inlined, no calls at all
    s = a.advance_bytes(a.initial, b'"' + b"a1" * 500 + b"b")
    assert s is not None
    assert all(len(st) == 1 for st in s.stacks)
    assert accepts(a, b'"a1b2"')
    assert accepts(a, b'"a1"')
    assert not accepts(a, b'"a1b"')
    assert accepts(a, b'""')


def test_large_right_linear_group_is_called_but_never_pushes() -> None:
    # many references and a big group: the group becomes a call target, tail calls are jumps
    letters = [
        Rule(f"s{i}", choice(seq(lit(chr(97 + i % 26)), RuleRef(f"s{(i + 1) % 260}")), lit("")))
        for i in range(260)
    ]
    root = Rule("root", seq(*(seq(lit("<"), RuleRef("s0"), lit(">")) for _ in range(60))))
    a = build_automaton(Grammar((root, *letters), "root"))
    assert "s0" in a.entry_names
    text = b"<" + bytes(97 + i % 26 for i in range(1000))
    s = a.advance_bytes(a.initial, text)
    assert s is not None
    assert max(len(st) for st in s.stacks) == 2  # root's return position + the group's
    s = a.advance_bytes(a.initial, text + b"><ab>")
    assert s is not None
    assert max(len(st) for st in s.stacks) == 1


def test_non_recursive_rules_are_inlined() -> None:
    g = Grammar(
        (
            Rule("root", seq(RuleRef("a"), RuleRef("b"), RuleRef("a"))),
            Rule("a", lit("x")),
            Rule("b", choice(RuleRef("a"), lit("y"))),
        )
    )
    a = build_automaton(g)
    assert a.entry_names == ("root",)


def test_tail_calls_do_not_grow_the_stack() -> None:
    # r ::= "[" n "]" r | "": the trailing r is a tail call
    g = Grammar(
        (
            Rule("r", choice(seq(lit("["), RuleRef("n"), lit("]"), RuleRef("r")), lit(""))),
            Rule("n", choice(seq(lit("("), RuleRef("n"), lit(")")), lit("x"))),
        ),
        "r",
    )
    a = build_automaton(g, limits=Limits(max_stack_depth=8))
    s = a.advance_bytes(a.initial, b"[x]" * 3000)
    assert s is not None and a.is_accepting(s)
    assert max(len(st) for st in s.stacks) <= 2


# -- property: agreement with a reference recogniser -----------------------------------------------

_ALPHA = [ord("a"), ord("b"), "S"]


def _nodes(n_rules: int) -> st.SearchStrategy[Node]:
    leaf = st.one_of(
        st.sampled_from([lit("a"), lit("b"), lit("ab"), lit(""), Special("S")]),
        st.sampled_from([byte_class(ord("a")), byte_class(ord("a"), ord("b"))]),
        st.integers(0, n_rules - 1).map(lambda i: RuleRef(f"r{i}")),
    )
    return st.recursive(
        leaf,
        lambda kids: st.one_of(
            st.lists(kids, min_size=0, max_size=3).map(lambda xs: Seq(tuple(xs))),
            st.lists(kids, min_size=0, max_size=3).map(lambda xs: Choice(tuple(xs))),
            st.tuples(kids, st.integers(0, 2), st.sampled_from([None, 0, 1, 2, 3])).map(
                lambda t: Repeat(t[0], t[1], None if t[2] is None else t[1] + t[2])
            ),
        ),
        max_leaves=6,
    )


@st.composite
def _grammars(draw: st.DrawFn) -> Grammar:
    n = draw(st.integers(1, 3))
    bodies = [draw(_nodes(n)) for _ in range(n)]
    return Grammar(tuple(Rule(f"r{i}", b) for i, b in enumerate(bodies)), "r0")


_WORDS: list[tuple[int | str, ...]] = [
    w for k in range(5) for w in itertools.product(_ALPHA, repeat=k)
]


def _run(a: Automaton, word: tuple[int | str, ...]) -> State | None:
    s: State | None = a.initial
    for sym in word:
        assert s is not None
        s = a.advance(s, sym) if isinstance(sym, int) else a.advance_special(s, sym)
        if s is None:
            return None
    return s


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_grammars())
def test_agrees_with_reference(g: Grammar) -> None:
    try:
        a = build_automaton(g)
    except GrammarError as e:
        assert "left recursion" in str(e)
        return
    live_prefixes: set[tuple[int | str, ...]] = set()
    for word in _WORDS:
        s = _run(a, word)
        want = reference_accepts(g, list(word))
        got = s is not None and a.is_accepting(s)
        assert got == want, (str(g), word)
        if want:
            live_prefixes.update(word[:k] for k in range(len(word) + 1))
        if s is not None:
            # allowed_bytes / allowed_specials agree with advance
            mask = a.allowed_bytes(s)
            for b in (ord("a"), ord("b"), ord("c")):
                assert bool((mask >> b) & 1) == (a.advance(s, b) is not None)
            assert ("S" in a.allowed_specials(s)) == (a.advance_special(s, "S") is not None)
    # every prefix of an accepted word is alive
    for word in live_prefixes:
        assert _run(a, word) is not None, (str(g), word)


def test_unused_imports_are_used() -> None:
    # keep a few constructors exercised so the import list stays honest
    assert repeat(lit("a"), 1, 1) == lit("a")
    assert isinstance(Bytes(b"x"), Bytes) and isinstance(ByteClass(1), ByteClass)
    assert nested().start == "n"
