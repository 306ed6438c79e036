"""The post-decode validator: what a grammar cannot say, checked on the finished document.

A :class:`~toolmask.grammar.PostCheck` carries the full schema (and any remote documents its
``$ref`` s name); :func:`make_validator` builds a ``jsonschema`` validator for its dialect with
toolmask's own format checkers (exact ones: jsonschema's built-ins pass silently when an optional
package is missing).
"""

from __future__ import annotations

import json
from typing import Any

import referencing
import referencing.jsonschema
from jsonschema import validators as js_validators

from toolmask.grammar._ir import PostCheck

__all__ = ["make_validator"]


def make_validator(check: PostCheck) -> Any:
    from toolmask.schema._formats import format_checker

    schema = json.loads(check.schema_json)
    try:
        cls = js_validators.validator_for(
            schema if isinstance(schema, dict) else {}, default=js_validators.Draft202012Validator
        )
    except Exception:  # an unknown $schema: read it as 2020-12, as the compiler did
        cls = js_validators.Draft202012Validator
    registry: referencing.Registry[Any] = referencing.Registry()
    if check.resources_json:
        for uri, doc in json.loads(check.resources_json).items():
            try:
                res = referencing.Resource.from_contents(
                    doc, default_specification=referencing.jsonschema.DRAFT202012
                )
            except referencing.jsonschema.UnknownDialect:
                res = referencing.jsonschema.DRAFT202012.create_resource(doc)
            registry = registry.with_resource(uri, res)
    return cls(schema, registry=registry, format_checker=format_checker())
