"""Embedding one grammar in another: prefix every rule name so that names cannot collide."""

from __future__ import annotations

from toolmask.grammar import Choice, Grammar, Node, Repeat, Rule, RuleRef, Seq

__all__ = ["prefix_rules"]


def prefix_rules(grammar: Grammar, prefix: str) -> tuple[RuleRef, tuple[Rule, ...]]:
    """``grammar``'s rules renamed ``prefix + name``, and a reference to its start rule.

    Post-decode checks are not carried over (the caller validates with the full schema).
    Cost: O(grammar size); a subtree shared between rule bodies is rebuilt once.
    """
    memo: dict[int, Node] = {}
    rules = tuple(Rule(prefix + r.name, _rename(r.body, prefix, memo)) for r in grammar.rules)
    return RuleRef(prefix + grammar.start), rules


def _rename(node: Node, prefix: str, done_of: dict[int, Node]) -> Node:
    # iterative post-order rebuild (grammar trees can be deep); a subtree shared between
    # bodies (the schema compiler shares value nodes between the rules of an any-order object)
    # is rebuilt once per grammar (``done_of``: id of a node of the grammar -> its rebuild)
    stack: list[tuple[Node, bool]] = [(node, False)]
    out: list[Node] = []
    while stack:
        n, done = stack.pop()
        hit = done_of.get(id(n))
        if hit is not None:
            out.append(hit)
            continue
        if isinstance(n, RuleRef):
            out.append(RuleRef(prefix + n.name))
        elif isinstance(n, (Seq, Choice)):
            if done:
                k = len(n.items)
                items = tuple(out[len(out) - k :]) if k else ()
                del out[len(out) - k :]
                out.append(type(n)(items))
                done_of[id(n)] = out[-1]
            else:
                stack.append((n, True))
                stack.extend((i, False) for i in reversed(n.items))
        elif isinstance(n, Repeat):
            if done:
                out.append(Repeat(out.pop(), n.min, n.max))
                done_of[id(n)] = out[-1]
            else:
                stack.append((n, True))
                stack.append((n.item, False))
        else:
            out.append(n)
    assert len(out) == 1
    return out[0]
