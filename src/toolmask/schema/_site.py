"""The machinery of the keyword table (:mod:`toolmask.schema._handlers`): :class:`Site`, the
location a keyword function reads, and :class:`Family`, keywords whose meanings combine into
one part shape of a location, with :func:`keyword_parts` applying a table to a location.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any, Generic, Protocol, TypeVar

from toolmask.errors import SchemaError
from toolmask.limits import Limits
from toolmask.schema._algebra import is_number, to_decimal
from toolmask.schema._resolve import Resolver
from toolmask.schema._terms import SHAPE_TOP, Flags, Loc, ObjAlt, Shape, Term

__all__ = [
    "Expander",
    "Family",
    "KeywordFn",
    "Site",
    "count_keyword",
    "keyword_parts",
    "nonneg_int",
    "only",
]


class Expander(Protocol):
    """What the keyword functions use of the compiler
    (:class:`~toolmask.schema._compiler.SchemaCompiler`): locations, expansion, the shape
    algebra and the flags that leave a keyword to the validator."""

    limits: Limits

    def sub(self, schema: Any, resolver: Resolver, ptr: str, *keys: str | int) -> Term: ...

    def resolve(self, ref: Any, resolver: Resolver, ptr: str, kw: str) -> Loc: ...

    def expand(self, term: Term) -> Shape: ...

    def meet(self, term: Term, shapes: list[Shape], terms: list[Term] | None = None) -> Shape: ...

    def intersect(self, a: Shape, b: Shape) -> Shape: ...

    def meet_objects(
        self, xs: tuple[ObjAlt, ...], ys: tuple[ObjAlt, ...]
    ) -> tuple[tuple[ObjAlt, ...], Flags]: ...

    def union(self, shapes: list[Shape], *, defer: bool = False) -> Shape: ...

    def split(self, s: Shape) -> Shape: ...

    def check_time(self) -> None: ...

    def flag_over(self, pointer: str, keyword: str) -> Flags: ...

    def flag_under(self, pointer: str, keyword: str) -> Flags: ...

    def force_over(self, pointer: str, keyword: str) -> None: ...

    def unknown_format(self, ptr: str, name: str) -> None: ...


class Site:
    """The location whose keywords are read: the compiler, the schema object, its resolver and
    its JSON pointer (what jsonschema passes a keyword function as ``validator`` and
    ``schema``)."""

    __slots__ = ("c", "ptr", "r", "s")

    def __init__(self, c: Expander, s: dict[str, Any], r: Resolver, ptr: str) -> None:
        self.c, self.s, self.r, self.ptr = c, s, r, ptr

    def sub(self, *keys: str | int) -> Term:
        """The term of the subschema at ``keys`` below this location."""
        return self.c.sub(self.s, self.r, self.ptr, *keys)

    def nonneg_int(self, keyword: str) -> int:
        return nonneg_int(self.s[keyword], self.ptr, keyword)

    def number(self, keyword: str) -> Decimal:
        return to_decimal(self.s[keyword], self.ptr, keyword)


def nonneg_int(v: Any, pointer: str, keyword: str) -> int:
    if is_number(v) and float(v).is_integer() and v >= 0:
        return int(v)
    raise SchemaError(
        f"{keyword} must be a non-negative integer, got {v!r}", pointer=pointer, keyword=keyword
    )


def only(shape_kw: dict[str, Any]) -> Shape:
    """SHAPE_TOP with one type's alternatives replaced (``dataclasses.replace(SHAPE_TOP,
    **shape_kw)``, written out: it runs for most keyword families of every location)."""
    if not _TOP_FIELDS.keys() >= shape_kw.keys():
        raise TypeError(f"not fields of Shape: {sorted(shape_kw.keys() - _TOP_FIELDS.keys())}")
    get, top = shape_kw.get, SHAPE_TOP
    return Shape(
        get("literals", top.literals),
        get("null", top.null),
        get("booleans", top.booleans),
        get("numbers", top.numbers),
        get("strings", top.strings),
        get("arrays", top.arrays),
        get("objects", top.objects),
        get("flags", top.flags),
        get("pending", top.pending),
    )


#: SHAPE_TOP's fields, by name (what ``dataclasses.replace(SHAPE_TOP, ...)`` starts from)
_TOP_FIELDS: dict[str, Any] = {f.name: getattr(SHAPE_TOP, f.name) for f in fields(Shape) if f.init}
assert tuple(_TOP_FIELDS) == (
    "literals",
    "null",
    "booleans",
    "numbers",
    "strings",
    "arrays",
    "objects",
    "flags",
    "pending",
), "only() writes Shape's fields in this order"


A = TypeVar("A")
KeywordFn = Callable[[Site, A], None]


@dataclass(frozen=True)
class Family(Generic[A]):
    """Keywords whose meanings combine into one part shape. ``keywords`` maps each keyword to
    its function, in evaluation order (a function listed under several keywords reads them
    together and runs once); ``start`` makes the accumulator, ``finish`` the part (None: this
    location's family constrains nothing)."""

    name: str
    keywords: Mapping[str, KeywordFn[A]]
    start: Callable[[], A]
    finish: Callable[[Site, A], Shape | None]
    steps: tuple[tuple[frozenset[str], KeywordFn[A]], ...] = field(init=False)
    triggers: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        steps: dict[KeywordFn[A], set[str]] = {}
        for kw, fn in self.keywords.items():
            steps.setdefault(fn, set()).add(kw)
        object.__setattr__(self, "steps", tuple((frozenset(k), fn) for fn, k in steps.items()))
        object.__setattr__(self, "triggers", frozenset(self.keywords))


def keyword_parts(
    c: Expander,
    schema: dict[str, Any],
    resolver: Resolver,
    ptr: str,
    table: tuple[Family[Any], ...],
) -> list[Shape]:
    """The part shapes ``table``'s keyword families give the location ``schema``, in table
    order. O(families + keywords present) plus what the keywords build."""
    site = Site(c, schema, resolver, ptr)
    parts: list[Shape] = []
    for family in table:
        if family.triggers.isdisjoint(schema):
            continue
        acc = family.start()
        for keys, fn in family.steps:
            if not keys.isdisjoint(schema):
                fn(site, acc)
        part = family.finish(site, acc)
        if part is not None:
            parts.append(part)
    return parts


def count_keyword(keyword: str, attr: str) -> KeywordFn[Any]:
    """The function of a count keyword (``minLength``, ``maxItems``, ``minProperties``, ...):
    its value, a non-negative integer (SchemaError otherwise), into the accumulator's
    ``attr``."""

    def read(site: Site, acc: Any) -> None:
        setattr(acc, attr, site.nonneg_int(keyword))

    read.__name__ = read.__qualname__ = f"_{keyword}"
    return read
