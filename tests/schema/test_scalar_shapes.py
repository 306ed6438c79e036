"""Work a compilation shares or puts off, and the grammars it must leave as they were.

* A scalar location's shape (a type with a range, a length, a pattern or a known format) is
  kept in the cache set by its keywords (``schema.scalar_shapes``): equal scalar subschemas, in
  one schema or in several, are expanded once, and the grammar is the one a compilation with
  empty caches gives. What the shape depends on besides its keywords (the limits,
  ``strict_formats``) is part of the key, and a shape with flags (their JSON pointers) is not
  kept: each location's post-decode check names its own place.
* A schema without any ``$`` key makes its ``referencing`` registry only when a value has to be
  evaluated (an enum beside other keywords), and filters the same values as one that has it up
  front.
* The usual object location (``properties``, ``required``, ``additionalProperties``) and
  array location (``items``, ``minItems``, ``maxItems``) are written out rather than met part
  by part: the same shape as the keyword table and the meet give, the same subschemas
  registered in the same order, and the table's errors for the malformed ones.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import toolmask as tm
from tests.schema.exactness import accepted_values
from toolmask._cache import CacheSet
from toolmask.errors import LimitError, SchemaError

CODE = {"type": "string", "pattern": "^[A-Z]{3}$"}


def _grammar(schema: Any, caches: CacheSet, **options: Any) -> tm.Grammar:
    return tm.Grammar.from_json_schema(schema, caches=caches, **options)


def _kept(caches: CacheSet) -> int:
    return caches.counts().get("schema.scalar_shapes", 0)


def test_equal_scalar_subschemas_are_expanded_once_and_give_the_cold_grammar() -> None:
    schema = {
        "type": "object",
        "properties": {
            "from": dict(CODE),
            "to": dict(CODE, description="another place, the same constraint"),
            "amount": {"type": "number", "exclusiveMinimum": 0},
        },
        "required": ["from", "to", "amount"],
        "additionalProperties": False,
    }
    warm = CacheSet()
    _grammar({"type": "object", "properties": {"code": dict(CODE)}}, warm)
    assert _kept(warm) == 1
    shared = _grammar(schema, warm)
    assert _kept(warm) == 2  # the range is new; both codes are the shape kept before
    for options in ({}, {"whitespace": "flexible"}, {"notation": "python"}):
        cold = _grammar(schema, CacheSet(), **options)
        assert _grammar(schema, warm, **options).fingerprint() == cold.fingerprint()
    assert str(shared) == str(_grammar(schema, CacheSet()))


def test_a_flagged_scalar_is_not_shared_between_places() -> None:
    # hostname's regex accepts more than the format (the 253-octet bound): each place is
    # left to the post-decode check under its own pointer
    host = {"type": "string", "format": "hostname"}
    schema = {"type": "object", "properties": {"a": dict(host), "b": dict(host)}}
    caches = CacheSet()
    _grammar({"type": "object", "properties": {"c": dict(host)}}, caches)
    (check,) = _grammar(schema, caches).checks
    assert ("/properties/a", "format") in check.keywords
    assert ("/properties/b", "format") in check.keywords
    assert ("/properties/c", "format") not in check.keywords
    assert _kept(caches) == 0


def test_the_limits_are_part_of_the_key() -> None:
    # 2**9 states: within the default max_dfa_states, past a tight one
    wide = {"type": "string", "pattern": "^(a|b)*a(a|b){8}$"}
    caches = CacheSet()
    _grammar(wide, caches)
    assert _kept(caches) == 1
    tight = dataclasses.replace(tm.Limits(), max_dfa_states=100)
    with pytest.raises(LimitError):
        _grammar(wide, caches, limits=tight)


def test_unknown_formats_and_strict_formats() -> None:
    mine = {"type": "string", "format": "x-not-a-format", "maxLength": 3}
    caches = CacheSet()
    _grammar(mine, caches)  # an annotation: read as any string of 3 at most
    assert _kept(caches) == 0  # its warning is logged by the general route, once per name
    with pytest.raises(SchemaError):
        _grammar(mine, caches, strict_formats=True)
    known = {"type": "string", "format": "uuid"}
    _grammar(known, caches)
    assert _kept(caches) == 1
    _grammar(known, caches, strict_formats=True)
    assert _kept(caches) == 2  # a key of its own


@pytest.mark.parametrize("dollar", [False, True])
def test_an_enum_filtered_by_its_siblings_without_a_registry_up_front(dollar: bool) -> None:
    # without any "$" key the registry is made when the enum's values are evaluated; with a
    # $comment (a "$" key) it is made up front: the same values either way
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"enum": ["a", "bb", "ccc", 4], "minLength": 2, "maxLength": 2}},
        "required": ["a"],
    }
    if dollar:
        schema["$comment"] = "the registry is made before the properties are read"
    values = [{"a": v} for v in ["a", "bb", "ccc", 4]]
    assert accepted_values(schema, values) == [{"a": "bb"}, {"a": 4}]


# -- the usual object and array locations, written out ------------------------------------------

_OBJECTS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"a": {"type": "string"}}},
    {"type": "object", "properties": {"a": {}, "b": True}, "required": ["b", "a", "b"]},
    {"type": "object", "properties": {"a": {}, "b": False}, "required": ["a"]},
    {"type": "object", "properties": {"a": {}, "b": False, "c": {}}, "required": ["b"]},
    {"type": "object", "properties": {"a": {}}, "required": []},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": True},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
    {
        "type": "object",
        "description": "annotations beside",
        "title": "t",
        "properties": {"x": {"type": "integer", "minimum": 1}, "y": {"enum": [1, 2]}},
        "required": ["y"],
        "additionalProperties": False,
    },
    # not of the form (the table decides): a required key not declared, malformed keywords
    {"type": "object", "properties": {"a": {}}, "required": ["z"]},
    {"type": "object", "properties": {"a": {}}, "required": "a"},
    {"type": "object", "properties": [], "required": ["a"]},
    {"type": "object", "properties": {}, "additionalProperties": False},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": 3},
    # the usual array location
    {"type": "array", "items": {"type": "string"}},
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
    {"type": "array", "items": False, "maxItems": 0, "description": "d"},
    {"type": "array", "items": True, "minItems": 2},
    {"type": "array", "items": {}, "minItems": 3, "maxItems": 2},
    {"type": "array", "items": {}, "minItems": 2.0},
    {"type": "array", "items": {}, "maxItems": -1},
    {"type": "array", "items": [{}]},
]


def _by_table(schema: dict[str, Any]) -> tuple[Any, list[str]]:
    """The root's shape as the keyword table and the meet give it, and the locations it
    registered (their pointers), or the error it raised."""
    from toolmask.schema._compiler import SchemaCompiler
    from toolmask.schema._site import keyword_parts

    c = SchemaCompiler(schema, resources=None, lenient=False, limits=tm.Limits(), crawl=False)
    s, r, ptr = c.locs.at(c.root_term)
    try:
        parts = keyword_parts(c, s, r, ptr, c.table)
        shape: Any = c.settle(c.meet(c.root_term, parts))
    except SchemaError as e:
        shape = f"SchemaError: {e}"
    return shape, [p for _, _, p in c.locs._locs]


def _written_out(schema: dict[str, Any]) -> tuple[Any, list[str]]:
    from toolmask.schema._compiler import SchemaCompiler

    c = SchemaCompiler(schema, resources=None, lenient=False, limits=tm.Limits(), crawl=False)
    try:
        shape: Any = c.expand(c.root_term)
    except SchemaError as e:
        shape = f"SchemaError: {e}"
    return shape, [p for _, _, p in c.locs._locs]


@pytest.mark.parametrize("schema", _OBJECTS, ids=range(len(_OBJECTS)))
def test_the_usual_container_location_is_what_the_table_gives(schema: dict[str, Any]) -> None:
    assert _written_out(schema) == _by_table(schema)
