"""``toolmask serve``'s engine table: ``--engine`` names a loader that is imported when the
command runs, so the server package imports no integration (they sit above it)."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import toolmask as tm
from toolmask.server.cli import ENGINES, _add_arguments, load_engine

SRC = Path(__file__).resolve().parents[2] / "src"


def serve_args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    _add_arguments(p)
    return p.parse_args(list(argv))


def test_every_engine_names_a_loader_that_exists() -> None:
    for name, target in ENGINES.items():
        module, sep, attr = target.partition(":")
        assert sep and module.startswith("toolmask.") and attr.isidentifier(), (name, target)
        # read the module's source, not the module: vLLM may not be installed here
        path = SRC.joinpath(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = next(
            ast.literal_eval(n.value)
            for n in tree.body
            if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__all__"
        )
        assert attr in exported, (name, target)


def test_engine_choices_are_the_table() -> None:
    assert serve_args().engine == "llama-cpp"
    for name in ENGINES:
        assert serve_args("--engine", name).engine == name
    with pytest.raises(SystemExit):
        serve_args("--engine", "no-such-engine")


def test_an_unknown_engine_is_a_clear_error() -> None:
    with pytest.raises(tm.ToolmaskError, match=r"unknown engine 'tgi' \(known: llama-cpp, vllm\)"):
        load_engine("tgi", serve_args(), [])


def test_engine_arguments_are_for_vllm_only() -> None:
    with pytest.raises(tm.ToolmaskError, match="after `--` are for --engine vllm only"):
        load_engine("llama-cpp", serve_args(), ["--dtype", "half"])


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed")
def test_vllm_without_vllm_names_the_extra() -> None:
    with pytest.raises(tm.ToolmaskError, match=r"pip install 'toolmask\[vllm\]'"):
        load_engine("vllm", serve_args("--engine", "vllm"), [])


def test_the_server_imports_no_integration() -> None:
    code = (
        "import sys, toolmask.cli, toolmask.server, toolmask.server.cli, toolmask.server._app\n"
        "bad = sorted(m for m in sys.modules if m.startswith('toolmask.integrations'))\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
