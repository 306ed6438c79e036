"""The shapes that made compilation slow or refused, compiled exactly.

* A literal set met with other parts (``{"task": {"anyOf": [one-value enums]}}`` met with
  each of many ``anyOf`` branches' ``task`` pattern: the Azure Pipelines schema took minutes)
  is filtered part by part: a part whose shape is an exact literal set is a lookup by JSON
  equality, a null / boolean / string part without flags is read off its shape, the rest is
  evaluated with jsonschema. The tests check the filtered sets against jsonschema.
* Object alternatives told apart by a key whose value is a finite string language (a pattern
  such as ``^Task7@1$`` with ``type: string``) are a discriminated union, like ``const``
  values: past ``max_alternatives``, up to ``max_discriminated_alternatives``.
* A union's count is checked once its location is complete: a sibling ``properties`` may make
  a key of the branches a discriminator that the branches alone do not have.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import toolmask as tm
from tests.schema.exactness import assert_exact
from toolmask.schema import _langs


def _compiled(schema: Any, **options: Any) -> tm.CompiledGrammar:
    return tm.compile(tm.Grammar.from_json_schema(schema, **options))


def _tasks(n: int) -> dict[str, Any]:
    """The Azure Pipelines ``task`` step, written anew: the task name is one of n one-value
    enums, and one of n branches, each naming its task by a pattern, gives its inputs."""
    return {
        "type": "object",
        "properties": {
            "task": {"anyOf": [{"enum": [f"Tool{i}@{i % 3}"]} for i in range(n)]},
            "inputs": {"type": "object"},
            "displayName": {"type": "string"},
        },
        "additionalProperties": False,
        "required": ["task"],
        "anyOf": [
            {
                "properties": {
                    "task": {"pattern": f"^Tool{i}@{i % 3}$"},
                    "inputs": {
                        "properties": {f"in{i}": {"type": "string"}, "mode": {"enum": ["a", "b"]}},
                        "additionalProperties": False,
                    },
                },
                "required": ["task"],
            }
            for i in range(n)
        ],
    }


def test_a_task_union_like_azure_pipelines_is_exact() -> None:
    schema = _tasks(300)
    c = _compiled(schema)
    values: list[Any] = []
    for i in (0, 1, 150, 299):
        task = f"Tool{i}@{i % 3}"
        values += [
            {"task": task},
            {"task": task, "inputs": {f"in{i}": "x", "mode": "a"}},
            {"task": task, "inputs": {f"in{i + 1}": "x"}},
            {"task": task, "inputs": {"mode": "c"}},
            {"task": task, "displayName": "d"},
            {"task": f"Tool{i}@{(i + 1) % 3}"},
            {"task": task + " "},
            {"inputs": {}},
        ]
    values += [{"task": "Tool300@0"}, {"task": 3}]
    assert 10 < assert_exact(c, schema, values) < len(values) - 10


def _task_values(n: int) -> list[Any]:
    values: list[Any] = []
    for i in (0, n // 2, n - 1):
        task = f"Tool{i}@{i % 3}"
        values += [
            {"task": task, "inputs": {f"in{i}": "x"}},
            {"task": task, "inputs": {f"in{i + 1}": "x"}},
            {"task": f"Tool{i}@{(i + 1) % 3}"},
        ]
    return [*values, {"task": f"Tool{n}@0"}, {"task": "x"}]


@pytest.mark.parametrize("applicator", ["anyOf", "oneOf"])
def test_more_task_branches_than_max_alternatives(applicator: str) -> None:
    """1,500 branches: past ``max_alternatives`` on their own (each names its task by an
    untyped pattern, so the union alone has no discriminator), told apart once the sibling
    ``properties`` has met them (its enums make each branch's task one literal). A ``oneOf``
    of them is the same union, its one-branch rule left to the validator."""
    schema = _tasks(1_500)
    schema[applicator] = schema.pop("anyOf")
    c = _compiled(schema)
    assert assert_exact(c, schema, _task_values(1_500)) == 3


def test_task_branches_a_sibling_does_not_tell_apart_are_refused_where_they_are() -> None:
    """The same 1,500 branches, their task names infinitely many each and the sibling
    ``task`` any string: nothing tells them apart, so the union is refused at its location,
    as before. And past ``max_discriminated_alternatives`` the union is refused at once."""
    loose = _tasks(1_500)
    loose["properties"]["task"] = {"type": "string"}
    for branch in loose["anyOf"]:
        branch["properties"]["task"]["pattern"] += "|^x+$"
    doc = {"type": "object", "properties": {"step": loose}}
    with pytest.raises(tm.LimitError) as e:
        tm.Grammar.from_json_schema(doc)
    assert (e.value.limit, e.value.pointer) == ("max_alternatives", "/properties/step")
    assert "1500 alternatives" in str(e.value)
    small = dataclasses.replace(tm.DEFAULT_LIMITS, max_discriminated_alternatives=1_000)
    with pytest.raises(tm.LimitError) as e:
        tm.Grammar.from_json_schema(_tasks(1_500), limits=small)
    assert e.value.limit == "max_discriminated_alternatives"


def test_literal_sets_are_filtered_by_each_kind_of_part() -> None:
    """An enum met with another enum (``1`` is ``1.0``), a chain pattern, a pattern that needs
    its DFA, a format, null and booleans, and a part with flags (``uniqueItems``, left to the
    validator): the grammar's literals are exactly the values jsonschema accepts."""
    values: list[Any] = [1, 2.0, 3, "a1", "b", "zz9", "2024-01-31", "2024-13-01", None, True]
    values += [False, [1, 1], [1, 2], {"k": 1}, "a1b"]
    schema = {
        "allOf": [
            {"enum": values},
            {"enum": [1.0, 2, "a1", "b", "zz9", "2024-01-31", "2024-13-01", None, True, [1, 1]]},
            {
                "anyOf": [
                    {"type": "string", "pattern": "^[a-z][0-9]$"},
                    {"type": "string", "pattern": "(z)\\1?9"},
                    {"type": "string", "format": "date"},
                    {"type": ["number", "null", "boolean"]},
                    {"type": "array", "uniqueItems": True},
                ]
            },
            {"not": {"const": 3}},
        ]
    }
    c = _compiled(schema)
    kept = assert_exact(c, schema, [*values, "c", 4, [2, 2]])
    assert kept == 7  # 1, 2.0, "a1", "zz9", "2024-01-31", null, true (not [1, 1]: not unique)


def test_objects_told_apart_by_a_finite_pattern_are_a_discriminated_union() -> None:
    """1,500 branches (more than ``max_alternatives``) that differ in two properties, so they
    do not merge, told apart by ``task``: a string matching one pattern each."""
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "task": {"type": "string", "pattern": f"^Task{i}@[12]$"},
                    "inputs": {
                        "type": "object",
                        "properties": {f"p{i}": {"type": "string"}},
                        "additionalProperties": False,
                    },
                },
                "required": ["task"],
                "additionalProperties": False,
            }
            for i in range(1_500)
        ]
    }
    c = _compiled(schema)
    values: list[Any] = []
    for i in (0, 7, 1_499):
        values += [
            {"task": f"Task{i}@1", "inputs": {f"p{i}": "x"}},
            {"task": f"Task{i}@2"},
            {"task": f"Task{i}@3"},
            {"task": f"Task{i}@1", "inputs": {f"p{i + 1}": "x"}},
        ]
    values += [{"task": "Task1500@1"}, {"inputs": {}}]
    assert assert_exact(c, schema, values) == 6


