"""Value notations other than JSON: Python literals (Llama 4's calls) and Gemma 4's object
notation.

For generated JSON values and schemas: the grammar in a notation accepts the value written in
that notation exactly when ``jsonschema`` accepts the value, and what it accepts reads back as
the value (``ast.literal_eval`` for Python, toolmask's Gemma reader for Gemma).
"""

from __future__ import annotations

import ast
import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmask as tm
from toolmask.grammar import Special
from toolmask.schema import compile_json_schema
from toolmask.tools.formats._objects import dump_value, read_value
from toolmask.tools.formats._pythonic import read_calls

Q = '<|"|>'

texts = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6
) | st.sampled_from(["it's", 'say "hi"', "a\\b", "tab\there", "new\nline", "\x01", "<|x|>"])
scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | texts
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "key two", "_c"]), inner, max_size=3)
    ),
    max_leaves=8,
)

SCHEMAS: list[dict[str, Any]] = [
    {},
    {"type": "string"},
    {"type": "string", "minLength": 2},
    {"type": ["integer", "null"]},
    {"type": "boolean"},
    {"type": "array", "items": {"type": "string"}},
    {"type": "array", "items": {"type": ["integer", "boolean"]}, "maxItems": 2},
    {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    },
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"enum": ["it's", 3, None, True, [1, "x"], {"a": "b"}]},
    {"const": {"a": [True, None], "b": "q"}},
]


def _py(v: Any, quote: str, compact: bool) -> str:
    """``v`` as a Python literal with the given string quote."""
    sep, colon = (",", ":") if compact else (", ", ": ")
    if isinstance(v, str):
        return quote + "".join(_py_char(c, quote) for c in v) + quote
    if v is None or isinstance(v, bool | int | float):
        return repr(v)
    if isinstance(v, list):
        return "[" + sep.join(_py(x, quote, compact) for x in v) + "]"
    items = (f"{_py(k, quote, compact)}{colon}{_py(x, quote, compact)}" for k, x in v.items())
    return "{" + sep.join(items) + "}"


def _py_char(c: str, quote: str) -> str:
    short = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", quote: "\\" + quote}
    if c in short:
        return short[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x20 else c


def _strings(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    if isinstance(v, dict):
        return [s for x in v.values() for s in _strings(x)]
    return []


def _gemma(v: Any, compact: bool) -> str:
    text = dump_value(v)
    return text if compact else _spaced_gemma(v)


def _spaced_gemma(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}:{_spaced_gemma(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_spaced_gemma(x) for x in v) + "]"
    return dump_value(v)


def _valid(schema: dict[str, Any], v: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(v)


def _accepts(compiled: tm.CompiledGrammar, pieces: list[str | Special]) -> bool:
    m = compiled.matcher()
    for p in pieces:
        ok = m.accept_special(p.text) if isinstance(p, Special) else m.accept_bytes(p.encode())
        if not ok:
            return False
    return m.is_accepting()


def _compiled(schema: dict[str, Any], notation: str, layout: str, special: bool = False) -> Any:
    return tm.compile(
        compile_json_schema(
            schema,
            notation=notation,  # type: ignore[arg-type]
            whitespace=layout,  # type: ignore[arg-type]
            property_order="any",
            special_tokens=[Q] if special else [],
        )
    )


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:40] for s in SCHEMAS])
@pytest.mark.parametrize("layout", ["compact", "spaced"])
@settings(max_examples=40, deadline=None)
@given(value=values, quote=st.sampled_from(["'", '"']))
def test_python_literals(schema: dict[str, Any], layout: str, value: Any, quote: str) -> None:
    compiled = _compiled(schema, "python", layout)
    text = _py(value, quote, layout == "compact")
    assert ast.literal_eval(text) == value
    assert _accepts(compiled, [text]) == _valid(schema, value), text


def _py_json(v: Any) -> str:
    """``v`` with Python strings and JSON's other constants (OLMo 3's values)."""
    if isinstance(v, str):
        return _py(v, "'", False)
    if isinstance(v, list):
        return "[" + ", ".join(_py_json(x) for x in v) + "]"
    if isinstance(v, dict):
        items = (_py(k, "'", False) + ": " + _py_json(x) for k, x in v.items())
        return "{" + ", ".join(items) + "}"
    return json.dumps(v)


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:40] for s in SCHEMAS])
@settings(max_examples=40, deadline=None)
@given(value=values)
def test_python_strings_with_json_constants(schema: dict[str, Any], value: Any) -> None:
    text = _py_json(value)
    got = read_calls(f"f(v={text})", listed=False, json_names=True)
    assert not isinstance(got, str) and got[0].args == {"v": value}, got
    compiled = _compiled(schema, "python_json", "spaced")
    assert _accepts(compiled, [text]) == _valid(schema, value), text


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:40] for s in SCHEMAS])
@pytest.mark.parametrize("layout", ["compact", "spaced"])
@settings(max_examples=40, deadline=None)
@given(value=values)
def test_gemma_notation(schema: dict[str, Any], layout: str, value: Any) -> None:
    text = _gemma(value, layout == "compact")
    readable = all(Q not in s for s in _strings(value))  # the delimiter cannot be in a string
    if readable:
        assert read_value(text + " ", 0)[0] == value
    compiled = _compiled(schema, "gemma", layout)
    assert _accepts(compiled, [text]) == (readable and _valid(schema, value)), text


