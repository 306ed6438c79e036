"""``check_schema``: how each keyword of a schema is enforced, after an actual compilation.

Every keyword occurrence in the schema (found by walking the subschema positions the
vocabulary defines) gets one row: ``grammar`` (the decoder cannot produce a violation),
``validator`` (left, wholly or partly, to the post-decode check: the compiled grammar lists it
in its ``PostCheck``), ``annotation`` (constrains nothing; also a ``format`` toolmask does not
know, which JSON Schema 2020-12 reads as an annotation), ``unsupported`` (only with
``lenient=True``, where it is a warning and the validator checks it) or ``ignored`` (a keyword
JSON Schema 2020-12 does not define).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

from toolmask._pointer import escape_token
from toolmask.schema._entry import compile_json_schema
from toolmask.schema._keywords import KEYWORDS

__all__ = ["KeywordReport", "SchemaReport", "check_schema", "format_report", "load_schema"]

_UNKNOWN_FORMAT = (
    "unknown format: an annotation (2020-12 format-annotation vocabulary); "
    "strict_formats refuses it"
)

_BACKREFERENCE = (
    "backreference: the grammar reads each one as its group's language (a superset), "
    "the validator checks the exact pattern"
)

_SCHEMA: tuple[str, ...] = (
    "not",
    "if",
    "then",
    "else",
    "additionalProperties",
    "additionalItems",
    "contains",
)
_SCHEMA += ("propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema")
_SCHEMA_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")


@dataclass(frozen=True, slots=True)
class KeywordReport:
    pointer: str  # JSON pointer of the subschema holding the keyword
    keyword: str
    enforcement: str  # grammar | validator | annotation | unsupported | ignored
    note: str


@dataclass(frozen=True, slots=True)
class SchemaReport:
    keywords: tuple[KeywordReport, ...]
    rules: int
    warnings: tuple[str, ...]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for k in self.keywords:
            out[k.enforcement] = out.get(k.enforcement, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "rules": self.rules,
            "counts": self.counts(),
            "warnings": list(self.warnings),
            "keywords": [
                {
                    "pointer": k.pointer,
                    "keyword": k.keyword,
                    "enforcement": k.enforcement,
                    "note": k.note,
                }
                for k in self.keywords
            ],
        }


def _occurrences(schema: Any, pointer: str, out: list[tuple[str, str, Any]]) -> None:
    if not isinstance(schema, dict):
        return
    for key, value in schema.items():
        out.append((pointer, key, value))
        here = f"{pointer}/{escape_token(key)}"
        if key in _SCHEMA:
            _occurrences(value, here, out)
        elif key in _SCHEMA_MAP and isinstance(value, dict):
            for name, sub in value.items():
                _occurrences(sub, f"{here}/{escape_token(name)}", out)
        elif key in _SCHEMA_LIST and isinstance(value, list):
            for i, sub in enumerate(value):
                _occurrences(sub, f"{here}/{i}", out)
        elif key == "items":
            if isinstance(value, list):  # draft-07 array form
                for i, sub in enumerate(value):
                    _occurrences(sub, f"{here}/{i}", out)
            else:
                _occurrences(value, here, out)
        elif key == "dependencies" and isinstance(value, dict):
            for name, sub in value.items():
                if isinstance(sub, dict):
                    _occurrences(sub, f"{here}/{escape_token(name)}", out)


def _has_backreference(pattern: str) -> bool:
    from toolmask.errors import ToolmaskError
    from toolmask.schema._langs import has_backreference

    try:
        return has_backreference(pattern)
    except ToolmaskError:  # compiled, so it parses: only a pattern elsewhere in the schema
        return False


def check_schema(schema: Any, **options: Any) -> SchemaReport:
    """Compile ``schema`` (options as :func:`compile_json_schema`) and report each keyword.

    Raises SchemaError / LimitError as compilation does (unsupported keywords, unless
    ``lenient=True``).
    """
    from toolmask.schema._formats import FORMATS

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grammar = compile_json_schema(schema, **options)
    post: set[tuple[str, str]] = set()
    for check in grammar.checks:
        post.update(check.keywords)
    notes = {str(w.message) for w in caught}
    found: list[tuple[str, str, Any]] = []
    _occurrences(schema, "", found)
    rows: list[KeywordReport] = []
    for pointer, keyword, value in found:
        info = KEYWORDS.get(keyword)
        if keyword == "format" and isinstance(value, str) and value not in FORMATS:
            # compilation succeeded, so strict_formats was off: an annotation
            rows.append(KeywordReport(pointer or "/", keyword, "annotation", _UNKNOWN_FORMAT))
            notes.add(f"{pointer or '#'}: format {value!r} is not known: an annotation")
            continue
        if (pointer, keyword) in post:
            how = "validator"
            note = (info.note if info and info.note else "") or "checked after decoding"
            if keyword == "pattern" and isinstance(value, str) and _has_backreference(value):
                note = _BACKREFERENCE
        elif info is None:
            how, note = "ignored", "not a JSON Schema 2020-12 keyword"
        elif info.enforcement == "unsupported":
            how, note = "unsupported", info.note or "left to the post-decode validator (lenient)"
        else:
            how, note = info.enforcement, info.note
        rows.append(KeywordReport(pointer or "/", keyword, how, note))
    return SchemaReport(tuple(rows), len(grammar.rules), tuple(sorted(notes)))


def format_report(report: SchemaReport) -> str:
    """A plain-text table for the terminal."""
    width = max([len(k.pointer) for k in report.keywords] + [7])
    kw = max([len(k.keyword) for k in report.keywords] + [7])
    lines = [f"{'pointer':{width}s}  {'keyword':{kw}s}  {'enforced by':11s}  note"]
    for k in report.keywords:
        lines.append(f"{k.pointer:{width}s}  {k.keyword:{kw}s}  {k.enforcement:11s}  {k.note}")
    counts = ", ".join(f"{n} {what}" for what, n in sorted(report.counts().items()))
    lines.append(f"\n{len(report.keywords)} keywords: {counts}; grammar of {report.rules} rules")
    for w in report.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines) + "\n"


def load_schema(path: str) -> Any:
    """A JSON file (``-``: stdin); a JSONSchemaBench record's ``schema`` is taken from it."""
    import sys

    if path == "-":
        data = json.load(sys.stdin)
    else:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    if isinstance(data, dict) and "schema" in data and "tests" in data:
        data = data["schema"]
    return data
