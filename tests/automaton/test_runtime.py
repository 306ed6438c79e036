"""Runtime details: cache generations, threads, memo views, the builder's size estimate."""

from __future__ import annotations

import threading

from tests.automaton.ir_grammars import brackets, json_grammar, right_linear
from toolmask.automaton import State, build_automaton
from toolmask.automaton._analysis import analyse
from toolmask.automaton._nfa import build_nfa
from toolmask.grammar._ir import Grammar, Repeat, Rule, RuleRef, choice, lit, opt, seq, star
from toolmask.limits import DEFAULT_LIMITS, Limits


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
    s = a.advance(a.initial, ord('"'))
    assert s is not None
    t = a.transitions(s)
    nxt = a.advance(s, ord("q"))
    assert t[ord("q")] is nxt
    assert t[ord("a")] is nxt  # the whole atom [a-z] was filled by one miss
    assert a.advance(s, ord("#")) is None
    assert t[ord("#")] is None


def test_size_estimate_is_exact() -> None:
    # the analysis counts NFA states so that oversized grammars fail before building anything
    grammars = [
        json_grammar(),
        brackets(),
        right_linear(),
        Grammar((Rule("root", seq(Repeat(lit("ab"), 2, 5), star(lit("c")), opt(lit("d")))),)),
        Grammar(
            (
                Rule("root", seq(RuleRef("x"), Repeat(RuleRef("x"), 3, None))),
                Rule("x", choice(lit("xy"), seq(lit("z"), Repeat(lit("w"), 0, 3)))),
            )
        ),
    ]
    for g in grammars:
        plan = analyse(g, DEFAULT_LIMITS)
        nfa = build_nfa(g, plan, DEFAULT_LIMITS)
        entry_rules = [n for n in nfa.entry_names if n not in plan.group_of]
        expected = sum(plan.sizes[n] + 2 for n in entry_rules)
        groups = {plan.group_of[n] for n in nfa.entry_names if n in plan.group_of}
        expected += sum(plan.sizes[plan.groups[gid][0]] + 1 for gid in groups)
        assert len(nfa) == expected, str(g)
