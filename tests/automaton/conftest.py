"""Every automaton test runs on both backends: the pure-Python reference and the compiled kernel.

The module-scoped autouse fixture swaps the test module's ``build_automaton`` for the kernel's
builder; tests that look at internals only the reference has ask :func:`only_python`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolmask._kernel import backend
from toolmask.automaton._native import build_native_automaton

BACKENDS = ["python", "native"] if backend() == "native" else ["python"]


@pytest.fixture(scope="module", autouse=True, params=BACKENDS)
def automaton_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as mp:
        if request.param == "native" and hasattr(request.module, "build_automaton"):
            mp.setattr(request.module, "build_automaton", build_native_automaton)
        yield request.param


def only_python(a: object) -> None:
    """Skip when ``a`` is the compiled automaton (the test reads reference internals)."""
    if type(a).__module__ == "toolmask._native":
        pytest.skip("reads internals of the pure-Python automaton")
