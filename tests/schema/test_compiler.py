"""Literal sets (``enum`` / ``const``) are filtered by the rest of their schema, and the refs in
that schema resolve against the resource around it: the root (with or without ``$id``), a
subschema with its own ``$id``, a remote document.

The compiler validates each value with jsonschema's public API only (a subschema with a ref in
it is validated as a ``$ref`` to its URI), so these cases pin where those refs land.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.schema.exactness import accepted_values

LONG = {"type": "string", "minLength": 2}

CASES: list[tuple[str, Any, dict[str, Any]]] = [
    (
        "root_without_id",
        {
            "$defs": {"long": LONG},
            "properties": {"a": {"enum": ["a", "bb", 3], "$ref": "#/$defs/long"}},
            "required": ["a"],
        },
        {},
    ),
    (
        "root_with_id",
        {
            "$id": "https://example.com/root.json",
            "$defs": {"long": LONG},
            "properties": {"a": {"enum": ["a", "bb", 3], "$ref": "#/$defs/long"}},
            "required": ["a"],
        },
        {},
    ),
    (
        "embedded_resource",
        {
            "$id": "https://example.com/root.json",
            "$defs": {
                # a different "long" in the root: the embedded resource's own must win
                "long": {"type": "integer"},
                "inner": {
                    "$id": "inner.json",
                    "$defs": {"long": LONG},
                    "enum": ["a", "bb", 3],
                    "allOf": [{"$ref": "#/$defs/long"}],
                },
            },
            "properties": {"a": {"$ref": "inner.json"}},
            "required": ["a"],
        },
        {},
    ),
    (
        "embedded_resource_root_without_id",
        {
            "$defs": {
                "long": {"type": "integer"},
                "inner": {
                    "$id": "https://example.com/inner.json",
                    "$defs": {"long": LONG},
                    "enum": ["a", "bb", 3],
                    "$ref": "#/$defs/long",
                },
            },
            "properties": {"a": {"$ref": "#/$defs/inner"}},
            "required": ["a"],
        },
        {},
    ),
    (
        "remote_document",
        {
            "properties": {"a": {"$ref": "https://example.com/defs.json#/$defs/pick"}},
            "required": ["a"],
        },
        {
            "resources": {
                "https://example.com/defs.json": {
                    "$defs": {
                        "long": LONG,
                        "pick": {"enum": ["a", "bb", 3], "$ref": "#/$defs/long"},
                    }
                }
            }
        },
    ),
]


@pytest.mark.parametrize(("schema", "options"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_literals_are_filtered_through_refs_where_they_sit(schema: Any, options: Any) -> None:
    objects = [{"a": v} for v in ("a", "bb", 3)]
    assert accepted_values(schema, objects, **options) == [{"a": "bb"}]


def test_a_boolean_subschema_filters_too() -> None:
    keep = {"$defs": {"yes": True}, "enum": [1, 2], "allOf": [{"$ref": "#/$defs/yes"}]}
    assert accepted_values(keep, [1, 2, 3]) == [1, 2]
    drop = {"$defs": {"no": False}, "enum": [1, 2], "allOf": [{"$ref": "#/$defs/no"}]}
    assert accepted_values(drop, [1, 2, 3]) == []
