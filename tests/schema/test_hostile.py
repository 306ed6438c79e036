"""Hostile schemas compile or are refused cleanly, then decode, each in its own process.

Every case of :mod:`tests.schema.hostile_cases` (and schemas hypothesis builds from the same
ingredients: deep, wide, long, huge numbers, patterns) runs in a child process with a 3 GB
address-space cap and a time bound: a crash (RecursionError, MemoryError), a hang or a cap
overrun fails the test. The schema must compile or raise a located SchemaError / a LimitError
that names a real :class:`~toolmask.limits.Limits` field, the one :data:`EXPECTED` says; when it
compiles, the child builds masks over the Qwen3 vocabulary and takes up to 200 decode steps
(forced bytes, else an allowed token), none of which may be refused.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolmask as tm
from tests.schema.hostile_cases import CASES, EXPECTED

ROOT = Path(__file__).resolve().parents[2]
LIMIT_FIELDS = {f.name for f in dataclasses.fields(tm.Limits)}
#: a hang detector, not a performance assertion: every case takes seconds
TIMEOUT_S = 600


def run_child(request: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.schema.hostile_child"],
        input=json.dumps({"memory_bytes": 3 << 30, **request}),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=ROOT,
        env=env,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, f"child failed (rc {proc.returncode}): {proc.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def check_clean(result: dict[str, Any]) -> None:
    outcome = result["outcome"]
    assert outcome in ("compiled", "SchemaError", "LimitError"), result
    if outcome == "SchemaError":
        assert isinstance(result["pointer"], str) and result["keyword"], result
    if outcome == "LimitError":
        assert result["limit"] in LIMIT_FIELDS, result


def test_expectations_cover_every_case() -> None:
    assert set(EXPECTED) == {name for name, _ in CASES}
    for want in EXPECTED.values():
        assert want in ("compiled", "SchemaError") or want in LIMIT_FIELDS, want


@pytest.mark.parametrize("name", [name for name, _ in CASES])
def test_hostile_case(name: str) -> None:
    result = run_child({"case": name, "vocab": "qwen3", "steps": 200, "seed": 0})
    check_clean(result)
    got = result["limit"] if result["outcome"] == "LimitError" else result["outcome"]
    assert got == EXPECTED[name], result


# -- generated: the same ingredients at sizes hypothesis picks ----------------------------------


def _nest(kind: str, depth: int) -> Any:
    node: Any = {"type": "string", "maxLength": 3}
    for i in range(depth):
        if kind == "object":
            node = {"type": "object", "properties": {f"k{i % 3}": node}}
        elif kind == "array":
            node = {"type": "array", "items": node}
        elif kind == "anyOf":
            node = {"anyOf": [node, {"type": "integer"}]}
        else:
            node = {"not": node}
    return node


nested = st.builds(_nest, st.sampled_from(["object", "array", "anyOf", "not"]), st.integers(1, 400))
wide = st.one_of(
    st.integers(1, 3000).map(
        lambda n: {"type": "object", "properties": {f"p{i}": {"type": "boolean"} for i in range(n)}}
    ),
    st.integers(1, 20000).map(lambda n: {"enum": [f"v{i}" for i in range(n)]}),
    st.integers(1, 400).map(lambda n: {"oneOf": [{"const": i} for i in range(n)]}),
    st.tuples(st.integers(1, 10), st.integers(1, 6)).map(
        lambda t: {
            "allOf": [
                {"anyOf": [{"required": [f"k{i}_{j}"]} for j in range(t[1])]} for i in range(t[0])
            ]
        }
    ),
    st.tuples(st.integers(1, 40), st.booleans()).map(
        lambda t: {
            "type": "object",
            "patternProperties": {
                (f"^x{i}-" if t[1] else f"[{chr(97 + i % 26)}{i}]"): {"minimum": i}
                for i in range(t[0])
            },
        }
    ),
)
numbers = st.one_of(
    st.integers(1, 500).map(lambda k: {"type": "integer", "maximum": 10**k, "minimum": -(10**k)}),
    st.integers(1, 320).map(lambda k: {"type": "number", "multipleOf": float(f"1e-{k}")}),
    st.integers(1, 10**9).map(lambda n: {"type": "string", "minLength": n}),
    st.integers(1, 10**7).map(lambda n: {"type": "array", "maxItems": n, "minItems": n // 2}),
)
patterns = st.one_of(
    st.tuples(st.integers(1, 5000), st.integers(1, 5000)).map(
        lambda t: {"type": "string", "pattern": f"^(?:a{{{t[0]}}}){{{t[1]}}}$"}
    ),
    st.integers(1, 30).map(lambda n: {"type": "string", "pattern": "(a|b)*a" + "(a|b)" * n}),
    st.integers(1, 200).map(lambda n: {"type": "string", "pattern": "(" * n + "a" + ")" * n}),
    st.integers(1, 30).map(
        lambda n: {"type": "string", "pattern": "^" + "".join(f"(?!x{i})" for i in range(n)) + ".*"}
    ),
)
hostile = st.one_of(nested, wide, numbers, patterns)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(schema=hostile, seed=st.integers(0, 2**16))
def test_generated_hostile_schema(schema: Any, seed: int) -> None:
    check_clean(run_child({"schema": schema, "vocab": "qwen3", "steps": 100, "seed": seed}))
