"""Backreferences in ``pattern``: the grammar admits the pattern with each backreference read
as its group's language (a superset), the post-decode validator checks the exact pattern (the
split ``uniqueItems`` has), and ``toolmask check`` says so.

Every case is checked end to end against ECMA-262's verdict (taken from Node.js 20's
``RegExp`` with the ``u`` flag when the cases were written): a document is accepted exactly
when the grammar takes it and ``validate`` reports nothing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolmask as tm
from toolmask.errors import SchemaError
from toolmask.schema import check_schema


def _compiled(schema: Any) -> tm.CompiledGrammar:
    return tm.compile(tm.Grammar.from_json_schema(schema))


def _grammar_takes(c: tm.CompiledGrammar, text: bytes) -> bool:
    m = c.matcher()
    return m.accept_bytes(text) and m.is_accepting()


def _doc(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


#: (pattern, string, ECMA-262's verdict, whether the grammar alone takes it)
CASES = [
    ("^(a|b)\\1$", "aa", True, True),
    ("^(a|b)\\1$", "ab", False, True),  # the superset: (a|b)(a|b)?
    ("^(a|b)\\1$", "a", False, True),
    ("^(a|b)\\1$", "abc", False, False),
    ("^(['\"]).*\\1$", "'x'", True, True),
    ("^(['\"]).*\\1$", "'x\"", False, True),
    ("^(['\"]).*\\1$", "x", False, False),
    ("^(?<w>[a-z]+)=\\k<w>$", "ab=ab", True, True),
    ("^(?<w>[a-z]+)=\\k<w>$", "ab=ba", False, True),
    ("^(?<w>[a-z]+)=\\k<w>$", "ab=1", False, False),
    ("^(?!.*(.).*\\1)[a-z]+$", "abc", True, True),  # no letter twice
    ("^(?!.*(.).*\\1)[a-z]+$", "aba", False, True),
    ("^(?!.*(.).*\\1)[a-z]+$", "ab1", False, False),
    ("(x)?\\1y", "y", True, True),  # a group that took no part: the reference matches ""
    ("^(\\d)\\1{2}$", "777", True, True),
    ("^(\\d)\\1{2}$", "778", False, True),
    ("^(\\d)\\1{2}$", "\u0667\u0667\u0667", False, False),  # \d is ASCII
]


@pytest.mark.parametrize(("pattern", "s", "ecma", "grammar"), CASES)
def test_grammar_takes_a_superset_and_the_validator_the_exact_pattern(
    pattern: str, s: str, ecma: bool, grammar: bool
) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}
    c = _compiled(schema)
    doc = _doc({"v": s})
    assert _grammar_takes(c, doc) == grammar
    problems = c.validate(doc)
    if grammar:
        assert (not problems) == ecma, problems
    if grammar and not ecma:
        assert problems == [f"at /v: {s!r} does not match {pattern!r}"]


def test_check_reports_the_split() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pair": {"type": "string", "pattern": "^(a|b)\\1$"},
            "tags": {"type": "array", "uniqueItems": True},
            "plain": {"type": "string", "pattern": "^[a-z]+$"},
        },
    }
    rows = {(k.pointer, k.keyword): k for k in check_schema(schema).keywords}
    pair = rows["/properties/pair", "pattern"]
    assert pair.enforcement == "validator"
    assert pair.note.startswith("backreference: the grammar reads each one as its group's")
    assert rows["/properties/tags", "uniqueItems"].enforcement == "validator"
    assert rows["/properties/plain", "pattern"].enforcement == "grammar"


def test_the_complement_is_stricter_not_looser() -> None:
    """``not`` of a backreference pattern: the complement of the superset is a subset, so
    the grammar refuses some valid strings ("a" here), never an invalid one ("aa")."""
    schema = {"type": "string", "not": {"pattern": "^(a)\\1$"}}
    c = _compiled(schema)
    assert not _grammar_takes(c, b'"aa"')
    assert not _grammar_takes(c, b'"a"')  # valid, but in the superset: stricter
    assert _grammar_takes(c, b'"b"') and not c.validate(b'"b"')


def test_pattern_properties_keep_refusing_backreferences() -> None:
    """A key language with a backreference would split the keys between patterns by a
    superset; ``patternProperties`` still refuses it (``pattern`` is what the schemas use)."""
    with pytest.raises(SchemaError) as e:
        tm.Grammar.from_json_schema({"patternProperties": {"^(a)\\1$": {"type": "integer"}}})
    assert e.value.keyword == "patternProperties"


def test_a_backreference_in_an_enum_filter_is_exact() -> None:
    """Literal values met with a backreference pattern are filtered by the exact pattern."""
    schema = {"enum": ["aa", "ab", "bb", "ba", 3], "pattern": "^(a|b)\\1$"}
    c = _compiled(schema)
    took = [v for v in ("aa", "ab", "bb", "ba", 3) if _grammar_takes(c, _doc(v))]
    assert took == ["aa", "bb", 3]
