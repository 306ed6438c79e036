"""JSON Schema -> terms -> shapes: one compilation, the keyword table applied per location.

:class:`SchemaCompiler` expands a term into a :class:`~toolmask.schema._terms.Shape` once
(memoised), with the three concerns in their own modules:

* reference resolution and the location table: :class:`~toolmask.schema._resolve.Locations`;
* what each keyword means: the keyword -> function table of
  :mod:`~toolmask.schema._handlers`, applied to a location's schema object, giving part shapes;
* the shape algebra that meets, joins and complements them:
  :class:`~toolmask.schema._algebra.ShapeAlgebra`, which this class extends.

Here: the expansion memo (each distinct term once; a ``$ref`` cycle that consumes no input is
refused), ``enum`` / ``const`` (a literal set filtered by the whole location), the
``unevaluated*`` keywords (they rewrite the location's shape), unsupported keywords (refused or,
``lenient``, left to the validator) and the flags that say which keywords were left, wholly or
partly, to the post-decode validator.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from toolmask._cache import current_caches
from toolmask.errors import LimitError, SchemaError
from toolmask.limits import Limits
from toolmask.schema._algebra import ShapeAlgebra
from toolmask.schema._formats import FORMATS
from toolmask.schema._handlers import dialect_table, keyword_parts
from toolmask.schema._keywords import KEYWORDS
from toolmask.schema._resolve import Locations, Resolver
from toolmask.schema._terms import (
    BOTTOM,
    NO_FLAGS,
    SHAPE_BOTTOM,
    SHAPE_TOP,
    TOP,
    ArrAlt,
    Const,
    Loc,
    Not,
    ObjAlt,
    Or,
    Prop,
    Region,
    Shape,
    Term,
    canonical,
    mk_and,
)

__all__ = ["SchemaCompiler"]

_log = logging.getLogger("toolmask.schema")
_monotonic = time.monotonic


def _log_unknown_format(name: str) -> None:
    """Warn once about the unknown format ``name`` (once while the cache set in use
    keeps it among the ``max_memo_entries`` names it has warned about)."""
    warned = current_caches().cache(
        "schema.warned_formats", limit="max_memo_entries", entry_bytes=lambda n: 64 + len(n)
    )
    if warned.get(name) is not None or warned.put(name, name) is not name:
        return
    _log.warning(
        "format %r is not known to toolmask: read as an annotation (JSON Schema 2020-12 "
        "format-annotation vocabulary), it constrains nothing; strict_formats=True refuses it",
        name,
    )


class SchemaCompiler(ShapeAlgebra):
    """One compilation of one root schema (plus optional extra resources for remote refs)."""

    def __init__(
        self,
        schema: Any,
        *,
        resources: Mapping[str, Any] | None,
        lenient: bool,
        limits: Limits,
        strict_formats: bool = False,
        crawl: bool = True,
        plain: bool = False,
    ) -> None:
        """``crawl``, ``plain``: see :class:`~toolmask.schema._resolve.Locations`."""
        locs = Locations(schema, resources=resources, limits=limits, crawl=crawl, plain=plain)
        super().__init__(limits, locs)
        self.root = schema
        self.lenient = lenient
        self.strict_formats = strict_formats
        self.table = dialect_table(schema)
        #: each term's shape, or _IN_PROGRESS while it is being expanded (a term met again
        #: then is a cycle)
        self._memo: dict[Term, Shape] = {}
        self._loc_depth = 0  # Loc expansions open one inside another ($ref chains, allOf, ...)
        self.forced_over: set[tuple[str, str]] = set()
        self.root_term = self.locs.root_term
        #: the term of a subschema (``Locations.sub``, bound once: it runs per subschema)
        self.sub = self.locs.sub
        #: a location's subschema, resolver and pointer by index (``Locations.at``, without
        #: its call: it runs per location expanded)
        self._at = self.locs.located
        #: the shapes of scalar locations by their keywords (see _expand_loc), kept in the
        #: cache set in use: equal subschemas, in this schema or another, are expanded once
        self._scalars = current_caches().cache(
            "schema.scalar_shapes", limit="max_memo_entries", entry_bytes=_scalar_shape_bytes
        )

    # -- locations (see Locations) ----------------------------------------------------------------
    def resolve(self, ref: Any, resolver: Resolver, ptr: str, kw: str) -> Loc:
        return self.locs.resolve(ref, resolver, ptr, kw)

    def where(self, term: Term) -> str:
        return self.locs.where(term)

    def force_over(self, pointer: str, keyword: str) -> None:
        """Record a keyword left to the validator outside any shape (lenient mode, key names)."""
        self.forced_over.add((pointer, keyword))

    # -- expansion ---------------------------------------------------------------------------------
    def expand(self, term: Term) -> Shape:
        got = self._memo.get(term)
        if got is not None:
            if got is _IN_PROGRESS:
                raise SchemaError(
                    "$ref cycle that never consumes input (a schema that refers to itself "
                    "without an object or array in between)",
                    pointer=self.locs.pointer_of(term),
                    keyword="$ref",
                )
            return got
        self._memo[term] = _IN_PROGRESS
        is_loc = isinstance(term, Loc)
        if is_loc:
            self._loc_depth += 1
            if self._loc_depth > self.limits.max_schema_depth:
                raise LimitError(
                    f"subschemas nest more than {self.limits.max_schema_depth} deep through "
                    "$ref / allOf / anyOf / oneOf / not",
                    limit="max_schema_depth",
                    pointer=self.locs.pointer_of(term),
                )
        try:
            if _monotonic() > self.deadline:  # check_time(), without its call
                self.check_time()
            shape = self._expand_loc(term) if is_loc else self._expand(term)  # type: ignore[arg-type]
        except BaseException as e:
            del self._memo[term]  # not in progress any more, and not expanded
            if is_loc and isinstance(e, LimitError):
                e.at(self.locs.pointer_of(term))  # a cap hit inside: at the innermost location
            raise
        finally:
            if is_loc:
                self._loc_depth -= 1
        self._memo[term] = shape
        return shape

    def _expand(self, term: Term) -> Shape:
        if isinstance(term, Const):
            return SHAPE_TOP if term.value else SHAPE_BOTTOM
        if isinstance(term, Loc):
            return self._expand_loc(term)
        if isinstance(term, Not):
            return self.complement(self.expand(term.item), term)
        if isinstance(term, Or):
            return self.union([self.expand(t) for t in sorted(term.items, key=repr)])
        items = sorted(term.items, key=repr)
        return self.meet(term, [self.expand(t) for t in items], items)

    def _expand_loc(self, loc: Loc) -> Shape:
        schema, resolver, ptr = self._at(loc.index)
        if schema is True:
            return SHAPE_TOP
        if schema is False:
            return SHAPE_BOTTOM
        if not isinstance(schema, dict):
            raise SchemaError(
                f"a schema must be an object or a boolean, got {type(schema).__name__}",
                pointer=ptr,
            )
        if ptr.count("/") > self.limits.max_schema_depth:
            raise LimitError("schema nesting too deep", limit="max_schema_depth", pointer=ptr)
        if not _UNSUPPORTED.isdisjoint(schema):
            for kw in schema:
                info = KEYWORDS.get(kw)
                if info is not None and info.enforcement == "unsupported":
                    self.unsupported(ptr, kw, info.note)

        if "enum" in schema or "const" in schema:
            return self._literals_at(loc, schema, ptr)
        t = schema.get("type")
        leaf = t if isinstance(t, str) and t in _LEAF_TYPES and schema.keys() <= _LEAF_KEYS else ""
        if leaf:
            got = _LEAF_SHAPES.get(leaf)
            if got is not None:
                return got
        if t == "object" and "properties" in schema and schema.keys() <= _PLAIN_OBJECT_KEYS:
            plain = self._plain_object(schema, resolver, ptr)
            if plain is not None:
                return plain
        elif t == "array" and "items" in schema and schema.keys() <= _PLAIN_ARRAY_KEYS:
            plain = self._plain_array(schema, resolver, ptr)
            if plain is not None:
                return plain
        key = None
        if not leaf and type(t) is str and t in _LEAF_TYPES and schema.keys() <= _SCALAR_KEYS:
            key = self._scalar_key(schema)
            if key is not None:
                kept: Shape | None = self._scalars.lookup(key)
                if kept is not None:
                    return kept

        parts = keyword_parts(self, schema, resolver, ptr, self.table)
        if len(parts) == 1 and parts[0].literals is not None and _single_applicator(schema):
            # a literal set from one applicator and nothing else: exact as it is (filtering it
            # again by the whole location would cost O(values x branches) validations)
            shape = parts[0]
        else:
            shape = self.meet(loc, parts) if parts else SHAPE_TOP
        shape = self.settle(shape)
        if "unevaluatedProperties" in schema or "unevaluatedItems" in schema:
            shape = self._apply_unevaluated(schema, resolver, ptr, shape)
        if key is not None and not shape.flags.over and not shape.flags.under:
            self._scalars.put(key, shape)
        if leaf:
            _LEAF_SHAPES[leaf] = shape
        return shape

    def _plain_object(self, schema: dict[str, Any], resolver: Resolver, ptr: str) -> Shape | None:
        """The shape of the usual object location, ``{"type": "object", "properties": {...},
        "required": [...], "additionalProperties": false}`` (``required`` and
        ``additionalProperties`` optional, annotations beside): what the keyword table and the
        meet give for it (the ``properties`` part met with the ``required`` one, then with the
        type), written out, the subschemas registered in the same order. None when the
        location is not of that form or is malformed (the table's functions say how), or
        when a required key is not declared (the caller takes the table)."""
        props_kw = schema["properties"]
        req = schema.get("required", ())
        has_addl = "additionalProperties" in schema
        addl_kw = schema.get("additionalProperties")
        if (
            type(props_kw) is not dict
            or not props_kw
            or (type(req) is not list and req != ())
            or not all(type(x) is str for x in req)
            or (has_addl and type(addl_kw) is not bool and type(addl_kw) is not dict)
        ):
            return None
        wanted = dict.fromkeys(req)  # the required names, once each, in order
        if not wanted.keys() <= props_kw.keys():
            return None
        loc = self.locs.loc
        base = ptr + "/properties/"
        props: list[Prop] = []
        empty = False  # a required key that has no value: no object (every subschema is
        # registered all the same, as the table registers them, so the locations after it
        # keep their places)
        for name, node in props_kw.items():
            # self.sub(schema, resolver, ptr, "properties", name), written out
            if node is True:
                t: Term = TOP
            elif node is False:
                t = BOTTOM
            else:
                key = str(name)
                if "~" in key or "/" in key:
                    key = key.replace("~", "~0").replace("/", "~1")
                t = loc(node, resolver, base + key)
            required = name in wanted
            empty = empty or (required and t is BOTTOM)
            props.append(Prop(name, t, required, True))
        regions: tuple[Region, ...] = ()
        addl = self.sub(schema, resolver, ptr, "additionalProperties") if has_addl else TOP
        if empty:
            return SHAPE_BOTTOM.flagged(NO_FLAGS)
        if addl is not BOTTOM:
            regions = (Region(None, addl, has_addl),)
        return Shape(objects=(ObjAlt(tuple(props), regions),))

    def _plain_array(self, schema: dict[str, Any], resolver: Resolver, ptr: str) -> Shape | None:
        """The shape of the usual array location, ``{"type": "array", "items": {...},
        "minItems": m, "maxItems": n}`` (the counts optional, annotations beside): what the
        keyword table and the meet give for it, written out (see :meth:`_plain_object`).
        None when it is not of that form, or the counts are malformed or crossed (the table
        says how)."""
        items_kw = schema["items"]
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems")
        if (
            (type(items_kw) is not dict and type(items_kw) is not bool)
            or type(lo) is not int
            or lo < 0
            or (hi is not None and (type(hi) is not int or hi < lo))
        ):
            return None
        items = self.sub(schema, resolver, ptr, "items")
        return Shape(arrays=(ArrAlt((), items, lo, hi, None, 1, None, -1),))

    def _scalar_key(self, schema: dict[str, Any]) -> tuple[Any, ...] | None:
        """The key of a scalar location's shape in ``schema.scalar_shapes`` (see
        :data:`_SCALAR_KEYS`): its constraining keywords and their values (typed: 1, 1.0 and
        true differ), in their order, with what else the shape depends on (the limits, the
        options, the keyword table); None when a value is not a JSON scalar or the format is
        unknown (its warning is logged once per name: the general route says when)."""
        items: list[tuple[str, type, Any]] = []
        for k, v in schema.items():
            if k in _LEAF_KEYS and k != "type":
                continue  # an annotation
            tv = type(v)
            if tv is not str and tv is not int and tv is not float and tv is not bool:
                return None
            if k == "format" and v not in FORMATS:
                return None
            items.append((k, tv, v))
        return (tuple(items), self.limits, self.lenient, self.strict_formats, id(self.table))

    def unsupported(self, ptr: str, kw: str, note: str) -> None:
        msg = f"keyword {kw!r} is not supported" + (f": {note}" if note else "")
        if not self.lenient:
            raise SchemaError(msg, pointer=ptr, keyword=kw)
        warnings.warn(f"{ptr or '#'}: {msg}; left to the post-decode validator", stacklevel=2)
        self.force_over(ptr, kw)

    def unknown_format(self, ptr: str, name: str) -> None:
        """An unknown ``format``: a SchemaError with ``strict_formats``, else an annotation
        (logged once per format name and process on the ``toolmask.schema`` logger)."""
        if self.strict_formats:
            raise SchemaError(
                f"format {name!r} is not known (strict_formats: unknown formats are refused)",
                pointer=ptr,
                keyword="format",
            )
        _log_unknown_format(name)

    # -- literals ----------------------------------------------------------------------------------
    def _literals_at(self, loc: Loc, schema: dict[str, Any], ptr: str) -> Shape:
        if "const" in schema:
            values = [schema["const"]]
        else:
            values = schema["enum"]
            if not isinstance(values, list):
                raise SchemaError("enum must be an array", pointer=ptr, keyword="enum")
        if "const" in schema and "enum" in schema:
            values = [v for v in values if self.accepts(loc, v)]
        kept: list[str] = []
        seen: set[str] = set()
        # an enum with annotations (and a type) beside it keeps its values of that type without
        # evaluating the subschema (a jsonschema validator per location costs more than the
        # rest of a small schema's compile)
        plain = schema.keys() <= _ENUM_SIBLINGS
        for v in values:
            fast = _type_fits(schema.get("type"), v) if plain else None
            if fast is False or (fast is None and not self.accepts(loc, v)):
                continue
            try:
                text = canonical(v)
            except ValueError as e:
                raise SchemaError(str(e), pointer=ptr, keyword="enum") from e
            if text not in seen:
                seen.add(text)
                kept.append(text)
        return Shape(literals=tuple(kept))

    # -- unevaluated* ------------------------------------------------------------------------------
    def _apply_unevaluated(
        self, schema: dict[str, Any], resolver: Resolver, ptr: str, shape: Shape
    ) -> Shape:
        if shape.literals is not None:
            return shape  # literal sets were filtered by the full schema already
        objs = shape.objects
        if "unevaluatedProperties" in schema:
            u = self.sub(schema, resolver, ptr, "unevaluatedProperties")
            new: list[ObjAlt] = []
            for o in objs:
                if o.literal is not None:
                    new.append(o)
                    continue
                props = tuple(
                    p if p.evaluated else Prop(p.name, mk_and(p.value, u), p.required, True)
                    for p in o.props
                )
                regions = tuple(
                    r if r.evaluated else Region(r.keys, mk_and(r.value, u), True)
                    for r in o.regions
                )
                regions = tuple(r for r in regions if r.value != BOTTOM)
                new.append(ObjAlt(props, regions, o.min_props, o.max_props))
            objs = tuple(new)
            if len(shape.objects) > 1:
                shape = shape.with_flags(self.flag_under(ptr, "unevaluatedProperties"))
        arrs = shape.arrays
        if "unevaluatedItems" in schema:
            u = self.sub(schema, resolver, ptr, "unevaluatedItems")
            new_a: list[ArrAlt] = []
            for a in arrs:
                if a.literal is not None or a.evaluated == -1:
                    new_a.append(a)
                    continue
                if a.contains is not None:
                    shape = shape.with_flags(self.flag_over(ptr, "unevaluatedItems"))
                    new_a.append(a)
                    continue
                k = max(len(a.prefix), a.evaluated)
                prefix = tuple(
                    a.item_term(i) if i < a.evaluated else mk_and(a.item_term(i), u)
                    for i in range(k)
                )
                new_a.append(replace(a, prefix=prefix, items=mk_and(a.items, u), evaluated=-1))
            arrs = tuple(new_a)
        return replace(shape, objects=objs, arrays=arrs)


def _single_applicator(schema: dict[str, Any]) -> bool:
    """Whether at most one applicator of ``schema`` gives a shape (and no unevaluated* keyword
    needs the literal set filtered)."""
    n = sum(kw in schema for kw in ("$ref", "allOf", "anyOf", "oneOf", "not"))
    n += "if" in schema and ("then" in schema or "else" in schema)
    return n <= 1 and "unevaluatedProperties" not in schema and "unevaluatedItems" not in schema


#: the keywords the compiler refuses (or, lenient, leaves to the validator)
_UNSUPPORTED = frozenset(k for k, info in KEYWORDS.items() if info.enforcement == "unsupported")

#: the keywords beside ``enum`` that :meth:`SchemaCompiler._literals_at` checks itself
_ENUM_SIBLINGS = frozenset(
    {"enum", "type"}
    | {k for k, info in KEYWORDS.items() if info.enforcement == "annotation" and k != "$schema"}
)

#: a location with one of these types and nothing but annotations beside it (``{"type":
#: "string", "description": ...}``, most tool parameters) has the shape of its type whatever the
#: schema, limits and options: :meth:`SchemaCompiler._expand_loc` computes it once per process
#: (the general route, so the same value) and returns it from ``_LEAF_SHAPES`` after that
_LEAF_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})
_LEAF_KEYS = frozenset(
    k for k in _ENUM_SIBLINGS if k != "enum" and (k == "$comment" or not k.startswith("$"))
)
_LEAF_SHAPES: dict[str, Shape] = {}

#: the keywords of an object location _expand_loc writes out (SchemaCompiler._plain_object)
_PLAIN_OBJECT_KEYS = _LEAF_KEYS | {"properties", "required", "additionalProperties"}
#: the same for an array location (SchemaCompiler._plain_array)
_PLAIN_ARRAY_KEYS = _LEAF_KEYS | {"items", "minItems", "maxItems"}

#: a location of one of those types with only these keywords beside annotations (a range, a
#: length, a pattern, a known format: ``{"type": "string", "pattern": "^[A-Z]{3}$"}``) has a
#: shape that depends on its keywords' values, the limits and the options alone, never on where
#: it sits unless it carries flags (their pointers): _expand_loc keeps the flagless ones by
#: those (SchemaCompiler._scalar_key) in the cache set in use, computed by the general route
_SCALAR_KEYS = _LEAF_KEYS | {
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
}


def _scalar_shape_bytes(shape: Shape) -> int:
    """A kept scalar shape's bytes: the shape and its alternatives (their automata are the
    language memos' own, counted there)."""
    return 256 + 96 * (len(shape.numbers) + len(shape.strings))


#: the expansion memo's mark of a term being expanded (see SchemaCompiler.expand)
_IN_PROGRESS = Shape(pending=True)

#: the JSON type of the values whose type every dialect agrees on
_PLAIN_TYPES: dict[type, str] = {str: "string", bool: "boolean", type(None): "null"}


def _type_fits(declared: Any, value: Any) -> bool | None:
    """Whether ``value`` has the ``type`` declared (absent: any), None when unsure (a number,
    an array or an object: the validator decides; a malformed ``type``)."""
    if declared is None:
        return True
    kind = _PLAIN_TYPES.get(type(value))
    if kind is None:
        return None
    if isinstance(declared, str):
        return declared == kind
    if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
        return kind in declared
    return None
