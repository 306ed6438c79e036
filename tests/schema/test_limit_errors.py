"""A LimitError raised while compiling a schema says where: the JSON pointer of the (innermost)
schema location being compiled when the cap was hit, as a SchemaError does.

Each case puts the hostile part below the root, next to an innocent property, under limits
tight enough to hit the cap in a fraction of a second, and checks the ``Limits`` field and the
pointer the error carries (and shows in its message).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import toolmask as tm
from tests.schema.hostile_cases import (
    nested_objects,
    overlapping_pattern_properties,
    product_of_any_ofs,
    ref_chain,
)

LIMITS = dataclasses.replace(tm.DEFAULT_LIMITS, max_compile_seconds=3600.0)


def _in_x(schema: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": {"type": "integer"}, "x": schema}}


def _one_of_required(n: int) -> dict[str, Any]:
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {f"k{i}": {"type": "string", "minLength": i}},
                "required": [f"k{i}"],
            }
            for i in range(n)
        ]
    }


# (name, schema, limits changed from LIMITS, the Limits field, the pointer)
CASES: list[tuple[str, Any, dict[str, Any], str, str]] = [
    ("ref_depth", ref_chain(40), {"max_schema_depth": 16}, "max_schema_depth", "/$defs/d15"),
    (
        "pattern_states",
        _in_x({"type": "array", "items": {"type": "string", "pattern": "(a|b)*a(a|b){24}"}}),
        {},
        "max_dfa_states",
        "/properties/x/items",
    ),
    (
        "regex_nesting",
        _in_x({"type": "string", "pattern": "(" * 100 + "a" + ")" * 100}),
        {},
        "max_regex_nesting",
        "/properties/x",
    ),
    ("alternatives", _in_x(product_of_any_ofs(12, 4)), {}, "max_alternatives", "/properties/x"),
    (
        "key_regions",
        _in_x(overlapping_pattern_properties(10)),
        {"max_key_regions": 64},
        "max_key_regions",
        "/properties/x",
    ),
    # the alternatives' undeclared keys share three rules, so the cap is hit defining the
    # alternatives' value rules, one per alternative (each value its own shape: values of one
    # shape share a rule): the 15th is where it is crossed
    (
        "rules",
        _in_x(_one_of_required(40)),
        {"max_rules": 30},
        "max_rules",
        "/properties/x/anyOf/14/properties/k14",
    ),
    (
        "schema_bytes",
        _in_x({"enum": ["x" * 100]}),
        {"max_schema_bytes": 50},
        "max_schema_bytes",
        "",
    ),
]


@pytest.mark.parametrize(
    ("schema", "changes", "limit", "pointer"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_limit_errors_carry_the_pointer(
    schema: Any, changes: dict[str, Any], limit: str, pointer: str
) -> None:
    with pytest.raises(tm.LimitError) as e:
        tm.Grammar.from_json_schema(schema, limits=dataclasses.replace(LIMITS, **changes))
    assert e.value.limit == limit
    assert e.value.pointer == pointer
    assert str(e.value).startswith(f"#{pointer}: ") and f"(limit: {limit})" in str(e.value)
    assert e.value.tool is None


def test_too_deep_json_points_at_a_container_past_the_cap() -> None:
    schema = _in_x(nested_objects(40))
    with pytest.raises(tm.LimitError) as e:
        tm.Grammar.from_json_schema(schema, limits=dataclasses.replace(LIMITS, max_schema_depth=16))
    assert e.value.limit == "max_schema_depth"
    pointer = e.value.pointer
    assert pointer is not None and pointer.startswith("/properties/x/properties/a/")
    node = schema
    for key in pointer.split("/")[1:]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    assert pointer.count("/") == 17 and isinstance(node, (dict, list))


def test_a_compile_timeout_is_located_too() -> None:
    slow = _in_x(overlapping_pattern_properties(14))
    with pytest.raises(tm.LimitError) as e:
        tm.Grammar.from_json_schema(
            slow, limits=dataclasses.replace(LIMITS, max_compile_seconds=0.0)
        )
    assert e.value.limit == "max_compile_seconds"
    assert e.value.pointer is not None and e.value.pointer in ("", "/properties/x")


def test_a_resource_too_deep_is_named_in_the_message() -> None:
    deep = nested_objects(40)
    with pytest.raises(tm.LimitError) as e:
        tm.Grammar.from_json_schema(
            {"$ref": "https://example.com/deep"},
            resources={"https://example.com/deep": deep},
            limits=dataclasses.replace(LIMITS, max_schema_depth=16),
        )
    assert e.value.limit == "max_schema_depth" and e.value.pointer is None
    assert "https://example.com/deep#/properties/a" in str(e.value)


def test_a_cap_outside_any_schema_has_no_pointer() -> None:
    grammar = tm.Grammar.from_json_schema({"type": "array", "items": {"type": "integer"}})
    tight = dataclasses.replace(LIMITS, max_automaton_states=1)
    with pytest.raises(tm.LimitError) as e:
        tm.compile(grammar, limits=tight)
    assert e.value.pointer is None and not str(e.value).startswith("#")
