"""Shared machinery for the conformance runs (JSON-Schema-Test-Suite, JSONSchemaBench).

Each instance is classified:

* ``pass``            the grammar accepts it exactly when it is valid;
* ``pass_validator``  invalid, the grammar accepts it, and the post-decode validator rejects it
                      (the keyword is one the grammar leaves to the validator);
* ``false_negative``  valid, but rejected (by the grammar, or the validator);
* ``unsupported``     the schema was rejected with a SchemaError naming the keyword;
* ``limit``           the schema hit a resource cap (LimitError);
* ``false_positive``  invalid and accepted in the end. The worst outcome: must stay at zero.

An instance is serialised compact, keys in their own order and re-ordered to the order the
grammar emits (schema ``properties`` order); the grammar's verdict is "accepted" when any
serialisation is accepted, so an invalid instance accepted in any form is a false positive.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import toolmask as tm
from tests.vendored import SUITE_DIR, bench_records, suite_files, suite_remotes
from toolmask.errors import LimitError, SchemaError

RANK = {
    "pass": 0,
    "pass_validator": 1,
    "false_negative": 2,
    "unsupported": 2,
    "limit": 2,
    "false_positive": 9,
}


def remotes() -> dict[str, Any]:
    return suite_remotes()


@dataclass(frozen=True)
class Case:
    id: str
    group: str
    schema: Any
    data: Any
    valid: bool


def suite_cases() -> list[Case]:
    cases: list[Case] = []
    for f in suite_files():
        rel = f.relative_to(SUITE_DIR).as_posix()
        groups = json.loads(f.read_text(encoding="utf-8"))
        for gi, g in enumerate(groups):
            gid = f"{rel}#{gi}"
            for ti, t in enumerate(g["tests"]):
                cases.append(Case(f"{gid}/{ti}", gid, g["schema"], t["data"], bool(t["valid"])))
    return cases


def key_order(schema: Any) -> dict[str, int]:
    """Rank of every property name in the order the grammar emits keys (schema order)."""
    rank: dict[str, int] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                for k in props:
                    rank.setdefault(k, len(rank))
            req = node.get("required")
            if isinstance(req, list):
                for k in req:
                    if isinstance(k, str):
                        rank.setdefault(k, len(rank))
            for kw in ("dependentRequired", "dependentSchemas", "dependencies"):
                deps = node.get(kw)
                if isinstance(deps, dict):
                    for k, v in deps.items():
                        rank.setdefault(k, len(rank))
                        for x in v if isinstance(v, list) else ():
                            if isinstance(x, str):
                                rank.setdefault(x, len(rank))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    return rank


def reorder(value: Any, rank: dict[str, int]) -> Any:
    if isinstance(value, dict):
        ranked = sorted((k for k in value if k in rank), key=lambda k: rank[k])
        rest = [k for k in value if k not in rank]
        return {k: reorder(value[k], rank) for k in ranked + rest}
    if isinstance(value, list):
        return [reorder(v, rank) for v in value]
    return value


def serialisations(data: Any, schema: Any, *, indent: int | None = None) -> list[bytes]:
    rank = key_order(schema)
    forms = [data, reorder(data, rank)]
    out: list[bytes] = []
    for f in forms:
        if indent is None:
            text = json.dumps(f, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        else:
            text = json.dumps(f, ensure_ascii=False, indent=indent, allow_nan=False)
        b = text.encode("utf-8", "surrogatepass")
        if b not in out:
            out.append(b)
    return out


#: the default limits without the wall-clock cap, so that a verdict never depends on how busy
#: the machine is (every other cap is deterministic)
HARNESS_LIMITS = dataclasses.replace(tm.DEFAULT_LIMITS, max_compile_seconds=600.0)


class Compiled:
    """One schema compiled once; classifies instances."""

    def __init__(self, schema: Any, *, resources: dict[str, Any] | None = None, **options: Any):
        self.error: str | None = None
        self.kind: str | None = None
        #: why the schema was refused: the Limits field of a LimitError, the keyword of a
        #: SchemaError ("schema" when it names none); None when it compiled
        self.reason: str | None = None
        self.compiled: Any = None
        self.schema = schema
        self.indent = options.get("indent") if options.get("whitespace") == "indent" else None
        try:
            g = tm.Grammar.from_json_schema(
                schema, resources=resources, limits=HARNESS_LIMITS, **options
            )
            self.compiled = tm.compile(g, limits=HARNESS_LIMITS)
        except SchemaError as e:
            self.kind, self.error, self.reason = "unsupported", str(e), e.keyword or "schema"
        except LimitError as e:
            self.kind, self.error, self.reason = "limit", str(e), e.limit

    def grammar_accepts(self, data: Any) -> tuple[bool, bytes]:
        forms = serialisations(data, self.schema, indent=self.indent)
        for b in forms:
            m = self.compiled.matcher()
            if m.accept_bytes(b) and m.is_accepting():
                return True, b
        return False, forms[0]

    def classify(self, data: Any, valid: bool) -> str:
        if self.kind is not None:
            return self.kind
        accepted, text = self.grammar_accepts(data)
        if valid:
            if not accepted:
                return "false_negative"
            return "pass" if not self.compiled.validate(text) else "false_negative"
        if not accepted:
            return "pass"
        if self.compiled.grammar.checks and self.compiled.validate(text):
            return "pass_validator"
        return "false_positive"

    def grammar_only_pass(self, data: Any, valid: bool) -> bool:
        if self.kind is not None:
            return False
        return self.grammar_accepts(data)[0] == valid


def iter_bench(split: str | None = None) -> Iterator[tuple[str, Any, list[dict[str, Any]]]]:
    for rec in bench_records(split):
        yield rec.name, rec.schema, rec.tests
