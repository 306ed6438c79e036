"""Helpers the schema tests share: end-to-end acceptance of a value, the exactness check
against jsonschema, and the located-refusal check of the fuzz tests."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

import jsonschema

import toolmask as tm
from toolmask.errors import LimitError, SchemaError

#: jsonschema's format checks (toolmask enforces the formats it knows)
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER
#: the wall clock is not what these tests check
NO_DEADLINE = dataclasses.replace(tm.DEFAULT_LIMITS, max_compile_seconds=3_600.0)


def accepted(c: tm.CompiledGrammar, value: Any) -> bool:
    """Whether ``value`` (compact JSON) is accepted in the end: by the grammar and by the
    grammar's post-decode checks (none for most grammars)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    m = c.matcher()
    return m.accept_bytes(text) and m.is_accepting() and not c.validate(text)


def accepted_values(schema: Any, candidates: list[Any], **options: Any) -> list[Any]:
    """The candidates the grammar of ``schema`` (compiled with ``options``) accepts as compact
    JSON, by the grammar alone."""
    compiled = tm.compile(tm.Grammar.from_json_schema(schema, **options))
    out = []
    for v in candidates:
        m = compiled.matcher()
        if m.accept_bytes(json.dumps(v, separators=(",", ":")).encode()) and m.is_accepting():
            out.append(v)
    return out


def assert_exact(c: tm.CompiledGrammar, schema: Any, values: Iterable[Any]) -> int:
    """Every value is accepted exactly when jsonschema (with its format checks) says it is
    valid; returns how many were valid, so a caller can check both sides were exercised."""
    v = jsonschema.Draft202012Validator(schema, format_checker=FORMATS)
    valid = 0
    for x in values:
        want = v.is_valid(x)
        valid += want
        assert accepted(c, x) == want, (x, want)
    return valid


def located_refusal(schema: Any) -> str | None:
    """None when ``schema`` compiles, else the refusal's kind (``unsupported:<keyword>``,
    ``limit:<field>``); an AssertionError when the refusal has no location or is an internal
    error shown as a SchemaError ("could not be compiled"). Other exceptions propagate."""
    try:
        tm.Grammar.from_json_schema(schema, limits=NO_DEADLINE)
    except SchemaError as e:
        assert isinstance(e.pointer, str), e
        assert "could not be compiled" not in e.message, e
        return f"unsupported:{e.keyword or 'schema'}"
    except LimitError as e:
        assert e.limit in {f.name for f in dataclasses.fields(tm.Limits)}, e
        return f"limit:{e.limit}"
    return None


def unlocated_refusals(mutants: Iterable[tuple[str, Any]]) -> list[str]:
    """For fuzz tests: each named schema that :func:`located_refusal` fails on, or that
    raises anything but a ToolmaskError (an internal error escaping), with why."""
    failures: list[str] = []
    for name, schema in mutants:
        try:
            located_refusal(schema)
        except AssertionError as e:
            failures.append(f"{name}: {e}")
        except Exception as e:  # an internal error escaped: what these tests are for
            failures.append(f"{name}: {type(e).__name__}: {e}")
    return failures
