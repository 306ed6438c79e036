"""``build_automaton``: analysis -> NFA -> per-entry DFAs -> runtime automaton."""

from __future__ import annotations

from toolmask.automaton._analysis import analyse
from toolmask.automaton._dfa import determinise, minimise
from toolmask.automaton._nfa import build_nfa
from toolmask.automaton._runtime import Automaton
from toolmask.grammar._ir import Grammar
from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = ["build_automaton"]


def build_automaton(grammar: Grammar, *, limits: Limits = DEFAULT_LIMITS) -> Automaton:
    """Compile ``grammar`` to a byte-level pushdown automaton (see ``docs/automaton.md``).

    Non-recursive rules are inlined into their callers (within a size budget), groups of rules
    that reference each other only in tail position become one regular DFA, and the remaining
    references become call edges (tail calls push nothing).

    Raises GrammarError on left recursion (the message names the cycle) and LimitError when
    ``limits`` caps rules, unrolled repetitions, automaton positions or compile time. Every cap
    is checked inside the loop that could exceed it.

    Cost: linear in the size of the inlined, unrolled grammar for the NFA; the subset
    construction is linear in the positions it creates times the NFA states per position.
    """
    plan = analyse(grammar, limits)
    nfa = build_nfa(grammar, plan, limits)
    tables = minimise(determinise(nfa, limits), limits)
    return Automaton(tables, limits)
