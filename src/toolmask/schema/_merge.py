"""Merging the alternatives of one JSON type into fewer, exactly (the shape algebra's unions and
products call these when alternatives pile up past ``Limits.max_alternatives``).

* Object alternatives that differ in one declared property are one alternative whose property
  holds either value (:func:`merge_alternatives`).
* String alternatives, and number alternatives, are regular languages, so their union is one
  automaton (:func:`merge_regular`): an ``anyOf`` of a thousand patterns is one DFA, not a
  thousand alternatives the grammar tries in parallel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from toolmask.errors import LimitError
from toolmask.grammar import Dfa
from toolmask.limits import Limits
from toolmask.schema import _langs
from toolmask.schema._terms import NumAlt, ObjAlt, Prop, Shape, StrAlt, canonical, mk_or

__all__ = [
    "counted_alternatives",
    "finite_strings",
    "merge_alternatives",
    "merge_regular",
    "number_lang",
]


def number_lang(n: NumAlt, limits: Limits) -> Dfa:
    """The DFA of a number alternative's exponent-free spellings (any number: all of them)."""
    d = n.lang(limits)
    if d is not None:
        return d
    return _langs.int_value() if n.integer else _langs.num_noexp()


def counted_alternatives(alts: Iterable[Any], limits: Limits) -> int:
    """The alternatives of ``alts`` that are not literal containers (those count against
    ``max_alternatives``); LimitError when the literal ones' JSON texts pass
    ``max_literal_bytes`` (they are lowered into one byte trie, so their cost is their
    bytes, not their number)."""
    others = 0
    size = 0
    for a in alts:
        text = getattr(a, "literal", None)
        if text is None:
            others += 1
        else:
            size += len(text)
    if size > limits.max_literal_bytes:
        raise LimitError(
            f"literal values of one type take {size} bytes of JSON", limit="max_literal_bytes"
        )
    return others


def finite_strings(shape: Shape, limits: Limits, limit: int = 64) -> set[str] | None:
    """The canonical JSON texts of the values of ``shape`` when it holds strings only, none
    of them flagged, and finitely many (at most ``limit`` per alternative: a pattern such as
    ``^PowerShell@2$``, read off its chain without a DFA where it is one); else None."""
    if shape != Shape(strings=shape.strings) or not shape.strings:
        return None  # another type, flags, a pending union, or no string at all
    out: set[str] = set()
    for a in shape.strings:
        chain = _langs.pattern_chain(a.pat, limits) if a.pat is not None else None
        if chain is not None:
            values = _langs.chain_strings(chain, limit)
        else:
            d = a.lang(limits) if a.fmt is None else None
            values = d.strings(limit) if d is not None else None
        if values is None:
            return None
        out.update(canonical(v) for v in values)
    return out


def merge_regular(limits: Limits, tick: Callable[[], None], alts: list[Any]) -> list[Any]:
    """``alts`` with their string alternatives merged into as few as the union's automaton
    allows, and their number alternatives likewise (integer and other numbers apart: they are
    spelled differently). A union of regular languages is regular, so n alternatives of one
    type are one DFA, exactly, when it fits in ``limits.max_dfa_states``; where it does not,
    each half is merged apart, recursively (:func:`_unions`). Other alternatives are returned
    unchanged, after them. ``tick`` is called before each union (the compile deadline).
    Cost: one subset construction per merged group, plus those of the groups that passed the
    cap (O(log n) levels of them)."""
    strs = [a for a in alts if isinstance(a, StrAlt)]
    nums = [a for a in alts if isinstance(a, NumAlt)]
    rest = [a for a in alts if not isinstance(a, (StrAlt, NumAlt))]
    out: list[Any] = []
    if len(strs) > 1 and not any(x.is_any for x in strs):
        langs = [x.lang(limits) for x in strs]
        out += [StrAlt(d) for d in _unions([d for d in langs if d is not None], limits, tick)]
    else:
        out += strs
    for integer in (True, False):
        group = [n for n in nums if n.integer == integer]
        if len(group) > 1 and not any(n.is_any for n in group):
            dfas = [number_lang(n, limits) for n in group]
            out += [NumAlt(d, integer) for d in _unions(dfas, limits, tick)]
        else:
            out += group
    return out + rest


