"""Inline the rules that are referenced exactly once and are not recursive."""

from __future__ import annotations

from collections import Counter

from toolmask.grammar._ir import Grammar, Node, Rule, RuleRef
from toolmask.grammar.passes._walk import rebuild, references

__all__ = ["inline_rules"]


def _recursive(grammar: Grammar, name: str) -> bool:
    """Whether ``name`` can reach itself through rule references."""
    seen: set[str] = set()
    todo = list(references(grammar[name].body))
    while todo:
        r = todo.pop()
        if r == name:
            return True
        if r not in seen:
            seen.add(r)
            todo.extend(references(grammar[r].body))
    return False


def inline_rules(grammar: Grammar) -> Grammar:
    """Substitute each non-start, non-recursive rule referenced exactly once into its one use,
    and drop it. Repeats until nothing changes; language-preserving (a reference to a rule and
    the rule's body match the same strings). O(rules * grammar size) per round.
    """
    while True:
        counts = Counter(ref for r in grammar.rules for ref in references(r.body))
        victim = next(
            (
                r
                for r in grammar.rules
                if r.name != grammar.start
                and counts[r.name] == 1
                and not _recursive(grammar, r.name)
            ),
            None,
        )
        if victim is None:
            return grammar
        body = victim.body

        def leaf(n: Node, name: str = victim.name, body: Node = body) -> Node:
            return body if isinstance(n, RuleRef) and n.name == name else n

        rules = tuple(
            Rule(r.name, rebuild(r.body, leaf)) for r in grammar.rules if r.name != victim.name
        )
        grammar = Grammar(rules, grammar.start, grammar.checks)
