"""The products of two alternatives of one JSON type: the per-kind meets that
:meth:`ShapeAlgebra.intersect <toolmask.schema._algebra.ShapeAlgebra.intersect>` multiplies
pairwise, and what they need (how an object alternative constrains one key, whether an array or
object alternative accepts a literal value).

Each product takes what it uses and nothing more: the limits (number and string products are DFA
products bounded by ``Limits.max_dfa_states``; past it one side is kept and the result flagged
``over``, for the validator) and, for literal containers (an enum's array or object values),
``accepts``, which evaluates a term against a value exactly
(:meth:`~toolmask.schema._resolve.Locations.accepts`). A product is ``(alternative, flags)``,
or None when the two alternatives have no value in common.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

from toolmask.errors import LimitError
from toolmask.grammar import Dfa
from toolmask.limits import Limits
from toolmask.schema import _langs
from toolmask.schema._terms import (
    BOTTOM,
    NO_FLAGS,
    SHAPE_TOP,
    ArrAlt,
    Flags,
    NumAlt,
    ObjAlt,
    Prop,
    Region,
    Shape,
    StrAlt,
    Term,
    flag_over,
    mk_and,
)

__all__ = [
    "Accepts",
    "arr_accepts",
    "arr_and",
    "num_and",
    "obj_accepts",
    "obj_and",
    "prop_view",
    "str_and",
    "top_identity",
]

#: whether a value is in a term's set, exactly (``Locations.accepts``)
Accepts = Callable[[Term, Any], bool]


def num_and(a: NumAlt, b: NumAlt, limits: Limits) -> tuple[NumAlt, Flags] | None:
    integer = a.integer or b.integer
    if a.is_any and b.is_any:
        return NumAlt(None, integer), NO_FLAGS
    # a range kept as regexes meets "any number" without its DFA (it is never empty; an
    # integer range already holds integral values only)
    for x, y in ((a, b), (b, a)):
        if x.rng is not None and y.is_any and (x.integer or not integer):
            return NumAlt(None, integer, x.rng), NO_FLAGS
    if a.mult is not None and b.mult is not None:
        return _multiples_and(a, b, integer, limits)
    da, db = a.lang(limits), b.lang(limits)
    if da is not None and db is not None:
        try:
            d = _langs.dfa_and(da, db, limits)
        except LimitError:
            # products of remainder automata (multipleOf) past max_dfa_states: the grammar
            # keeps one side, the post-decode validator checks the other
            da = da if da.n_states <= db.n_states else db
            return NumAlt(da, integer), flag_over("", "multipleOf")
    else:
        one = da if da is not None else db
        assert one is not None
        d = one
    if integer and (da is None or db is None):
        d = _langs.dfa_and(d, _langs.int_value(), limits)
    if d.is_empty():
        return None
    # "any number" kept the other side's language: still the multiples of its multipleOf
    mult = (a if db is None else b).mult if da is None or db is None else None
    return NumAlt(d, integer, mult=mult), NO_FLAGS


def _multiples_and(a: NumAlt, b: NumAlt, integer: bool, limits: Limits) -> tuple[NumAlt, Flags]:
    """Two ``multipleOf`` alternatives without ranges meet in the multiples of their least
    common multiple: one remainder automaton, built directly (never empty: 0 is in it). Past
    ``max_dfa_states``, the grammar keeps the side with fewer states and the validator checks
    the other, as for any product over the cap; found without building the product, which
    would reach the same cap through every state before it (seconds, not microseconds)."""
    assert a.mult is not None and b.mult is not None and a.dfa is not None and b.dfa is not None
    try:
        k = _langs.lcm(a.mult, b.mult)
        return NumAlt(
            _langs.multiples_dfa(k, integer=integer, limits=limits), integer, mult=k
        ), NO_FLAGS
    except LimitError:
        keep = a if a.dfa.n_states <= b.dfa.n_states else b
        if keep.integer != integer:  # its integral multiples
            k = a.mult if keep is a else b.mult
            keep = NumAlt(_langs.multiples_dfa(k, integer=integer, limits=limits), integer, mult=k)
        return keep, flag_over("", "multipleOf")


def str_and(a: StrAlt, b: StrAlt, limits: Limits) -> tuple[StrAlt, Flags] | None:
    # a known format's language is never empty: it meets "any string" without its DFA
    if a.is_any:
        return (b, NO_FLAGS) if b.dfa is None or not b.dfa.is_empty() else None
    if b.is_any or a == b:
        return (a, NO_FLAGS) if a.dfa is None or not a.dfa.is_empty() else None
    da, db = a.lang(limits), b.lang(limits)
    assert da is not None and db is not None
    try:
        d = _langs.dfa_and(da, db, limits)
    except LimitError:
        # keep the smaller language in the grammar and leave the rest to the validator
        return a, flag_over("", "pattern")
    if d.is_empty():
        return None
    return StrAlt(d), NO_FLAGS


def arr_and(a: ArrAlt, b: ArrAlt, accepts: Accepts) -> tuple[ArrAlt, Flags] | None:
    if a.literal is not None or b.literal is not None:
        return _meet_literal(a, b, lambda alt, v: arr_accepts(alt, v, accepts))
    k = max(len(a.prefix), len(b.prefix))
    prefix = tuple(mk_and(a.item_term(i), b.item_term(i)) for i in range(k))
    items = mk_and(a.items, b.items)
    lo = max(a.min_items, b.min_items)
    hi = _min_opt(a.max_items, b.max_items)
    if hi is not None and lo > hi:
        return None
    flags = NO_FLAGS
    contains, cmin, cmax = a.contains, a.min_contains, a.max_contains
    if b.contains is not None:
        if contains is None:
            contains, cmin, cmax = b.contains, b.min_contains, b.max_contains
        elif contains == b.contains:
            cmin, cmax = max(cmin, b.min_contains), _min_opt(cmax, b.max_contains)
        else:
            flags = flag_over("", "contains")
    ev = -1 if -1 in (a.evaluated, b.evaluated) else max(a.evaluated, b.evaluated)
    # trailing prefix positions equal to items can be folded
    while prefix and prefix[-1] == items:
        prefix = prefix[:-1]
    return (
        ArrAlt(prefix, items, lo, hi, contains, cmin, cmax, ev),
        flags,
    )


def arr_accepts(a: ArrAlt, value: Any, accepts: Accepts) -> bool:
    if not isinstance(value, list):
        return False
    n = len(value)
    if n < a.min_items or (a.max_items is not None and n > a.max_items):
        return False
    if not all(accepts(a.item_term(i), v) for i, v in enumerate(value)):
        return False
    if a.contains is not None:
        c = sum(1 for v in value if accepts(a.contains, v))
        if c < a.min_contains or (a.max_contains is not None and c > a.max_contains):
            return False
    return True


def obj_and(a: ObjAlt, b: ObjAlt, accepts: Accepts, limits: Limits) -> tuple[ObjAlt, Flags] | None:
    if a.literal is not None or b.literal is not None:
        return _meet_literal(a, b, lambda alt, v: obj_accepts(alt, v, accepts))
    # each side's properties by name (the first of a name, as ObjAlt.prop finds it)
    a_props = {p.name: p for p in reversed(a.props)}
    b_props = {p.name: p for p in reversed(b.props)}
    names = [p.name for p in a.props] + [p.name for p in b.props if p.name not in a_props]
    props: list[Prop] = []
    for n in names:
        pa = a_props.get(n) or _region_view(a, n)
        pb = b_props.get(n) or _region_view(b, n)
        value = mk_and(pa.value, pb.value)
        required = pa.required or pb.required
        if required and value is BOTTOM:
            return None
        evaluated = pa.evaluated or pb.evaluated
        # a side whose property is the product already (the other side says nothing more
        # about the key: a ``required`` part met with the declared properties) is kept as
        # it is, its hash computed once
        if value is pa.value and required == pa.required and evaluated == pa.evaluated:
            props.append(pa)
        elif value is pb.value and required == pb.required and evaluated == pb.evaluated:
            props.append(pb)
        else:
            props.append(Prop(n, value, required, evaluated))
    regions: list[Region] = []
    for ra in a.regions:
        for rb in b.regions:
            value = mk_and(ra.value, rb.value)
            if value is BOTTOM:
                continue
            keys = _keys_and(ra.keys, rb.keys, limits)
            if keys is not None and keys.is_empty():
                continue
            evaluated = ra.evaluated or rb.evaluated
            if value is ra.value and keys is ra.keys and evaluated == ra.evaluated:
                regions.append(ra)
            elif value is rb.value and keys is rb.keys and evaluated == rb.evaluated:
                regions.append(rb)
            else:
                regions.append(Region(keys, value, evaluated))
    lo = max(a.min_props, b.min_props)
    hi = _min_opt(a.max_props, b.max_props)
    if hi is not None and lo > hi:
        return None
    if sum(1 for p in props if p.required) > (hi if hi is not None else math.inf):
        return None
    return ObjAlt(tuple(props), tuple(regions), lo, hi), NO_FLAGS


def _keys_and(x: Dfa | None, y: Dfa | None, limits: Limits) -> Dfa | None:
    if x is None:
        return y
    if y is None:
        return x
    return _langs.dfa_and(x, y, limits)


def prop_view(o: ObjAlt, name: str) -> Prop:
    """How ``o`` constrains key ``name``: declared, covered by a region, or forbidden."""
    p = o.prop(name)
    if p is not None:
        return p
    return _region_view(o, name)


def _region_view(o: ObjAlt, name: str) -> Prop:
    """How ``o`` constrains key ``name`` that it does not declare (:func:`prop_view`)."""
    for r in o.regions:
        if r.keys is None or r.keys.accepts(name):
            return Prop(name, r.value, False, r.evaluated)
    return Prop(name, BOTTOM, False, False)


def obj_accepts(o: ObjAlt, value: Any, accepts: Accepts) -> bool:
    if not isinstance(value, dict):
        return False
    n = len(value)
    if n < o.min_props or (o.max_props is not None and n > o.max_props):
        return False
    for p in o.props:
        if p.name in value:
            if not accepts(p.value, value[p.name]):
                return False
        elif p.required:
            return False
    names = o.names()
    for k, v in value.items():
        if k in names:
            continue
        if not accepts(prop_view(o, k).value, v):
            return False
    return True


def top_identity(s: Shape, limits: Limits) -> bool:
    """``intersect(SHAPE_TOP, s)`` is ``s`` itself: every alternative meets "any value of
    its type" unchanged (the products above with a TOP alternative copy the other side,
    except where they normalise: a number DFA re-met with the integer spelling, a string DFA
    that may be empty, literal containers, trailing prefix items equal to ``items``, BOTTOM
    or empty regions, required BOTTOM properties, counts out of order), no alternative
    repeats (the products are deduplicated) and there is at most one object alternative
    (several are merged). O(alternatives + properties)."""
    # a type's alternatives that are SHAPE_TOP's own (what the keyword families' parts keep
    # for the types they leave alone) pass every test below
    nums, strs, arrs, objs = s.numbers, s.strings, s.arrays, s.objects
    if nums is not _TOP.numbers:
        for n in nums:
            if n.dfa is not None:
                return False
    if strs is not _TOP.strings:
        for x in strs:
            if x.dfa is not None:
                return False
    if arrs is not _TOP.arrays:
        for a in arrs:
            if a.literal is not None or (a.prefix and a.prefix[-1] == a.items):
                return False
            if a.max_items is not None and a.min_items > a.max_items:
                return False
            if a.contains is None and (a.min_contains != 1 or a.max_contains is not None):
                return False  # the product takes TOP's contains bounds then
    if len(objs) > 1:
        return False
    if objs and objs is not _TOP.objects:
        o = objs[0]
        if o.literal is not None:
            return False
        if o.max_props is not None and o.min_props > o.max_props:
            return False
        names: set[str] = set()
        required = 0
        for p in o.props:
            names.add(p.name)
            if p.required:
                required += 1
                if p.value is BOTTOM:
                    return False
        if len(names) != len(o.props):
            return False
        if o.max_props is not None and required > o.max_props:
            return False
        for r in o.regions:
            if r.value is BOTTOM or (r.keys is not None and r.keys.is_empty()):
                return False
    cap = limits.max_alternatives
    for alts in (nums, strs, arrs):
        if len(alts) > 1 and (len(set(alts)) != len(alts) or len(alts) > cap):
            return False
    return True


#: SHAPE_TOP (its alternatives' tuples, told by identity in top_identity)
_TOP = SHAPE_TOP


def _min_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


_Container = TypeVar("_Container", ArrAlt, ObjAlt)


def _meet_literal(
    a: _Container, b: _Container, accepts: Callable[[_Container, Any], bool]
) -> tuple[_Container, Flags] | None:
    """The product of two array (or object) alternatives, one of them a literal: a literal
    meets a literal iff they are equal, and another alternative iff it accepts the value."""
    lit, other = (a, b) if a.literal is not None else (b, a)
    if other.literal is not None:
        return (lit, NO_FLAGS) if lit.literal == other.literal else None
    assert lit.literal is not None
    return (lit, NO_FLAGS) if accepts(other, json.loads(lit.literal)) else None
