"""The shape algebra: meet, intersection, union and complement of shapes, one JSON type at a
time (see :mod:`toolmask.schema._terms` for terms and shapes).

:class:`ShapeAlgebra` holds what the operations need beside the shapes: the limits (every
product of automata is bounded by ``max_dfa_states``, every union by ``max_alternatives``), the
compile deadline and the :class:`~toolmask.schema._resolve.Locations` that evaluate a term
against a literal value exactly. Costs: intersections are pairwise over the alternatives of
each JSON type, and object alternatives that differ in one property's value are merged (so the
count that ``Limits.max_alternatives`` bounds is what the grammar needs); string and number
constraints are DFA products bounded by ``Limits.max_dfa_states``.

Here: the lattice operations (meet, intersect, union, settle, split, the discriminator). The
product of two alternatives of one JSON type is in :mod:`toolmask.schema._meets` and the
complement in :mod:`toolmask.schema._complement`: free functions that take what they use (the
limits; ``accepts`` for literal containers; the pointer that approximations are flagged at),
which this class calls with its own.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any

from toolmask.errors import LimitError, SchemaError
from toolmask.limits import Limits
from toolmask.schema import _langs
from toolmask.schema._complement import complement
from toolmask.schema._filter import literal_filter
from toolmask.schema._formats import FORMATS
from toolmask.schema._meets import arr_and, num_and, obj_and, str_and, top_identity
from toolmask.schema._merge import (
    counted_alternatives,
    finite_strings,
    merge_alternatives,
    merge_regular,
)
from toolmask.schema._resolve import Locations
from toolmask.schema._terms import (
    NO_FLAGS,
    SHAPE_BOTTOM,
    SHAPE_TOP,
    ArrAlt,
    Flags,
    NumAlt,
    ObjAlt,
    Shape,
    StrAlt,
    Term,
    canonical,
    flag_over,
    flag_under,
)

__all__ = ["ANY_INTEGER", "ShapeAlgebra", "is_number", "join_flags", "to_decimal"]


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def to_decimal(v: Any, pointer: str, keyword: str) -> Decimal:
    """``v`` as a Decimal; SchemaError (at ``pointer``, ``keyword``) when it is not a finite
    number."""
    if not is_number(v):
        raise SchemaError(
            f"{keyword} must be a number, got {v!r}", pointer=pointer, keyword=keyword
        )
    if isinstance(v, float) and not math.isfinite(v):
        raise SchemaError(f"{keyword} must be finite", pointer=pointer, keyword=keyword)
    try:
        return Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
    except InvalidOperation as e:  # pragma: no cover - repr of a finite float always parses
        raise SchemaError(str(e), pointer=pointer, keyword=keyword) from e


def join_flags(fs: list[Flags]) -> Flags:
    out = NO_FLAGS
    for f in fs:
        out = out | f
    return out


class ShapeAlgebra:
    """Boolean operations on shapes under one compilation's limits and deadline."""

    #: whether a value is in a term's set, exactly (``Locations.accepts``, bound once: it runs
    #: per literal value)
    accepts: Callable[[Term, Any], bool]

    def __init__(self, limits: Limits, locations: Locations) -> None:
        self.limits = limits
        self.locs = locations
        self.accepts = locations.accepts
        self.deadline = time.monotonic() + limits.max_compile_seconds
        # the products of two alternatives of one JSON type (``_meets``), bound once: they run
        # per pair of alternatives
        self._num_and = partial(num_and, limits=limits)
        self._str_and = partial(str_and, limits=limits)
        self._arr_and = partial(arr_and, accepts=self.accepts)
        self._obj_and = partial(obj_and, accepts=self.accepts, limits=limits)

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise LimitError("schema compilation took too long", limit="max_compile_seconds")

    def flag_over(self, pointer: str, keyword: str) -> Flags:
        """Flags for a grammar that accepts more than the schema here (the validator must run;
        ``_terms.flag_over``)."""
        return flag_over(pointer, keyword)

    def flag_under(self, pointer: str, keyword: str) -> Flags:
        return flag_under(pointer, keyword)

    # -- meet, intersection, union ----------------------------------------------------------
    def meet(self, term: Term, shapes: list[Shape], terms: list[Term] | None = None) -> Shape:
        """The intersection of ``shapes``, the expansions of the parts of ``term``. A literal
        set among them is filtered by evaluating each value against ``term``, exactly; when
        ``terms`` gives the part each shape expands (``term`` is their ``And``), a value is
        evaluated against the parts only, and a part whose shape is itself an exact literal
        set (no flags) is a set lookup rather than a validation (``_filter.literal_filter``)."""
        flags = NO_FLAGS
        for s in shapes:
            flags = flags | s.flags
        lits = [s for s in shapes if s.literals is not None]
        if lits:
            base = min(lits, key=lambda s: len(s.literals or ()))
            return Shape(
                literals=literal_filter(self.accepts, self.limits, term, shapes, terms, base)
            )
        if len(shapes) == 2:
            # the usual location: a bare ``type`` and one keyword family's part
            out_or_none = _typed(shapes[0], shapes[1], self.limits)
            if out_or_none is not None:
                out = out_or_none
                if out.is_empty():
                    return SHAPE_BOTTOM.flagged(flags | out.flags)
                both = flags | out.flags
                return out if both is out.flags else out.flagged(both)
        out = SHAPE_TOP
        # smallest first: a narrow shape (a bounded range, one alternative) keeps every later
        # product small, where multiplying wide ones first can pass max_dfa_states for nothing.
        # Shapes that declare object properties keep their order (it is the key order the
        # grammar emits) and come last; the others declare none, so moving them changes no order
        for s in sorted(shapes, key=_breadth) if len(shapes) > 1 else shapes:
            out = self.intersect(out, s)
            if out.is_empty():
                return SHAPE_BOTTOM.flagged(flags | out.flags)
        # out.flags holds what the pairwise intersections added (a product that hit a cap and
        # was left to the validator): dropping them would let an invalid value through
        both = flags | out.flags
        return out if both is out.flags else out.flagged(both)

    def intersect(self, a: Shape, b: Shape) -> Shape:
        """Intersection of two type splits (literal shapes are converted first)."""
        a, b = self.split(a), self.split(b)
        if a is SHAPE_TOP and top_identity(b, self.limits):
            return b  # what the pairwise products below give for TOP and b (the first meet)
        if b is SHAPE_TOP and top_identity(a, self.limits):
            return a
        # a bare ``type`` (each of its types' "any value" alternative) meets a shape that TOP
        # leaves unchanged: the products below keep that shape's alternatives of those types
        if _types_only(a, b) and top_identity(b, self.limits):
            return _of_types(b, a)
        if _types_only(b, a) and top_identity(a, self.limits):
            return _of_types(a, b)
        flags = a.flags | b.flags
        nums = self._pairs(*self._narrowed(a.numbers, b.numbers), self._num_and)
        strs = self._pairs(*self._narrowed(a.strings, b.strings), self._str_and)
        arrs = self._pairs(a.arrays, b.arrays, self._arr_and)
        objs = self._pairs(a.objects, b.objects, self._obj_and)
        return Shape(
            null=a.null and b.null,
            booleans=a.booleans & b.booleans,
            numbers=tuple(x for x, _ in nums),
            strings=tuple(x for x, _ in strs),
            arrays=tuple(x for x, _ in arrs),
            objects=tuple(x for x, _ in objs),
            flags=flags | join_flags([f for _, f in nums + strs + arrs + objs]),
            pending=a.pending or b.pending,
        )

    def meet_objects(
        self, xs: tuple[ObjAlt, ...], ys: tuple[ObjAlt, ...]
    ) -> tuple[tuple[ObjAlt, ...], Flags]:
        """The object alternatives of ``intersect(Shape(objects=xs), Shape(objects=ys))`` and
        the flags its products add (the shapes of one location's object keywords, each
        allowing objects only, without flags), without the rest of a shape's types."""
        objs = self._pairs(xs, ys, self._obj_and)
        return tuple(x for x, _ in objs), join_flags([f for _, f in objs])

    def _pairs(
        self,
        xs: tuple[Any, ...],
        ys: tuple[Any, ...],
        fn: Callable[[Any, Any], tuple[Any, Flags] | None],
    ) -> list[tuple[Any, Flags]]:
        """The products of every alternative of ``xs`` with every one of ``ys``, deduplicated
        and merged. Literal containers (enum values) meet to literals or nothing, so they never
        multiply and are bounded apart (:meth:`_literals_checked`); the other alternatives are
        bounded by ``max_alternatives``, or by the larger side when the other has one
        alternative (a product with one alternative is a filter, not a multiplication)."""
        if not xs or not ys:
            return []  # a type one side does not allow (the usual case: one type per shape)
        if len(xs) == 1 and len(ys) == 1:
            # one product (an object part met with another, a type with a range): nothing to
            # deduplicate, count or merge, so its alternative is not hashed
            self.check_time()
            r = fn(xs[0], ys[0])
            return [] if r is None else [r]
        out: dict[Any, Flags] = {}
        cap = self._product_cap(xs, ys)
        merged_at = cap
        n_lit = 0
        for x in xs:
            for y in ys:
                self.check_time()
                r = fn(x, y)
                if r is not None and r[0] not in out:
                    out[r[0]] = r[1]
                    if _is_literal(r[0]):
                        n_lit += 1
                    elif len(out) - n_lit > merged_at:
                        out = self._merged(out, cap)
                        n_lit = sum(1 for a in out if _is_literal(a))
                        merged_at = max(2 * (len(out) - n_lit), cap)
        if len(out) > 1:
            out = self._merged(out, cap)
        return list(out.items())

    def _narrowed(
        self, xs: tuple[Any, ...], ys: tuple[Any, ...]
    ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """``xs`` and ``ys`` (string or number alternatives), each merged into the automata of
        its union (``_merge.merge_regular``) when multiplying them pairwise would pass
        ``max_alternatives``: intersection distributes over union, so the product of the two
        unions is the union of the pairwise products, at the cost of one product rather than
        ``len(xs) * len(ys)``."""
        if min(len(xs), len(ys)) < 2 or len(xs) * len(ys) <= self.limits.max_alternatives:
            return xs, ys
        return tuple(self._regular(list(xs))), tuple(self._regular(list(ys)))

    def _regular(self, alts: list[Any]) -> list[Any]:
        """``alts`` with the string and number alternatives merged into their unions'
        automata (``_merge.merge_regular``), under this compilation's limits and deadline."""
        return merge_regular(self.limits, self.check_time, alts)

    def _product_cap(self, xs: tuple[Any, ...], ys: tuple[Any, ...]) -> int:
        """The alternatives a product of ``xs`` and ``ys`` may keep (see :meth:`_pairs`)."""
        nx = sum(1 for x in xs if not _is_literal(x))
        ny = sum(1 for y in ys if not _is_literal(y))
        cap = self.limits.max_alternatives
        if min(nx, ny) <= 1:
            cap = max(cap, nx, ny)
        return cap

    def _merged(self, alts: dict[Any, Flags], cap: int) -> dict[Any, Flags]:
        """``alts`` with the object alternatives that differ in one property merged (see
        ``_merge.merge_alternatives``), and string or number alternatives past ``cap`` merged
        into their union's automata; LimitError when more than ``cap`` others remain, or
        literals past ``max_literal_bytes``."""
        kinds = {type(a) for a in alts}
        out = alts
        if kinds == {ObjAlt}:
            # a merged alternative carries all its parts' flags
            flags = join_flags(list(alts.values()))
            out = {a: alts.get(a, flags) for a in merge_alternatives(list(alts))}
        elif kinds in ({StrAlt}, {NumAlt}) and len(alts) > cap:
            flags = join_flags(list(alts.values()))
            out = {a: alts.get(a, flags) for a in self._regular(list(alts))}
        n = self._literals_checked(out)
        if n > cap:
            raise LimitError(
                f"merging allOf / anyOf / oneOf / not gives {n} alternatives of one type",
                limit="max_alternatives",
            )
        return out

    def _literals_checked(self, alts: Iterable[Any]) -> int:
        """The alternatives that count against ``max_alternatives`` (``_merge``)."""
        return counted_alternatives(alts, self.limits)

    def union(self, shapes: list[Shape], *, defer: bool = False) -> Shape:
        """The union of ``shapes``, alternatives concatenated and merged; past
        ``max_alternatives`` (and not told apart by a discriminator) a LimitError, unless
        ``defer``: then the shape is marked ``pending`` and :meth:`settle` decides once the
        location's other keywords have met it."""
        if not shapes:
            return SHAPE_BOTTOM
        flags = join_flags([s.flags for s in shapes])
        if all(s.literals is not None for s in shapes):
            vals: dict[str, None] = {}
            for s in shapes:
                vals.update(dict.fromkeys(s.literals or ()))
            return Shape(literals=tuple(vals), flags=flags)
        ss = [self.split(s) for s in shapes]

        pending = False

        def cat(xs: Iterable[tuple[Any, ...]]) -> tuple[Any, ...]:
            nonlocal pending
            out: dict[Any, None] = {}
            for tup in xs:
                if tup:
                    out.update(dict.fromkeys(tup))
            if len(out) <= 1 and all(getattr(a, "literal", None) is None for a in out):
                return tuple(out)  # none, or one that is not a literal: within every cap
            got, told = self._capped(tuple(out), defer)
            pending = pending or not told
            return got

        nums = cat(s.numbers for s in ss)
        if any(n.is_any and not n.integer for n in nums):
            nums = (NumAlt(),)
        strs = cat(s.strings for s in ss)
        if any(x.is_any for x in strs):
            strs = (StrAlt(),)
        arrs = cat(s.arrays for s in ss)
        if any(x.is_top() for x in arrs):
            arrs = (ArrAlt(),)
        objs = cat(s.objects for s in ss)
        if any(x.is_top() for x in objs):
            objs = (ObjAlt(),)
        return Shape(
            null=any(s.null for s in ss),
            booleans=frozenset().union(*(s.booleans for s in ss)),
            numbers=nums,
            strings=strs,
            arrays=arrs,
            objects=objs,
            flags=flags,
            pending=pending,
        )

    def _capped(self, alts: tuple[Any, ...], defer: bool) -> tuple[tuple[Any, ...], bool]:
        """``alts`` (one type's alternatives) merged where they exceed ``max_alternatives``,
        and whether they are within it or told apart by a discriminator (at most
        ``max_discriminated_alternatives``); else a LimitError, or with ``defer`` the merged
        alternatives and False (up to ``max_discriminated_alternatives``)."""
        cap = self.limits.max_alternatives
        out = alts
        if self._literals_checked(out) > cap:
            out = tuple(dict.fromkeys(self._regular(merge_alternatives(list(out)))))
        n = self._literals_checked(out)
        if n <= cap:
            return out, True
        big = self.limits.max_discriminated_alternatives
        if n <= big and self.discriminator(out) is not None:
            return out, True
        if defer and n <= big:
            return out, False
        what = "alternatives of one type"
        if n > big:
            what = f"alternatives of one type (at most {big} when a key tells them apart)"
        raise LimitError(
            f"anyOf / oneOf gives {n} {what}",
            limit="max_alternatives" if n <= big else "max_discriminated_alternatives",
        )

    def settle(self, s: Shape) -> Shape:
        """A ``pending`` shape (see :meth:`union`) once its location is complete: each type's
        alternatives within ``max_alternatives`` after merging, or told apart by a
        discriminator now that the location's other keywords met them (Azure Pipelines'
        task branches each name their task by a pattern, and a sibling ``properties`` gives
        the names as literals), else the LimitError the union would have raised."""
        if not s.pending:
            return s
        nums, strs, arrs, objs = (
            self._capped(alts, False)[0] for alts in (s.numbers, s.strings, s.arrays, s.objects)
        )
        return replace(s, numbers=nums, strings=strs, arrays=arrs, objects=objs, pending=False)

    def expand(self, term: Term) -> Shape:
        """The shape of ``term`` (the compiler's expansion; see ``SchemaCompiler.expand``)."""
        raise NotImplementedError

    def discriminator(self, alts: tuple[Any, ...]) -> str | None:
        """A key that tells the object alternatives of ``alts`` apart: every one requires it
        with a literal value set (``const`` / ``enum``), and no value belongs to two of them
        (the OpenAPI discriminator; the automaton then follows one alternative once the key's
        value is read, as a trie would). None when there is none, or ``alts`` are not objects.
        Cost: O(alternatives x required keys) plus the keys' (memoised) expansions."""
        objs = [a for a in alts if isinstance(a, ObjAlt)]
        if len(objs) != len(alts) or not objs:
            return None
        keys: set[str] | None = None
        for o in objs:
            names = (
                set(json.loads(o.literal))
                if o.literal is not None
                else {p.name for p in o.props if p.required}
            )
            keys = names if keys is None else keys & names
            if not keys:
                return None
        for key in sorted(keys or ()):
            owner: set[str] = set()
            for o in objs:
                values = self._key_literals(o, key)
                if values is None or not owner.isdisjoint(values):
                    break
                owner.update(values)
            else:
                return key
        return None

    def _key_literals(self, o: ObjAlt, key: str) -> set[str] | None:
        """The canonical texts ``key`` may hold in ``o`` (None: not a finite literal set): an
        enum's or const's values, or the strings of a finite string language (a pattern
        such as ``^PowerShell@2$`` with ``type: string``, at most 64 strings), exactly."""
        if o.literal is not None:
            return {canonical(json.loads(o.literal)[key])}
        p = o.prop(key)
        if p is None:
            return None
        try:
            shape = self.expand(p.value)
        except SchemaError:  # a term still being expanded (recursion): not provable here
            return None
        if shape.literals is not None:
            return set(shape.literals)
        return finite_strings(shape, self.limits)

    def split(self, s: Shape) -> Shape:
        """A literal shape as a type split (each literal its own alternative)."""
        if s.literals is None:
            return s
        null = False
        bools: set[bool] = set()
        nums: list[NumAlt] = []
        strs: list[str] = []
        arrs: list[ArrAlt] = []
        objs: list[ObjAlt] = []
        for text in s.literals:
            v = json.loads(text)
            if v is None:
                null = True
            elif isinstance(v, bool):
                bools.add(v)
            elif is_number(v):
                nums.append(NumAlt(dfa=_langs.number_literal_dfa(to_decimal(v, "", "enum"))))
            elif isinstance(v, str):
                strs.append(v)
            elif isinstance(v, list):
                arrs.append(ArrAlt(literal=text))
            else:
                objs.append(ObjAlt(literal=text))
        numbers: tuple[NumAlt, ...] = ()
        if nums:
            # unions of literal automata in a balanced tree: each product is as large as its
            # operands together, so n literals cost O(n log n) states, not O(n**2)
            level = [n.dfa for n in nums if n.dfa is not None]
            while len(level) > 1:
                self.check_time()
                odd = level[-1:] if len(level) % 2 else []
                pairs = zip(level[0::2], level[1::2], strict=False)  # an odd last one waits
                level = [a.union(b, limits=self.limits) for a, b in pairs] + odd
            numbers = (NumAlt(dfa=level[0]),)
        strings = (StrAlt(dfa=_langs.string_literals_dfa(strs)),) if strs else ()
        return Shape(
            null=null,
            booleans=frozenset(bools),
            numbers=numbers,
            strings=strings,
            arrays=tuple(arrs),
            objects=tuple(objs),
            flags=s.flags,
        )

    def complement(self, s: Shape, term: Term) -> Shape:
        """The complement of ``s``, the expansion of ``term`` (``_complement.complement``:
        what it approximates is flagged at ``term``'s location)."""
        return complement(self.split(s), self.locs.pointer_of(term), self.limits, self.intersect)


def _typed(a: Shape, b: Shape, limits: Limits) -> Shape | None:
    """``meet([a, b])``'s shape (before its flags and emptiness) when one of them is a bare
    type (:func:`_types_only`) and the other is not and meets TOP unchanged (``top_identity``):
    the other's alternatives of those types, what :meth:`ShapeAlgebra.intersect` gives for the
    two in either order (a bare type meets TOP unchanged too). None otherwise (the caller
    intersects). Neither may be SHAPE_TOP itself (intersect returns the other one for it)."""
    for t, s in ((a, b), (b, a)):
        if (
            t is not SHAPE_TOP
            and s is not SHAPE_TOP
            and _types_only(t, s)
            and not _types_only(s, t)
            and top_identity(s, limits)
        ):
            return _of_types(s, t)
    return None


def _types_only(s: Shape, other: Shape) -> bool:
    """Whether each JSON type ``s`` allows holds only that type's alternative of
    ``SHAPE_TOP`` (any value of it), as ``{"type": ...}`` gives, with no flags and nothing
    pending; ``"integer"`` (any integer) counts where every number alternative of ``other``
    is an integer one (its product with any integer is then itself)."""
    # identity first: the keyword families' parts keep SHAPE_TOP's own tuples for the types
    # they leave alone, and ``type`` shares them (an alternative's == is a Python call)
    if s.literals is not None or s.pending:
        return False
    if s.flags is not NO_FLAGS and s.flags != NO_FLAGS:
        return False
    n = s.numbers
    if (
        n
        and n is not _TOP_NUMBERS
        and n != _TOP_NUMBERS
        and not ((n is ANY_INTEGER or n == ANY_INTEGER) and all(x.integer for x in other.numbers))
    ):
        return False
    st = s.strings
    if st and st is not _TOP_STRINGS and st != _TOP_STRINGS:
        return False
    ar = s.arrays
    if ar and ar is not _TOP_ARRAYS and ar != _TOP_ARRAYS:
        return False
    ob = s.objects
    return not ob or ob is _TOP_OBJECTS or ob == _TOP_OBJECTS


#: the number alternatives of ``{"type": "integer"}`` (``_kw_values`` shares them)
ANY_INTEGER = (NumAlt(None, True),)
_TOP_NUMBERS = SHAPE_TOP.numbers
_TOP_STRINGS = SHAPE_TOP.strings
_TOP_ARRAYS = SHAPE_TOP.arrays
_TOP_OBJECTS = SHAPE_TOP.objects


def _of_types(s: Shape, types: Shape) -> Shape:
    """``intersect(s, types)`` for a ``types`` that :func:`_types_only` accepts and an ``s``
    that ``top_identity`` accepts: ``s``'s alternatives of the types ``types`` allows (each
    product with a TOP alternative is the alternative itself)."""
    return Shape(
        null=s.null and types.null,
        booleans=s.booleans & types.booleans,
        numbers=s.numbers if types.numbers else (),
        strings=s.strings if types.strings else (),
        arrays=s.arrays if types.arrays else (),
        objects=s.objects if types.objects else (),
        flags=s.flags,
        pending=s.pending,
    )


def _is_literal(alt: Any) -> bool:
    """Whether ``alt`` is a literal container (an enum's array or object value)."""
    return getattr(alt, "literal", None) is not None


def _breadth(s: Shape) -> tuple[int, int, int]:
    """Sort key for :meth:`ShapeAlgebra.meet`: shapes without declared object properties
    first, by how much they hold (alternatives, then automaton states); the rest after them,
    in their given order (the key is equal for all of them and the sort is stable)."""
    if any(o.props for o in s.objects):
        return 1, 0, 0
    alts = len(s.numbers) + len(s.strings) + len(s.arrays) + len(s.objects)
    # automaton states; a format or range whose DFA is not built counts by its regex's length
    # (a proxy, for order)
    size = 0
    for n in s.numbers:
        if n.dfa is not None:
            size += n.dfa.n_states
        if n.rng is not None:
            size += len(n.rng.rx)
    for x in s.strings:
        if x.dfa is not None:
            size += x.dfa.n_states
        if x.fmt is not None:
            size += len(FORMATS[x.fmt].regex or "")
        if x.pat is not None:
            size += len(x.pat)
    return 0, alts, size
