"""Literal sets as byte tries: large enums, const sets and unions compile, and their grammar
accepts exactly the schema's values.

Exactness is checked against ``jsonschema``: every value of the set is accepted (in every
spelling the grammar promises: numbers with trailing zeros, small objects in any member order),
and near misses (a value with a byte changed, cut short or extended, a neighbouring number)
are accepted exactly when ``jsonschema`` says they are valid.
"""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmask as tm
from toolmask.schema._literal_trie import MAX_TRIE_DEPTH, number_spellings, trie_node


def _compiled(schema: Any, **options: Any) -> tm.CompiledGrammar:
    return tm.compile(tm.Grammar.from_json_schema(schema, **options))


def _accepts(c: tm.CompiledGrammar, text: bytes) -> bool:
    m = c.matcher()
    return m.accept_bytes(text) and m.is_accepting()


def _text(v: Any) -> bytes:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode()


def _near_misses(text: bytes) -> list[bytes]:
    out = [text[:-1], text + b"0", text + b"x", b"-" + text, text[1:]]
    for i in range(0, len(text), max(1, len(text) // 3)):
        out.append(text[:i] + bytes([text[i] ^ 1]) + text[i + 1 :])
    return [t for t in out if t]


def _valid(schema: Any, text: bytes) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return bool(jsonschema.Draft202012Validator(schema).is_valid(value))


def _check_exact(schema: Any, values: list[Any]) -> None:
    c = _compiled(schema)
    for v in values:
        assert _accepts(c, _text(v)), v
        for miss in _near_misses(_text(v)):
            assert _accepts(c, miss) == _valid(schema, miss), (v, miss)


values = st.one_of(
    st.text(max_size=12),
    st.integers(-(10**12), 10**12),
    st.decimals(-(10**6), 10**6, allow_nan=False, allow_infinity=False, places=3).map(float),
    st.booleans(),
    st.none(),
    st.lists(st.integers(0, 9), max_size=3),
    st.dictionaries(st.sampled_from("abcd"), st.integers(0, 3), max_size=4),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(values, min_size=1, max_size=60))
def test_enum_grammar_accepts_exactly_the_values(vals: list[Any]) -> None:
    _check_exact({"enum": vals}, vals)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.text(alphabet='ab\u00e9"\\', max_size=8), min_size=1, max_size=40))
def test_string_enum_in_a_union_is_exact(vals: list[str]) -> None:
    schema = {"anyOf": [{"enum": vals}, {"type": "integer", "minimum": 5}]}
    _check_exact(schema, [*vals, 7])


@pytest.mark.parametrize(
    "vals",
    [
        [f"value_{i}" for i in range(3_000)],
        list(range(-1_500, 1_500)),
        [i / 8 for i in range(2_000)],
        [[i, i + 1] for i in range(1_500)],
        [{"id": i, "name": f"n{i}"} for i in range(1_500)],
    ],
    ids=["strings", "integers", "fractions", "arrays", "objects"],
)
def test_large_enum_compiles_as_one_rule_and_is_exact(vals: list[Any]) -> None:
    """Past the old max_alternatives (1,024), as an enum and as the literal part of a union:
    the trie needs no rule of its own (the old lowering: 6 rules per number)."""
    g = tm.Grammar.from_json_schema({"enum": vals})
    assert len(g.rules) == 1
    _check_exact({"enum": vals}, vals[:: max(1, len(vals) // 50)])
    union = {"anyOf": [{"enum": vals}, {"type": "string", "maxLength": 2}]}
    _check_exact(union, vals[:: max(1, len(vals) // 50)])


def test_number_spellings_match_the_literal_language() -> None:
    c = _compiled({"enum": [0, 1, -2, 1.5, 100, 0.25]})
    for ok in [b"0", b"-0", b"0.0", b"-0.000", b"1", b"1.00", b"-2.0", b"1.5", b"1.500", b"100"]:
        assert _accepts(c, ok), ok
    for bad in [b"1.", b"1.05", b"01", b"10", b"1.50e0", b"2", b".25", b"0.2", b"0.251"]:
        assert not _accepts(c, bad), bad
    assert number_spellings(Decimal("-0.50")) == [(b"-0.5", "frac")]
    assert number_spellings(Decimal("1E+3")) == [(b"1000", "int")]


def test_discriminated_union_past_max_alternatives() -> None:
    """A oneOf of 1,500 object branches told apart by a const key compiles (the old cap
    refused past 1,024), and the branches' plain value schemas share one rule."""
    branches = [
        {
            "type": "object",
            "properties": {"kind": {"const": f"k{i}"}, "v": {"type": "integer"}},
            "required": ["kind", "v"],
            "additionalProperties": False,
        }
        for i in range(1_500)
    ]
    schema = {"oneOf": branches}
    g = tm.Grammar.from_json_schema(schema)
    assert len(g.rules) < 20
    c = tm.compile(g)
    for i in (0, 777, 1_499):
        assert _accepts(c, _text({"kind": f"k{i}", "v": 3}))
    for bad in ({"kind": "k1500", "v": 3}, {"kind": "k1", "v": "3"}, {"kind": "k1"}):
        assert not _accepts(c, _text(bad)), bad


def test_literal_bytes_cap_is_an_error() -> None:
    limits = dataclasses.replace(tm.DEFAULT_LIMITS, max_literal_bytes=10_000)
    with pytest.raises(tm.LimitError) as e:
        tm.Grammar.from_json_schema({"enum": [f"v{i:05d}" for i in range(2_000)]}, limits=limits)
    assert e.value.limit == "max_literal_bytes"
    objs = {"anyOf": [{"enum": [[i] * 20 for i in range(2_000)]}, {"type": "array"}]}
    with pytest.raises(tm.LimitError) as e:
        tm.Grammar.from_json_schema(objs, limits=limits)
    assert e.value.limit == "max_literal_bytes"


def test_trie_shares_prefixes_and_bounds_its_depth() -> None:
    node = trie_node([(b"abc", ""), (b"abd", ""), (b"ab", ""), (b"b", "int")])
    assert str(node) == '"ab" ("" | [cd]) | "b" ("." "0"+)?'
    # values that are each other's prefixes: a branch point per value, nesting bounded
    chain = [(b"a" * n, "") for n in range(1, 400)]
    deep = trie_node(chain)
    assert _depth(deep) <= 2 * MAX_TRIE_DEPTH + 4
    c = tm.compile(tm.Grammar.from_json_schema({"enum": ["a" * n for n in range(1, 400)]}))
    for n in (1, 48, 49, 50, 200, 399):
        assert _accepts(c, b'"' + b"a" * n + b'"')
    assert not _accepts(c, b'"' + b"a" * 400 + b'"')
    assert not _accepts(c, b'""')


def _depth(node: Any) -> int:
    best = 0
    stack = [(node, 1)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        items = getattr(n, "items", None)
        if isinstance(items, tuple):
            stack.extend((x, d + 1) for x in items)
        elif hasattr(n, "item"):
            stack.append((n.item, d + 1))
    return best
