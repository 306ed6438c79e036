"""Tree rebuilding helpers shared by the passes (not public)."""

from __future__ import annotations

from collections.abc import Callable

from toolmask.grammar._ir import (
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
    choice,
    iter_nodes,
    repeat,
    seq,
)

__all__ = ["node_nullable", "nullable_rules", "reachable", "rebuild", "references"]


def rebuild(node: Node, leaf: Callable[[Node], Node] = lambda n: n) -> Node:
    """Rebuild ``node`` bottom-up through the smart constructors ``seq``/``choice``/``repeat``.

    ``leaf`` maps every non-composite node (Bytes, ByteClass, RuleRef, Special) first. Recursive
    in the tree depth (grammar trees are shallow; rules are the unit of recursion).
    """
    if isinstance(node, Seq):
        return seq(*(rebuild(i, leaf) for i in node.items))
    if isinstance(node, Choice):
        return choice(*(rebuild(i, leaf) for i in node.items))
    if isinstance(node, Repeat):
        return repeat(rebuild(node.item, leaf), node.min, node.max)
    return leaf(node)


def references(node: Node) -> list[str]:
    """Names of the rules ``node`` refers to, with repetitions, in pre-order."""
    return [n.name for n in iter_nodes(node) if isinstance(n, RuleRef)]


def reachable(grammar: Grammar) -> list[str]:
    """Rule names reachable from the start rule, in discovery (BFS) order."""
    seen = {grammar.start}
    order = [grammar.start]
    i = 0
    while i < len(order):
        for ref in references(grammar[order[i]].body):
            if ref not in seen:
                seen.add(ref)
                order.append(ref)
        i += 1
    return order


def nullable_rules(rules: tuple[Rule, ...]) -> set[str]:
    """Names of the rules whose language contains the empty string (least fixpoint)."""
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for r in rules:
            if r.name not in nullable and node_nullable(r.body, nullable):
                nullable.add(r.name)
                changed = True
    return nullable


def node_nullable(node: Node, nullable_names: set[str]) -> bool:
    """Whether ``node`` matches the empty string, given the nullable rule names."""
    if isinstance(node, Bytes):
        return not node.value
    if isinstance(node, (ByteClass, Special)):
        return False
    if isinstance(node, Seq):
        return all(node_nullable(i, nullable_names) for i in node.items)
    if isinstance(node, Choice):
        return any(node_nullable(i, nullable_names) for i in node.items)
    if isinstance(node, Repeat):
        return node.min == 0 or node_nullable(node.item, nullable_names)
    return node.name in nullable_names