def test_an_untyped_or_infinite_pattern_is_no_discriminator() -> None:
    """Without ``type: string`` the key also takes every non-string value, in every branch;
    ``^Task[0-9]+$`` has infinitely many strings: neither tells branches apart."""
    for task in ({"pattern": "^Task{i}$"}, {"type": "string", "pattern": "^Task{i}[0-9]*$"}):
        branches = [
            {
                "type": "object",
                "properties": {
                    "task": {k: v.format(i=i) for k, v in task.items()},
                    "inputs": {"type": "object", "properties": {f"p{i}": {"type": "string"}}},
                },
                "required": ["task"],
            }
            for i in range(1_100)
        ]
        with pytest.raises(tm.LimitError) as e:
            tm.Grammar.from_json_schema({"anyOf": branches})
        assert e.value.limit == "max_alternatives"


@pytest.mark.parametrize(
    ("pattern", "strings", "others"),
    [
        ("^a[bc]d?$", ["ab", "abd", "ac", "acd"], ["a", "abdd", "ad", "xab"]),
        ("^Tool7@1$", ["Tool7@1"], ["Tool7@12", "Tool7@", "tool7@1"]),
        ("^[xy]{2}$", ["xx", "xy", "yx", "yy"], ["x", "xyx", "xz"]),
        ("^[a-z]{3}$", None, ["ab", "abcd", "ab1"]),  # 17,576 strings, past the limit of 64
        ("^a+$", None, ["", "ab", "ba"]),
    ],
)
def test_chain_strings_and_matching(
    pattern: str, strings: list[str] | None, others: list[str]
) -> None:
    chain = _langs.pattern_chain(pattern)
    assert chain is not None
    got = _langs.chain_strings(chain, 64)
    assert (sorted(got) if got is not None else None) == strings
    for s in [*(strings or []), "abc", "aaaa", *others]:
        assert _langs.chain_accepts(chain, s) == tm.grammar.regex_dfa(pattern, search=True).accepts(
            s
        )
