"""The post-decode validator: what a grammar cannot say, checked on the finished document.

:func:`schema_validator` is the one factory for validating a document against a JSON Schema in
toolmask: the schema's own dialect (``$schema``; 2020-12 when absent or unknown, as the compiler
reads it), toolmask's exact format checkers (``toolmask.schema._formats``: jsonschema's own pass
silently when an optional package is missing, and it knows none of the OpenAPI formats), and
the remote documents ``$ref`` s name. ``CompiledGrammar.validate`` (through
:func:`make_validator` and a grammar's :class:`~toolmask.grammar.PostCheck`) and the tool-call
validator (``toolmask.tools.validate_call``) both use it, so they agree on every value.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

import referencing
import referencing.jsonschema
from jsonschema import validators as js_validators

from toolmask._cache import memo
from toolmask.errors import GrammarError, LimitError
from toolmask.grammar import PostCheck, python_regex

__all__ = [
    "ROOT_ALIAS",
    "dialect_of",
    "ecma_patterns",
    "is_legacy_dialect",
    "make_validator",
    "mixed_dependencies",
    "resource_of",
    "schema_validator",
    "specification_of",
]


def dialect_of(schema: Any) -> Any:
    """The jsonschema validator class for ``schema``'s ``$schema`` (2020-12 by default)."""
    try:
        return js_validators.validator_for(
            schema if isinstance(schema, dict) else {}, default=js_validators.Draft202012Validator
        )
    except Exception:  # an unknown $schema: read it as 2020-12, as the compiler does
        return js_validators.Draft202012Validator


def specification_of(doc: Any, default: Any = referencing.jsonschema.DRAFT202012) -> Any:
    """The ``referencing`` specification of ``doc``: its ``$schema`` 's dialect, else
    ``default``; for the drafts with a ``dependencies`` keyword, the corrected one (see
    :func:`_fixed_specification`)."""
    spec = default
    if isinstance(doc, Mapping) and isinstance(doc.get("$schema"), str):
        spec = referencing.jsonschema.specification_with(doc["$schema"], default=default)
    return _FIXED.get(spec.name, spec)


def resource_of(doc: Any, default: Any = referencing.jsonschema.DRAFT202012) -> Any:
    """A ``referencing`` resource for ``doc``, in its own dialect or ``default``."""
    return specification_of(doc, default).create_resource(doc)


def _fixed_specification(base: Any) -> Any:
    """``base`` (draft 3, 4, 6 or 7) with a ``subresources_of`` that reads ``dependencies``
    right. ``referencing`` (0.37 included) looks at the first value of ``dependencies`` only:
    when it is a schema, every value is taken for a subschema, so a list of property names
    after it (``{"a": {...}, "b": ["a"]}``, which the drafts allow) is crawled as a schema and
    the crawl fails (``AttributeError: 'list' object has no attribute 'get'``); when it is a
    list, the schemas after it are not crawled, so an ``$id`` or anchor in them is not found.
    Here every value that is a schema object is a subresource, and no other."""
    subresources_of = base.subresources_of

    def fixed(contents: Any) -> Any:
        deps = contents.get("dependencies") if isinstance(contents, Mapping) else None
        if not isinstance(deps, Mapping) or all(isinstance(v, Mapping) for v in deps.values()):
            yield from subresources_of(contents)
            return
        yield from subresources_of({k: v for k, v in contents.items() if k != "dependencies"})
        yield from (v for v in deps.values() if isinstance(v, Mapping))

    def anchors_in(_spec: Any, contents: Any) -> Any:
        return base.anchors_in(contents)

    # referencing's attrs classes are opaque to mypy: their keyword arguments are not seen
    return referencing.Specification(  # type: ignore[call-arg]
        name=base.name,
        id_of=base.id_of,
        subresources_of=fixed,
        anchors_in=anchors_in,
        maybe_in_subresource=base.maybe_in_subresource,
    )


