"""Runtime details: cache generations, threads, memo views, lazy growth and sharing."""

from __future__ import annotations

import threading

from tests.automaton.conftest import only_python
from tests.automaton.ir_grammars import brackets, json_grammar, right_linear
from toolmask.automaton import State, build_automaton
from toolmask.grammar._ir import Grammar, Rule, RuleRef, choice, lit, opt, seq, star
from toolmask.limits import Limits


def test_cache_generations_keep_results_exact() -> None:
    small = build_automaton(brackets(), limits=Limits(max_cached_states=16))
    big = build_automaton(brackets())
    doc = b"(()(" * 50 + b")" * 100
    s_small = small.advance_bytes(small.initial, doc)
    s_big = big.advance_bytes(big.initial, doc)
    assert s_small is not None and s_big is not None
    assert s_small.stacks == s_big.stacks
    assert small.cached_states() <= 40
    # an old state stays usable and equal (by value) to its re-derived twin
    old = small.advance_bytes(small.initial, b"((")
    assert old is not None
    small.advance_bytes(small.initial, b"(" * 200)  # several generations later
    again = small.advance_bytes(small.initial, b"((")
    assert again == old and hash(again) == hash(old)
    assert small.advance_bytes(old, b"))") is not None


def test_states_compare_by_value_and_identity() -> None:
    a = build_automaton(brackets())
    s = a.advance(a.initial, ord("("))
    assert s is not None
    assert s != a.initial
    assert s != "not a state"
    assert s == a.advance_bytes(a.initial, b"(()")


def test_concurrent_advances_agree() -> None:
    a = build_automaton(json_grammar())
    doc = b'{"a": [1, 2, {"b": "c\\n"}], "d": -1.5e3, "e": [true, false, null]}'
    results: list[State | None] = []
    lock = threading.Lock()

    def work() -> None:
        s = a.advance_bytes(a.initial, doc)
        with lock:
            results.append(s)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8
    assert all(r is results[0] for r in results)
    assert results[0] is not None and results[0].accepting


def test_transitions_view() -> None:
    a = build_automaton(right_linear())
    only_python(a)
    s = a.advance(a.initial, ord('"'))
    assert s is not None
    t = a.transitions(s)
    nxt = a.advance(s, ord("q"))
    assert t[ord("q")] is nxt
    assert t[ord("a")] is nxt  # the whole atom [a-z] was filled by one miss
    assert a.advance(s, ord("#")) is None
    assert t[ord("#")] is None


def test_nfa_and_dfa_grow_only_where_explored() -> None:
    # the build reads the grammar and computes the initial state; the NFA and the DFA grow
    # with the input, and walking the same text again creates nothing
    a = build_automaton(json_grammar())

    def nfa_size() -> int:
        return a.nfa_states if hasattr(a, "nfa_states") else len(a._dfa.nfa)

    built, positions = nfa_size(), a.n_positions
    assert positions < 20
    doc = b'{"a": [1, 2.5e3, "x\\u00e9"], "b": {"c": null}}'
    s = a.advance_bytes(a.initial, doc)
    assert s is not None and a.is_accepting(s)
    assert nfa_size() > built and a.n_positions > positions
    built, positions = nfa_size(), a.n_positions
    assert a.advance_bytes(a.initial, doc) is s
    assert (nfa_size(), a.n_positions) == (built, positions)


def test_inlined_rules_share_one_copy_per_continuation() -> None:
    # "a" R | "b" R: both references continue at the same place, so R is built once
    g = Grammar(
        (
            Rule("root", seq(choice(seq(lit("a"), RuleRef("r")), seq(lit("b"), RuleRef("r"))))),
            Rule("r", seq(lit("<"), star(lit("xy")), lit(">"))),
        )
    )
    a = build_automaton(g)
    s1 = a.advance_bytes(a.initial, b"a<xy")
    s2 = a.advance_bytes(a.initial, b"b<xyxy")
    assert s1 is not None and s1 is s2
    assert a.entry_names == ("root",)
    s3 = a.advance_bytes(a.initial, b"b<>")
    assert s3 is not None and a.is_accepting(s3)
    # a rule referenced from two places with different continuations is still exact
    g2 = Grammar(
        (
            Rule("root", seq(RuleRef("r"), lit(","), RuleRef("r"), opt(lit("!")))),
            Rule("r", choice(lit("x"), seq(lit("("), star(lit("y")), lit(")")))),
        )
    )
    a2 = build_automaton(g2)
    for text in [b"x,x", b"(yy),x!", b"x,(y)", b"x,", b"(y,x", b"x,x!!"]:
        s = a2.advance_bytes(a2.initial, text)
        assert (s is not None and a2.is_accepting(s)) == (text in (b"x,x", b"(yy),x!", b"x,(y)"))