def test_gemma_quote_as_a_special_token() -> None:
    compiled = _compiled({"type": "object"}, "gemma", "compact", special=True)
    assert _accepts(compiled, ["{a:", Special(Q), "x", Special(Q), "}"])
    assert not _accepts(compiled, ['{a:<|"|>x<|"|>}'])  # the delimiter is the token only


@settings(max_examples=40, deadline=None)
@given(value=values)
def test_functiongemma_notation(value: Any) -> None:
    """Gemma's notation with FunctionGemma's ``<escape>`` delimiter instead of ``<|"|>``."""
    schema: dict[str, Any] = {"type": "object"}
    text = dump_value(value, "<escape>")
    readable = all("<escape>" not in x for x in _strings(value))
    if readable:
        assert read_value(text + " ", 0, "<escape>")[0] == value
    compiled = _compiled(schema, "functiongemma", "compact")
    assert _accepts(compiled, [text]) == (readable and _valid(schema, value)), text
    if any(_strings(value)):  # Gemma 4's delimiter is text here
        assert not _accepts(compiled, [_gemma(value, True)])


def test_functiongemma_escape_as_a_special_token() -> None:
    compiled = tm.compile(
        compile_json_schema(
            {"type": "object"}, notation="functiongemma", special_tokens=["<escape>"]
        )
    )
    assert _accepts(compiled, ["{a:", Special("<escape>"), "x", Special("<escape>"), "}"])
    assert not _accepts(compiled, ["{a:<escape>x<escape>}"])


@pytest.mark.parametrize(
    ("notation", "text"),
    [
        ("python", "{'a': true}"),  # JSON constants are not Python
        ("python", "{'a': 'x\ny'}"),  # a raw newline ends a Python string
        ("python", "{'a': 'x'y'}"),
        ("python", "{'a': 'x\\qy'}"),  # not an escape Python knows
        ("python_json", "{'a': True}"),  # Python's constants are not this notation's
        ("python_json", "{'a': None}"),
        ("gemma", '{a:"x"}'),  # JSON strings are not Gemma's
        ("gemma", "{a:True}"),
        ("gemma", '{"a":1}'),  # keys are bare
        ("gemma", "{a b :1}"),  # no whitespace at a key's end
    ],
)
def test_foreign_spellings_are_refused(notation: str, text: str) -> None:
    compiled = _compiled({"type": "object"}, notation, "spaced")
    assert not _accepts(compiled, [text])


def test_unknown_notation() -> None:
    with pytest.raises(ValueError, match="notation"):
        compile_json_schema({}, notation="yaml")  # type: ignore[arg-type]


def test_gemma_keys_bare_or_quoted() -> None:
    """A declared key the bare form cannot hold (``:``, ``,``, a quote) is quoted."""
    schema = {
        "type": "object",
        "properties": {"a:b": {"type": "integer"}, "x y": {"type": "integer"}},
        "additionalProperties": False,
    }
    compiled = _compiled(schema, "gemma", "compact")
    text = '{<|"|>a:b<|"|>:1,x y:2}'
    assert _accepts(compiled, [text])
    assert read_value(text, 0)[0] == {"a:b": 1, "x y": 2}
    assert not _accepts(compiled, ["{a:b:1}"])


@pytest.mark.parametrize("notation", ["json", "python", "gemma", "functiongemma"])
def test_an_enum_is_a_set_whatever_the_order_it_is_written_in(notation: str) -> None:
    # in every notation the values' order does not reach the grammar's text (the same schema
    # gives the same text in every run; before, a notation that spells strings beside the
    # trie kept the order the values met in, which could differ between runs)
    values = ["rectangle", "circle", "triangle", 3, None]
    texts = {
        str(tm.Grammar.from_json_schema({"enum": order}, notation=notation))
        for order in (values, values[::-1], values[2:] + values[:2])
    }
    assert len(texts) == 1
