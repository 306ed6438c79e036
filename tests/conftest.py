from __future__ import annotations

import os

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