#: the corrected specifications, by name (``draft-07``, ...)
_FIXED: dict[str, Any] = {
    spec.name: _fixed_specification(spec)
    for spec in (
        referencing.jsonschema.DRAFT3,
        referencing.jsonschema.DRAFT4,
        referencing.jsonschema.DRAFT6,
        referencing.jsonschema.DRAFT7,
    )
}


def schema_validator(schema: Any, *, resources: Mapping[str, Any] | None = None) -> Any:
    """A jsonschema validator for ``schema`` with toolmask's format checks (see the module
    docstring); ``resources`` are the documents remote ``$ref`` s name, by URI."""
    from toolmask.schema._formats import format_checker

    registry: referencing.Registry[Any] = referencing.Registry()
    for uri, doc in (resources or {}).items():
        registry = registry.with_resource(uri, resource_of(doc))
    cls = ecma_patterns(dialect_of(schema))
    if is_legacy_dialect(schema) and mixed_dependencies(schema):
        # jsonschema would crawl the schema with referencing's own specification (see
        # _fixed_specification) on its first lookup that misses: register the schema with the
        # corrected one, crawled, and validate against a reference to it
        root = resource_of(schema)
        uri = root.id() or ROOT_ALIAS
        registry = registry.with_resource(uri, root).crawl()
        return cls({"$ref": uri}, registry=registry, format_checker=format_checker())
    return cls(schema, registry=registry, format_checker=format_checker())


@functools.cache
def ecma_patterns(cls: Any) -> Any:
    """The jsonschema validator class ``cls`` with ``pattern`` read as ECMA-262 (``u`` flag),
    as the grammar reads it, rather than as a Python regex (``\\d`` is ``[0-9]``, ``$`` the
    very end, named groups and ``\\k<name>`` understood, a backreference to a group that
    did not take part matching the empty string): each pattern is translated once
    (``toolmask.grammar.python_regex``). A pattern toolmask does not parse (a lookbehind,
    say, left to the validator by ``lenient=True``) is Python's reading, as jsonschema has
    it. This is what makes the validator's half of a backreference exact."""
    from jsonschema.exceptions import ValidationError

    plain = cls.VALIDATORS["pattern"]

    def pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "string") or not isinstance(patrn, str):
            yield from plain(validator, patrn, instance, schema)
            return
        rx = _translated(patrn)[0]
        if rx is None:
            yield from plain(validator, patrn, instance, schema)
        elif not rx.search(instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    return js_validators.extend(cls, {"pattern": pattern})  # type: ignore[no-untyped-call]


@memo("schema.ecma_patterns", limit="max_memo_entries", entry_bytes=lambda v: 256)
def _translated(pattern: str) -> tuple[re.Pattern[str] | None]:
    """The compiled Python translation of an ECMA-262 pattern (None: not one toolmask
    parses). Memoised in the cache set in use."""
    try:
        return (re.compile(python_regex(pattern)),)
    except (GrammarError, LimitError, re.error):
        return (None,)


#: the URI a root document without an ``$id`` is registered under where it needs one
ROOT_ALIAS = "urn:toolmask:root"


def is_legacy_dialect(doc: Any) -> bool:
    """Whether ``doc`` is read with a draft 3-7 specification (its ``$schema``)."""
    return specification_of(doc).name in _FIXED


def mixed_dependencies(doc: Any) -> bool:
    """Whether ``doc`` has a ``dependencies`` object whose values are schemas and property
    lists both (what referencing's own draft 3-7 specifications crawl wrong). O(size)."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            deps = node.get("dependencies")
            if isinstance(deps, dict) and len({isinstance(v, dict) for v in deps.values()}) > 1:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def make_validator(check: PostCheck) -> Any:
    """The validator a grammar's post-decode check runs."""
    resources = json.loads(check.resources_json) if check.resources_json else None
    return schema_validator(json.loads(check.schema_json), resources=resources)
