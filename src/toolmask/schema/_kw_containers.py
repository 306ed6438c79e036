"""Keyword functions of the array and object keywords and the dependencies (see
:mod:`toolmask.schema._handlers` for the table they form)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from toolmask._pointer import json_pointer
from toolmask.errors import GrammarError, LimitError, SchemaError
from toolmask.grammar import Dfa
from toolmask.schema import _langs
from toolmask.schema._site import Expander, Family, KeywordFn, Site, count_keyword, only
from toolmask.schema._terms import (
    BOTTOM,
    NO_FLAGS,
    SHAPE_BOTTOM,
    SHAPE_TOP,
    TOP,
    ArrAlt,
    Flags,
    ObjAlt,
    Prop,
    Region,
    Shape,
    Term,
    mk_and,
)

__all__ = ["ARRAYS", "DEPENDENCIES", "OBJECTS"]


# -- arrays -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Arrays:
    flags: Flags = NO_FLAGS
    prefix: tuple[Term, ...] = ()
    items: Term = TOP
    evaluated: int = 0
    lo: int = 0
    hi: int | None = None
    contains: Term | None = None
    cmin: int = 1
    cmax: int | None = None


def _prefix_items(site: Site, acc: _Arrays) -> None:
    n = site.s["prefixItems"]
    if not isinstance(n, list):
        raise SchemaError("prefixItems must be an array", pointer=site.ptr, keyword="prefixItems")
    acc.prefix = tuple(site.sub("prefixItems", i) for i in range(len(n)))
    acc.evaluated = len(acc.prefix)


def _items(site: Site, acc: _Arrays) -> None:
    """A schema for the items after the prefix, or (draft-07) an array of schemas, the prefix,
    followed by ``additionalItems`` for the rest."""
    items = site.s["items"]
    if isinstance(items, list):
        acc.prefix = tuple(site.sub("items", i) for i in range(len(items)))
        acc.evaluated = len(acc.prefix)
        if "additionalItems" in site.s:
            acc.items = site.sub("additionalItems")
            acc.evaluated = -1
    else:
        acc.items = site.sub("items")
        acc.evaluated = -1


def _additional_items(site: Site, acc: _Arrays) -> None:
    """Read by an array-form ``items``; on its own it constrains nothing (an array part that
    admits every array)."""


def _contains(site: Site, acc: _Arrays) -> None:
    """``contains``, with ``minContains`` / ``maxContains`` (default 1 and unbounded)."""
    acc.contains = site.sub("contains")
    if "minContains" in site.s:
        acc.cmin = site.nonneg_int("minContains")
    if "maxContains" in site.s:
        acc.cmax = site.nonneg_int("maxContains")


def _unique_items(site: Site, acc: _Arrays) -> None:
    """Not context-free: left to the validator (where more than one item may occur)."""
    if site.s["uniqueItems"] is True and (acc.hi is None or acc.hi > 1):
        acc.flags = acc.flags | site.c.flag_over(site.ptr, "uniqueItems")


def _finish_arrays(site: Site, acc: _Arrays) -> Shape | None:
    if acc.hi is not None and acc.lo > acc.hi:
        return only({"arrays": (), "flags": acc.flags})
    prefix = acc.prefix
    while prefix and prefix[-1] == acc.items:
        prefix = prefix[:-1]
    alt = ArrAlt(prefix, acc.items, acc.lo, acc.hi, acc.contains, acc.cmin, acc.cmax, acc.evaluated)
    return only({"arrays": (alt,), "flags": acc.flags})


# -- objects ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Objects:
    parts: list[ObjAlt] = field(default_factory=list)
    lo: int = 0
    hi: int | None = None


def _object_keys(site: Site, acc: _Objects) -> None:
    """``properties``, ``patternProperties`` and ``additionalProperties``, read together: a
    declared property's value meets every pattern its name matches; the other keys are split
    into regions by the patterns they match, each region's value the patterns' meet, or
    ``additionalProperties`` where no pattern matches."""
    c, s, ptr = site.c, site.s, site.ptr
    props_kw = s.get("properties", {})
    pats_kw = s.get("patternProperties", {})
    if not isinstance(props_kw, dict):
        raise SchemaError("properties must be an object", pointer=ptr, keyword="properties")
    if not isinstance(pats_kw, dict):
        raise SchemaError(
            "patternProperties must be an object", pointer=ptr, keyword="patternProperties"
        )
    if not (props_kw or pats_kw or "additionalProperties" in s):
        return
    pats: list[tuple[Dfa, Term]] = []
    for p in pats_kw:
        try:
            pats.append((_langs.pattern_dfa(p, c.limits), site.sub("patternProperties", p)))
        except GrammarError as e:
            raise SchemaError(
                f"pattern {p!r}: {e}", pointer=ptr, keyword="patternProperties"
            ) from e
    props: list[Prop] = []
    for name in props_kw:
        t: Term = site.sub("properties", name)
        for d, pt in pats:
            if d.accepts(name):
                t = mk_and(t, pt)
        props.append(Prop(name, t, False, True))
    regions: list[Region] = []
    addl: Term = site.sub("additionalProperties") if "additionalProperties" in s else TOP
    addl_eval = "additionalProperties" in s
    for keys, terms in _key_regions(c, pats):
        if terms:
            regions.append(Region(keys, mk_and(*terms), True))
        elif addl is not BOTTOM:
            regions.append(Region(keys, addl, addl_eval))
    acc.parts.append(ObjAlt(tuple(props), tuple(r_ for r_ in regions if r_.value is not BOTTOM)))


def _required(site: Site, acc: _Objects) -> None:
    req = site.s["required"]
    if not isinstance(req, list) or not all(isinstance(x, str) for x in req):
        raise SchemaError(
            "required must be an array of strings", pointer=site.ptr, keyword="required"
        )
    seen: list[str] = []
    for x in req:
        if x not in seen:
            seen.append(x)
    acc.parts.append(ObjAlt(props=tuple(Prop(n, TOP, True, False) for n in seen)))


def _property_names(site: Site, acc: _Objects) -> None:
    """Every key is in the string language of the ``propertyNames`` subschema; what the
    grammar cannot say about the names is left to the validator."""
    c = site.c
    pn = c.split(c.expand(site.sub("propertyNames")))
    keys: Dfa | None
    if not pn.strings:
        keys = Dfa.empty()
    elif any(x.is_any for x in pn.strings):
        keys = None
    else:
        langs = [x.lang(c.limits) for x in pn.strings]
        keys = Dfa.union_all([d for d in langs if d is not None], limits=c.limits)
    for f in pn.flags.over:
        c.force_over(*f)
    if keys is not None:
        acc.parts.append(ObjAlt(regions=(Region(keys, TOP, False),)))


def _finish_objects(site: Site, acc: _Objects) -> Shape | None:
    parts = acc.parts
    if acc.lo or acc.hi is not None:
        parts.append(ObjAlt(min_props=acc.lo, max_props=acc.hi))
    if not parts:
        return None
    c = site.c
    objs: tuple[ObjAlt, ...] = (parts[0],)
    flags = NO_FLAGS
    for p in parts[1:]:
        objs, f = c.meet_objects(objs, (p,))
        flags = flags | f
    return only({"objects": objs, "flags": flags})


def _key_regions(c: Expander, pats: list[tuple[Dfa, Term]]) -> list[tuple[Dfa | None, list[Term]]]:
    """The non-empty regions the patterns split the key space into, each with the value terms
    of the patterns that match its keys (no term: the keys no pattern matches).

    Refinement, one pattern at a time: every region splits into its keys the pattern matches
    and those it does not, and empty parts are dropped. n patterns give at most 2**n regions,
    but only as many as there are distinct combinations of patterns that some key matches:
    n + 1 for disjoint patterns (``^x-``, ``^[a-z]+$``, ...). Cost: two DFA products per region
    and pattern; more than ``max_key_regions`` regions is a LimitError.
    """
    regions: list[tuple[Dfa | None, list[Term]]] = [(None, [])]
    for d, pt in pats:
        nxt: list[tuple[Dfa | None, list[Term]]] = []
        outside = d.complement(limits=c.limits)
        for keys, terms in regions:
            c.check_time()
            inside = d if keys is None else keys.intersect(d, limits=c.limits)
            rest = outside if keys is None else keys.intersect(outside, limits=c.limits)
            if not inside.is_empty():
                nxt.append((inside, [*terms, pt]))
            if not rest.is_empty():
                nxt.append((rest, terms))
        if len(nxt) > c.limits.max_key_regions:
            raise LimitError(
                f"patternProperties split the keys into more than {c.limits.max_key_regions} "
                "regions",
                limit="max_key_regions",
            )
        regions = nxt
    return regions


# -- dependencies -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Dependencies:
    shape: Shape = SHAPE_TOP
    any: bool = False


def _check_dependency(kw: str, dep: Any, pointer: str) -> None:
    """SchemaError at ``pointer`` unless ``dep`` has a form ``kw`` allows: an array of names
    (``dependentRequired``; ``dependencies``) or a schema (``dependentSchemas``;
    ``dependencies``)."""
    names_ok = kw != "dependentSchemas"
    schema_ok = kw != "dependentRequired"
    if isinstance(dep, list):
        if names_ok and all(isinstance(n, str) for n in dep):
            return
        what = "an array of property names" if names_ok else "a schema (an object or a boolean)"
    elif isinstance(dep, (dict, bool)):
        if schema_ok:
            return
        what = "an array of property names"
    else:
        what = {
            "dependentRequired": "an array of property names",
            "dependentSchemas": "a schema (an object or a boolean)",
        }.get(kw, "an array of property names or a schema")
    raise SchemaError(f"{kw} values must be {what}, got {dep!r}", pointer=pointer, keyword=kw)


def _dependent(kw: str) -> KeywordFn[_Dependencies]:
    """The function of ``dependentRequired``, ``dependentSchemas`` or (draft-07, either form)
    ``dependencies``: for each key, (key absent) or (key present and the others required / the
    schema holds)."""

    def read(site: Site, acc: _Dependencies) -> None:
        c = site.c
        v = site.s[kw]
        if not isinstance(v, dict):
            raise SchemaError(f"{kw} must be an object", pointer=site.ptr, keyword=kw)
        for key, dep in v.items():
            _check_dependency(kw, dep, site.ptr + json_pointer((kw, key)))
            absent = Shape(objects=(ObjAlt(props=(Prop(key, BOTTOM, False, False),)),))
            present = Shape(objects=(ObjAlt(props=(Prop(key, TOP, True, False),)),))
            if isinstance(dep, list):
                req = tuple(Prop(n, TOP, True, False) for n in dep if n != key)
                present = Shape(objects=(ObjAlt(props=(Prop(key, TOP, True, False), *req)),))
                branch = present
            else:
                sub_shape = c.expand(site.sub(kw, key))
                sub_only_obj = replace(
                    SHAPE_BOTTOM, objects=c.split(sub_shape).objects, flags=sub_shape.flags
                )
                branch = c.intersect(present, sub_only_obj)
            either = c.union([absent, branch])
            acc.shape = c.intersect(
                acc.shape, replace(SHAPE_TOP, objects=either.objects, flags=either.flags)
            )
            acc.any = True

    read.__name__ = read.__qualname__ = f"_{kw}"
    return read


def _finish_dependencies(site: Site, acc: _Dependencies) -> Shape | None:
    return acc.shape if acc.any else None


# -- the families --------------------------------------------------------------------------------

ARRAYS: Family[_Arrays] = Family(
    "arrays",
    {
        "prefixItems": _prefix_items,
        "items": _items,
        "additionalItems": _additional_items,
        "minItems": count_keyword("minItems", "lo"),
        "maxItems": count_keyword("maxItems", "hi"),
        "contains": _contains,
        "uniqueItems": _unique_items,
    },
    _Arrays,
    _finish_arrays,
)
OBJECTS: Family[_Objects] = Family(
    "objects",
    {
        "properties": _object_keys,
        "patternProperties": _object_keys,
        "additionalProperties": _object_keys,
        "required": _required,
        "propertyNames": _property_names,
        "minProperties": count_keyword("minProperties", "lo"),
        "maxProperties": count_keyword("maxProperties", "hi"),
    },
    _Objects,
    _finish_objects,
)
DEPENDENCIES: Family[_Dependencies] = Family(
    "dependencies",
    {
        "dependentRequired": _dependent("dependentRequired"),
        "dependentSchemas": _dependent("dependentSchemas"),
        "dependencies": _dependent("dependencies"),
    },
    _Dependencies,
    _finish_dependencies,
)
