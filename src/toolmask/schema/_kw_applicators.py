"""Keyword functions of the applicators: ``$ref``, ``allOf``, ``anyOf``, ``oneOf``, ``not`` and
``if`` / ``then`` / ``else`` (see :mod:`toolmask.schema._handlers` for the table they form)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from toolmask.errors import LimitError, SchemaError
from toolmask.schema._site import Expander, Family, Site
from toolmask.schema._terms import (
    TOP,
    ArrAlt,
    ObjAlt,
    Shape,
    Term,
    canonical,
    mk_and,
    mk_not,
)

__all__ = ["APPLICATORS"]


# -- applicators ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Applied:
    shapes: list[Shape] = field(default_factory=list)


def _nonempty_list(site: Site, kw: str) -> list[Term]:
    subs = site.s[kw]
    if not isinstance(subs, list) or not subs:
        raise SchemaError(f"{kw} must be a non-empty array", pointer=site.ptr, keyword=kw)
    return [site.sub(kw, i) for i in range(len(subs))]


def _ref(site: Site, acc: _Applied) -> None:
    c = site.c
    acc.shapes.append(c.expand(c.resolve(site.s["$ref"], site.r, site.ptr, "$ref")))


def _all_of(site: Site, acc: _Applied) -> None:
    c = site.c
    terms = _nonempty_list(site, "allOf")
    acc.shapes.append(c.meet(mk_and(*terms), [c.expand(t) for t in terms], list(terms)))


def _any_of(site: Site, acc: _Applied) -> None:
    c = site.c
    terms = _nonempty_list(site, "anyOf")
    # past max_alternatives, the location's other keywords may still tell the branches apart
    acc.shapes.append(c.union([c.expand(t) for t in terms], defer=True))


def _one_of(site: Site, acc: _Applied) -> None:
    """Exact when the branches are pairwise disjoint (their union), or, for at most
    ``max_one_of_exact`` branches, as the union of each branch without the others; else
    their union and the validator."""
    c, ptr = site.c, site.ptr
    terms = _nonempty_list(site, "oneOf")
    shapes = [c.expand(t) for t in terms]
    if len(terms) == 1:
        acc.shapes.append(shapes[0])
        return
    if _pairwise_disjoint(c, shapes):
        acc.shapes.append(c.union(shapes, defer=True))
        return
    if len(terms) <= c.limits.max_one_of_exact:
        try:
            branches: list[Shape] = []
            for i, t in enumerate(terms):
                others = [mk_not(u) for j, u in enumerate(terms) if j != i]
                branches.append(c.expand(mk_and(t, *others)))
            acc.shapes.append(c.union(branches))
            return
        except LimitError:
            pass  # the exact form is too big: the union plus the validator is still sound
    acc.shapes.append(c.union(shapes, defer=True).with_flags(c.flag_over(ptr, "oneOf")))


def _not(site: Site, acc: _Applied) -> None:
    acc.shapes.append(site.c.expand(mk_not(site.sub("not"))))


def _if(site: Site, acc: _Applied) -> None:
    """(``if`` and ``then``) or (not ``if`` and ``else``); nothing without ``then`` or
    ``else``."""
    s = site.s
    if "then" not in s and "else" not in s:
        return
    c = site.c
    cond = site.sub("if")
    then = site.sub("then") if "then" in s else TOP
    other = site.sub("else") if "else" in s else TOP
    yes = c.expand(mk_and(cond, then))
    no = c.expand(mk_and(mk_not(cond), other))
    acc.shapes.append(c.union([yes, no]))


def _finish_applied(site: Site, acc: _Applied) -> Shape | None:
    shapes = acc.shapes
    if not shapes:
        return None
    if len(shapes) == 1:
        return shapes[0]
    lits = [x for x in shapes if x.literals is not None]
    if lits:
        # The enclosing location's meet() filters a literal set by the whole location, which
        # includes these applicators, so handing up the smallest literal set is exact.
        return min(lits, key=lambda x: len(x.literals or ()))
    out = shapes[0]
    for x in shapes[1:]:
        out = site.c.intersect(out, x)
    return out


def _pairwise_disjoint(c: Expander, shapes: list[Shape]) -> bool:
    """Whether no value can match two of ``shapes`` (then ``oneOf`` is their plain union).

    Proved type by type: branches of different types; booleans, numbers or strings whose
    literal sets or automata do not meet; arrays whose item counts cannot both hold; objects
    told apart by a *discriminator*, a key every object alternative requires with a literal
    value (``const`` / ``enum``) that no two branches share (the OpenAPI pattern). Anything else
    is not proved disjoint. Cost: O(n**2) cheap checks, automaton products for strings and
    numbers, and one pass over the object alternatives.
    """
    if all(s.literals is not None for s in shapes):
        seen: set[str] = set()
        for s in shapes:
            for t in s.literals or ():
                if t in seen:
                    return False
                seen.add(t)
        return True
    splits = [c.split(s) for s in shapes]
    discriminated: bool | None = None
    for i in range(len(splits)):
        for j in range(i + 1, len(splits)):
            a, b = splits[i], splits[j]
            if (a.null and b.null) or a.booleans & b.booleans:
                return False
            if not _dfas_disjoint(c, a.numbers, b.numbers):
                return False
            if not _dfas_disjoint(c, a.strings, b.strings):
                return False
            if not all(_counts_disjoint(x, y) for x in a.arrays for y in b.arrays):
                return False
            if a.objects and b.objects:
                if discriminated is None:
                    discriminated = _discriminated(c, [s.objects for s in splits if s.objects])
                if not discriminated:
                    return False
    return True


def _dfas_disjoint(c: Expander, xs: tuple[Any, ...], ys: tuple[Any, ...]) -> bool:
    for x in xs:
        for y in ys:
            dx = x.lang(c.limits)
            dy = y.lang(c.limits)
            if dx is None or dy is None:
                return False
            try:
                if not dx.intersect(dy, limits=c.limits).is_empty():
                    return False
            except LimitError:
                return False
    return True


def _counts_disjoint(a: ArrAlt, b: ArrAlt) -> bool:
    if a.literal is not None or b.literal is not None:
        return a.literal is not None and b.literal is not None and a.literal != b.literal
    return (a.max_items is not None and a.max_items < b.min_items) or (
        b.max_items is not None and b.max_items < a.min_items
    )


def _discriminated(c: Expander, branches: list[tuple[ObjAlt, ...]]) -> bool:
    """Whether some key is required by every object alternative with literal values, and no
    value belongs to two branches."""
    keys: set[str] | None = None
    for alts in branches:
        for o in alts:
            names = (
                set(json.loads(o.literal))
                if o.literal is not None
                else {p.name for p in o.props if p.required}
            )
            keys = names if keys is None else keys & names
    for key in sorted(keys or ()):
        owner: dict[str, int] = {}
        ok = True
        for bi, alts in enumerate(branches):
            values = _literal_values(c, alts, key)
            if values is None or any(owner.get(v, bi) != bi for v in values):
                ok = False
                break
            owner.update(dict.fromkeys(values, bi))
        if ok:
            return True
    return False


def _literal_values(c: Expander, alts: tuple[ObjAlt, ...], key: str) -> set[str] | None:
    """The canonical texts ``key`` may hold in ``alts``, or None when that is not a finite
    literal set."""
    out: set[str] = set()
    for o in alts:
        if o.literal is not None:
            out.add(canonical(json.loads(o.literal)[key]))
            continue
        p = o.prop(key)
        if p is None:
            return None
        try:
            shape = c.expand(p.value)
        except SchemaError:  # a term still being expanded (recursion): not provable here
            return None
        if shape.literals is None:
            return None
        out.update(shape.literals)
    return out


# -- the family ----------------------------------------------------------------------------------

APPLICATORS: Family[_Applied] = Family(
    "applicators",
    {
        "$ref": _ref,
        "allOf": _all_of,
        "anyOf": _any_of,
        "oneOf": _one_of,
        "not": _not,
        "if": _if,
    },
    _Applied,
    _finish_applied,
)
