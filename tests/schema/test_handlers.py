"""The keyword table (``schema/_handlers.py``) agrees with ``KEYWORDS``, the one place that says
how each keyword is enforced, and keeps the order its keywords read each other in."""

from __future__ import annotations

import pytest

import toolmask as tm
from toolmask.schema import KEYWORDS
from toolmask.schema._handlers import DIALECTS, HANDLERS, READ_BY, dialect_table

#: keywords read by reference resolution (``_resolve``) or by the compiler itself
ELSEWHERE = {
    "$id",
    "$anchor",
    "$defs",
    "definitions",
    "enum",
    "const",
    "unevaluatedItems",
    "unevaluatedProperties",
}

HANDLED = {kw for family in HANDLERS for kw in family.keywords}


def test_every_enforced_keyword_has_a_function_or_a_reader() -> None:
    enforced = {k for k, info in KEYWORDS.items() if info.enforcement in ("grammar", "validator")}
    missing = enforced - HANDLED - READ_BY.keys() - ELSEWHERE
    assert missing == set()


def test_every_function_is_for_a_known_keyword() -> None:
    assert HANDLED - KEYWORDS.keys() == set()
    assert set(READ_BY.values()) <= HANDLED
    assert not HANDLED & READ_BY.keys()


def test_a_keyword_comes_after_the_keywords_it_reads() -> None:
    numbers = list(next(f for f in HANDLERS if f.name == "numbers").keywords)
    assert numbers.index("minimum") < numbers.index("exclusiveMinimum")
    assert numbers.index("maximum") < numbers.index("exclusiveMaximum")
    arrays = list(next(f for f in HANDLERS if f.name == "arrays").keywords)
    assert arrays.index("maxItems") < arrays.index("uniqueItems")


def test_properties_patterns_and_additional_are_one_function() -> None:
    objects = next(f for f in HANDLERS if f.name == "objects")
    keys, _fn = objects.steps[0]
    assert keys == {"properties", "patternProperties", "additionalProperties"}


@pytest.mark.parametrize(
    "uri",
    [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2020-12/schema",
        "https://example.com/unknown",
    ],
)
def test_every_dialect_reads_every_spelling(uri: str) -> None:
    assert dialect_table({"$schema": uri}) is HANDLERS
    assert all(table is HANDLERS for table in DIALECTS.values())


def test_read_keywords_alone_constrain_nothing() -> None:
    # minContains without contains, then/else without if: no part, any value
    for schema in ({"minContains": 2}, {"then": False}, {"else": False}):
        m = tm.compile(tm.Grammar.from_json_schema(schema)).matcher()
        assert m.accept_bytes(b"[1,2]") and m.is_accepting(), schema
