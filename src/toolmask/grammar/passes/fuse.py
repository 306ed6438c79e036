"""Local simplification: flatten nested Seq/Choice, fuse literals, merge single-byte choices."""

from __future__ import annotations

from toolmask.grammar._ir import ByteClass, Bytes, Grammar, Node, Rule
from toolmask.grammar.passes._walk import rebuild

__all__ = ["fuse", "fuse_node"]


def _leaf(n: Node) -> Node:
    # a one-byte class is a one-byte literal, which then fuses with its neighbours
    if isinstance(n, ByteClass) and n.mask and n.mask & (n.mask - 1) == 0:
        return Bytes(bytes([n.mask.bit_length() - 1]))
    return n


def fuse_node(node: Node) -> Node:
    """``node`` rebuilt through the smart constructors: nested Seq/Choice flattened, adjacent
    Bytes concatenated, one-byte classes turned into literals, single-byte alternatives of a
    Choice merged into one ByteClass, duplicate alternatives dropped, trivial repeats removed.
    Same language. O(size of node).
    """
    return rebuild(node, _leaf)


def fuse(grammar: Grammar) -> Grammar:
    """:func:`fuse_node` applied to every rule body."""
    rules = tuple(Rule(r.name, fuse_node(r.body)) for r in grammar.rules)
    return Grammar(rules, grammar.start, grammar.checks)
