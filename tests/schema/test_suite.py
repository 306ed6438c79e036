"""The official JSON-Schema-Test-Suite (draft 2020-12, required + optional + format).

Every instance is a named test. Its classification (see ``conformance.py``) is compared with the
checked-in baseline ``suite_baseline.json``: any regression fails, and a false positive always
fails. Improve, then run ``pytest tests/schema/test_suite.py --update-baseline`` on purpose.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.schema.conformance import RANK, Case, Compiled, remotes, suite_cases

BASELINE_PATH = Path(__file__).with_name("suite_baseline.json")
CASES = suite_cases()
REMOTES = remotes()
_COMPILED: dict[str, Compiled] = {}
_RESULTS: dict[str, str] = {}
_BASELINE: dict[str, str] = json.loads(BASELINE_PATH.read_text()) if BASELINE_PATH.exists() else {}


def compiled_for(case: Case) -> Compiled:
    c = _COMPILED.get(case.group)
    if c is None:
        c = Compiled(case.schema, resources=REMOTES)
        _COMPILED[case.group] = c
    return c


@pytest.fixture(scope="module", autouse=True)
def _write_baseline(request: pytest.FixtureRequest) -> Any:
    yield
    if request.config.getoption("--update-baseline") and len(_RESULTS) == len(CASES):
        BASELINE_PATH.write_text(json.dumps(dict(sorted(_RESULTS.items())), indent=0) + "\n")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_suite_instance(case: Case, request: pytest.FixtureRequest) -> None:
    cls = compiled_for(case).classify(case.data, case.valid)
    _RESULTS[case.id] = cls
    assert cls != "false_positive", (
        f"invalid instance accepted: {json.dumps(case.data)[:200]} for {json.dumps(case.schema)}"
    )
    if request.config.getoption("--update-baseline"):
        return
    base = _BASELINE.get(case.id)
    assert base is not None, "no baseline entry: run with --update-baseline"
    assert RANK[cls] <= RANK[base], f"regressed from {base} to {cls}"


def test_suite_size() -> None:
    assert len(CASES) == 2225
    counts = Counter(_BASELINE.values())
    assert counts["false_positive"] == 0
