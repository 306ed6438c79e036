"""Terms and shapes: the normalised, closed form a JSON Schema is compiled through.

A *term* names a set of JSON values lazily: the subschema at a location (:class:`Loc`), or a
boolean combination of terms (:class:`And`, :class:`Or`, :class:`Not`), or :data:`TOP` /
:data:`BOTTOM`. Terms are small, hashable and interned by value, so every distinct term becomes at
most one grammar rule and recursion (a term reaching itself through properties or items) becomes
recursion through the pushdown stack.

*Expanding* a term gives a :class:`Shape`: either a finite set of literal values, or a split by
JSON type where each type holds a union of alternatives whose children (property values, items)
are again terms. Boolean algebra on shapes (:func:`intersect`, :func:`union`, :func:`complement`)
works one level deep and creates new child terms, so it terminates on recursive schemas.

Every shape carries two sets of ``(pointer, keyword)`` pairs: ``over`` (the grammar may accept
values the schema rejects: the post-decode validator must run) and ``under`` (the grammar rejects
some values the schema accepts, e.g. exponent spellings of bounded numbers). Complement swaps them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeAlias

from toolmask._frozen import fast_init
from toolmask.grammar import Dfa
from toolmask.limits import Limits

if TYPE_CHECKING:
    from toolmask.schema._langs import RangeLang

__all__ = [
    "BOTTOM",
    "NO_FLAGS",
    "SHAPE_BOTTOM",
    "SHAPE_TOP",
    "TOP",
    "And",
    "ArrAlt",
    "Const",
    "Flags",
    "Loc",
    "Not",
    "NumAlt",
    "ObjAlt",
    "Or",
    "Prop",
    "Region",
    "Shape",
    "StrAlt",
    "Term",
    "canonical",
    "flag_over",
    "flag_under",
    "mk_and",
    "mk_not",
    "mk_or",
]


# -- terms --------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class Const:
    value: bool

    def __repr__(self) -> str:
        return "TOP" if self.value else "BOTTOM"


#: the two constants, the only Const values (mk_not gives them back, nothing else makes one):
#: hot paths compare a term with them by identity
TOP = Const(True)
BOTTOM = Const(False)


@fast_init
@dataclass(frozen=True, slots=True)
class Loc:
    """The subschema registered under ``index`` in the compiler's location table."""

    index: int


def _cached_hash(obj: Any, fields: tuple[Any, ...]) -> int:
    """The hash of ``fields``, kept in ``obj._h`` (0: not computed yet). Terms, properties
    and alternatives are hashed again and again (as keys of memos, merges and products), and
    a dataclass's own hash walks every field, recursively, at each call."""
    h = obj._h
    if not h:
        h = hash(fields) or 1
        object.__setattr__(obj, "_h", h)
    return h  # type: ignore[no-any-return]


@fast_init
@dataclass(frozen=True, slots=True)
class And:
    items: frozenset[Term]
    _h: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._h or _cached_hash(self, (And, self.items))


@fast_init
@dataclass(frozen=True, slots=True)
class Or:
    items: frozenset[Term]
    _h: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._h or _cached_hash(self, (Or, self.items))


@fast_init
@dataclass(frozen=True, slots=True)
class Not:
    item: Term
    _h: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._h or _cached_hash(self, (Not, self.item))


Term: TypeAlias = Const | Loc | And | Or | Not


def mk_and(*terms: Term) -> Term:
    if len(terms) == 2:
        # a term and TOP: the term (every And is built here, so it is already in normal form)
        x, y = terms
        if type(y) is Const and y.value:
            return x
        if type(x) is Const and x.value:
            return y
    items: set[Term] = set()
    for t in terms:
        if t is BOTTOM:
            return BOTTOM
        if t is TOP:
            continue
        if isinstance(t, And):
            items |= t.items
        else:
            items.add(t)
    for t in items:
        if isinstance(t, Not) and t.item in items:
            return BOTTOM
    if not items:
        return TOP
    if len(items) == 1:
        return next(iter(items))
    return And(frozenset(items))


def mk_or(*terms: Term) -> Term:
    items: set[Term] = set()
    for t in terms:
        if t is TOP:
            return TOP
        if t is BOTTOM:
            continue
        if isinstance(t, Or):
            items |= t.items
        else:
            items.add(t)
    if not items:
        return BOTTOM
    if len(items) == 1:
        return next(iter(items))
    return Or(frozenset(items))


