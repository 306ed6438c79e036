"""Keyword functions of ``type``, ``format`` and the number and string keywords (see
:mod:`toolmask.schema._handlers` for the table they form)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from toolmask.errors import GrammarError, LimitError, SchemaError
from toolmask.grammar import Dfa
from toolmask.schema import _langs
from toolmask.schema._algebra import ANY_INTEGER
from toolmask.schema._formats import FORMATS
from toolmask.schema._site import Family, Site, count_keyword, only
from toolmask.schema._terms import (
    NO_FLAGS,
    SHAPE_TOP,
    NumAlt,
    Shape,
    StrAlt,
)

if TYPE_CHECKING:
    pass

__all__ = ["FORMAT", "NUMBERS", "STRINGS", "TYPE"]

_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")


# -- a family of one keyword ------------------------------------------------------------------


@dataclass(slots=True)
class _One:
    shape: Shape | None = None


def _finish_one(site: Site, acc: _One) -> Shape | None:
    return acc.shape


def _type(site: Site, acc: _One) -> None:
    t = site.s["type"]
    if type(t) is str:  # the usual case, one type name: its shape once made
        got = _ONE_TYPE.get(t)
        if got is not None:
            acc.shape = got
            return
    ptr = site.ptr
    types = [t] if isinstance(t, str) else t
    if not isinstance(types, list) or not all(isinstance(x, str) for x in types):
        raise SchemaError(
            "type must be a string or an array of strings", pointer=ptr, keyword="type"
        )
    for x in types:
        if x not in _TYPES:
            raise SchemaError(f"unknown type {x!r}", pointer=ptr, keyword="type")
    ts = frozenset(types)
    shape = _TYPE_SHAPES.get(ts)
    if shape is None:
        # SHAPE_TOP's own alternatives (and ANY_INTEGER's): the algebra tells a bare type by
        # identity first (_algebra._types_only)
        top = SHAPE_TOP
        nums: tuple[NumAlt, ...] = ()
        if "number" in ts:
            nums = top.numbers
        elif "integer" in ts:
            nums = ANY_INTEGER
        shape = _TYPE_SHAPES[ts] = Shape(
            null="null" in ts,
            booleans=top.booleans if "boolean" in ts else frozenset(),
            numbers=nums,
            strings=top.strings if "string" in ts else (),
            arrays=top.arrays if "array" in ts else (),
            objects=top.objects if "object" in ts else (),
        )
    if type(t) is str:
        _ONE_TYPE[t] = shape
    acc.shape = shape


#: the shape of each set of type names (at most 2**7, made on first use: shapes are values)
_TYPE_SHAPES: dict[frozenset[str], Shape] = {}
#: the same, by the one type name of ``{"type": name}`` (the seven names at most)
_ONE_TYPE: dict[str, Shape] = {}


def _format(site: Site, acc: _One) -> None:
    """``format``: a known format constrains the type it applies to (strings: a language over
    the decoded value; numbers: an integer range); an unknown one is an annotation (2020-12
    format-annotation vocabulary) unless the compilation asks for ``strict_formats``."""
    c, ptr = site.c, site.ptr
    name = site.s["format"]
    if not isinstance(name, str):
        raise SchemaError(f"format must be a string, got {name!r}", pointer=ptr, keyword="format")
    spec = FORMATS.get(name)
    if spec is None:
        c.unknown_format(ptr, name)
        return
    if spec.applies_to == "number":
        if spec.integers is None:
            return
        lo, hi = spec.integers
        rng = _langs.range_lang(
            integer=True, lo=Decimal(lo), lo_excl=False, hi=Decimal(hi), hi_excl=False
        )
        assert rng is not None
        acc.shape = only({"numbers": (NumAlt(None, True, rng),)})
        return
    if spec.regex is None:
        return
    flags = NO_FLAGS
    if spec.relation == "superset":
        flags = c.flag_over(ptr, "format")
    elif spec.relation == "subset":
        flags = c.flag_under(ptr, "format")
    # the format's DFA is built only if another constraint meets it (StrAlt.lang)
    acc.shape = only({"strings": (StrAlt(fmt=name),), "flags": flags})


# -- numbers ----------------------------------------------------------------------------------

_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


@dataclass(slots=True)
class _Numbers:
    lo: Decimal | None = None
    hi: Decimal | None = None
    lo_x: bool = False
    hi_x: bool = False
    mult: tuple[Decimal, ...] = ()


def _minimum(site: Site, acc: _Numbers) -> None:
    acc.lo = site.number("minimum")


def _maximum(site: Site, acc: _Numbers) -> None:
    acc.hi = site.number("maximum")


def _exclusive_minimum(site: Site, acc: _Numbers) -> None:
    """A number (2020-12), or a boolean that makes ``minimum`` exclusive (draft-04)."""
    em = site.s["exclusiveMinimum"]
    if isinstance(em, bool):
        acc.lo_x = em and acc.lo is not None
    elif em is not None:
        v = site.number("exclusiveMinimum")
        if acc.lo is None or v >= acc.lo:
            acc.lo, acc.lo_x = v, True


def _exclusive_maximum(site: Site, acc: _Numbers) -> None:
    """A number (2020-12), or a boolean that makes ``maximum`` exclusive (draft-04)."""
    ex = site.s["exclusiveMaximum"]
    if isinstance(ex, bool):
        acc.hi_x = ex and acc.hi is not None
    elif ex is not None:
        v = site.number("exclusiveMaximum")
        if acc.hi is None or v <= acc.hi:
            acc.hi, acc.hi_x = v, True


def _multiple_of(site: Site, acc: _Numbers) -> None:
    k = site.number("multipleOf")
    if k <= 0:
        raise SchemaError("multipleOf must be > 0", pointer=site.ptr, keyword="multipleOf")
    acc.mult = (k,)


def _finish_numbers(site: Site, acc: _Numbers) -> Shape | None:
    """The exponent-free spellings of the numbers in range that are multiples of
    ``multipleOf``: one DFA; a range alone is kept as regexes until another constraint meets it.
    Past ``max_dfa_states`` with ``multipleOf``, the range alone and the validator."""
    c, s, ptr = site.c, site.s, site.ptr
    lo, hi, lo_x, hi_x, mult = acc.lo, acc.hi, acc.lo_x, acc.hi_x, acc.mult
    integer = s.get("type") == "integer"
    try:
        if not mult and (lo is not None or hi is not None):
            # the range's DFA is built only if another constraint meets it (NumAlt.lang)
            rng = _langs.range_lang(
                integer=integer, lo=lo, lo_excl=lo_x, hi=hi, hi_excl=hi_x, limits=c.limits
            )
            return only({"numbers": () if rng is None else (NumAlt(None, integer, rng),)})
        d = _langs.number_range_dfa(
            integer=integer,
            lo=lo,
            lo_excl=lo_x,
            hi=hi,
            hi_excl=hi_x,
            multiple_of=mult,
            limits=c.limits,
        )
    except GrammarError as e:  # one nested regex group per fraction digit of a bound
        bounds = [k for k in _BOUNDS if k in s and not isinstance(s[k], bool)]
        kw = max(bounds, key=lambda k: len(str(s[k])), default=None)
        raise SchemaError(
            f"the range (lower {lo}, upper {hi}) has a bound with too many fraction digits "
            f"to enforce exactly ({str(e).splitlines()[0]})",
            pointer=ptr,
            keyword=kw,
        ) from e
    except LimitError:
        if not mult:
            raise
        flags = c.flag_over(ptr, "multipleOf")
        d = _langs.number_range_dfa(
            integer=integer,
            lo=lo,
            lo_excl=lo_x,
            hi=hi,
            hi_excl=hi_x,
            multiple_of=(),
            limits=c.limits,
        )
        return only({"numbers": () if d.is_empty() else (NumAlt(d, integer),), "flags": flags})
    # multipleOf alone: the alternative says so, for the meets (NumAlt.mult)
    k = mult[0] if len(mult) == 1 and lo is None and hi is None else None
    return only({"numbers": () if d.is_empty() else (NumAlt(d, integer, mult=k),)})


# -- strings ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Strings:
    lo: int = 0
    hi: int | None = None
    pattern: str | None = None


def _pattern(site: Site, acc: _Strings) -> None:
    p = site.s["pattern"]
    if not isinstance(p, str):
        raise SchemaError("pattern must be a string", pointer=site.ptr, keyword="pattern")
    acc.pattern = p


def _finish_strings(site: Site, acc: _Strings) -> Shape | None:
    """The length language (code points) meets the pattern's search language; bounds past
    ``max_repeat_unroll`` and products past ``max_dfa_states`` are left to the validator. A
    pattern that is a deterministic anchored chain, alone, is kept unbuilt."""
    c, ptr = site.c, site.ptr
    flags = NO_FLAGS
    dfas: list[Dfa] = []
    lo, hi = acc.lo, acc.hi
    if lo or hi is not None:
        unroll = c.limits.max_repeat_unroll
        if lo > unroll or (hi is not None and hi > unroll):
            flags = flags | c.flag_over(ptr, "maxLength" if hi is not None else "minLength")
            lo2 = min(lo, unroll)
            dfas.append(_langs.length_dfa(lo2, None))
        else:
            dfas.append(_langs.length_dfa(lo, hi))
    p = acc.pattern
    if p is not None:
        try:
            if _langs.has_backreference(p, c.limits):
                # not a regular language: the grammar takes each backreference as its
                # group's language (a superset), the validator checks the exact pattern
                dfas.append(_langs.pattern_dfa(p, c.limits, backrefs=True))
                flags = flags | c.flag_over(ptr, "pattern")
            elif not dfas and _langs.pattern_node(p, c.limits) is not None:
                # a deterministic anchored chain, alone: its DFA is built only if another
                # constraint meets it (StrAlt.lang)
                return only({"strings": (StrAlt(pat=p),), "flags": flags})
            else:
                dfas.append(_langs.pattern_dfa(p, c.limits))
        except GrammarError as e:
            raise SchemaError(f"pattern {p!r}: {e}", pointer=ptr, keyword="pattern") from e
    if not dfas:
        return only({"flags": flags})
    d = dfas[0]
    for x in dfas[1:]:
        try:
            d = _langs.dfa_and(d, x, c.limits)
        except LimitError:
            flags = flags | c.flag_over(ptr, "pattern")
    return only({"strings": () if d.is_empty() else (StrAlt(d),), "flags": flags})


# -- the families --------------------------------------------------------------------------------

TYPE: Family[_One] = Family("type", {"type": _type}, _One, _finish_one)
FORMAT: Family[_One] = Family("format", {"format": _format}, _One, _finish_one)
NUMBERS: Family[_Numbers] = Family(
    "numbers",
    {
        "minimum": _minimum,
        "maximum": _maximum,
        "exclusiveMinimum": _exclusive_minimum,
        "exclusiveMaximum": _exclusive_maximum,
        "multipleOf": _multiple_of,
    },
    _Numbers,
    _finish_numbers,
)
STRINGS: Family[_Strings] = Family(
    "strings",
    {
        "minLength": count_keyword("minLength", "lo"),
        "maxLength": count_keyword("maxLength", "hi"),
        "pattern": _pattern,
    },
    _Strings,
    _finish_strings,
)
