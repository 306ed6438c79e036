"""Keyword values of the wrong type are located errors, never internal ones.

Fuzz-style: keyword values of the vendored JSONSchemaBench schemas are replaced by values of
other JSON types (a list where a schema is expected, a number where a list is, ...), in the
2020-12 dialect and under draft-04's ``$schema`` (whose metaschema allows lists in more
places). Each mutant must compile, or raise a :class:`~toolmask.errors.ToolmaskError` that
carries a JSON pointer (a SchemaError's names the place, a LimitError's where the cap was hit);
an internal exception (AttributeError, TypeError, ...) escaping, or surfacing as "could not be
compiled", fails the test.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from typing import Any

import pytest

import toolmask as tm
from tests.schema.exactness import unlocated_refusals
from tests.vendored import BENCH_SPLITS, bench_records
from toolmask.errors import SchemaError
from toolmask.schema import KEYWORDS

#: the wrong values tried at a keyword
WRONG: tuple[Any, ...] = ([{"type": "string"}], [], 7, -1.5, "x", None, {"a": 1}, True)
#: keywords whose value is a schema, or a map / list of schemas
SCHEMA_KEYWORDS = ("items", "additionalProperties", "not", "contains", "propertyNames", "if")
#: mutants per split (seeded; a few seconds in all)
PER_SPLIT = 60
LIMITS = dataclasses.replace(tm.DEFAULT_LIMITS, max_compile_seconds=600.0)
DRAFT4 = "http://json-schema.org/draft-04/schema#"
DIALECTS = (
    DRAFT4,
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/schema#",
)


def _keyword_paths(schema: Any) -> list[tuple[Any, ...]]:
    """Paths to every keyword value inside subschemas (dict keys that are known keywords)."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k in KEYWORDS:
                    out.append((*path, k))
                stack.append((v, (*path, k)))
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(node))
    return sorted(out, key=repr)


def _set(schema: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(schema)
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


def _mutants(split: str) -> list[tuple[str, Any]]:
    rng = random.Random(f"wrong-types/{split}")
    records = [r for r in bench_records(split) if isinstance(r.schema, dict)]
    out: list[tuple[str, Any]] = []
    while len(out) < PER_SPLIT:
        rec = rng.choice(records)
        paths = _keyword_paths(rec.schema)
        if not paths:
            continue
        path = rng.choice(paths)
        mutant = _set(rec.schema, path, rng.choice(WRONG))
        if rng.random() < 0.3 and path != ("$schema",):
            mutant = {**mutant, "$schema": rng.choice(DIALECTS)}
        if rng.random() < 0.5 and "$defs" not in mutant:
            mutant = {**mutant, "$defs": {}}  # a reference keyword: the registry is crawled
        out.append((f"{rec.name}:{'/'.join(map(str, path))}", mutant))
    # a schema keyword holding a list in each dialect (the TextMate-grammar case)
    for kw in SCHEMA_KEYWORDS:
        for dialect in ({}, *({"$schema": d} for d in DIALECTS)):
            for crawl in ({}, {"$defs": {}}):
                name = f"list-at-{kw}-{dialect.get('$schema', '2020-12')}{'-crawled' * bool(crawl)}"
                out.append((name, {**dialect, **crawl, kw: [{}]}))
    return out


@pytest.mark.parametrize("split", BENCH_SPLITS)
def test_wrong_keyword_types_are_located_errors(split: str) -> None:
    failures = unlocated_refusals(_mutants(split))
    assert not failures, "\n".join(failures[:20])


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"properties": {"a": [{"type": "string"}]}}, "/properties/a"),
        ({"patternProperties": {"^x": 3}}, "/patternProperties/^x"),
        ({"additionalProperties": ["x"]}, "/additionalProperties"),
        ({"$defs": {"d": "nope"}, "$ref": "#/$defs/d"}, "/$defs/d"),
        ({"type": "object", "dependentSchemas": {"a": [1]}}, "/dependentSchemas/a"),
        ({"$schema": DRAFT4, "type": "object", "dependencies": {"a": 5}}, "/dependencies/a"),
        ({"$schema": DRAFT4, "not": [{"type": "string"}]}, "/not"),
        # keywords draft-04's metaschema does not know (so it does not check them), read by
        # the compiler in every dialect: their own checks locate the error
        ({"$schema": DRAFT4, "dependentSchemas": {"a": [1]}}, "/dependentSchemas/a"),
        ({"$schema": DRAFT4, "dependentRequired": {"a": [{"$ref": "#"}]}}, "/dependentRequired/a"),
        ({"$schema": DRAFT4, "dependentRequired": {"a": {}}}, "/dependentRequired/a"),
        ({"$schema": DRAFT4, "dependencies": {"a": [{"type": "string"}]}}, "/dependencies/a"),
    ],
)
def test_a_list_where_a_schema_is_expected_names_the_place(schema: Any, pointer: str) -> None:
    with pytest.raises(SchemaError) as e:
        tm.Grammar.from_json_schema(schema)
    assert e.value.pointer == pointer, e.value
    assert "could not be compiled" not in str(e.value)
