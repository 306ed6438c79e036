"""``toolmask serve --engine vllm``'s memory default: a pure function of the platform, what the
user passed, the environment, the free memory and the model (no vLLM needed)."""

from __future__ import annotations

import pytest

from toolmask.errors import ToolmaskError
from toolmask.server.cli import VLLM_CPU_RESERVE, vllm_cpu_kv_bytes, vllm_memory_args

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
