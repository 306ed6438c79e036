"""Name slots: the calls of a name filter written once, with a choice of names in them.

A name filter (:func:`~toolmask.tools.build_name_filter`) holds one call per allowed tool, each
its format's call with any JSON value for the arguments. For most formats these calls differ
only in the name: the call of tool ``n`` is a *template* with ``n`` written where the template
says. Where the template writes the name once on every path (never twice in a sequence, never
under a repetition), the choice of the calls ``T[n1] | T[n2] | ...`` and the template with a
choice of names ``T[n1 | n2 | ...]`` are the same language, and the second is O(names) bytes in
one rule instead of one call each: what a subset's filter compiles.

Which tools fit is decided once per tool list, format, mode and options, by comparing each
tool's own filter call with the template filled with its name (:func:`fill_slot`), node for
node; a tool whose call differs (a format that writes its parameter names) keeps its own call.
The template is written with :data:`SLOT_NAME`, a valid tool name, and the slot is where its
bytes stand in the template's literals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from toolmask.grammar import (
    Bytes,
    Choice,
    Grammar,
    Node,
    Repeat,
    RuleRef,
    Seq,
    Special,
    iter_nodes,
    lit,
    seq,
)
from toolmask.grammar import choice as make_choice
from toolmask.tools.formats import Kit

__all__ = [
    "NAMES_RULE",
    "SLOT_INDEX",
    "SLOT_NAME",
    "NameSlots",
    "fill_slot",
    "mentions",
    "names_choice",
    "split_slot",
]

#: the name a filter's call template is written with (a valid tool name no format transforms)
SLOT_NAME = "tmNameSlot0q7Zx"
_SLOT = SLOT_NAME.encode()
#: the index the template is written with: a codec that names rules by index gives a template
#: no real tool's call equals (so no tool uses it), and rules that collide with no other call's
SLOT_INDEX = 10**12 - 7
#: the rule that holds the choice of names in a subset's filter
NAMES_RULE = "tm_names"


def _count(node: Node) -> int | None:
    """The most times ``_SLOT`` occurs on one path through ``node`` (rules referenced do not
    count: :func:`mentions` checks them), or None when a repetition holds it."""
    t = type(node)
    if t is Bytes:
        return node.value.count(_SLOT)  # type: ignore[union-attr]
    if t is Seq or t is Choice:
        counts = [_count(it) for it in node.items]  # type: ignore[union-attr]
        if any(c is None for c in counts):
            return None
        ns = [c for c in counts if c is not None]
        return sum(ns) if t is Seq else max(ns, default=0)
    if t is Repeat:
        inner = _count(node.item)  # type: ignore[union-attr]
        return None if inner is None or inner > 0 else 0
    return 0


def _replace(node: Node, slot: bytes, by: bytes | None, ref: Node) -> Node:
    """``node`` with ``slot`` in its literals replaced by ``by`` (same node types, nothing
    merged) or, with ``by=None``, by ``ref`` (built with the smart constructors)."""
    t = type(node)
    if t is Bytes:
        value = node.value  # type: ignore[union-attr]
        if slot not in value:
            return node
        if by is not None:
            return Bytes(value.replace(slot, by))
        before, after = value.split(slot)
        return seq(lit(before), ref, lit(after))
    if t is Seq or t is Choice:
        items = node.items  # type: ignore[union-attr]
        new = tuple(_replace(it, slot, by, ref) for it in items)
        if all(a is b for a, b in zip(new, items, strict=True)):
            return node
        if by is not None:
            return Seq(new) if t is Seq else Choice(new)
        return seq(*new) if t is Seq else make_choice(*new)
    if t is Repeat:  # holds no slot (checked)
        return node
    return node


def split_slot(template: Node) -> Node | None:
    """``template`` with its name slot replaced by a reference to :data:`NAMES_RULE`, or None
    when that would not be the union of its fillings: the slot occurs twice on one path, under
    a repetition, or nowhere."""
    n = _count(template)
    if n != 1:
        return None
    return _replace(template, _SLOT, None, RuleRef(NAMES_RULE))


def fill_slot(template: Node, name: str) -> Node:
    """``template`` with ``name`` where the slot is: the node the format writes for a tool
    called ``name`` when its call is the template's (compared with ``==``)."""
    return _replace(template, _SLOT, name.encode(), RuleRef(NAMES_RULE))


def mentions(nodes: Iterable[Node]) -> bool:
    """Whether the slot's text occurs in ``nodes`` (a literal or a special token's text)."""
    text = SLOT_NAME
    for root in nodes:
        for n in iter_nodes(root):
            if type(n) is Bytes and _SLOT in n.value:
                return True
            if type(n) is Special and text in n.text:
                return True
    return False


def names_choice(names: Iterable[str]) -> Node:
    """The choice of ``names`` as literals, sorted and unique: both automaton builders read a
    choice of many literals as its trie (:func:`~toolmask.grammar.passes.literal_tries`), so
    the automaton's positions in it hold one branch per distinct next byte, not one per name,
    and a name filter's first steps into the names cost O(branches). Making it costs a sort
    and one literal per name; it holds no rule reference (:meth:`Grammar.with_rule` may skip
    that check)."""
    items = sorted({n.encode() for n in names})
    if len(items) == 1:
        return Bytes(items[0])
    return Choice(tuple(map(Bytes, items)))


@dataclass(frozen=True)
class NameSlots:
    """The name slots of one tool list in one format, mode and options: ``kit``, the filter's
    kit with the templates written (their rules: the shared any-value rules; copied for each
    use, never changed), ``templates``, one per variant of the format the mode writes calls in,
    with the slot as a reference to :data:`NAMES_RULE`, and ``names``, the tools whose filter
    calls are the templates filled with their names (empty: no template fits)."""

    kit: Kit
    templates: tuple[Node, ...]
    names: frozenset[str]
    #: a filter already written over these slots, per mode, options and limits: a subset
    #: whose tools all fit the templates differs from it in :data:`NAMES_RULE` alone, so its
    #: filter is that grammar with the rule replaced (:meth:`Grammar.with_rule`), not built
    #: again (see :func:`~toolmask.tools._grammar.build_name_filter`)
    shells: dict[tuple[Any, ...], Grammar] = field(default_factory=dict, compare=False, repr=False)

    def kit_copy(self) -> Kit:
        """A kit holding the templates' rules, to write a subset's filter in."""
        return self.kit.copy()
