"""The shape algebra: meet, intersection, union and complement of shapes, one JSON type at a
time (see :mod:`toolmask.schema._terms` for terms and shapes).

:class:`ShapeAlgebra` holds what the operations need beside the shapes: the limits (every
product of automata is bounded by ``max_dfa_states``, every union by ``max_alternatives``), the
compile deadline and the :class:`~toolmask.schema._resolve.Locations` that evaluate a term
against a literal value exactly. Costs: intersections are pairwise over the alternatives of
each JSON type, and object alternatives that differ in one property's value are merged (so the
count that ``Limits.max_alternatives`` bounds is what the grammar needs); string and number
constraints are DFA products bounded by ``Limits.max_dfa_states``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, TypeVar

from toolmask.errors import LimitError, SchemaError
from toolmask.grammar import Dfa
from toolmask.limits import Limits
from toolmask.schema import _langs
from toolmask.schema._filter import literal_filter
from toolmask.schema._formats import FORMATS
from toolmask.schema._merge import (
    counted_alternatives,
    finite_strings,
    merge_alternatives,
    merge_regular,
    number_lang,
)
from toolmask.schema._resolve import Locations
from toolmask.schema._terms import (
    BOTTOM,
    NO_FLAGS,
    SHAPE_BOTTOM,
    SHAPE_TOP,
    TOP,
    ArrAlt,
    Flags,
    NumAlt,
    ObjAlt,
    Prop,
    Region,
    Shape,
    StrAlt,
    Term,
    canonical,
    mk_and,
    mk_not,
)

__all__ = ["ShapeAlgebra", "is_number", "join_flags", "to_decimal"]


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

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise LimitError("schema compilation took too long", limit="max_compile_seconds")

    def flag_over(self, pointer: str, keyword: str) -> Flags:
        """Flags for a grammar that accepts more than the schema here (the validator must run)."""
        return Flags(over=frozenset({(pointer, keyword)}))

    def flag_under(self, pointer: str, keyword: str) -> Flags:
        return Flags(under=frozenset({(pointer, keyword)}))

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
        out = SHAPE_TOP
        # smallest first: a narrow shape (a bounded range, one alternative) keeps every later
        # product small, where multiplying wide ones first can pass max_dfa_states for nothing.
        # Shapes that declare object properties keep their order (it is the key order the
        # grammar emits) and come last; the others declare none, so moving them changes no order
        for s in sorted(shapes, key=_breadth):
            out = self.intersect(out, s)
            if out.is_empty():
                return replace(SHAPE_BOTTOM, flags=flags | out.flags)
        # out.flags holds what the pairwise intersections added (a product that hit a cap and
        # was left to the validator): dropping them would let an invalid value through
        return replace(out, flags=flags | out.flags)

    def intersect(self, a: Shape, b: Shape) -> Shape:
        """Intersection of two type splits (literal shapes are converted first)."""
        a, b = self.split(a), self.split(b)
        if a is SHAPE_TOP and self._top_identity(b):
            return b  # what the pairwise products below give for TOP and b (the first meet)
        if b is SHAPE_TOP and self._top_identity(a):
            return a
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

    def _top_identity(self, s: Shape) -> bool:
        """``intersect(SHAPE_TOP, s)`` is ``s`` itself: every alternative meets "any value of
        its type" unchanged (the ``_*_and`` products with a TOP alternative copy the other
        side, except where they normalise: a number DFA re-met with the integer spelling, a
        string DFA that may be empty, literal containers, trailing prefix items equal to
        ``items``, BOTTOM or empty regions, required BOTTOM properties, counts out of order),
        no alternative repeats (the products are deduplicated) and there is at most one
        object alternative (several are merged). O(alternatives + properties)."""
        for n in s.numbers:
            if n.dfa is not None:
                return False
        for x in s.strings:
            if x.dfa is not None:
                return False
        for a in s.arrays:
            if a.literal is not None or (a.prefix and a.prefix[-1] == a.items):
                return False
            if a.max_items is not None and a.min_items > a.max_items:
                return False
            if a.contains is None and (a.min_contains != 1 or a.max_contains is not None):
                return False  # the product takes TOP's contains bounds then
        if len(s.objects) > 1:
            return False
        for o in s.objects:
            if o.literal is not None:
                return False
            if o.max_props is not None and o.min_props > o.max_props:
                return False
            if len({p.name for p in o.props}) != len(o.props):
                return False
            required = 0
            for p in o.props:
                if p.required:
                    required += 1
                    if p.value == BOTTOM:
                        return False
            if o.max_props is not None and required > o.max_props:
                return False
            for r in o.regions:
                if r.value == BOTTOM or (r.keys is not None and r.keys.is_empty()):
                    return False
        cap = self.limits.max_alternatives
        for alts in (s.numbers, s.strings, s.arrays):
            if len(alts) > 1 and (len(set(alts)) != len(alts) or len(alts) > cap):
                return False
        return True

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
                out.update(dict.fromkeys(tup))
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

    # -- products of alternatives, one JSON type each ----------------------------------------------
    def _num_and(self, a: NumAlt, b: NumAlt) -> tuple[NumAlt, Flags] | None:
        integer = a.integer or b.integer
        if a.is_any and b.is_any:
            return NumAlt(None, integer), NO_FLAGS
        # a range kept as regexes meets "any number" without its DFA (it is never empty; an
        # integer range already holds integral values only)
        for x, y in ((a, b), (b, a)):
            if x.rng is not None and y.is_any and (x.integer or not integer):
                return NumAlt(None, integer, x.rng), NO_FLAGS
        da, db = a.lang(self.limits), b.lang(self.limits)
        if da is not None and db is not None:
            try:
                d = _langs.dfa_and(da, db, self.limits)
            except LimitError:
                # products of remainder automata (multipleOf) past max_dfa_states: the grammar
                # keeps one side, the post-decode validator checks the other
                da = da if da.n_states <= db.n_states else db
                return NumAlt(da, integer), self.flag_over("", "multipleOf")
        else:
            one = da if da is not None else db
            assert one is not None
            d = one
        if integer and (da is None or db is None):
            d = _langs.dfa_and(d, _langs.int_value(), self.limits)
        if d.is_empty():
            return None
        return NumAlt(d, integer), NO_FLAGS

    def _num_dfa(self, n: NumAlt) -> Dfa:
        return number_lang(n, self.limits)

    def _str_and(self, a: StrAlt, b: StrAlt) -> tuple[StrAlt, Flags] | None:
        # a known format's language is never empty: it meets "any string" without its DFA
        if a.is_any:
            return (b, NO_FLAGS) if b.dfa is None or not b.dfa.is_empty() else None
        if b.is_any or a == b:
            return (a, NO_FLAGS) if a.dfa is None or not a.dfa.is_empty() else None
        da, db = a.lang(self.limits), b.lang(self.limits)
        assert da is not None and db is not None
        try:
            d = _langs.dfa_and(da, db, self.limits)
        except LimitError:
            # keep the smaller language in the grammar and leave the rest to the validator
            return a, self.flag_over("", "pattern")
        if d.is_empty():
            return None
        return StrAlt(d), NO_FLAGS

    def _arr_and(self, a: ArrAlt, b: ArrAlt) -> tuple[ArrAlt, Flags] | None:
        if a.literal is not None or b.literal is not None:
            return _meet_literal(a, b, self._arr_accepts)
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
                flags = self.flag_over("", "contains")
        ev = -1 if -1 in (a.evaluated, b.evaluated) else max(a.evaluated, b.evaluated)
        # trailing prefix positions equal to items can be folded
        while prefix and prefix[-1] == items:
            prefix = prefix[:-1]
        return (
            ArrAlt(prefix, items, lo, hi, contains, cmin, cmax, ev),
            flags,
        )

    def _arr_accepts(self, a: ArrAlt, value: Any) -> bool:
        if not isinstance(value, list):
            return False
        n = len(value)
        if n < a.min_items or (a.max_items is not None and n > a.max_items):
            return False
        if not all(self.accepts(a.item_term(i), v) for i, v in enumerate(value)):
            return False
        if a.contains is not None:
            c = sum(1 for v in value if self.accepts(a.contains, v))
            if c < a.min_contains or (a.max_contains is not None and c > a.max_contains):
                return False
        return True

    def _obj_and(self, a: ObjAlt, b: ObjAlt) -> tuple[ObjAlt, Flags] | None:
        if a.literal is not None or b.literal is not None:
            return _meet_literal(a, b, self._obj_accepts)
        names = [p.name for p in a.props] + [p.name for p in b.props if a.prop(p.name) is None]
        props: list[Prop] = []
        for n in names:
            pa, pb = self._prop_view(a, n), self._prop_view(b, n)
            value = mk_and(pa.value, pb.value)
            required = pa.required or pb.required
            if value == BOTTOM and required:
                return None
            props.append(Prop(n, value, required, pa.evaluated or pb.evaluated))
        regions: list[Region] = []
        for ra in a.regions:
            for rb in b.regions:
                value = mk_and(ra.value, rb.value)
                if value == BOTTOM:
                    continue
                keys = self._keys_and(ra.keys, rb.keys)
                if keys is not None and keys.is_empty():
                    continue
                regions.append(Region(keys, value, ra.evaluated or rb.evaluated))
        lo = max(a.min_props, b.min_props)
        hi = _min_opt(a.max_props, b.max_props)
        if hi is not None and lo > hi:
            return None
        if sum(1 for p in props if p.required) > (hi if hi is not None else math.inf):
            return None
        return ObjAlt(tuple(props), tuple(regions), lo, hi), NO_FLAGS

    def _keys_and(self, x: Dfa | None, y: Dfa | None) -> Dfa | None:
        if x is None:
            return y
        if y is None:
            return x
        return _langs.dfa_and(x, y, self.limits)

    def _prop_view(self, o: ObjAlt, name: str) -> Prop:
        """How ``o`` constrains key ``name``: declared, covered by a region, or forbidden."""
        p = o.prop(name)
        if p is not None:
            return p
        for r in o.regions:
            if r.keys is None or r.keys.accepts(name):
                return Prop(name, r.value, False, r.evaluated)
        return Prop(name, BOTTOM, False, False)

    def _obj_accepts(self, o: ObjAlt, value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        n = len(value)
        if n < o.min_props or (o.max_props is not None and n > o.max_props):
            return False
        for p in o.props:
            if p.name in value:
                if not self.accepts(p.value, value[p.name]):
                    return False
            elif p.required:
                return False
        names = o.names()
        for k, v in value.items():
            if k in names:
                continue
            if not self.accepts(self._prop_view(o, k).value, v):
                return False
        return True

    # -- complement --------------------------------------------------------------------------------
    def complement(self, s: Shape, term: Term) -> Shape:
        flags = s.flags.swapped()
        s = self.split(s)
        # numbers
        nums: tuple[NumAlt, ...]
        if not s.numbers:
            nums = (NumAlt(),)
        elif any(n.is_any and not n.integer for n in s.numbers):
            nums = ()
        else:
            try:
                d = Dfa.union_all([self._num_dfa(n) for n in s.numbers], limits=self.limits)
                comp = _langs.num_noexp().intersect(
                    d.complement(limits=self.limits), limits=self.limits
                )
                nums = () if comp.is_empty() else (NumAlt(comp, False),)
                flags = flags | self.flag_under(self.locs.pointer_of(term), "not")
            except LimitError:  # past max_dfa_states: any number, the validator checks
                nums = (NumAlt(),)
                flags = flags | self.flag_over(self.locs.pointer_of(term), "not")
        # strings
        strs: tuple[StrAlt, ...]
        if not s.strings:
            strs = (StrAlt(),)
        elif any(x.is_any for x in s.strings):
            strs = ()
        else:
            try:
                langs = [x.lang(self.limits) for x in s.strings]
                d2 = Dfa.union_all([d for d in langs if d is not None], limits=self.limits)
                c2 = d2.complement(limits=self.limits)
                strs = () if c2.is_empty() else (StrAlt(c2),)
            except LimitError:  # past max_dfa_states: any string, the validator checks
                strs = (StrAlt(),)
                flags = flags | self.flag_over(self.locs.pointer_of(term), "not")
        arrs, f1 = self._container_complement(s.arrays, term, "arrays")
        objs, f2 = self._container_complement(s.objects, term, "objects")
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
        self, alts: tuple[Any, ...], term: Term, field: Literal["arrays", "objects"]
    ) -> tuple[tuple[Any, ...], Flags]:
        """The complement, within arrays (or objects), of the union of ``alts``: the
        intersection of the alternatives' complements; "any array/object" (flagged: the
        validator checks) where one of them is not expressible."""
        top = ArrAlt() if field == "arrays" else ObjAlt()
        if not alts:
            return (top,), NO_FLAGS
        if any(a.is_top() for a in alts):
            return (), NO_FLAGS
        alt_complement = self._arr_alt_complement if field == "arrays" else self._obj_alt_complement
        result: Shape | None = None
        for a in alts:
            comp: tuple[Any, ...] | None = alt_complement(a)
            if comp is None:
                return (top,), self.flag_over(self.locs.pointer_of(term), "not")
            sh = Shape(arrays=comp) if field == "arrays" else Shape(objects=comp)
            result = sh if result is None else self.intersect(result, sh)
        assert result is not None
        return getattr(result, field), result.flags

    def _arr_alt_complement(self, a: ArrAlt) -> tuple[ArrAlt, ...] | None:
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
                out.append(
                    ArrAlt(contains=a.contains, min_contains=0, max_contains=a.min_contains - 1)
                )
            if a.max_contains is not None:
                out.append(ArrAlt(contains=a.contains, min_contains=a.max_contains + 1))
        return tuple(out)

    def _obj_alt_complement(self, o: ObjAlt) -> tuple[ObjAlt, ...] | None:
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
    dfas = [x.dfa for x in s.numbers] + [x.dfa for x in s.strings]
    # a format or range whose DFA is not built counts by its regex's length (a proxy, for order)
    deferred = sum(len(FORMATS[x.fmt].regex or "") for x in s.strings if x.fmt is not None)
    deferred += sum(len(x.pat) for x in s.strings if x.pat is not None)
    deferred += sum(len(x.rng.rx) for x in s.numbers if x.rng is not None)
    return 0, alts, deferred + sum(d.n_states for d in dfas if d is not None)


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