def mk_not(t: Term) -> Term:
    if isinstance(t, Const):
        return BOTTOM if t.value else TOP
    if isinstance(t, Not):
        return t.item
    return Not(t)


# -- shapes -------------------------------------------------------------------------------------

Flag: TypeAlias = tuple[str, str]  # (json pointer, keyword)


@fast_init
@dataclass(frozen=True, slots=True)
class Flags:
    over: frozenset[Flag] = frozenset()
    under: frozenset[Flag] = frozenset()

    def __or__(self, other: Flags) -> Flags:
        if not other.over and not other.under:
            return self
        if not self.over and not self.under:
            return other
        return Flags(self.over | other.over, self.under | other.under)

    def swapped(self) -> Flags:
        return Flags(self.under, self.over)


NO_FLAGS = Flags()


def flag_over(pointer: str, keyword: str) -> Flags:
    """Flags for a grammar that accepts more than the schema here (the validator must run)."""
    return Flags(over=frozenset({(pointer, keyword)}))


def flag_under(pointer: str, keyword: str) -> Flags:
    """Flags for a grammar that rejects some values the schema accepts here."""
    return Flags(under=frozenset({(pointer, keyword)}))


@fast_init
@dataclass(frozen=True, slots=True)
class NumAlt:
    """JSON numbers. ``dfa`` and ``rng`` None: any number (exponents allowed); otherwise a DFA
    over the exponent-free spellings, closed under spelling (every exponent-free spelling of a
    value in the set is in the DFA: ``1``, ``1.0``, ``1.00``), or a range kept as regexes whose
    DFA is built only when needed (:meth:`lang`). ``integer``: only integral values.
    ``mult``: set when ``dfa`` is exactly the multiples of ``mult`` (``multipleOf`` without a
    range), so that a meet with another such alternative builds the multiples of the two
    values' least common multiple directly (:func:`~toolmask.schema._langs.lcm`), O(its
    states), instead of the product of the two automata; derived from ``dfa``, so not part of
    equality."""

    dfa: Dfa | None = None
    integer: bool = False
    rng: RangeLang | None = None
    mult: Decimal | None = field(default=None, compare=False)

    @property
    def is_any(self) -> bool:
        return self.dfa is None and self.rng is None

    def lang(self, limits: Limits) -> Dfa | None:
        """The DFA of the language (None: any number); builds a range's DFA (cached)."""
        if self.rng is not None:
            from toolmask.grammar import regex_dfa

            return regex_dfa(self.rng.rx, search=False, limits=limits)
        return self.dfa


@fast_init
@dataclass(frozen=True, slots=True)
class StrAlt:
    """JSON strings whose decoded value is in ``dfa`` (over code points), or, when ``fmt``
    names a known format, in that format's language, or, when ``pat`` is a pattern that
    ``_langs.pattern_node`` writes directly, in that pattern's language (their DFAs are built
    only when an intersection, complement or union needs them: :meth:`lang`); all None = any
    string."""

    dfa: Dfa | None = None
    fmt: str | None = None
    pat: str | None = None

    @property
    def is_any(self) -> bool:
        return self.dfa is None and self.fmt is None and self.pat is None

    def lang(self, limits: Limits | None = None) -> Dfa | None:
        """The DFA of the language (None: any string); builds a format's or a pattern's DFA
        (cached)."""
        if self.fmt is not None:
            from toolmask.schema._langs import format_dfa

            return format_dfa(self.fmt)
        if self.pat is not None:
            from toolmask.schema._langs import pattern_dfa

            return pattern_dfa(self.pat) if limits is None else pattern_dfa(self.pat, limits)
        return self.dfa


@fast_init
@dataclass(frozen=True, slots=True)
class ArrAlt:
    prefix: tuple[Term, ...] = ()
    items: Term = TOP
    min_items: int = 0
    max_items: int | None = None
    contains: Term | None = None
    min_contains: int = 1
    max_contains: int | None = None
    #: how many leading positions an applicator evaluated (for unevaluatedItems); -1 = all
    evaluated: int = 0
    literal: str | None = None  # canonical JSON text of a literal array
    _h: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._h or _cached_hash(
            self,
            (
                self.prefix,
                self.items,
                self.min_items,
                self.max_items,
                self.contains,
                self.min_contains,
                self.max_contains,
                self.evaluated,
                self.literal,
            ),
        )

    def item_term(self, i: int) -> Term:
        return self.prefix[i] if i < len(self.prefix) else self.items

    def is_top(self) -> bool:
        return (
            not self.prefix
            and self.items == TOP
            and self.min_items == 0
            and self.max_items is None
            and self.contains is None
            and self.literal is None
        )


