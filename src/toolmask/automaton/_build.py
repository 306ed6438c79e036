"""``build_automaton``: analysis up front; NFA, DFA positions and states on demand."""

from __future__ import annotations

from toolmask.automaton._analysis import Analysis
from toolmask.automaton._dfa import LazyDFA
from toolmask.automaton._nfa import LazyNFA
from toolmask.automaton._runtime import PythonAutomaton
from toolmask.grammar import Grammar
from toolmask.grammar.passes import literal_tries
from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = ["build_automaton"]


def build_automaton(grammar: Grammar, *, limits: Limits = DEFAULT_LIMITS) -> PythonAutomaton:
    """Compile ``grammar`` to a byte-level pushdown automaton (see ``docs/automaton.md``).

    The build is lazy: it reads the grammar once (reachable rules, references, repetition
    caps), analyses the cyclic components of the reference graph and computes the initial
    state. Each rule's NFA, and each DFA position, is built the first time the automaton
    reaches it, so compiling costs about what reading the grammar costs, and a part of the
    grammar no input ever enters is never built.

    Small non-recursive rules and rules referenced once are inlined into their callers, groups
    of rules that reference each other only in tail position become one regular DFA, and the
    remaining references become call edges (tail calls push nothing). A choice of many
    literals is read as its trie (:func:`~toolmask.grammar.passes.literal_tries`), as the
    compiled kernel reads it.

    Raises GrammarError on left recursion (the message names the cycle) and LimitError when
    ``limits`` caps rules, unrolled repetitions or compile time, or when building the initial
    state exceeds the automaton caps. Caps hit later, while the automaton is explored, make
    ``advance`` reject (return None) instead: matchers never raise on input.

    Cost: O(size of the reachable grammar) with a small constant, plus O(size of the cyclic
    components); the rest is paid per position on first use (see ``PythonAutomaton``).
    """
    analysis = Analysis(literal_tries(grammar), limits)
    automaton = PythonAutomaton(LazyDFA(LazyNFA(analysis, limits), limits), limits)
    analysis.deadline.check()
    return automaton
