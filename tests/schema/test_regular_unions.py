"""Unions of regular alternatives are one automaton: an ``anyOf`` of many string patterns (or
of patterns, enums, consts, formats and lengths, or of number ranges) compiles into the DFA of
the union instead of counting alternatives against ``max_alternatives``, and the grammar
accepts exactly the union.

Exactness is checked against ``jsonschema``: for every schema, a set of candidate strings
(the patterns' own sample strings, values of the enums and formats, and near misses of each:
a character changed, dropped or added) is accepted by the grammar exactly when
``jsonschema`` says it is valid. Several cases lower ``max_alternatives`` so that a handful of
alternatives takes the merging route; the 1,100-pattern case keeps the default limits.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

import toolmask as tm
from tests.schema.exactness import assert_exact
from toolmask.grammar import regex_dfa

#: few alternatives take the merging route under this cap
LOW_CAP = dataclasses.replace(tm.DEFAULT_LIMITS, max_alternatives=4)


def _compiled(schema: Any, **options: Any) -> tm.CompiledGrammar:
    return tm.compile(tm.Grammar.from_json_schema(schema, **options))


def _near(s: str, rng: random.Random) -> list[str]:
    # (no "\n" at the end: Python's `$`, which jsonschema uses, matches before it; ECMA's does not)
    out = [s, s[:-1], s[1:], s + "x", "x" + s, s + "0", s.upper()]
    if s:
        i = rng.randrange(len(s))
        out.append(s[:i] + rng.choice("a0Z-_.:9") + s[i + 1 :])
        out.append(s[:i] + s[i] + s[i:])
    return out


def _samples(patterns: list[str], rng: random.Random, per: int = 3) -> list[str]:
    out: list[str] = []
    for p in patterns:
        d = regex_dfa(p, search=True)
        for _ in range(per):
            s = d.sample(rng, max_len=12)
            if s is not None:
                out.extend(_near(s, rng))
    return out


# forty patterns of the shapes real schemas write: anchored codes, unanchored words, classes
PATTERNS_40 = [
    *(f"^[A-Z]{{2}}-{i:02d}$" for i in range(10)),
    *(f"^v{i}\\.[0-9]+(\\.[0-9]+)?$" for i in range(10)),
    *(f"(foo|bar){i}" for i in range(10)),
    *(f"^[a-z]+_{i}[a-z]*$" for i in range(10)),
]


def test_forty_patterns_are_one_automaton_and_exact() -> None:
    schema = {"anyOf": [{"type": "string", "pattern": p} for p in PATTERNS_40]}
    c = _compiled(schema, limits=LOW_CAP)  # 40 alternatives > 4: the merging route
    plain = _compiled(schema)  # 40 <= 1,024: alternatives, as before
    rng = random.Random(7)
    cands = [*_samples(PATTERNS_40, rng), "", "AB-100", "v3.", "foo", "abc_9x", "xbar7y"]
    assert 30 < assert_exact(c, schema, cands) < len(cands) - 30
    assert_exact(plain, schema, cands)

    # one automaton: its rules, where the alternatives were forty branches of the start rule
    def branches(g: tm.Grammar) -> int:
        return str(g[g.start]).count(" | ") + 1

    assert branches(plain.grammar) >= 40 > branches(c.grammar)


def test_an_any_of_of_1100_patterns_compiles_exactly() -> None:
    """The refused kind: ``max_alternatives`` for an ``anyOf`` of many undiscriminated patterns."""
    schema = {"anyOf": [{"type": "string", "pattern": f"^k{i}$"} for i in range(1_100)]}
    g = tm.Grammar.from_json_schema(schema)
    assert len(g.rules) < 20
    c = tm.compile(g)
    cands = [f"k{i}" for i in range(0, 1_300, 7)] + ["k", "k01", "kk1", "k1099 ", "K5", "k-1"]
    assert assert_exact(c, schema, cands) == len(range(0, 1_100, 7))


def test_patterns_mixed_with_enums_consts_formats_and_lengths() -> None:
    branches: list[Any] = [
        {"type": "string", "pattern": "^[0-9]{3}-[0-9]{4}$"},
        {"type": "string", "pattern": "ab+c"},
        {"enum": ["red", "green", "blue", 3, None]},
        {"const": "exactly this"},
        {"type": "string", "format": "date"},
        {"type": "string", "format": "uuid"},
        {"type": "string", "minLength": 12, "maxLength": 14, "pattern": "^z"},
        {"type": "string", "format": "ipv4", "maxLength": 9},
        {"type": "string", "pattern": "^(?!tmp)[a-z]{4}$"},
    ]
    schema = {"anyOf": branches}
    c = _compiled(schema, limits=LOW_CAP)
    rng = random.Random(3)
    base = [
        "555-1234",
        "xabbbcx",
        "red",
        "green",
        "blue",
        "exactly this",
        "2024-02-29",
        "2023-02-29",
        "123e4567-e89b-12d3-a456-426614174000",
        "z" * 12,
        "z" * 15,
        "1.2.3.4",
        "10.20.30.40",
        "abcd",
        "tmpa",
        "purple",
    ]
    cands = [x for s in base for x in _near(s, rng)] + [3, None, 4, True]
    valid = assert_exact(c, schema, cands)
    assert 15 < valid < len(cands) - 15


def test_a_product_of_two_wide_unions_is_one_product() -> None:
    """allOf of two anyOfs of forty patterns: 1,600 pairwise products before, past
    ``max_alternatives``; the two unions are merged first and met once."""
    left = [f"a{i}" for i in range(40)]
    right = [f"b{i}$" for i in range(40)]
    schema = {
        "type": "string",
        "allOf": [
            {"anyOf": [{"pattern": p} for p in left]},
            {"anyOf": [{"pattern": p} for p in right]},
        ],
    }
    c = _compiled(schema)
    rng = random.Random(11)
    cands = ["a3xb4", "b4", "a39b39", "a3b40", "b1a1", "xa0yb0", "a1b", "a40b2"]
    cands += [x for s in ("a17-b23", "qa5b5") for x in _near(s, rng)]
    assert 3 < assert_exact(c, schema, cands) < len(cands) - 3


def test_object_alternatives_told_apart_by_a_pattern_only() -> None:
    """Objects that differ only in one property's pattern merge into one object (the
    property holds either value), whose value is then a union of patterns: merged too."""
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"id": {"type": "string", "pattern": f"^{p}[0-9]+$"}},
                "required": ["id"],
                "additionalProperties": False,
            }
            for p in [f"x{i}" for i in range(1_200)]
        ]
    }
    g = tm.Grammar.from_json_schema(schema)
    c = tm.compile(g)
    cands: list[Any] = [{"id": f"x{i}7"} for i in range(0, 1_400, 37)]
    cands += [{"id": "x"}, {"id": "y17"}, {}, {"id": "x12"}, {"id": "x1a"}, {"id": 3}]
    assert assert_exact(c, schema, cands) > 20


def test_number_alternatives_merge_integer_and_other_apart() -> None:
    schema = {
        "anyOf": [
            *({"type": "integer", "minimum": 10 * i, "maximum": 10 * i + 3} for i in range(8)),
            *({"type": "number", "multipleOf": m} for m in (0.25, 7)),
            {"type": "number", "minimum": 1000.5, "exclusiveMaximum": 1001},
        ]
    }
    c = _compiled(schema, limits=LOW_CAP)
    cands: list[Any] = [i / 10 for i in range(-30, 330)]
    cands += [1000.5, 1000.75, 1001, 1000.6, 14.5, 12, 13, 14, 21, 70, 71]
    # integral values in the integer spelling the grammar writes (``1``, not ``1.0``: the
    # documented stricter choice, the same with or without merging)
    cands = [int(x) if isinstance(x, float) and x.is_integer() else x for x in cands]
    valid = assert_exact(c, schema, cands)
    assert 50 < valid < len(cands) - 50


def test_a_union_past_max_dfa_states_is_split_not_refused() -> None:
    """When the union's automaton would pass ``max_dfa_states``, each half is merged apart:
    the alternatives that remain are within ``max_alternatives``, and still exact."""
    # strings of a and b whose count of a is a multiple of p: p states each, but their union
    # needs the product of the primes (30,030), as its automaton counts modulo all of them
    patterns = [f"^b*(?:(?:ab*){{{p}}})*$" for p in (2, 3, 5, 7, 11, 13)]
    schema = {"anyOf": [{"type": "string", "pattern": p} for p in patterns]}
    limits = dataclasses.replace(tm.DEFAULT_LIMITS, max_alternatives=4, max_dfa_states=700)
    c = _compiled(schema, limits=limits)
    rng = random.Random(5)
    cands = ["".join(rng.choice("ab") for _ in range(rng.randrange(0, 30))) for _ in range(300)]
    cands += ["a" * n for n in range(40)] + ["c", "ac"]
    assert 20 < assert_exact(c, schema, cands) < len(cands) - 20


@pytest.mark.parametrize("n", [2, 5])
def test_small_unions_keep_their_alternatives(n: int) -> None:
    """At or below ``max_alternatives`` the alternatives stay as they are (a chain pattern's
    language lowered without its automaton); past it they are merged."""
    schema = {"anyOf": [{"type": "string", "pattern": f"^[a-z]{{{i}}}$"} for i in range(n)]}
    plain = tm.Grammar.from_json_schema(schema)
    low = tm.Grammar.from_json_schema(schema, limits=LOW_CAP)
    assert (str(plain) == str(low)) == (n <= LOW_CAP.max_alternatives)
