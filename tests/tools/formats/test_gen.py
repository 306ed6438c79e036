"""``Kit.json_indented`` / ``indent_newlines``: JSON written by ``tojson(indent=k)`` at a depth."""

from __future__ import annotations

import json

import pytest

import toolmask as tm
from toolmask.grammar._ir import Grammar, Rule, byte_class, lit, seq
from toolmask.tools.formats._kit import Kit, indent_newlines

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "where": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
        },
    },
    "required": ["city"],
}
VALUES = [
    {"city": "Paris"},
    {"city": "a\nb", "tags": ["x", "y"], "where": {"lat": 1.5, "lon": -2}},
    {"tags": [], "city": ""},
]


def _grammar(depth: int, indent: int = 4) -> Grammar:
    kit = Kit({"property_order": "any", "additional_properties_default": False})
    entry = kit.json_indented(SCHEMA, "a_", indent=indent, depth=depth)
    return Grammar((Rule("root", entry), *kit.rules))


def _at(value: object, depth: int, indent: int = 4) -> str:
    """``value`` as ``tojson(indent=indent)`` writes it ``depth`` levels down."""
    return json.dumps(value, indent=indent).replace("\n", "\n" + " " * (indent * depth))


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_indented_values_at_a_depth(depth: int) -> None:
    compiled = tm.compile(_grammar(depth))
    for value in VALUES:
        m = compiled.matcher()
        assert m.accept_bytes(_at(value, depth).encode()) and m.is_accepting(), value
        deeper = _at(value, depth + 1)  # the same value one level down is another text
        assert deeper != _at(value, depth)
        other = compiled.matcher()
        assert not (other.accept_bytes(deeper.encode()) and other.is_accepting())
    # a string's newline stays escaped: the shift touches structure only
    assert not compiled.matcher().accept_bytes(b"{\n" + b" " * (4 * depth + 4) + b'"city": "a\nb')


def test_a_grammar_whose_newlines_are_not_literal_cannot_be_shifted() -> None:
    g = Grammar((Rule("root", seq(lit("["), byte_class(0x0A, 0x20), lit("]"))),))
    with pytest.raises(ValueError, match="admits a newline"):
        indent_newlines(g, "  ")
    plain = Grammar((Rule("root", lit("[\n]")),))
    assert str(indent_newlines(plain, "  ")["root"].body) == str(lit("[\n  ]"))
