"""JSONSchemaBench (dev split, MaskBench form): every schema compiles or is rejected cleanly.

The records are vendored under tests/data/jsonschemabench (one gzipped JSON Lines file a split).

For each of the 4,754 schemas: compilation either succeeds or raises SchemaError / LimitError
within the default limits (anything else is a crash and fails), and every ``tests`` instance is
classified as in the official suite. The checked-in ``bench_baseline.json`` holds, per schema,
the compile outcome and the classes of its instances; any regression fails, any false positive
fails. Figures (compile rate per split, p50/p99 compile time) come from ``bench/conformance.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.schema.conformance import RANK, Compiled
from tests.vendored import BenchRecord, bench_records

BASELINE_PATH = Path(__file__).with_name("bench_baseline.json")
RECORDS = bench_records()
_RESULTS: dict[str, list[str]] = {}
_BASELINE: dict[str, list[str]] = (
    json.loads(BASELINE_PATH.read_text()) if BASELINE_PATH.exists() else {}
)


@pytest.fixture(scope="module", autouse=True)
def _write_baseline(request: pytest.FixtureRequest) -> Any:
    yield
    if request.config.getoption("--update-baseline") and len(_RESULTS) == len(RECORDS):
        BASELINE_PATH.write_text(json.dumps(dict(sorted(_RESULTS.items())), indent=0) + "\n")


@pytest.mark.parametrize("rec", RECORDS, ids=[r.name for r in RECORDS])
def test_bench_schema(rec: BenchRecord, request: pytest.FixtureRequest) -> None:
    c = Compiled(rec.schema)
    outcome = ["compiled" if c.kind is None else c.kind]
    for t in rec.tests:
        outcome.append(c.classify(t["data"], bool(t["valid"])))
    _RESULTS[rec.name] = outcome
    fps = [i for i, x in enumerate(outcome[1:]) if x == "false_positive"]
    assert not fps, f"invalid instances accepted: {fps} ({c.error})"
    if request.config.getoption("--update-baseline"):
        return
    base = _BASELINE.get(rec.name)
    assert base is not None, "no baseline entry: run with --update-baseline"
    if base[0] == "compiled":
        assert outcome[0] == "compiled", f"no longer compiles: {c.error}"
    for i, (now, was) in enumerate(zip(outcome[1:], base[1:], strict=True)):
        assert RANK[now] <= RANK[was], f"instance {i} regressed from {was} to {now}"
