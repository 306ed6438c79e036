"""Language-preserving grammar passes, one module each, and :func:`simplify` running them.

* :func:`remove_dead_rules` (``dead_rules``) drops rules unreachable from the start rule,
* :func:`inline_rules` (``inline``) inlines non-recursive rules referenced exactly once,
* :func:`fuse` (``fuse``) flattens and fuses nodes locally,
* :func:`utf8_classes` (``utf8_classes``) canonicalises UTF-8 encoded code-point classes,
* :func:`literal_tries` (``literal_trie``) reads a choice of many literals as its trie (what both
  automaton builders do; not part of :func:`simplify`).

The fixpoint over rules the passes share (``_walk``: :func:`node_prop` / :func:`rules_fixpoint`
with :data:`NULLABLE` and :data:`PRODUCTIVE`, :func:`nullable_rules`) is public too: the
automaton stage's analysis evaluates the same properties.
"""

from __future__ import annotations

from toolmask.grammar._ir import Grammar
from toolmask.grammar.passes._walk import (
    NULLABLE,
    PRODUCTIVE,
    node_prop,
    nullable_rules,
    rules_fixpoint,
)
from toolmask.grammar.passes.dead_rules import remove_dead_rules
from toolmask.grammar.passes.fuse import fuse
from toolmask.grammar.passes.inline import inline_rules
from toolmask.grammar.passes.literal_trie import (
    LITERAL_TRIE_DEPTH,
    LITERAL_TRIE_GROUP,
    LITERAL_TRIE_MIN,
    literal_trie,
    literal_tries,
)
from toolmask.grammar.passes.utf8_classes import utf8_classes

__all__ = [
    "LITERAL_TRIE_DEPTH",
    "LITERAL_TRIE_GROUP",
    "LITERAL_TRIE_MIN",
    "NULLABLE",
    "PRODUCTIVE",
    "fuse",
    "inline_rules",
    "literal_trie",
    "literal_tries",
    "node_prop",
    "nullable_rules",
    "remove_dead_rules",
    "rules_fixpoint",
    "simplify",
    "utf8_classes",
]


def simplify(grammar: Grammar) -> Grammar:
    """Run dead-rule removal, inlining, UTF-8 class canonicalisation and fusion, in that order.

    The result matches the same byte strings as ``grammar`` (each pass preserves the language)
    and keeps the start rule's name and the post-decode checks.
    """
    g = remove_dead_rules(grammar)
    g = inline_rules(g)
    g = utf8_classes(g)
    return fuse(g)
