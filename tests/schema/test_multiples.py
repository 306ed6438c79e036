"""``multipleOf`` meets ``multipleOf``: the values that are multiples of several numbers are the
multiples of their least common multiple, so an ``allOf`` of them (or the ``patternProperties``
one key matches) compiles to one remainder automaton, built directly, instead of the product of
the automata (which reaches the same language, or ``max_dfa_states``, through every state of
the product: JSONSchemaBench's Handwritten---num5 took 26 s to be refused that way and now
compiles). Exactness is checked against ``jsonschema``; past ``max_dfa_states`` the grammar
keeps one side and the validator checks the rest, still exact end to end."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import toolmask as tm
from tests.schema.exactness import assert_exact
from toolmask.schema._langs import lcm


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        ("6.75", "19", "513"),
        ("19", "2.125", "323"),
        ("323", "6.75", "8721"),
        ("0.5", "0.75", "1.5"),
        ("2", "3", "6"),
        ("4", "6", "12"),
        ("0.1", "0.25", "0.5"),
        ("1E+2", "0.3", "300"),
        ("7", "7", "7"),
    ],
)
def test_least_common_multiple(a: str, b: str, want: str) -> None:
    assert lcm(Decimal(a), Decimal(b)) == Decimal(want)
    assert lcm(Decimal(b), Decimal(a)) == Decimal(want)


def _grammar(schema: Any) -> tm.Grammar:
    return tm.Grammar.from_json_schema(schema)


def test_all_of_multiples_is_the_least_common_multiple_and_exact() -> None:
    schema = {"allOf": [{"multipleOf": m} for m in (6.75, 19, 9.5, 0.25)]}
    g = _grammar(schema)
    assert not g.checks  # the grammar alone decides: nothing left to the validator
    c = tm.compile(g)
    cands: list[Any] = [513 * k for k in range(-3, 4)]
    cands += [513 / 2, 513 + 6.75, 323, 6.75, 19, 9.5, 128.25, 1026.5, 1]
    assert assert_exact(c, schema, cands) == 7


def test_handwritten_num5_compiles_and_stays_exact() -> None:
    """JSONSchemaBench's Handwritten---num5 (vendored, Apache-2.0): the multiples of 8,721 one
    key must be, the numbers it must not be a multiple of, two bounds and a value it must not
    equal. It was refused after 26 s of products; now the grammar holds the multiples of one
    side and the bounds, and the validator the rest."""
    schema = {
        "type": "object",
        "patternProperties": {
            "a": {"allOf": [{"multipleOf": m} for m in (6.75, 19, 9.5, 2.125)]},
            "b": {"not": {"anyOf": [{"multipleOf": m} for m in (2, 6.5, 5, 7, 11, 37)]}},
            "c": {"exclusiveMinimum": -100000},
            "d": {"exclusiveMaximum": -10000},
            "e": {"$ref": "#/definitions/n169"},
        },
        "required": ["abcde26163"],
        "definitions": {"n169": {"not": {"const": -78489}}},
    }
    c = tm.compile(_grammar(schema))
    cands: list[Any] = [{"abcde26163": 8721 * k} for k in range(-12, 2)]
    cands += [{"abcde26163": v} for v in (-26163.5, -78489, -20000, 0)]
    # in range, 8,721 x -2 ... x -11: even, or a multiple of 5, 7 or 11, or -78,489 (x -9),
    # but for -26,163 (x -3): the one valid value, as the schema's required key says
    assert assert_exact(c, schema, cands) == 1


def test_integer_multiples_of_fractions() -> None:
    schema = {"type": "integer", "allOf": [{"multipleOf": 0.5}, {"multipleOf": 0.75}]}
    c = tm.compile(_grammar(schema))
    # integral values in the integer spelling the grammar writes (``3``, not ``3.0``)
    cands: list[Any] = [0, 1.5, 3, 4.5, 6, 7, -3, -1.5, 2.25, 9, 10]
    assert assert_exact(c, schema, cands) == 5


def test_properties_one_key_matches_meet_their_multiples() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"a": {"multipleOf": 6}, "b": {"multipleOf": 0.5}},
        "additionalProperties": False,
    }
    c = tm.compile(_grammar(schema))
    # (values whose quotients are exact in floats: jsonschema divides floats)
    cands: list[Any] = [{"ab": v} for v in (0, 6, 12, 1.5, 3, 0.5, 18, -12, 2)]
    cands += [{"a": 6}, {"a": 1.5}, {"b": 1.5}, {"b": 6}]
    assert assert_exact(c, schema, cands) == 8


def test_past_max_dfa_states_the_validator_checks_the_other_side() -> None:
    # two primes: each alone a few hundred states, their least common multiple (21,311) more
    # than max_dfa_states (20,000)
    schema = {"allOf": [{"multipleOf": 101}, {"multipleOf": 211}]}
    g = _grammar(schema)
    assert [k.keywords for k in g.checks] == [(("", "multipleOf"),)]
    c = tm.compile(g)
    cands: list[Any] = [0, 101, 211, 101 * 211, -2 * 101 * 211, 101 * 3, 1]
    assert assert_exact(c, schema, cands) == 3
