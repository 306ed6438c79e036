"""Unknown ``format`` values are annotations (JSON Schema 2020-12, format-annotation vocabulary).

* Property: adding unknown formats anywhere in a schema never changes which instances the
  grammar accepts, nor what the post-decode validator says (the grammar is the same).
* The compiler logs a warning once per unknown format name (a log record on the
  ``toolmask.schema`` logger, never a ``warnings.warn``); ``strict_formats=True`` refuses it
  with a located SchemaError; ``check_schema`` lists it as an annotation.
"""

from __future__ import annotations

import copy
import json
import logging
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolmask as tm
from tests.schema.test_properties import SETTINGS, accepts, any_json, dumps, schemas
from toolmask.schema._formats import FORMATS
from toolmask.schema._report import check_schema

#: format names people write that toolmask does not know (UI hints, informal names)
UNKNOWN = ["textarea", "checkbox", "tabs", "color", "path", "topic", "", "html-selector"]


def _subschemas(node: Any) -> list[dict[str, Any]]:
    """Every schema object inside ``node`` (the schema positions this strategy generates)."""
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        out.append(node)
        for k, v in node.items():
            if k in ("properties",) and isinstance(v, dict):
                for sub in v.values():
                    out.extend(_subschemas(sub))
            elif k in ("items", "additionalProperties", "not"):
                out.extend(_subschemas(v))
            elif k in ("anyOf", "allOf", "oneOf", "prefixItems") and isinstance(v, list):
                for sub in v:
                    out.extend(_subschemas(sub))
    return out


@st.composite
def with_unknown_formats(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = draw(schemas)
    marked = copy.deepcopy(schema)
    places = _subschemas(marked)
    picks = draw(st.lists(st.integers(0, len(places) - 1), min_size=1, max_size=4))
    for i in picks:
        if "format" not in places[i]:
            places[i]["format"] = draw(st.sampled_from(UNKNOWN))
    return schema, marked


def _compile(schema: dict[str, Any]) -> Any:
    try:
        return tm.compile(tm.Grammar.from_json_schema(schema))
    except tm.SchemaError:
        return None


@SETTINGS
@given(pair=with_unknown_formats(), values=st.lists(any_json, max_size=6), data=st.data())
def test_unknown_formats_change_nothing(
    pair: tuple[dict[str, Any], dict[str, Any]], values: list[Any], data: st.DataObject
) -> None:
    schema, marked = pair
    plain, annotated = _compile(schema), _compile(marked)
    assert (plain is None) == (annotated is None)
    if plain is None:
        return
    assert plain.grammar.rules == annotated.grammar.rules
    assert [c.keywords for c in plain.grammar.checks] == [
        c.keywords for c in annotated.grammar.checks
    ]
    for value in values:
        for text in (dumps(value, schema, "compact"), dumps(value, {}, "compact")):
            got = accepts(annotated, text)
            assert got == accepts(plain, text), text
            if got and plain.grammar.checks:
                assert plain.validate(text) == annotated.validate(text)


def test_warning_is_logged_once_per_format(caplog: pytest.LogCaptureFixture) -> None:
    name = f"unknown-{uuid.uuid4().hex[:8]}"  # a name no other test has logged
    schema = {"properties": {"a": {"format": name}, "b": {"format": name}}}
    with caplog.at_level(logging.WARNING, logger="toolmask.schema"):
        tm.Grammar.from_json_schema(schema)
        tm.Grammar.from_json_schema({"format": name})
    records = [r for r in caplog.records if name in r.getMessage()]
    assert len(records) == 1
    assert records[0].name == "toolmask.schema" and records[0].levelno == logging.WARNING
    assert "annotation" in records[0].getMessage()


def test_strict_formats_refuses_unknown_formats() -> None:
    schema = {"type": "object", "properties": {"note": {"type": "string", "format": "textarea"}}}
    tm.Grammar.from_json_schema(schema)  # an annotation by default
    with pytest.raises(tm.SchemaError) as e:
        tm.Grammar.from_json_schema(schema, strict_formats=True)
    assert e.value.pointer == "/properties/note" and e.value.keyword == "format"
    # known formats compile either way, and are enforced either way
    for name in ("date", "int32", "byte", "url"):
        tm.Grammar.from_json_schema({"format": name}, strict_formats=True)


def test_non_string_format_is_malformed() -> None:
    with pytest.raises(tm.SchemaError) as e:
        tm.Grammar.from_json_schema({"properties": {"a": {"format": 3}}})
    assert e.value.pointer == "/properties/a" and e.value.keyword == "format"


def test_check_lists_unknown_formats_as_annotations() -> None:
    schema = {"properties": {"a": {"format": "textarea"}, "d": {"format": "date"}}}
    report = check_schema(schema)
    how = {(k.pointer, k.keyword): k.enforcement for k in report.keywords}
    assert how[("/properties/a", "format")] == "annotation"
    assert how[("/properties/d", "format")] == "grammar"
    assert any("textarea" in w for w in report.warnings)
    with pytest.raises(tm.SchemaError):
        check_schema(schema, strict_formats=True)


def test_known_formats_are_not_annotations() -> None:
    # the suite's format tests keep asserting what toolmask knows: an invalid date is refused
    c = tm.compile(tm.Grammar.from_json_schema({"format": "date"}))
    m = c.matcher()
    assert not (m.accept_bytes(json.dumps("2023-02-29").encode()) and m.is_accepting())
    assert "textarea" not in FORMATS and "date" in FORMATS
