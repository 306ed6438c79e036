"""The compiled kernel is the path in use.

Not skipped when the kernel is missing: a build that silently fell back to the pure-Python
reference (no compiler, ``TOOLMASK_PURE_PYTHON=1``, ``TOOLMASK_BACKEND=python``) fails here, so
CI cannot pass on the slow path. The reference itself is still exercised in the same run: the
automaton and mask tests are parametrized over both backends.
"""

from __future__ import annotations

import os

import pytest

import toolmask as tm
from toolmask.mask import backend


def test_backend_in_use() -> None:
    assert os.environ.get("TOOLMASK_BACKEND", "auto") != "python", "TOOLMASK_BACKEND=python"
    assert backend() == "native", "toolmask._native is not built: pip install -e . (needs gcc)"
    g = tm.Grammar.from_json_schema({"type": "integer"})
    assert tm.compile(g).backend == "native"
    assert tm.GrammarCompiler().compile(g).backend == "native"


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="backend 'rust'"):
        tm.GrammarCompiler(backend="rust")
