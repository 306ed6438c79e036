"""Malformed schemas: every one is a SchemaError (or LimitError) that names where, never a crash."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmask as tm
from toolmask.schema import KEYWORDS

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


@pytest.mark.parametrize(
    ("schema", "pointer", "keyword"),
    [
        ({"properties": {"a": {"dependentSchemas": 1}}}, "/properties/a/dependentSchemas", None),
        ({"properties": {"a": {"items": 1}}}, "/properties/a/items", "items"),
        ({"allOf": 1}, "/allOf", "allOf"),
        ({"properties": 1}, "/properties", "properties"),
        ({"additionalProperties": "no"}, "/additionalProperties", "additionalProperties"),
        ({"if": 3, "then": {}}, "/if", "if"),
        ({"not": 5}, "/not", "not"),
        ({"contains": "x"}, "/contains", "contains"),
    ],
)
def test_malformed_subschema_is_located(schema: Any, pointer: str, keyword: str | None) -> None:
    with pytest.raises(tm.SchemaError) as info:
        tm.Grammar.from_json_schema(schema)
    assert info.value.pointer == pointer
    assert info.value.keyword == (keyword or pointer.rsplit("/", 1)[1])
    assert pointer in str(info.value)


@settings(max_examples=400, deadline=None)
@given(
    keyword=st.sampled_from(sorted(KEYWORDS)),
    value=JSON,
    nested=st.booleans(),
)
def test_any_value_at_any_keyword_compiles_or_raises_a_toolmask_error(
    keyword: str, value: Any, nested: bool
) -> None:
    schema: Any = {keyword: value}
    if nested:
        schema = {"type": "object", "properties": {"a": schema}}
    try:
        grammar = tm.Grammar.from_json_schema(schema, limits=tm.SERVER_LIMITS)
    except (tm.SchemaError, tm.LimitError) as e:
        assert str(e)  # says what (and, for SchemaError, where)
    else:
        assert isinstance(grammar, tm.Grammar)
