"""Hostile JSON Schemas: inputs built to make a compiler crash, hang or exhaust memory.

Importable data (no test here): ``tests/schema/test_hostile.py`` compiles each in its own
process under a memory cap, and a server test can send the same schemas through the HTTP API.
Each case is ``(name, builder)``; call the builder for the schema (some are megabytes of JSON,
so they are built on demand). :data:`EXPECTED_LIMITS` names, for the cases that must be refused,
the :class:`~toolmask.limits.Limits` field the refusal must name (``None``: a SchemaError).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Schema = Any


def nested_objects(depth: int) -> Schema:
    node: Schema = {"type": "string"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"a": node}, "required": ["a"]}
    return node


def nested_arrays(depth: int) -> Schema:
    node: Schema = {"type": "integer"}
    for _ in range(depth):
        node = {"type": "array", "items": node, "minItems": 1}
    return node


def nested_all_of(depth: int) -> Schema:
    node: Schema = {"type": "string"}
    for _ in range(depth):
        node = {"allOf": [node]}
    return node


def nested_not(depth: int) -> Schema:
    node: Schema = {"type": "string"}
    for _ in range(depth):
        node = {"not": node}
    return node


def flat_properties(n: int) -> Schema:
    return {
        "type": "object",
        "properties": {f"p{i}": {"type": "integer"} for i in range(n)},
        "required": [f"p{i}" for i in range(0, n, 2)],
    }


def ref_chain(n: int) -> Schema:
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(n)}
    defs[f"d{n}"] = {"type": "integer"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def exponential_one_of(n: int) -> Schema:
    # overlapping branches: the exact oneOf form needs every branch minus all the others
    return {
        "oneOf": [
            {"type": "object", "properties": {f"k{i}": {"type": "integer"}}, "required": []}
            for i in range(n)
        ]
    }


def product_of_any_ofs(n: int, width: int) -> Schema:
    return {
        "type": "object",
        "allOf": [{"anyOf": [{"required": [f"k{i}_{j}"]} for j in range(width)]} for i in range(n)],
    }


def many_pattern_properties(n: int) -> Schema:
    return {
        "type": "object",
        "patternProperties": {f"^x{i}-": {"type": "integer"} for i in range(n)},
        "additionalProperties": False,
    }


def overlapping_pattern_properties(n: int) -> Schema:
    return {
        "type": "object",
        "patternProperties": {f"[{chr(97 + i)}]": {"minimum": i} for i in range(n)},
    }


CASES: list[tuple[str, Callable[[], Schema]]] = [
    ("nested_object_2000", lambda: nested_objects(2_000)),
    ("nested_array_5000", lambda: nested_arrays(5_000)),
    ("nested_allof_3000", lambda: nested_all_of(3_000)),
    ("nested_not_3000", lambda: nested_not(3_000)),
    ("flat_properties_5000", lambda: flat_properties(5_000)),
    ("ref_chain_3000", lambda: ref_chain(3_000)),
    ("enum_200k", lambda: {"enum": list(range(200_000))}),
    ("enum_strings_50k", lambda: {"enum": [f"value-{i}" for i in range(50_000)]}),
    ("catastrophic_regex", lambda: {"type": "string", "pattern": "^(a+)+$"}),
    ("exponential_regex", lambda: {"type": "string", "pattern": "(a|b)*a(a|b){24}"}),
    ("huge_counted_regex", lambda: {"type": "string", "pattern": "^a{1000000}$"}),
    ("nested_counted_regex", lambda: {"type": "string", "pattern": "^((a{1000}){1000}){1000}$"}),
    ("deep_regex_groups", lambda: {"type": "string", "pattern": "(" * 5_000 + "a" + ")" * 5_000}),
    ("backreference", lambda: {"type": "string", "pattern": "^(a+)\\1$"}),
    ("max_length_1e9", lambda: {"type": "string", "maxLength": 1_000_000_000}),
    ("min_items_1e6", lambda: {"type": "array", "minItems": 1_000_000}),
    ("exponential_one_of", lambda: exponential_one_of(24)),
    ("product_of_any_ofs", lambda: product_of_any_ofs(12, 4)),
    (
        "ref_cycle",
        lambda: {
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
            "$ref": "#/$defs/a",
        },
    ),
    ("multiple_of_1e-300", lambda: {"type": "number", "multipleOf": 1e-300}),
    ("bounds_1e400", lambda: {"type": "integer", "minimum": -(10**400), "maximum": 10**400}),
    (
        "format_intersections",
        lambda: {
            "allOf": [
                {"format": f}
                for f in ("email", "hostname", "uri", "idn-email", "iri", "date-time", "ipv6")
            ]
        },
    ),
    ("many_pattern_properties", lambda: many_pattern_properties(40)),
    ("overlapping_pattern_properties", lambda: overlapping_pattern_properties(14)),
    ("wide_any_of", lambda: {"anyOf": [{"const": f"v{i}", "type": "string"} for i in range(5000)]}),
    ("long_property_name", lambda: {"properties": {"k" * 1_000_000: {"type": "integer"}}}),
]

#: what each case must give under the default limits (without the wall-clock cap): "compiled",
#: "SchemaError", or the :class:`~toolmask.limits.Limits` field a LimitError must name
EXPECTED: dict[str, str] = {
    "nested_object_2000": "max_schema_depth",
    "nested_array_5000": "max_schema_depth",
    "nested_allof_3000": "max_schema_depth",
    "nested_not_3000": "max_schema_depth",
    "flat_properties_5000": "compiled",
    "ref_chain_3000": "max_schema_depth",
    "enum_200k": "compiled",
    "enum_strings_50k": "compiled",
    "catastrophic_regex": "compiled",
    "exponential_regex": "max_dfa_states",
    "huge_counted_regex": "max_dfa_states",
    "nested_counted_regex": "max_dfa_states",
    "deep_regex_groups": "max_regex_nesting",
    "backreference": "compiled",  # the grammar a superset, the validator the exact pattern
    "max_length_1e9": "compiled",
    "min_items_1e6": "compiled",
    "exponential_one_of": "compiled",
    "product_of_any_ofs": "max_alternatives",
    "ref_cycle": "SchemaError",
    "multiple_of_1e-300": "compiled",
    "bounds_1e400": "max_dfa_states",
    "format_intersections": "compiled",
    "many_pattern_properties": "compiled",
    "overlapping_pattern_properties": "max_key_regions",
    "wide_any_of": "compiled",
    "long_property_name": "max_dfa_states",
}