def _unions(dfas: list[Dfa], limits: Limits, tick: Callable[[], None]) -> list[Dfa]:
    """The union of ``dfas`` as one DFA, or, where that passes ``max_dfa_states``, the unions
    of each half (recursively; a single DFA stays itself)."""
    tick()
    if len(dfas) < 2:
        return dfas
    try:
        return [Dfa.union_all(dfas, limits=limits)]
    except LimitError:
        mid = len(dfas) // 2
        return _unions(dfas[:mid], limits, tick) + _unions(dfas[mid:], limits, tick)


def merge_alternatives(alts: list[Any]) -> list[Any]:
    """Object alternatives that differ in one declared property only, merged into one.

    Alternatives ``o1``, ``o2`` with the same keys, regions and counts whose properties agree
    everywhere but at one key ``k`` (value ``v1`` / ``v2``, required ``r1`` / ``r2``) hold
    together exactly the objects of one alternative with ``k``'s value ``v1 or v2``, required
    iff ``r1 and r2``: a property constrains one key, so the union of the two products is the
    product with the union at that key (regions constrain every key they match, so they are
    never merged this way). This is the key-disjoint structure of real schemas: the branches of
    a ``oneOf`` or the products of ``allOf`` of ``anyOf`` s usually differ in a few keys.
    Repeated until nothing merges; the order of first appearance is kept. Other alternatives
    (and literal objects) are returned unchanged. Cost: O(alternatives x properties) per round.
    """
    items = [a for a in alts if isinstance(a, ObjAlt) and a.literal is None]
    if len(items) < 2:
        return alts
    rest = [a for a in alts if not (isinstance(a, ObjAlt) and a.literal is None)]
    changed = True
    while changed and len(items) > 1:
        changed = False
        # an alternative's key for property k stands for (its skeleton, k, the rest of its
        # properties): the rest is summed as the hashes of every property less k's, so each
        # key costs O(1), not O(properties); a hit is confirmed by comparing the two
        # alternatives (_agree_but), and a false hit looks its exact key up instead
        slots: dict[tuple[Any, ...], int] = {}
        exact: dict[tuple[Any, ...], int] = {}
        merged: list[ObjAlt | None] = list(items)
        dirty: set[int] = set()  # changed this round: their registered keys are stale
        for i, o in enumerate(items):
            skeleton = hash((tuple(p.name for p in o.props), o.regions, o.min_props, o.max_props))
            parts = [hash((j, q.value, q.required, q.evaluated)) for j, q in enumerate(o.props)]
            total = sum(parts)
            for k, p in enumerate(o.props):
                key: tuple[Any, ...] = (skeleton, k, p.evaluated, total - parts[k])
                table = slots
                j = slots.get(key)
                if j is not None and not _agree_but(items[j], o, k):
                    key, table = _exact_key(o, k), exact
                    j = exact.get(key)
                if j is None or merged[j] is None or j in dirty:
                    table[key] = i
                    continue
                base = merged[j]
                assert base is not None
                q = base.props[k]
                prop = Prop(p.name, mk_or(q.value, p.value), q.required and p.required, p.evaluated)
                merged[j] = replace(base, props=(*base.props[:k], prop, *base.props[k + 1 :]))
                merged[i] = None
                dirty.add(j)
                changed = True
                break
        items = list(dict.fromkeys(o for o in merged if o is not None))
    return [*items, *rest]


def _agree_but(a: ObjAlt, b: ObjAlt, k: int) -> bool:
    """Whether ``a`` and ``b`` have the same skeleton (property names, regions, counts) and
    the same properties but at position ``k`` (where only ``evaluated`` must agree)."""
    if len(a.props) != len(b.props) or (a.regions, a.min_props, a.max_props) != (
        b.regions,
        b.min_props,
        b.max_props,
    ):
        return False
    for j, (p, q) in enumerate(zip(a.props, b.props, strict=True)):
        if p.name != q.name or p.evaluated != q.evaluated:
            return False
        if j != k and (p.value != q.value or p.required != q.required):
            return False
    return True


def _exact_key(o: ObjAlt, k: int) -> tuple[Any, ...]:
    """The key of ``o`` at property ``k`` spelled out (for a hash that collided)."""
    others = tuple((q.value, q.required, q.evaluated) for j, q in enumerate(o.props) if j != k)
    skeleton = (tuple(p.name for p in o.props), o.regions, o.min_props, o.max_props)
    return (skeleton, k, o.props[k].evaluated, others)
