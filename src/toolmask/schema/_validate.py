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

import json
from collections.abc import Mapping
from typing import Any

import referencing
import referencing.jsonschema
from jsonschema import validators as js_validators

from toolmask.grammar import PostCheck

__all__ = ["dialect_of", "make_validator", "schema_validator"]


def dialect_of(schema: Any) -> Any:
    """The jsonschema validator class for ``schema``'s ``$schema`` (2020-12 by default)."""
    try:
        return js_validators.validator_for(
            schema if isinstance(schema, dict) else {}, default=js_validators.Draft202012Validator
        )
    except Exception:  # an unknown $schema: read it as 2020-12, as the compiler does
        return js_validators.Draft202012Validator


def resource_of(doc: Any, default: Any = referencing.jsonschema.DRAFT202012) -> Any:
    """A ``referencing`` resource for ``doc``, in its own dialect or ``default``."""
    try:
        return referencing.Resource.from_contents(doc, default_specification=default)
    except referencing.jsonschema.UnknownDialect:
        return default.create_resource(doc)


def schema_validator(schema: Any, *, resources: Mapping[str, Any] | None = None) -> Any:
    """A jsonschema validator for ``schema`` with toolmask's format checks (see the module
    docstring); ``resources`` are the documents remote ``$ref`` s name, by URI."""
    from toolmask.schema._formats import format_checker

    registry: referencing.Registry[Any] = referencing.Registry()
    for uri, doc in (resources or {}).items():
        registry = registry.with_resource(uri, resource_of(doc))
    return dialect_of(schema)(schema, registry=registry, format_checker=format_checker())


def make_validator(check: PostCheck) -> Any:
    """The validator a grammar's post-decode check runs."""
    resources = json.loads(check.resources_json) if check.resources_json else None
    return schema_validator(json.loads(check.schema_json), resources=resources)
