"""Layouts the model writes natively: ``json.dumps`` spacing and keys in any order.

``whitespace="spaced"`` accepts exactly ``json.dumps(value)``; ``property_order="any"``
accepts the declared keys in every order, each at most once, with every required key present.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolmask as tm
from toolmask.limits import Limits
from toolmask.schema import compile_json_schema

VALUES: dict[str, Any] = {"string": "x y", "integer": -3, "boolean": True, "number": 1.5}


def _accepts(compiled: tm.CompiledGrammar, text: str) -> bool:
    m = compiled.matcher()
    return m.accept_bytes(text.encode()) and m.is_accepting()


@st.composite
def objects(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    n = draw(st.integers(1, 6))
    types = draw(st.lists(st.sampled_from(sorted(VALUES)), min_size=n, max_size=n))
    names = [f"k{i}" for i in range(n)]
    required = draw(st.lists(st.sampled_from(names), unique=True))
    schema = {
        "type": "object",
        "properties": {k: {"type": t} for k, t in zip(names, types, strict=True)},
        "required": required,
        "additionalProperties": False,
    }
    keys = draw(st.lists(st.sampled_from(names), max_size=n + 1))  # may repeat a key
    members = [(k, VALUES[types[names.index(k)]]) for k in keys]
    return schema, members


def _dump(members: list[tuple[str, Any]]) -> str:
    inner = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in members)
    return "{" + inner + "}"


@given(objects())
def test_any_order_accepts_exactly_the_valid_objects(
    case: tuple[dict[str, Any], list[tuple[str, Any]]],
) -> None:
    schema, members = case
    compiled = tm.compile(compile_json_schema(schema, whitespace="spaced", property_order="any"))
    keys = [k for k, _ in members]
    valid = len(set(keys)) == len(keys) and set(schema["required"]) <= set(keys)
    assert _accepts(compiled, _dump(members)) == valid, _dump(members)


@given(objects())
def test_schema_order_accepts_the_sorted_object_only(
    case: tuple[dict[str, Any], list[tuple[str, Any]]],
) -> None:
    schema, members = case
    compiled = tm.compile(compile_json_schema(schema, whitespace="spaced"))
    keys = [k for k, _ in members]
    in_order = keys == sorted(keys, key=lambda k: int(k[1:])) and len(set(keys)) == len(keys)
    valid = in_order and set(schema["required"]) <= set(keys)
    assert _accepts(compiled, _dump(members)) == valid


@pytest.mark.parametrize(
    "value",
    [{}, [], {"a": [1, 2, {"b": None}], "c": "d"}, [{"x": 1.5}, [], "s"], "é", {"k": {}}],
)
def test_spaced_is_json_dumps(value: Any) -> None:
    compiled = tm.compile(compile_json_schema({}, whitespace="spaced"))
    assert _accepts(compiled, json.dumps(value, ensure_ascii=False))
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if compact != json.dumps(value, ensure_ascii=False):
        assert not _accepts(compiled, compact)


def test_any_order_beyond_the_limit_keeps_schema_order() -> None:
    schema = {
        "type": "object",
        "properties": {f"k{i}": {"type": "integer"} for i in range(4)},
        "additionalProperties": False,
    }
    small = Limits(max_any_order_properties=3)
    g = compile_json_schema(schema, whitespace="spaced", property_order="any", limits=small)
    compiled = tm.compile(g)
    assert _accepts(compiled, '{"k0": 1, "k1": 2}')
    assert not _accepts(compiled, '{"k1": 2, "k0": 1}')


def test_any_order_with_additional_properties_and_counts() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["b"],
        "maxProperties": 2,
    }
    compiled = tm.compile(compile_json_schema(schema, whitespace="spaced", property_order="any"))
    assert _accepts(compiled, '{"b": 1, "a": 2}')
    assert _accepts(compiled, '{"b": 1, "zz": 2}')
    assert not _accepts(compiled, '{"b": 1, "a": 2, "zz": 3}')
    assert not _accepts(compiled, '{"a": 2}')


def test_bad_options_are_errors() -> None:
    with pytest.raises(ValueError, match="property_order"):
        compile_json_schema({}, property_order="random")  # type: ignore[arg-type]