@fast_init
@dataclass(frozen=True, slots=True)
class Region:
    """Keys outside the declared properties whose decoded name is in ``keys`` (None = any)."""

    keys: Dfa | None
    value: Term
    evaluated: bool
    _h: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._h or _cached_hash(self, (self.keys, self.value, self.evaluated))


@fast_init
@dataclass(frozen=True, slots=True)
class Prop:
    name: str
    value: Term
    required: bool
    #: an applicator (properties, patternProperties, additionalProperties) evaluated this key
    evaluated: bool = False
    _h: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._h or _cached_hash(self, (self.name, self.value, self.required, self.evaluated))


@fast_init
@dataclass(frozen=True, slots=True)
class ObjAlt:
    props: tuple[Prop, ...] = ()
    regions: tuple[Region, ...] = (Region(None, TOP, False),)
    min_props: int = 0
    max_props: int | None = None
    literal: str | None = None  # canonical JSON text of a literal object
    _h: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._h or _cached_hash(
            self, (self.props, self.regions, self.min_props, self.max_props, self.literal)
        )

    def names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.props)

    def prop(self, name: str) -> Prop | None:
        for p in self.props:
            if p.name == name:
                return p
        return None

    def is_top(self) -> bool:
        return (
            not self.props
            and self.min_props == 0
            and self.max_props is None
            and self.literal is None
            and len(self.regions) == 1
            and self.regions[0].keys is None
            and self.regions[0].value == TOP
        )


@fast_init
@dataclass(frozen=True, slots=True)
class Shape:
    """Either ``literals`` (a finite set of JSON values, as canonical JSON texts) or a type split.

    In the type split, an empty tuple means "no value of that type".
    """

    literals: tuple[str, ...] | None = None
    null: bool = False
    booleans: frozenset[bool] = frozenset()
    numbers: tuple[NumAlt, ...] = ()
    strings: tuple[StrAlt, ...] = ()
    arrays: tuple[ArrAlt, ...] = ()
    objects: tuple[ObjAlt, ...] = ()
    flags: Flags = field(default=NO_FLAGS)
    #: a union (an ``anyOf`` / ``oneOf`` beside other keywords) with more alternatives of a
    #: type than ``max_alternatives`` that the rest of its location may still tell apart (a
    #: sibling ``properties`` whose key names each branch): checked when the location's shape
    #: is complete (``ShapeAlgebra.settle``), never lowered as it is
    pending: bool = False
    _h: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        # shapes key the lowerer's rules (terms of equal shapes share one)
        return self._h or _cached_hash(
            self,
            (
                self.literals,
                self.null,
                self.booleans,
                self.numbers,
                self.strings,
                self.arrays,
                self.objects,
                self.flags,
                self.pending,
            ),
        )

    def with_flags(self, flags: Flags) -> Shape:
        if not flags.over and not flags.under:
            return self
        return self.flagged(self.flags | flags)

    def flagged(self, flags: Flags) -> Shape:
        """This shape with ``flags`` for its flags (``dataclasses.replace(self, flags=...)``,
        written out: it runs for every location's meet)."""
        return Shape(
            self.literals,
            self.null,
            self.booleans,
            self.numbers,
            self.strings,
            self.arrays,
            self.objects,
            flags,
            self.pending,
        )

    def is_empty(self) -> bool:
        if self.literals is not None:
            return not self.literals
        return not (
            self.null
            or self.booleans
            or self.numbers
            or self.strings
            or self.arrays
            or self.objects
        )


SHAPE_TOP = Shape(
    null=True,
    booleans=frozenset({True, False}),
    numbers=(NumAlt(),),
    strings=(StrAlt(),),
    arrays=(ArrAlt(),),
    objects=(ObjAlt(),),
)
SHAPE_BOTTOM = Shape()


def canonical(value: Any) -> str:
    """Canonical JSON text of a value: compact, keys in their given order, UTF-8 kept."""
    return _CANONICAL.encode(value)


#: what ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``
#: encodes with (made once: json.dumps makes an encoder per call for non-default options)
_CANONICAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
