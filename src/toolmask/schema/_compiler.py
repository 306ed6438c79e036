"""JSON Schema -> terms -> shapes: resolution, keyword handlers and the shape algebra.

:class:`SchemaCompiler` owns one compilation: the location table (every subschema reached, with
its ``referencing`` resolver and JSON pointer), the expansion memo (term -> shape) and the flags
that say which keywords were left, wholly or partly, to the post-decode validator.

Costs: each distinct term is expanded once; intersections are pairwise over the alternatives of
each JSON type, and alternatives that differ in one property's value are merged (so the count
that ``Limits.max_alternatives`` bounds is what the grammar needs); string and number constraints
are DFA products bounded by ``Limits.max_dfa_states``; the key regions of one object are refined
pattern by pattern (bounded by ``Limits.max_key_regions``).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, Protocol
from urllib.parse import quote

import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema import validators as js_validators

from toolmask._cache import active_compiler
from toolmask._pointer import json_pointer
from toolmask.errors import GrammarError, LimitError, SchemaError
from toolmask.grammar._fsm import Dfa
from toolmask.limits import Limits
from toolmask.schema import _langs
from toolmask.schema._formats import FORMATS, format_checker
from toolmask.schema._keywords import KEYWORDS
from toolmask.schema._terms import (
    BOTTOM,
    NO_FLAGS,
    SHAPE_BOTTOM,
    SHAPE_TOP,
    TOP,
    And,
    ArrAlt,
    Const,
    Flags,
    Loc,
    Not,
    NumAlt,
    ObjAlt,
    Or,
    Prop,
    Region,
    Shape,
    StrAlt,
    Term,
    canonical,
    mk_and,
    mk_not,
    mk_or,
)
from toolmask.schema._validate import dialect_of

__all__ = ["SchemaCompiler"]

_log = logging.getLogger("toolmask.schema")


def _log_unknown_format(name: str) -> None:
    """Warn once about the unknown format ``name`` (once while the active GrammarCompiler
    keeps it among the ``max_memo_entries`` names it has warned about)."""
    warned = active_compiler().cache(
        "schema.warned_formats", limit="max_memo_entries", entry_bytes=lambda n: 64 + len(n)
    )
    if warned.get(name) is not None or warned.put(name, name) is not name:
        return
    _log.warning(
        "format %r is not known to toolmask: read as an annotation (JSON Schema 2020-12 "
        "format-annotation vocabulary), it constrains nothing; strict_formats=True refuses it",
        name,
    )


class Resolver(Protocol):
    """What the compiler uses of a ``referencing`` resolver (``Registry.resolver()``): its
    public methods only. ``lookup`` returns a ``Resolved`` (``.contents``, ``.resolver``)."""

    def lookup(self, ref: str) -> Any: ...

    def in_subresource(self, subresource: referencing.Resource[Any]) -> Resolver: ...


#: the URI the root document is also registered under when it has no ``$id``
_ROOT_ALIAS = "urn:toolmask:root"
#: the keywords that make a subschema depend on where it sits
_REF_KEYWORDS = frozenset({"$ref", "$dynamicRef", "$recursiveRef"})

_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _dec(v: Any, pointer: str, keyword: str) -> Decimal:
    if not _is_number(v):
        raise SchemaError(
            f"{keyword} must be a number, got {v!r}", pointer=pointer, keyword=keyword
        )
    if isinstance(v, float) and not math.isfinite(v):
        raise SchemaError(f"{keyword} must be finite", pointer=pointer, keyword=keyword)
    try:
        return Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
    except InvalidOperation as e:  # pragma: no cover - repr of a finite float always parses
        raise SchemaError(str(e), pointer=pointer, keyword=keyword) from e


def _nonneg_int(v: Any, pointer: str, keyword: str) -> int:
    if _is_number(v) and float(v).is_integer() and v >= 0:
        return int(v)
    raise SchemaError(
        f"{keyword} must be a non-negative integer, got {v!r}", pointer=pointer, keyword=keyword
    )


class SchemaCompiler:
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
    ) -> None:
        """``crawl=False`` when no document has a reference keyword (``$ref``,
        ``$dynamicRef``, ``$recursiveRef``): nothing is then ever looked up, so the registry's
        index of ``$id`` s and anchors is not built (``referencing`` builds it on the first
        lookup that misses anyway). That index costs about 50 µs on a small schema."""
        self.root = schema
        self.lenient = lenient
        self.strict_formats = strict_formats
        self.limits = limits
        self.deadline = time.monotonic() + limits.max_compile_seconds
        self._locs: list[tuple[Any, Resolver, str]] = []
        self._loc_index: dict[int, int] = {}
        self._keep: list[Any] = []
        self._memo: dict[Term, Shape] = {}
        self._in_progress: set[Term] = set()
        self._loc_depth = 0  # Loc expansions open one inside another ($ref chains, allOf, ...)
        self.forced_over: set[tuple[str, str]] = set()
        self._validators: dict[int, Any] = {}

        self._format_checker: Any = None
        spec = referencing.jsonschema.DRAFT202012
        if isinstance(schema, dict) and isinstance(schema.get("$schema"), str):
            try:
                spec = referencing.jsonschema.specification_with(schema["$schema"])
            except (
                referencing.exceptions.CannotDetermineSpecification,
                referencing.jsonschema.UnknownDialect,
            ):
                spec = referencing.jsonschema.DRAFT202012
        self.spec = spec
        self.draft4 = isinstance(schema, dict) and "draft-04" in str(schema.get("$schema", ""))
        self.validator_cls = dialect_of(schema)
        registry: referencing.Registry[Any] = referencing.Registry()
        for uri, doc in (resources or {}).items():
            registry = registry.with_resource(uri, self._resource(doc))
        root_res = self._resource(schema)
        root_uri = root_res.id() or ""
        registry = registry.with_resource(root_uri, root_res)
        # the documents by a URI that names them in a $ref (a root without $id is "" to its
        # own refs, which no $ref from outside can name: it gets an alias, see _as_ref)
        self._documents = [(root_uri or _ROOT_ALIAS, schema), *(resources or {}).items()]
        if not root_uri:
            registry = registry.with_resource(_ROOT_ALIAS, root_res)
        self._uris: dict[int, str] | None = None  # by id(subschema), see _as_ref
        self._with_refs: set[int] = set()
        self.registry = registry.crawl() if crawl else registry
        self.root_resolver = self.registry.resolver(base_uri=root_uri)
        self.root_term = self.loc(schema, self.root_resolver, "")

    @property
    def format_checker(self) -> Any:
        """The format checker of value-level evaluation, made on first use (most schemas never
        evaluate a value: registering every format costs more than the rest of a small
        schema's setup)."""
        if self._format_checker is None:
            self._format_checker = format_checker()
        return self._format_checker

    def _resource(self, doc: Any) -> referencing.Resource[Any]:
        try:
            return referencing.Resource.from_contents(doc, default_specification=self.spec)
        except referencing.jsonschema.UnknownDialect:
            return self.spec.create_resource(doc)

    # -- locations ------------------------------------------------------------------------------
    def loc(
        self,
        schema: Any,
        resolver: Resolver,
        pointer: str,
        *,
        enter_id: bool = True,
    ) -> Loc:
        if enter_id and isinstance(schema, dict) and "$id" in schema and pointer:
            idv = schema["$id"]
            if isinstance(idv, str) and not idv.startswith("#"):
                resolver = resolver.in_subresource(self._resource(schema))
        # a schema object sits at one place in one resource, so its identity names the
        # location (the schema dicts are kept alive by self._keep and the documents)
        key = id(schema)
        idx = self._loc_index.get(key)
        if idx is None:
            if len(self._locs) >= self.limits.max_rules * 4:
                raise LimitError("too many subschemas", limit="max_rules", pointer=pointer)
            idx = len(self._locs)
            self._locs.append((schema, resolver, pointer))
            self._loc_index[key] = idx
            self._keep.append(schema)
        return Loc(idx)

    def pointer_of(self, term: Term) -> str:
        if isinstance(term, Loc):
            return self._locs[term.index][2]
        return ""

    def where(self, term: Term) -> str:
        """The pointer of the first location inside ``term`` (``allOf`` parts merged into one
        term sit at their first part's location); ``""`` when there is none."""
        stack = [term]
        while stack:
            t = stack.pop()
            if isinstance(t, Loc):
                return self._locs[t.index][2]
            if isinstance(t, Not):
                stack.append(t.item)
            elif isinstance(t, (And, Or)):
                stack.extend(reversed(sorted(t.items, key=repr)))
        return ""

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise LimitError("schema compilation took too long", limit="max_compile_seconds")

    def flag_over(self, pointer: str, keyword: str) -> Flags:
        """Flags for a grammar that accepts more than the schema here (the validator must run)."""
        return Flags(over=frozenset({(pointer, keyword)}))

    def force_over(self, pointer: str, keyword: str) -> None:
        """Record a keyword left to the validator outside any shape (lenient mode, key names)."""
        self.forced_over.add((pointer, keyword))

    def flag_under(self, pointer: str, keyword: str) -> Flags:
        return Flags(under=frozenset({(pointer, keyword)}))

    # -- value-level evaluation (exact; used to filter literal sets) ------------------------------
    def accepts(self, term: Term, value: Any) -> bool:
        if isinstance(term, Const):
            return term.value
        if isinstance(term, And):
            return all(self.accepts(t, value) for t in term.items)
        if isinstance(term, Or):
            return any(self.accepts(t, value) for t in term.items)
        if isinstance(term, Not):
            return not self.accepts(term.item, value)
        v = self._validators.get(term.index)
        if v is None:
            schema = self._locs[term.index][0]
            if isinstance(schema, bool):
                return schema
            v = _fast_enum(self.validator_cls)(
                self._as_ref(schema),
                registry=self.registry,
                format_checker=self.format_checker,
            )
            self._validators[term.index] = v
        try:
            return bool(v.is_valid(value))
        except RecursionError:
            return False
        except Exception:  # jsonschema cannot evaluate it: treat as not provably valid
            return False

    def _as_ref(self, schema: dict[str, Any]) -> dict[str, Any]:
        """What to validate the subschema ``schema`` as, with jsonschema's public API (which
        takes no resolver): a subschema with a reference in it becomes a ``$ref`` to a URI
        that names it in :attr:`registry` (its document's URI and its JSON pointer there;
        ``referencing`` enters the resources with their own ``$id`` on the way), so that its
        refs resolve against the resource around it; one without is itself (where it sits
        changes nothing). The index is built on first use: O(size of the documents)."""
        if self._uris is None:
            self._uris, self._with_refs = {}, set()
            order: list[tuple[int, int]] = []  # (a dict, the dict it sits in), parents first
            for uri, doc in self._documents:
                stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
                while stack:
                    node, ptr, parent = stack.pop()
                    if isinstance(node, dict):
                        self._uris.setdefault(id(node), f"{uri}#{quote(ptr, safe='/~')}")
                        order.append((id(node), parent))
                        if not _REF_KEYWORDS.isdisjoint(node):
                            self._with_refs.add(id(node))
                        parent = id(node)
                        items: Iterable[tuple[Any, Any]] = node.items()
                    else:
                        items = enumerate(node)
                    stack.extend(
                        (child, ptr + json_pointer((key,)), parent)
                        for key, child in items
                        if isinstance(child, (dict, list))
                    )
            for node_id, parent in reversed(order):
                if node_id in self._with_refs:
                    self._with_refs.add(parent)
        if id(schema) in self._with_refs:
            return {"$ref": self._uris[id(schema)]}
        return schema

    # -- expansion --------------------------------------------------------------------------------
    def expand(self, term: Term) -> Shape:
        got = self._memo.get(term)
        if got is not None:
            return got
        if term in self._in_progress:
            raise SchemaError(
                "$ref cycle that never consumes input (a schema that refers to itself "
                "without an object or array in between)",
                pointer=self.pointer_of(term),
                keyword="$ref",
            )
        self._in_progress.add(term)
        is_loc = isinstance(term, Loc)
        if is_loc:
            self._loc_depth += 1
            if self._loc_depth > self.limits.max_schema_depth:
                raise LimitError(
                    f"subschemas nest more than {self.limits.max_schema_depth} deep through "
                    "$ref / allOf / anyOf / oneOf / not",
                    limit="max_schema_depth",
                    pointer=self.pointer_of(term),
                )
        try:
            self.check_time()
            shape = self._expand(term)
        except LimitError as e:  # a cap hit inside: it is located at the innermost location
            if is_loc:
                e.at(self.pointer_of(term))
            raise
        finally:
            self._in_progress.discard(term)
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
        shapes = [self.expand(t) for t in sorted(term.items, key=repr)]
        return self.meet(term, shapes)

    def _expand_loc(self, loc: Loc) -> Shape:
        schema, resolver, ptr = self._locs[loc.index]
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

        parts: list[Shape] = []
        for handler in _HANDLERS:
            part = handler(self, schema, resolver, ptr)
            if part is not None:
                parts.append(part)
        if len(parts) == 1 and parts[0].literals is not None and _single_applicator(schema):
            # a literal set from one applicator and nothing else: exact as it is (filtering it
            # again by the whole location would cost O(values x branches) validations)
            shape = parts[0]
        else:
            shape = self.meet(loc, parts) if parts else SHAPE_TOP
        if "unevaluatedProperties" in schema or "unevaluatedItems" in schema:
            shape = self._apply_unevaluated(schema, resolver, ptr, shape)
        if leaf:
            _LEAF_SHAPES[leaf] = shape
        return shape

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

    def sub(self, schema: Any, resolver: Resolver, ptr: str, *keys: str | int) -> Term:
        """The term of a subschema; boolean subschemas are the constants TOP / BOTTOM."""
        node = schema
        for k in keys:
            node = node[k]
        if node is True:
            return TOP
        if node is False:
            return BOTTOM
        return self.loc(node, resolver, ptr + json_pointer(keys))

    # -- literals -------------------------------------------------------------------------------
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

    # -- algebra --------------------------------------------------------------------------------
    def meet(self, term: Term, shapes: list[Shape]) -> Shape:
        flags = NO_FLAGS
        for s in shapes:
            flags = flags | s.flags
        lits = [s for s in shapes if s.literals is not None]
        if lits:
            base = min(lits, key=lambda s: len(s.literals or ()))
            kept = tuple(t for t in (base.literals or ()) if self.accepts(term, json.loads(t)))
            return Shape(literals=kept)
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
        nums = self._pairs(a.numbers, b.numbers, self._num_and)
        strs = self._pairs(a.strings, b.strings, self._str_and)
        arrs = self._pairs(a.arrays, b.arrays, self._arr_and)
        objs = self._pairs(a.objects, b.objects, self._obj_and)
        return Shape(
            null=a.null and b.null,
            booleans=a.booleans & b.booleans,
            numbers=tuple(x for x, _ in nums),
            strings=tuple(x for x, _ in strs),
            arrays=tuple(x for x, _ in arrs),
            objects=tuple(x for x, _ in objs),
            flags=flags | _join([f for _, f in nums + strs + arrs + objs]),
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
        out: dict[Any, Flags] = {}
        merged_at = self.limits.max_alternatives
        for x in xs:
            for y in ys:
                self.check_time()
                r = fn(x, y)
                if r is not None and r[0] not in out:
                    out[r[0]] = r[1]
                    if len(out) > merged_at:
                        out = self._merged(out)
                        merged_at = max(2 * len(out), self.limits.max_alternatives)
        if len(out) > 1:
            out = self._merged(out)
        return list(out.items())

    def _merged(self, alts: dict[Any, Flags]) -> dict[Any, Flags]:
        """``alts`` with the alternatives that differ in one property merged (see
        :func:`_merge_alternatives`); LimitError when more than ``max_alternatives`` remain."""
        kinds = {type(a) for a in alts}
        out = alts
        if kinds == {ObjAlt}:
            flags = _join(list(alts.values()))  # a merged alternative carries all its parts' flags
            out = {a: alts.get(a, flags) for a in _merge_alternatives(list(alts))}
        if len(out) > self.limits.max_alternatives:
            raise LimitError(
                f"merging allOf / anyOf / oneOf / not gives {len(out)} alternatives of one type",
                limit="max_alternatives",
            )
        return out

    def union(self, shapes: list[Shape]) -> Shape:
        if not shapes:
            return SHAPE_BOTTOM
        flags = _join([s.flags for s in shapes])
        if all(s.literals is not None for s in shapes):
            vals: dict[str, None] = {}
            for s in shapes:
                vals.update(dict.fromkeys(s.literals or ()))
            return Shape(literals=tuple(vals), flags=flags)
        ss = [self.split(s) for s in shapes]

        def cat(xs: Iterable[tuple[Any, ...]]) -> tuple[Any, ...]:
            out: dict[Any, None] = {}
            for tup in xs:
                out.update(dict.fromkeys(tup))
            if len(out) > self.limits.max_alternatives:
                out = dict.fromkeys(_merge_alternatives(list(out)))
            if len(out) > self.limits.max_alternatives:
                raise LimitError(
                    f"anyOf / oneOf gives {len(out)} alternatives of one type",
                    limit="max_alternatives",
                )
            return tuple(out)

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
        )

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
            elif _is_number(v):
                nums.append(NumAlt(dfa=_langs.number_literal_dfa(_dec(v, "", "enum"))))
            elif isinstance(v, str):
                strs.append(v)
            elif isinstance(v, list):
                arrs.append(ArrAlt(literal=text))
            else:
                objs.append(ObjAlt(literal=text))
        numbers: tuple[NumAlt, ...] = ()
        if nums:
            d = nums[0].dfa
            assert d is not None
            for n in nums[1:]:
                assert n.dfa is not None
                d = d.union(n.dfa, limits=self.limits)
            numbers = (NumAlt(dfa=d),)
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

    # numbers
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
        d = n.lang(self.limits)
        if d is not None:
            return d
        return _langs.int_value() if n.integer else _langs.num_noexp()

    # strings
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

    # arrays
    def _arr_and(self, a: ArrAlt, b: ArrAlt) -> tuple[ArrAlt, Flags] | None:
        if a.literal is not None or b.literal is not None:
            lit, other = (a, b) if a.literal is not None else (b, a)
            if other.literal is not None:
                return (lit, NO_FLAGS) if lit.literal == other.literal else None
            assert lit.literal is not None
            return (lit, NO_FLAGS) if self._arr_accepts(other, json.loads(lit.literal)) else None
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

    # objects
    def _obj_and(self, a: ObjAlt, b: ObjAlt) -> tuple[ObjAlt, Flags] | None:
        if a.literal is not None or b.literal is not None:
            lit, other = (a, b) if a.literal is not None else (b, a)
            if other.literal is not None:
                return (lit, NO_FLAGS) if lit.literal == other.literal else None
            assert lit.literal is not None
            return (lit, NO_FLAGS) if self._obj_accepts(other, json.loads(lit.literal)) else None
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

    # complement
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
                d = self._num_dfa(s.numbers[0])
                for n in s.numbers[1:]:
                    d = d.union(self._num_dfa(n), limits=self.limits)
                comp = _langs.num_noexp().intersect(
                    d.complement(limits=self.limits), limits=self.limits
                )
                nums = () if comp.is_empty() else (NumAlt(comp, False),)
                flags = flags | self.flag_under(self.pointer_of(term), "not")
            except LimitError:  # past max_dfa_states: any number, the validator checks
                nums = (NumAlt(),)
                flags = flags | self.flag_over(self.pointer_of(term), "not")
        # strings
        strs: tuple[StrAlt, ...]
        if not s.strings:
            strs = (StrAlt(),)
        elif any(x.is_any for x in s.strings):
            strs = ()
        else:
            try:
                d2 = s.strings[0].lang(self.limits)
                assert d2 is not None
                for x in s.strings[1:]:
                    dx = x.lang(self.limits)
                    assert dx is not None
                    d2 = d2.union(dx, limits=self.limits)
                c2 = d2.complement(limits=self.limits)
                strs = () if c2.is_empty() else (StrAlt(c2),)
            except LimitError:  # past max_dfa_states: any string, the validator checks
                strs = (StrAlt(),)
                flags = flags | self.flag_over(self.pointer_of(term), "not")
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
                return (top,), self.flag_over(self.pointer_of(term), "not")
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

    # -- unevaluated* ---------------------------------------------------------------------------
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

    # -- resolution -----------------------------------------------------------------------------
    def resolve(self, ref: Any, resolver: Resolver, ptr: str, kw: str) -> Loc:
        if not isinstance(ref, str):
            raise SchemaError(f"{kw} must be a string", pointer=ptr, keyword=kw)
        try:
            resolved = resolver.lookup(ref)
        except referencing.exceptions.Unresolvable as e:
            raise SchemaError(
                f"cannot resolve {ref!r} (no network access: pass resources= for remote documents)",
                pointer=ptr,
                keyword=kw,
            ) from e
        target_ptr = ref[1:] if ref.startswith("#/") else ref
        return self.loc(resolved.contents, resolved.resolver, target_ptr, enter_id=False)


def _merge_alternatives(alts: list[Any]) -> list[Any]:
    """Object alternatives that differ in one declared property only, merged into one.

    Alternatives ``o1``, ``o2`` with the same keys, regions and counts whose properties agree
    everywhere but at one key ``k`` (value ``v1`` / ``v2``, required ``r1`` / ``r2``) hold
    together exactly the objects of one alternative with ``k``'s value ``v1 or v2``, required
    iff ``r1 and r2``: a property constrains one key, so the union of the two products is the
    product with the union at that key (regions constrain every key they match, so they are
    never merged this way). This is the key-disjoint structure of real schemas: the branches of
    a ``oneOf`` or the products of ``allOf`` of ``anyOf`` s usually differ in a few keys.
    Repeated until nothing merges; the order of first appearance is kept. Other alternatives
    (and literal objects) are returned unchanged. Cost: O(alternatives x properties) per round.
    """
    items = [a for a in alts if isinstance(a, ObjAlt) and a.literal is None]
    if len(items) < 2:
        return alts
    rest = [a for a in alts if not (isinstance(a, ObjAlt) and a.literal is None)]
    changed = True
    while changed and len(items) > 1:
        changed = False
        slots: dict[tuple[Any, ...], int] = {}
        merged: list[ObjAlt | None] = list(items)
        dirty: set[int] = set()  # changed this round: their registered keys are stale
        for i, o in enumerate(items):
            skeleton = (tuple(p.name for p in o.props), o.regions, o.min_props, o.max_props)
            for k, p in enumerate(o.props):
                others = tuple(
                    (q.value, q.required, q.evaluated) for j, q in enumerate(o.props) if j != k
                )
                key = (skeleton, k, p.evaluated, others)
                j = slots.get(key)
                if j is None or merged[j] is None or j in dirty:
                    slots[key] = i
                    continue
                base = merged[j]
                assert base is not None
                q = base.props[k]
                prop = Prop(p.name, mk_or(q.value, p.value), q.required and p.required, p.evaluated)
                merged[j] = replace(base, props=(*base.props[:k], prop, *base.props[k + 1 :]))
                merged[i] = None
                dirty.add(j)
                changed = True
                break
        items = list(dict.fromkeys(o for o in merged if o is not None))
    return [*items, *rest]


def _breadth(s: Shape) -> tuple[int, int, int]:
    """Sort key for :meth:`SchemaCompiler.meet`: shapes without declared object properties
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


def _single_applicator(schema: dict[str, Any]) -> bool:
    """Whether at most one applicator of ``schema`` gives a shape (and no unevaluated* keyword
    needs the literal set filtered)."""
    n = sum(kw in schema for kw in ("$ref", "allOf", "anyOf", "oneOf", "not"))
    n += "if" in schema and ("then" in schema or "else" in schema)
    return n <= 1 and "unevaluatedProperties" not in schema and "unevaluatedItems" not in schema


def _json_key(v: Any) -> Any:
    """A hashable key with ``_json_key(a) == _json_key(b)`` iff JSON Schema calls ``a`` and
    ``b`` equal (``1 == 1.0``, ``True != 1``, objects unordered); floats compare exactly, as
    Python's ``==`` does."""
    if v is None or isinstance(v, (bool, str)):
        return (type(v).__name__, v)
    if isinstance(v, (int, float)):
        return ("n", Decimal(v))
    if isinstance(v, list):
        return ("a", tuple(_json_key(x) for x in v))
    if isinstance(v, dict):
        return ("o", frozenset((k, _json_key(x)) for k, x in v.items()))
    return ("?", id(v))


def _enum_keys(enums: list[Any]) -> frozenset[Any]:
    """The :func:`_json_key` s of an enum's values, kept in the active GrammarCompiler by the
    list's identity (the list is kept with them, so its id stays its own)."""
    cache = active_compiler().cache(
        "schema.enum_keys", limit="max_language_memos", entry_bytes=lambda e: 64 + 120 * len(e[1])
    )
    got = cache.get(id(enums))
    if got is not None and got[0] is enums:
        return frozenset(got[1])
    keys = frozenset(_json_key(v) for v in enums)
    if got is None:
        cache.put(id(enums), (enums, keys))
    return keys


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


@functools.cache
def _fast_enum(cls: Any) -> Any:
    """``cls`` with an O(1) ``enum`` for large enums (jsonschema's is a linear scan, so
    filtering an n-value enum by its own schema would cost n**2 comparisons)."""
    from jsonschema.exceptions import ValidationError

    plain = cls.VALIDATORS["enum"]

    def enum(validator: Any, enums: Any, instance: Any, schema: Any) -> Any:
        if not isinstance(enums, list) or len(enums) <= 16:
            yield from plain(validator, enums, instance, schema)
        elif _json_key(instance) not in _enum_keys(enums):
            yield ValidationError(f"{instance!r} is not one of the {len(enums)} enum values")

    return js_validators.extend(cls, {"enum": enum})  # type: ignore[no-untyped-call]


def _min_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _join(fs: list[Flags]) -> Flags:
    out = NO_FLAGS
    for f in fs:
        out = out | f
    return out


# -- keyword handlers: schema -> one Shape (other JSON types unconstrained) -----------------------

Handler = Callable[[SchemaCompiler, dict[str, Any], Resolver, str], Shape | None]


def _h_type(c: SchemaCompiler, s: dict[str, Any], r: Resolver, ptr: str) -> Shape | None:
    if "type" not in s:
        return None
    t = s["type"]
    types = [t] if isinstance(t, str) else t
    if not isinstance(types, list) or not all(isinstance(x, str) for x in types):
        raise SchemaError(
            "type must be a string or an array of strings", pointer=ptr, keyword="type"
        )
    for x in types:
        if x not in _TYPES:
            raise SchemaError(f"unknown type {x!r}", pointer=ptr, keyword="type")
    ts = set(types)
    nums: tuple[NumAlt, ...] = ()
    if "number" in ts:
        nums = (NumAlt(),)
    elif "integer" in ts:
        nums = (NumAlt(None, True),)
    return Shape(
        null="null" in ts,
        booleans=frozenset({True, False}) if "boolean" in ts else frozenset(),
        numbers=nums,
        strings=(StrAlt(),) if "string" in ts else (),
        arrays=(ArrAlt(),) if "array" in ts else (),
        objects=(ObjAlt(),) if "object" in ts else (),
    )


def _only(shape_kw: dict[str, Any]) -> Shape:
    """SHAPE_TOP with one type's alternatives replaced."""
    return replace(SHAPE_TOP, **shape_kw)


def _h_number(c: SchemaCompiler, s: dict[str, Any], r: Resolver, ptr: str) -> Shape | None:
    kws = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
    if not any(k in s for k in kws):
        return None
    lo: Decimal | None = None
    hi: Decimal | None = None
    lo_x = hi_x = False
    if "minimum" in s:
        lo = _dec(s["minimum"], ptr, "minimum")
    if "maximum" in s:
        hi = _dec(s["maximum"], ptr, "maximum")
    em, ex = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    if isinstance(em, bool):
        lo_x = em and lo is not None
    elif em is not None:
        v = _dec(em, ptr, "exclusiveMinimum")
        if lo is None or v >= lo:
            lo, lo_x = v, True
    if isinstance(ex, bool):
        hi_x = ex and hi is not None
    elif ex is not None:
        v = _dec(ex, ptr, "exclusiveMaximum")
        if hi is None or v <= hi:
            hi, hi_x = v, True
    mult: tuple[Decimal, ...] = ()
    if "multipleOf" in s:
        k = _dec(s["multipleOf"], ptr, "multipleOf")
        if k <= 0:
            raise SchemaError("multipleOf must be > 0", pointer=ptr, keyword="multipleOf")
        mult = (k,)
    integer = s.get("type") == "integer"
    try:
        if not mult and (lo is not None or hi is not None):
            # the range's DFA is built only if another constraint meets it (NumAlt.lang)
            rng = _langs.range_lang(
                integer=integer, lo=lo, lo_excl=lo_x, hi=hi, hi_excl=hi_x, limits=c.limits
            )
            return _only({"numbers": () if rng is None else (NumAlt(None, integer, rng),)})
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
        bounds = [k for k in kws[:4] if k in s and not isinstance(s[k], bool)]
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
        return _only({"numbers": () if d.is_empty() else (NumAlt(d, integer),), "flags": flags})
    return _only({"numbers": () if d.is_empty() else (NumAlt(d, integer),)})


def _h_string(c: SchemaCompiler, s: dict[str, Any], r: Resolver, ptr: str) -> Shape | None:
    if not any(k in s for k in ("minLength", "maxLength", "pattern")):
        return None
    flags = NO_FLAGS
    dfas: list[Dfa] = []
    lo = _nonneg_int(s["minLength"], ptr, "minLength") if "minLength" in s else 0
    hi = _nonneg_int(s["maxLength"], ptr, "maxLength") if "maxLength" in s else None
    if lo or hi is not None:
        unroll = c.limits.max_repeat_unroll
        if lo > unroll or (hi is not None and hi > unroll):
            flags = flags | c.flag_over(ptr, "maxLength" if hi is not None else "minLength")
            lo2 = min(lo, unroll)
            dfas.append(_langs.length_dfa(lo2, None))
        else:
            dfas.append(_langs.length_dfa(lo, hi))
    if "pattern" in s:
        p = s["pattern"]
        if not isinstance(p, str):
            raise SchemaError("pattern must be a string", pointer=ptr, keyword="pattern")
        try:
            if not dfas and _langs.pattern_node(p, c.limits) is not None:
                # a deterministic anchored chain, alone: its DFA is built only if another
                # constraint meets it (StrAlt.lang)
                return _only({"strings": (StrAlt(pat=p),), "flags": flags})
            dfas.append(_langs.pattern_dfa(p, c.limits))
        except GrammarError as e:
            raise SchemaError(f"pattern {p!r}: {e}", pointer=ptr, keyword="pattern") from e
    if not dfas:
        return _only({"flags": flags})
    d = dfas[0]
    for x in dfas[1:]:
        try:
            d = _langs.dfa_and(d, x, c.limits)
        except LimitError:
            flags = flags | c.flag_over(ptr, "pattern")
    return _only({"strings": () if d.is_empty() else (StrAlt(d),), "flags": flags})


def _h_format(c: SchemaCompiler, s: dict[str, Any], r: Resolver, ptr: str) -> Shape | None:
    """``format``: a known format constrains the type it applies to (strings: a language over
    the decoded value; numbers: an integer range); an unknown one is an annotation (2020-12
    format-annotation vocabulary) unless the compilation asks for ``strict_formats``."""
    if "format" not in s:
        return None

    name = s["format"]
    if not isinstance(name, str):
        raise SchemaError(f"format must be a string, got {name!r}", pointer=ptr, keyword="format")
    spec = FORMATS.get(name)
    if spec is None:
        c.unknown_format(ptr, name)
        return None
    if spec.applies_to == "number":
        if spec.integers is None:
            return None
        lo, hi = spec.integers
        rng = _langs.range_lang(
            integer=True, lo=Decimal(lo), lo_excl=False, hi=Decimal(hi), hi_excl=False
        )
        assert rng is not None
        return _only({"numbers": (NumAlt(None, True, rng),)})
    if spec.regex is None:
        return None
    flags = NO_FLAGS
    if spec.relation == "superset":
        flags = c.flag_over(ptr, "format")
    elif spec.relation == "subset":
        flags = c.flag_under(ptr, "format")
    # the format's DFA is built only if another constraint meets it (StrAlt.lang)
    return _only({"strings": (StrAlt(fmt=name),), "flags": flags})


def _h_array(c: SchemaCompiler, s: dict[str, Any], r: Resolver, ptr: str) -> Shape | None:
    kws = (
        "items",
        "prefixItems",
        "additionalItems",
        "minItems",
        "maxItems",
        "contains",
        "uniqueItems",
    )
    if not any(k in s for k in kws):
        return None
    flags = NO_FLAGS
    prefix: tuple[Term, ...] = ()
    items: Term = TOP
    evaluated = 0
    if "prefixItems" in s:
        if not isinstance(s["prefixItems"], list):
            raise SchemaError("prefixItems must be an array", pointer=ptr, keyword="prefixItems")
        prefix = tuple(c.sub(s, r, ptr, "prefixItems", i) for i in range(len(s["prefixItems"])))
        evaluated = len(prefix)
    if "items" in s:
        if isinstance(s["items"], list):  # draft-07 array form
            prefix = tuple(c.sub(s, r, ptr, "items", i) for i in range(len(s["items"])))
            evaluated = len(prefix)
            if "additionalItems" in s:
                items = c.sub(s, r, ptr, "additionalItems")
                evaluated = -1
        else:
            items = c.sub(s, r, ptr, "items")
            evaluated = -1
    lo = _nonneg_int(s["minItems"], ptr, "minItems") if "minItems" in s else 0
    hi = _nonneg_int(s["maxItems"], ptr, "maxItems") if "maxItems" in s else None
    contains: Term | None = None
    cmin, cmax = 1, None
    if "contains" in s:
        contains = c.sub(s, r, ptr, "contains")
        if "minContains" in s:
            cmin = _nonneg_int(s["minContains"], ptr, "minContains")
        if "maxContains" in s:
            cmax = _nonneg_int(s["maxContains"], ptr, "maxContains")
    if s.get("uniqueItems") is True and (hi is None or hi > 1):
        flags = flags | c.flag_over(ptr, "uniqueItems")
    if hi is not None and lo > hi:
        return _only({"arrays": (), "flags": flags})
    while prefix and prefix[-1] == items:
        prefix = prefix[:-1]
    alt = ArrAlt(prefix, items, lo, hi, contains, cmin, cmax, evaluated)
    return _only({"arrays": (alt,), "flags": flags})


def _h_object(c: SchemaCompiler, s: dict[str, Any], r: Resolver, ptr: str) -> Shape | None:
    kws = (
        "properties",
        "patternProperties",
        "additionalProperties",
        "required",
        "propertyNames",
        "minProperties",
        "maxProperties",
    )
    if not any(k in s for k in kws):
        return None
    parts: list[ObjAlt] = []
    props_kw = s.get("properties", {})
    pats_kw = s.get("patternProperties", {})
    if not isinstance(props_kw, dict):
        raise SchemaError("properties must be an object", pointer=ptr, keyword="properties")
    if not isinstance(pats_kw, dict):
        raise SchemaError(
            "patternProperties must be an object", pointer=ptr, keyword="patternProperties"
        )
    if props_kw or pats_kw or "additionalProperties" in s:
        pats: list[tuple[Dfa, Term]] = []
        for p in pats_kw:
            try:
                pats.append(
                    (_langs.pattern_dfa(p, c.limits), c.sub(s, r, ptr, "patternProperties", p))
                )
            except GrammarError as e:
                raise SchemaError(
                    f"pattern {p!r}: {e}", pointer=ptr, keyword="patternProperties"
                ) from e
        props: list[Prop] = []
        for name in props_kw:
            t: Term = c.sub(s, r, ptr, "properties", name)
            for d, pt in pats:
                if d.accepts(name):
                    t = mk_and(t, pt)
            props.append(Prop(name, t, False, True))
        regions: list[Region] = []
        addl: Term = (
            c.sub(s, r, ptr, "additionalProperties") if "additionalProperties" in s else TOP
        )
        addl_eval = "additionalProperties" in s
        for keys, terms in _key_regions(c, pats):
            if terms:
                regions.append(Region(keys, mk_and(*terms), True))
            elif addl != BOTTOM:
                regions.append(Region(keys, addl, addl_eval))
        parts.append(ObjAlt(tuple(props), tuple(r_ for r_ in regions if r_.value != BOTTOM)))
    if "required" in s:
        req = s["required"]
        if not isinstance(req, list) or not all(isinstance(x, str) for x in req):
            raise SchemaError(
                "required must be an array of strings", pointer=ptr, keyword="required"
            )
        seen: list[str] = []
        for x in req:
            if x not in seen:
                seen.append(x)
        parts.append(ObjAlt(props=tuple(Prop(n, TOP, True, False) for n in seen)))
    if "propertyNames" in s:
        pn = c.expand(c.sub(s, r, ptr, "propertyNames"))
        pn = c.split(pn)
        if not pn.strings:
            keys2: Dfa | None = Dfa.empty()
        elif any(x.is_any for x in pn.strings):
            keys2 = None
        else:
            keys2 = pn.strings[0].lang(c.limits)
            for x in pn.strings[1:]:
                dx = x.lang(c.limits)
                assert keys2 is not None and dx is not None
                keys2 = keys2.union(dx, limits=c.limits)
        for f in pn.flags.over:
            c.force_over(*f)
        if keys2 is not None:
            parts.append(ObjAlt(regions=(Region(keys2, TOP, False),)))
    lo = _nonneg_int(s["minProperties"], ptr, "minProperties") if "minProperties" in s else 0
    hi = _nonneg_int(s["maxProperties"], ptr, "maxProperties") if "maxProperties" in s else None
    if lo or hi is not None:
        parts.append(ObjAlt(min_props=lo, max_props=hi))
    if not parts:
        return None
    out = Shape(objects=(parts[0],))
    for p in parts[1:]:
        out = c.intersect(out, Shape(objects=(p,)))
    return replace(SHAPE_TOP, objects=out.objects, flags=out.flags)


def _key_regions(
    c: SchemaCompiler, pats: list[tuple[Dfa, Term]]
) -> list[tuple[Dfa | None, list[Term]]]:
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


def _h_dependencies(c: SchemaCompiler, s: dict[str, Any], r: Resolver, ptr: str) -> Shape | None:
    deps: list[tuple[str, Any, str]] = []
    for kw in ("dependentRequired", "dependentSchemas", "dependencies"):
        v = s.get(kw)
        if v is None:
            continue
        if not isinstance(v, dict):
            raise SchemaError(f"{kw} must be an object", pointer=ptr, keyword=kw)
        for k, dep in v.items():
            deps.append((kw, k, dep))
    if not deps:
        return None
    out = SHAPE_TOP
    for kw, key, dep in deps:
        absent = Shape(objects=(ObjAlt(props=(Prop(key, BOTTOM, False, False),)),))
        present = Shape(objects=(ObjAlt(props=(Prop(key, TOP, True, False),)),))
        if isinstance(dep, list):
            req = tuple(Prop(n, TOP, True, False) for n in dep if n != key)
            present = Shape(objects=(ObjAlt(props=(Prop(key, TOP, True, False), *req)),))
            branch = present
        else:
            sub_shape = c.expand(c.sub(s, r, ptr, kw, key))
            sub_only_obj = replace(
                SHAPE_BOTTOM, objects=c.split(sub_shape).objects, flags=sub_shape.flags
            )
            branch = c.intersect(present, sub_only_obj)
        either = c.union([absent, branch])
        out = c.intersect(out, replace(SHAPE_TOP, objects=either.objects, flags=either.flags))
    return out


def _h_applicators(c: SchemaCompiler, s: dict[str, Any], r: Resolver, ptr: str) -> Shape | None:
    shapes: list[Shape] = []
    if "$ref" in s:
        shapes.append(c.expand(c.resolve(s["$ref"], r, ptr, "$ref")))
    for kw in ("allOf", "anyOf", "oneOf"):
        if kw not in s:
            continue
        subs = s[kw]
        if not isinstance(subs, list) or not subs:
            raise SchemaError(f"{kw} must be a non-empty array", pointer=ptr, keyword=kw)
        terms = [c.sub(s, r, ptr, kw, i) for i in range(len(subs))]
        if kw == "allOf":
            shapes.append(c.meet(mk_and(*terms), [c.expand(t) for t in terms]))
        elif kw == "anyOf":
            shapes.append(c.union([c.expand(t) for t in terms]))
        else:
            shapes.append(_one_of(c, terms, ptr))
    if "not" in s:
        t = c.sub(s, r, ptr, "not")
        shapes.append(c.expand(mk_not(t)))
    if "if" in s and ("then" in s or "else" in s):
        cond = c.sub(s, r, ptr, "if")
        then = c.sub(s, r, ptr, "then") if "then" in s else TOP
        other = c.sub(s, r, ptr, "else") if "else" in s else TOP
        yes = c.expand(mk_and(cond, then))
        no = c.expand(mk_and(mk_not(cond), other))
        shapes.append(c.union([yes, no]))
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
        out = c.intersect(out, x)
    return out


def _one_of(c: SchemaCompiler, terms: list[Term], ptr: str) -> Shape:
    shapes = [c.expand(t) for t in terms]
    if len(terms) == 1:
        return shapes[0]
    if _pairwise_disjoint(c, shapes):
        return c.union(shapes)
    if len(terms) <= c.limits.max_one_of_exact:
        try:
            branches: list[Shape] = []
            for i, t in enumerate(terms):
                others = [mk_not(u) for j, u in enumerate(terms) if j != i]
                branches.append(c.expand(mk_and(t, *others)))
            return c.union(branches)
        except LimitError:
            pass  # the exact form is too big: the union plus the validator is still sound
    return c.union(shapes).with_flags(c.flag_over(ptr, "oneOf"))


def _pairwise_disjoint(c: SchemaCompiler, shapes: list[Shape]) -> bool:
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


def _dfas_disjoint(c: SchemaCompiler, xs: tuple[Any, ...], ys: tuple[Any, ...]) -> bool:
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


def _discriminated(c: SchemaCompiler, branches: list[tuple[ObjAlt, ...]]) -> bool:
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


def _literal_values(c: SchemaCompiler, alts: tuple[ObjAlt, ...], key: str) -> set[str] | None:
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


_HANDLERS: tuple[Handler, ...] = (
    _h_type,
    _h_number,
    _h_string,
    _h_format,
    _h_array,
    _h_object,
    _h_dependencies,
    _h_applicators,
)
