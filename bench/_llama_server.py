"""Build llama.cpp's own ``llama-server`` for the benchmarks, from the llama.cpp source that
llama-cpp-python's source distribution vendors (so the peer is the same llama.cpp that runs
inside ``toolmask serve``).

    python bench/_llama_server.py          # builds once into bench/.build/, prints the binary

The build takes about 8 minutes on 2 cores and is cached (``bench/.build/llama-server-<version>``).
It uses the same flags as the Makefile's llama-cpp-python build (no AMX kernels on x86_64).
Never part of ``make test``.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "bench" / ".build"


def llama_cpp_python_version() -> str:
    return importlib.metadata.version("llama-cpp-python")


def ensure_llama_server(version: str | None = None, *, jobs: int | None = None) -> Path:
    """The path of a ``llama-server`` built from llama-cpp-python ``version``'s sdist (default:
    the installed version); built on first use."""
    version = version or llama_cpp_python_version()
    out = BUILD / f"llama-server-{version}"
    binary = out / "llama-server"
    if binary.is_file():
        return binary
    BUILD.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD) as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--disable-pip-version-check",
                "-q",
                "-d",
                tmp,
                f"llama-cpp-python=={version}",
            ],
            check=True,
        )
        (sdist,) = Path(tmp).glob("llama_cpp_python-*.tar.gz")
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        (src,) = Path(tmp).glob("llama_cpp_python-*/vendor/llama.cpp")
        flags = ""
        if platform.machine() == "x86_64":
            flags = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
        build = Path(tmp) / "build"
        subprocess.run(
            [
                "cmake",
                "-S",
                str(src),
                "-B",
                str(build),
                "-DCMAKE_BUILD_TYPE=Release",
                "-DLLAMA_CURL=OFF",
                "-DLLAMA_BUILD_TESTS=OFF",
                "-DLLAMA_BUILD_EXAMPLES=OFF",
                "-DLLAMA_BUILD_SERVER=ON",
                f"-DCMAKE_C_FLAGS={flags}",
                f"-DCMAKE_CXX_FLAGS={flags}",
            ],
            check=True,
        )
        jobs = jobs or len(os.sched_getaffinity(0))
        subprocess.run(
            ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs)],
            check=True,
        )
        out.mkdir(parents=True, exist_ok=True)
        (built,) = build.glob("bin/llama-server")
        for lib in build.glob("bin/*.so*"):
            shutil.copy2(lib, out / lib.name)
        shutil.copy2(built, binary)
    return binary


if __name__ == "__main__":
    print(ensure_llama_server())
