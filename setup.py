"""Build the compiled kernel ``toolmask._native`` (C through the CPython API; see docs/masks.md).

Everything else lives in pyproject.toml. The extension needs only a C compiler and the Python
headers, the same toolchain llama-cpp-python needs, and POSIX threads for the batch fill's pool
(``-pthread`` on Linux and macOS; a Windows build runs batches on the calling thread).
``TOOLMASK_PURE_PYTHON=1`` at install time skips it (the pure-Python reference path is then the
one in use; ``toolmask.mask.backend()`` says which).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup

CSRC = Path("src/toolmask/_csrc")

THREADS = [] if sys.platform == "win32" else ["-pthread"]

ext_modules = []
if os.environ.get("TOOLMASK_PURE_PYTHON", "") in ("", "0"):
    ext_modules.append(
        Extension(
            "toolmask._native",
            sources=[str(CSRC / "native.c")],
            depends=[str(p) for p in sorted(CSRC.glob("*.h"))],
            extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wno-unused-function", *THREADS],
            extra_link_args=THREADS,
        )
    )

setup(ext_modules=ext_modules)
