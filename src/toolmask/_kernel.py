"""Which implementation of the hot path is in use: the compiled kernel or the pure-Python one.

The compiled kernel is the extension module ``toolmask._native`` (C through the CPython API,
built by pip from ``src/toolmask/_csrc``). The pure-Python automaton and masks stay as the
reference: tests compare the two state by state.

``TOOLMASK_BACKEND`` (read once, at import) chooses: ``python`` forces the reference path,
``native`` requires the kernel (ImportError if it is missing), unset or ``auto`` uses the
kernel when it imports. :func:`backend` says which one ``tm.compile`` uses by default; the
compiler takes the implementation itself from ``toolmask._kernels.choose_kernel``.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Literal

__all__ = ["BACKENDS", "BackendName", "backend", "native_module", "resolve_backend"]

BackendName = Literal["native", "python"]
BACKENDS: tuple[BackendName, ...] = ("native", "python")

_native: ModuleType | None
_IMPORT_ERROR: ImportError | None = None
try:
    _native = importlib.import_module("toolmask._native")
except ImportError as e:  # not built (TOOLMASK_PURE_PYTHON=1 at install, or no compiler)
    _native = None
    _IMPORT_ERROR = e

_CHOICE = os.environ.get("TOOLMASK_BACKEND", "auto").strip().lower() or "auto"
if _CHOICE not in ("auto", "native", "python"):
    raise ValueError(f"TOOLMASK_BACKEND={_CHOICE!r}: expected 'native', 'python' or 'auto'")
if _CHOICE == "native" and _native is None:
    raise ImportError(
        "TOOLMASK_BACKEND=native but the compiled kernel toolmask._native is not built "
        f"({_IMPORT_ERROR}); reinstall with a C compiler: pip install -e ."
    )


def backend() -> BackendName:
    """The backend ``tm.compile`` uses by default: ``"native"`` (the compiled kernel) or
    ``"python"`` (the reference, when forced by ``TOOLMASK_BACKEND=python`` or not built)."""
    if _CHOICE == "python" or _native is None:
        return "python"
    return "native"


def resolve_backend(name: str | None) -> BackendName:
    """``name`` checked (None: :func:`backend`); ValueError for an unknown one, ImportError for
    ``"native"`` when the kernel is not built."""
    if name is None:
        return backend()
    if name not in BACKENDS:
        raise ValueError(f"backend {name!r}: expected one of {BACKENDS}")
    if name == "native" and _native is None:
        raise ImportError(f"the compiled kernel toolmask._native is not built ({_IMPORT_ERROR})")
    return name


def native_module() -> ModuleType:
    """The extension module (ImportError when it is not built)."""
    if _native is None:
        raise ImportError(f"the compiled kernel toolmask._native is not built ({_IMPORT_ERROR})")
    return _native
