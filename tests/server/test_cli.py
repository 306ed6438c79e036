"""``toolmask serve``'s engine table (``--engine`` names a loader that is imported when the
command runs, so the server package imports no integration: they sit above it), and the memory
default of ``--engine vllm``: a pure function of the platform, what the user passed, the
environment, the free memory and the model (no vLLM needed)."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import toolmask as tm
from toolmask.errors import ToolmaskError
from toolmask.server.cli import (
    ENGINES,
    VLLM_CPU_RESERVE,
    _add_arguments,
    load_engine,
    vllm_cpu_kv_bytes,
    vllm_memory_args,
)

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


GIB = 2**30
#: SmolLM2-135M in float32: 30 layers, 3 KV heads of 64
SMOL_TOKEN = 2 * 30 * 3 * 64 * 4
SMOL_WEIGHTS = 540 * 2**20


def args(
    platform: str = "cpu",
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    available: int = 16 * GIB,
) -> list[str]:
    return vllm_memory_args(
        platform,
        extra,
        env or {},
        available=available,
        weights=SMOL_WEIGHTS,
        per_token=SMOL_TOKEN,
        max_model_len=4096,
        max_num_seqs=16,
    )


def test_a_gpu_keeps_vllms_own_default() -> None:
    assert args("cuda") == [] and args("rocm") == []


def test_what_the_user_chose_wins() -> None:
    for flag in (
        "--gpu-memory-utilization",
        "--device-memory-utilization",
        "--kv-cache-memory-bytes",
    ):
        assert args(extra=(flag, "0.5")) == []
        assert args(extra=(f"{flag}=0.5",)) == []
    assert args(env={"VLLM_CPU_KVCACHE_SPACE": "4"}) == []
    assert args(env={"VLLM_CPU_KVCACHE_SPACE": ""}) != []  # empty: vLLM ignores it too


def test_cpu_sizes_the_kv_cache_from_free_memory_not_from_the_nodes_total() -> None:
    """The issue's machine: 15.9 GiB free of 17.3. vLLM's 0.92 default asks 15.9 GiB up front
    and dies; toolmask asks what 16 sequences of 4096 tokens need (2.8 GiB here)."""
    out = args(available=int(15.9 * GIB))
    assert out[0] == "--kv-cache-memory-bytes"
    size = int(out[1])
    assert size == (SMOL_TOKEN * 4096 * 16) // 2**20 * 2**20
    assert size % 2**20 == 0 and size < 15.9 * GIB


def test_little_free_memory_caps_the_cache_at_half_of_what_is_left() -> None:
    available = 4 * GIB
    size = vllm_cpu_kv_bytes(
        available=available,
        weights=SMOL_WEIGHTS,
        per_token=SMOL_TOKEN,
        max_model_len=4096,
        max_num_seqs=16,
    )
    assert size <= (available - SMOL_WEIGHTS - VLLM_CPU_RESERVE) // 2
    assert size >= SMOL_TOKEN * 4096  # still one full-length sequence


def test_too_little_memory_for_one_sequence_says_what_to_lower() -> None:
    with pytest.raises(ToolmaskError, match="--ctx-size") as e:
        vllm_cpu_kv_bytes(
            available=int(3.6 * GIB),
            weights=SMOL_WEIGHTS,
            per_token=SMOL_TOKEN,
            max_model_len=32768,
            max_num_seqs=16,
        )
    assert "free" in str(e.value) and "kv-cache-memory-bytes" in str(e.value)
