"""Reference resolution: the well-known metaschemas resolve offline.

``jsonschema-specifications`` (a dependency of ``jsonschema``) holds every draft's metaschema;
a ``$ref`` to one resolves without ``resources=`` and without the network. Draft-04/06/07
compile, and the grammar accepts exactly what the metaschema accepts (in schema key order);
2019-09 and 2020-12 are written with ``$recursiveRef`` / ``$dynamicRef``, which toolmask does
not compile: a located SchemaError names the keyword.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema.validators import validator_for
from jsonschema_specifications import REGISTRY

import toolmask as tm
from tests.schema.conformance import key_order, reorder

COMPILED = {
    "http://json-schema.org/draft-04/schema#": "http://json-schema.org/draft-04/schema",
    "http://json-schema.org/draft-06/schema#": "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-07/schema#": "http://json-schema.org/draft-07/schema",
}

DOCS: list[Any] = [
    {"type": "string"},
    {"type": "strin"},
    {"type": "object", "properties": {"a": {"enum": [1, 2]}}, "required": ["a"]},
    {"required": []},
    {"minimum": "x"},
    {"minimum": 1, "exclusiveMinimum": True},
    {"exclusiveMinimum": 1},
    {"items": [{"type": "integer"}], "additionalItems": False},
    {"definitions": {"x": {"$ref": "#/definitions/y"}}, "anyOf": [{"not": {}}]},
    {"anyOf": []},
    {"dependencies": {"a": ["b"], "c": {"maxProperties": 2}}},
    {"properties": {"a": 3}},
]


def _accepts(c: tm.CompiledGrammar, text: bytes) -> bool:
    m = c.matcher()
    return m.accept_bytes(text) and m.is_accepting()


@pytest.mark.parametrize("ref", sorted(COMPILED))
def test_draft_metaschema_ref_compiles_offline_and_is_exact(ref: str) -> None:
    meta = REGISTRY.contents(COMPILED[ref])
    validator = validator_for(meta)(meta)
    c = tm.compile(tm.Grammar.from_json_schema({"$ref": ref}))
    rank = key_order(meta)
    for doc in DOCS:
        text = json.dumps(reorder(doc, rank), separators=(",", ":")).encode()
        valid = validator.is_valid(doc)
        accepted = _accepts(c, text) and not c.validate(text)
        assert accepted == valid, (ref, doc)


@pytest.mark.parametrize(
    ("ref", "keyword"),
    [
        ("https://json-schema.org/draft/2019-09/schema", "$recursiveRef"),
        ("https://json-schema.org/draft/2020-12/schema", "$dynamicRef"),
    ],
)
def test_dynamic_metaschemas_are_located_refusals(ref: str, keyword: str) -> None:
    with pytest.raises(tm.SchemaError) as e:
        tm.Grammar.from_json_schema({"$ref": ref})
    assert e.value.keyword == keyword
    assert "not supported" in str(e.value)


def test_given_resources_take_precedence_over_the_metaschemas() -> None:
    uri = "http://json-schema.org/draft-07/schema"
    g = tm.Grammar.from_json_schema({"$ref": uri + "#"}, resources={uri: {"type": "integer"}})
    c = tm.compile(g)
    assert _accepts(c, b"12")
    assert not _accepts(c, b'{"type":"string"}')
