"""The complement of a shape (``not``), one JSON type at a time.

Exact for null and booleans, numbers (the complement of the numbers' DFA within exponent-free
numbers; flagged ``under``, since exponent spellings are left out), strings (the DFA
complement), and arrays and objects whose alternatives' complements are expressible as
alternatives (length, items, ``contains``, required and declared properties): the complement of
a union is the intersection of the alternatives' complements, taken with the algebra's
``intersect``. Where an automaton passes ``Limits.max_dfa_states``, or an alternative's
complement is not expressible, the type is left open ("any number / string / array / object")
and flagged ``over`` at the term's location, for the validator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from toolmask.errors import LimitError
from toolmask.grammar import Dfa
from toolmask.limits import Limits
from toolmask.schema import _langs
from toolmask.schema._merge import number_lang
from toolmask.schema._terms import (
    BOTTOM,
    NO_FLAGS,
    TOP,
    ArrAlt,
    Flags,
    NumAlt,
    ObjAlt,
    Prop,
    Shape,
    StrAlt,
    flag_over,
    flag_under,
    mk_not,
)

__all__ = ["complement"]


def complement(
    s: Shape, pointer: str, limits: Limits, intersect: Callable[[Shape, Shape], Shape]
) -> Shape:
    """The complement of ``s``, a type split (``ShapeAlgebra.split``); its flags swapped, and
    what is approximated flagged at ``pointer``. ``intersect`` meets the complements of array
    (or object) alternatives."""
    flags = s.flags.swapped()
    # numbers
    nums: tuple[NumAlt, ...]
    if not s.numbers:
        nums = (NumAlt(),)
    elif any(n.is_any and not n.integer for n in s.numbers):
        nums = ()
    else:
        try:
            d = Dfa.union_all([number_lang(n, limits) for n in s.numbers], limits=limits)
            comp = _langs.num_noexp().intersect(d.complement(limits=limits), limits=limits)
            nums = () if comp.is_empty() else (NumAlt(comp, False),)
            flags = flags | flag_under(pointer, "not")
        except LimitError:  # past max_dfa_states: any number, the validator checks
            nums = (NumAlt(),)
            flags = flags | flag_over(pointer, "not")
    # strings
    strs: tuple[StrAlt, ...]
    if not s.strings:
        strs = (StrAlt(),)
    elif any(x.is_any for x in s.strings):
        strs = ()
    else:
        try:
            langs = [x.lang(limits) for x in s.strings]
            d2 = Dfa.union_all([d for d in langs if d is not None], limits=limits)
            c2 = d2.complement(limits=limits)
            strs = () if c2.is_empty() else (StrAlt(c2),)
        except LimitError:  # past max_dfa_states: any string, the validator checks
            strs = (StrAlt(),)
            flags = flags | flag_over(pointer, "not")
    arrs, f1 = _container_complement(s.arrays, pointer, "arrays", intersect)
    objs, f2 = _container_complement(s.objects, pointer, "objects", intersect)
    return Shape(
        null=not s.null,
        booleans=frozenset({True, False}) - s.booleans,
        numbers=nums,
        strings=strs,
        arrays=arrs,
        objects=objs,
        flags=flags | f1 | f2,
    )


def _container_complement(
    alts: tuple[Any, ...],
    pointer: str,
    field: Literal["arrays", "objects"],
    intersect: Callable[[Shape, Shape], Shape],
) -> tuple[tuple[Any, ...], Flags]:
    """The complement, within arrays (or objects), of the union of ``alts``: the
    intersection of the alternatives' complements; "any array/object" (flagged: the
    validator checks) where one of them is not expressible."""
    top = ArrAlt() if field == "arrays" else ObjAlt()
    if not alts:
        return (top,), NO_FLAGS
    if any(a.is_top() for a in alts):
        return (), NO_FLAGS
    alt_complement = _arr_alt_complement if field == "arrays" else _obj_alt_complement
    result: Shape | None = None
    for a in alts:
        comp: tuple[Any, ...] | None = alt_complement(a)
        if comp is None:
            return (top,), flag_over(pointer, "not")
        sh = Shape(arrays=comp) if field == "arrays" else Shape(objects=comp)
        result = sh if result is None else intersect(result, sh)
    assert result is not None
    return getattr(result, field), result.flags


def _arr_alt_complement(a: ArrAlt) -> tuple[ArrAlt, ...] | None:
    if a.literal is not None:
        return None
    out: list[ArrAlt] = []
    if a.min_items > 0:
        out.append(ArrAlt(max_items=a.min_items - 1))
    if a.max_items is not None:
        out.append(ArrAlt(min_items=a.max_items + 1))
    for i, t in enumerate(a.prefix):
        if t != TOP:
            out.append(ArrAlt(prefix=(TOP,) * i + (mk_not(t),), min_items=i + 1))
    if a.items == BOTTOM:
        out.append(ArrAlt(min_items=len(a.prefix) + 1))
    elif a.items != TOP:
        if a.prefix:
            return None
        out.append(ArrAlt(contains=mk_not(a.items), min_contains=1))
    if a.contains is not None:
        if a.min_contains > 0:
            out.append(ArrAlt(contains=a.contains, min_contains=0, max_contains=a.min_contains - 1))
        if a.max_contains is not None:
            out.append(ArrAlt(contains=a.contains, min_contains=a.max_contains + 1))
    return tuple(out)


def _obj_alt_complement(o: ObjAlt) -> tuple[ObjAlt, ...] | None:
    if o.literal is not None:
        return None
    for r in o.regions:
        if r.value != TOP:
            return None
    if not (len(o.regions) == 1 and o.regions[0].keys is None):
        return None  # some keys are forbidden: "has a forbidden key" is not expressible
    out: list[ObjAlt] = []
    for p in o.props:
        if p.required:
            out.append(ObjAlt(props=(Prop(p.name, BOTTOM, False, False),)))
        if p.value != TOP:
            out.append(ObjAlt(props=(Prop(p.name, mk_not(p.value), True, False),)))
    if o.min_props > 0:
        out.append(ObjAlt(max_props=o.min_props - 1))
    if o.max_props is not None:
        out.append(ObjAlt(min_props=o.max_props + 1))
    return tuple(out)
