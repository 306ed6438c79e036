"""Reference resolution and value-level evaluation: where every subschema sits.

:class:`Locations` owns the ``referencing`` registry of one compilation (the root schema and
the extra resources remote ``$ref`` s name), the location table (every subschema reached, by
identity, with its resolver and JSON pointer, as a :class:`~toolmask.schema._terms.Loc` term)
and the exact evaluation of a term against a value (``accepts``, with jsonschema), which the
shape algebra uses to filter literal sets. Cost: building the registry is O(documents) (the
index of ``$id`` s and anchors is built only when a reference needs it); a location is one
dict lookup; a value is evaluated by a jsonschema validator made once per location.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Protocol
from urllib.parse import quote

import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema import validators as js_validators
from jsonschema_specifications import REGISTRY as SPECIFICATIONS

from toolmask._cache import current_caches
from toolmask._pointer import json_pointer
from toolmask.errors import LimitError, SchemaError
from toolmask.limits import Limits
from toolmask.schema._formats import format_checker
from toolmask.schema._terms import BOTTOM, TOP, And, Const, Loc, Not, Or, Term
from toolmask.schema._validate import (
    ROOT_ALIAS,
    dialect_of,
    ecma_patterns,
    is_legacy_dialect,
    mixed_dependencies,
    resource_of,
    specification_of,
)

__all__ = ["Locations", "Resolver", "json_key"]


class Resolver(Protocol):
    """What the compiler uses of a ``referencing`` resolver (``Registry.resolver()``): its
    public methods only. ``lookup`` returns a ``Resolved`` (``.contents``, ``.resolver``)."""

    def lookup(self, ref: str) -> Any: ...

    def in_subresource(self, subresource: referencing.Resource[Any]) -> Resolver: ...


class _LazyResolver:
    """The root resolver of a ``plain`` compilation (see :class:`Locations`): each call goes to
    the real one, which :class:`Locations` makes on the first."""

    __slots__ = ("_locations",)

    def __init__(self, locations: Locations) -> None:
        self._locations = locations

    def lookup(self, ref: str) -> Any:
        return self._locations.root_resolver.lookup(ref)

    def in_subresource(self, subresource: referencing.Resource[Any]) -> Resolver:
        return self._locations.root_resolver.in_subresource(subresource)


#: the keywords that make a subschema depend on where it sits
_REF_KEYWORDS = frozenset({"$ref", "$dynamicRef", "$recursiveRef"})


class Locations:
    """The registry and the location table of one compilation (see the module docstring)."""

    def __init__(
        self,
        schema: Any,
        *,
        resources: Mapping[str, Any] | None,
        limits: Limits,
        crawl: bool = True,
        plain: bool = False,
    ) -> None:
        """``crawl=False`` when no document has a reference keyword (``$ref``,
        ``$dynamicRef``, ``$recursiveRef``): nothing is then ever looked up, so the registry's
        index of ``$id`` s and anchors is not built (``referencing`` builds it on the first
        lookup that misses anyway). That index costs about 50 µs on a small schema.

        ``plain=True`` (with ``crawl=False`` and no ``resources``) when the schema has no
        ``$`` keyword at all (no ``$schema``, ``$id``, anchor or reference, as most tool
        schemas): the registry and the root resolver are then made when something first
        asks for them (value-level evaluation, :meth:`accepts`), the same objects as they
        would be made up front; most such schemas never ask (about 10 µs saved)."""
        self.limits = limits
        self._locs: list[tuple[Any, Resolver, str]] = []
        self._loc_index: dict[int, int] = {}
        self._loc_terms: list[Loc] = []  # the term of each location, by index
        #: the subschema, resolver and pointer of each location, by index (``at`` by index)
        self.located = self._locs.__getitem__
        self._validators: dict[int, Any] = {}
        self._format_checker: Any = None
        self.spec = specification_of(schema)
        self.validator_cls = dialect_of(schema)
        self._schema = schema
        self._resources = resources
        self._crawl = crawl
        self._registry: referencing.Registry[Any] | None = None
        self._root_resolver: Resolver | None = None
        self._uris: dict[int, str] | None = None  # by id(subschema), see _as_ref
        self._with_refs: set[int] = set()
        #: the metaschemas' index (process-wide, see _spec_index), unless resources replace one
        self._specs = _spec_index() if set(resources or ()).isdisjoint(_SPEC_URIS) else None
        root: Resolver
        if plain:
            if crawl or resources:
                raise ValueError("plain=True is for a schema without references or resources")
            # no $id: the root's URI is "" (what the root resource's id() gives), so its alias
            # names it (see _as_ref)
            self._documents: list[tuple[str, Any]] = [(ROOT_ALIAS, schema)]
            root = _LazyResolver(self)
        else:
            root = self._build_registry()
        self.root_term = self.loc(schema, root, "")

    def _build_registry(self) -> Resolver:
        """Make :attr:`registry` and :attr:`root_resolver` (and the documents by URI); returns
        the root resolver."""
        schema, resources = self._schema, self._resources
        # the metaschemas of every draft, offline (jsonschema_specifications, as jsonschema's
        # own validators have them): a $ref to one resolves without resources=
        registry: referencing.Registry[Any] = SPECIFICATIONS
        for uri, doc in (resources or {}).items():
            registry = registry.with_resource(uri, self._resource(doc))
        root_res = self._resource(schema)
        root_uri = root_res.id() or ""
        registry = registry.with_resource(root_uri, root_res)
        # the documents by a URI that names them in a $ref (a root without $id is "" to its
        # own refs, which no $ref from outside can name: it gets an alias, see _as_ref)
        self._documents = [(root_uri or ROOT_ALIAS, schema), *(resources or {}).items()]
        if not root_uri:
            registry = registry.with_resource(ROOT_ALIAS, root_res)
        try:
            self._registry = registry.crawl() if self._crawl else registry
        except (AttributeError, TypeError) as e:
            at = _nested_legacy_dialect([schema, *(resources or {}).values()])
            if at is None:
                raise  # a malformed schema: located through the metaschema by the caller
            raise SchemaError(
                "a subschema with a draft 3-7 $schema of its own and a `dependencies` that "
                "mixes schemas and property lists cannot be indexed (referencing reads that "
                "subschema with its own draft specification, which crawls `dependencies` wrong)",
                pointer=at,
                keyword="$schema",
            ) from e
        resolver: Resolver = self._registry.resolver(base_uri=root_uri)
        self._root_resolver = resolver
        return resolver

    @property
    def registry(self) -> referencing.Registry[Any]:
        """The ``referencing`` registry of this compilation (made on first use when
        ``plain``)."""
        if self._registry is None:
            self._build_registry()
        assert self._registry is not None
        return self._registry

    @property
    def root_resolver(self) -> Resolver:
        """The resolver of the root schema (made on first use when ``plain``)."""
        if self._root_resolver is None:
            self._build_registry()
        assert self._root_resolver is not None
        return self._root_resolver

    @property
    def format_checker(self) -> Any:
        """The format checker of value-level evaluation, made on first use (most schemas never
        evaluate a value: registering every format costs more than the rest of a small
        schema's setup)."""
        if self._format_checker is None:
            self._format_checker = format_checker()
        return self._format_checker

    def _resource(self, doc: Any) -> referencing.Resource[Any]:
        return resource_of(doc, self.spec)  # type: ignore[no-any-return]

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
        # location (the schema dicts are kept alive by self._locs and the documents)
        key = id(schema)
        idx = self._loc_index.get(key)
        if idx is None:
            if len(self._locs) >= self.limits.max_rules * 4:
                raise LimitError("too many subschemas", limit="max_rules", pointer=pointer)
            idx = len(self._locs)
            self._locs.append((schema, resolver, pointer))
            self._loc_index[key] = idx
            self._loc_terms.append(Loc(idx))
        # one Loc object per location: the memos keyed by terms find it by identity
        return self._loc_terms[idx]

    def at(self, loc: Loc) -> tuple[Any, Resolver, str]:
        """The subschema at ``loc``, its resolver and its JSON pointer."""
        return self._locs[loc.index]

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

    # -- value-level evaluation (exact; used to filter literal sets) -----------------------------
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
            v = _fast_enum(ecma_patterns(self.validator_cls))(
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
            docs = self._documents
            if self._specs is None:  # a resource replaces a metaschema: index them all here
                docs = [*docs, *((u, SPECIFICATIONS.contents(u)) for u in sorted(_SPEC_URIS))]
            self._uris, self._with_refs = _index(docs)
        uri = self._uris.get(id(schema))
        if uri is None and self._specs is not None:
            # a subschema of a metaschema (reached through a $ref to it)
            uris, with_refs = self._specs
            if id(schema) in with_refs:
                return {"$ref": uris[id(schema)]}
            return schema
        if id(schema) in self._with_refs:
            return {"$ref": self._uris[id(schema)]}
        return schema


def _nested_legacy_dialect(documents: list[Any]) -> str | None:
    """The JSON pointer of a subschema (not a document's root) with a draft 3-7 ``$schema``
    and a mixed ``dependencies`` at or below it, or None (see ``_validate._fixed_specification``:
    the crawl reads such a subschema with referencing's own specification). O(size)."""
    for doc in documents:
        stack: list[tuple[Any, str]] = [(doc, "")]
        while stack:
            node, ptr = stack.pop()
            if isinstance(node, dict):
                if ptr and is_legacy_dialect(node) and mixed_dependencies(node):
                    return ptr
                items: Iterable[tuple[Any, Any]] = node.items()
            elif isinstance(node, list):
                items = enumerate(node)
            else:
                continue
            stack.extend((child, ptr + json_pointer((key,))) for key, child in items)
    return None


def _index(documents: Iterable[tuple[str, Any]]) -> tuple[dict[int, str], set[int]]:
    """For every object of ``documents``: its URI (the document's and its JSON pointer there),
    by id; and the ids of the objects with a reference keyword in them or below. O(size)."""
    uris: dict[int, str] = {}
    with_refs: set[int] = set()
    order: list[tuple[int, int]] = []  # (a dict, the dict it sits in), parents first
    for uri, doc in documents:
        stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
        while stack:
            node, ptr, parent = stack.pop()
            if isinstance(node, dict):
                uris.setdefault(id(node), f"{uri}#{quote(ptr, safe='/~')}")
                order.append((id(node), parent))
                if not _REF_KEYWORDS.isdisjoint(node):
                    with_refs.add(id(node))
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
        if node_id in with_refs:
            with_refs.add(parent)
    return uris, with_refs


#: the URIs of the metaschemas jsonschema_specifications holds
_SPEC_URIS = frozenset(uri for uri, _ in SPECIFICATIONS.items())


@functools.cache
def _spec_index() -> tuple[dict[int, str], set[int]]:
    """:func:`_index` of the metaschemas, once per process (their documents are module-level
    objects of jsonschema_specifications, never mutated: their ids stay theirs)."""
    return _index((uri, SPECIFICATIONS.contents(uri)) for uri in sorted(_SPEC_URIS))


def json_key(v: Any) -> Any:
    """A hashable key with ``json_key(a) == json_key(b)`` iff JSON Schema calls ``a`` and
    ``b`` equal (``1 == 1.0``, ``True != 1``, objects unordered); floats compare exactly, as
    Python's ``==`` does."""
    if v is None or isinstance(v, (bool, str)):
        return (type(v).__name__, v)
    if isinstance(v, (int, float)):
        return ("n", Decimal(v))
    if isinstance(v, list):
        return ("a", tuple(json_key(x) for x in v))
    if isinstance(v, dict):
        return ("o", frozenset((k, json_key(x)) for k, x in v.items()))
    return ("?", id(v))


def _enum_keys(enums: list[Any]) -> frozenset[Any]:
    """The :func:`json_key` s of an enum's values, kept in the cache set in use by the
    list's identity (the list is kept with them, so its id stays its own)."""
    cache = current_caches().cache(
        "schema.enum_keys", limit="max_language_memos", entry_bytes=lambda e: 64 + 120 * len(e[1])
    )
    got = cache.get(id(enums))
    if got is not None and got[0] is enums:
        return frozenset(got[1])
    keys = frozenset(json_key(v) for v in enums)
    if got is None:
        cache.put(id(enums), (enums, keys))
    return keys


@functools.cache
def _fast_enum(cls: Any) -> Any:
    """``cls`` with an O(1) ``enum`` for large enums (jsonschema's is a linear scan, so
    filtering an n-value enum by its own schema would cost n**2 comparisons)."""
    from jsonschema.exceptions import ValidationError

    plain = cls.VALIDATORS["enum"]

    def enum(validator: Any, enums: Any, instance: Any, schema: Any) -> Any:
        if not isinstance(enums, list) or len(enums) <= 16:
            yield from plain(validator, enums, instance, schema)
        elif json_key(instance) not in _enum_keys(enums):
            yield ValidationError(f"{instance!r} is not one of the {len(enums)} enum values")

    return js_validators.extend(cls, {"enum": enum})  # type: ignore[no-untyped-call]
