"""Drop the rules that the start rule cannot reach."""

from __future__ import annotations

from toolmask.grammar._ir import Grammar
from toolmask.grammar.passes._walk import reachable

__all__ = ["remove_dead_rules"]


def remove_dead_rules(grammar: Grammar) -> Grammar:
    """The grammar without rules unreachable from ``grammar.start``; rule order is kept.

    Language-preserving (only the start rule's language is the grammar's). O(grammar size).
    """
    live = set(reachable(grammar))
    if len(live) == len(grammar.rules):
        return grammar
    rules = tuple(r for r in grammar.rules if r.name in live)
    return Grammar(rules, grammar.start, grammar.checks)
