"""``toolmask serve``: the command-line entry of the OpenAI-compatible server.

``add_serve_parser(subparsers)`` adds the ``serve`` subcommand to an argparse parser (it imports
nothing heavy: FastAPI, uvicorn and llama.cpp load only when the command runs);
``run_serve(args)`` loads the model and serves until interrupted. ``python -m toolmask.server``
runs the same command on its own.

What decodes is named by ``--engine`` and looked up in :data:`ENGINES`, a table of
``"module:function"`` loaders resolved with :mod:`importlib` when the command runs. The server
imports no engine integration itself (``toolmask.integrations`` sits above it and imports the
server's public API), so a new engine is one row in the table and one loader in its own
package. A loader takes the parsed arguments and the arguments after ``--`` and returns a
:class:`ServedModel`.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolmask.decoding import mode_names
from toolmask.errors import ToolmaskError

if TYPE_CHECKING:
    from toolmask.backends import Backend
    from toolmask.server._engine import JobQueue

__all__ = [
    "ENGINES",
    "VLLM_CPU_RESERVE",
    "EngineLoader",
    "ServedModel",
    "add_format_argument",
    "add_serve_parser",
    "load_engine",
    "load_llama_cpp",
    "main",
    "model_name_for",
    "run_serve",
    "server_defaults",
    "split_engine_args",
    "vllm_cpu_kv_bytes",
    "vllm_memory_args",
]

log = logging.getLogger("toolmask.server")


@dataclass(frozen=True, slots=True)
class ServedModel:
    """What an engine loader returns: the model the front end renders prompts and reads the
    vocabulary from, the job queue that decodes (``None``: the server's own
    :class:`~toolmask.server.Engine` over ``backend``) and the name clients use."""

    backend: Backend
    engine: JobQueue | None
    name: str


#: a loader: (parsed arguments, arguments after ``--``) -> the served model
EngineLoader = Callable[[argparse.Namespace, list[str]], ServedModel]

#: ``--engine`` name -> ``"module:function"`` of its loader, imported when ``serve`` starts (so
#: the server never imports an integration: see the module docstring)
ENGINES: dict[str, str] = {
    "llama-cpp": "toolmask.server.cli:load_llama_cpp",
    "vllm": "toolmask.integrations.vllm:load_serve_engine",
}


def load_engine(name: str, args: argparse.Namespace, extra: list[str]) -> ServedModel:
    """Import the loader :data:`ENGINES` names for ``name`` and run it. Raises
    :class:`ToolmaskError` for an unknown name or a loader that cannot be imported (the
    integration's own error, naming the extra to install, passes through)."""
    target = ENGINES.get(name)
    if target is None:
        raise ToolmaskError(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})")
    module, _, attr = target.partition(":")
    try:
        loader: EngineLoader = getattr(importlib.import_module(module), attr)
    except ImportError as e:
        raise ToolmaskError(f"--engine {name} could not be loaded: {e}") from e
    return loader(args, extra)


def load_llama_cpp(args: argparse.Namespace, extra: list[str]) -> ServedModel:
    """``--engine llama-cpp``: a GGUF in-process (a file or a catalogue name; default: the
    catalogue's default model, pulled on first use), decoded by the server's own worker
    thread."""
    from toolmask.backends.llama_cpp import LlamaCpp
    from toolmask.models import CATALOGUE, DEFAULT_MODEL, resolve_model

    if extra:
        raise ToolmaskError("arguments after `--` are for --engine vllm only")
    path = resolve_model(args.model)
    log.info("loading %s", path)
    backend = LlamaCpp(path, n_ctx=args.ctx_size, n_threads=args.threads)
    named = DEFAULT_MODEL if args.model is None else args.model if args.model in CATALOGUE else None
    return ServedModel(backend, None, args.model_name or named or model_name_for(path))


def add_format_argument(p: argparse.ArgumentParser) -> None:
    """``--format``, shared by ``serve`` and the ``demo`` and ``chat`` commands."""
    from toolmask.tools import FORMATS

    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", *sorted(FORMATS)],
        help="wire format of the model's tool calls (default: auto, read from its chat "
        "template and special tokens; hermes when they name none)",
    )


def add_serve_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to ``subparsers`` (from ``ArgumentParser.add_subparsers``); sets
    ``run=run_serve`` as the command's default."""
    s: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve a local model over an OpenAI-compatible HTTP API",
        description="Serve a local GGUF (default: the embedded SmolLM2-135M-Instruct) at "
        "/v1/chat/completions with tools, tool_choice, parallel_tool_calls, response_format "
        "and streaming; tool calls and JSON are valid by construction.",
    )
    _add_arguments(s)
    s.set_defaults(run=run_serve)
    return s


def _add_arguments(s: argparse.ArgumentParser) -> None:
    from toolmask.server._defaults import BUILTIN

    s.add_argument(
        "--engine",
        choices=tuple(ENGINES),
        default="llama-cpp",
        help="what decodes: llama-cpp (default; one sequence at a time, a GGUF) or vllm "
        "(continuous batching; a Hugging Face model folder, or a GGUF converted once with "
        "toolmask.backends.transformers.export_hf; needs the vllm or vllm-cpu extra). "
        "Arguments after `--` go to vLLM's engine unchanged (e.g. -- --tensor-parallel-size 2)",
    )
    s.add_argument(
        "--model",
        help="a GGUF file or a catalogue name (toolmask models; pulled on first use; default: "
        "the catalogue's default model), or with --engine vllm a Hugging Face model folder "
        "(default there: the test model SmolLM2, converted for vLLM on first use)",
    )
    s.add_argument(
        "--max-num-seqs",
        type=int,
        default=16,
        help="--engine vllm: sequences decoded together in one step (default: 16)",
    )
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    s.add_argument(
        "--model-name",
        help="the name clients use for the model (default: its catalogue name, else the GGUF "
        "file name without .gguf)",
    )
    s.add_argument("--ctx-size", type=int, default=4096, help="context window (default: 4096)")
    s.add_argument(
        "--queue-size",
        type=int,
        default=16,
        help="requests that may wait for the model; more are answered 429 (default: 16)",
    )
    s.add_argument("--threads", type=int, help="CPU threads for llama.cpp (default: all cores)")
    add_format_argument(s)
    d = BUILTIN
    s.add_argument(
        "--temperature",
        type=float,
        help="temperature for requests that leave it out (default: the model's GGUF "
        f"general.sampling.temp, else {d.temperature})",
    )
    s.add_argument(
        "--top-p",
        type=float,
        help=f"top_p default (default: general.sampling.top_p, else {d.top_p})",
    )
    s.add_argument(
        "--top-k",
        type=int,
        help=f"top_k default (default: general.sampling.top_k, else {d.top_k})",
    )
    s.add_argument(
        "--min-p",
        type=float,
        help=f"min_p default (default: general.sampling.min_p, else {d.min_p})",
    )
    s.add_argument(
        "--sampling",
        choices=mode_names(),
        help="decoding mode for requests that do not name one in their 'sampling' field: plain "
        "(mask each token), exact (finite branches chosen by whole-sequence probability), "
        "aligned (sequential Monte Carlo; beam search when greedy); see docs/sampling.md "
        "(default: plain)",
    )
    s.add_argument(
        "--max-tokens",
        type=int,
        help="completion tokens for requests that give no max_tokens; 0 = the rest of the "
        f"context (default: {d.max_tokens}, so one rambling request cannot hold the worker)",
    )
    s.add_argument(
        "--reasoning-budget",
        type=int,
        help="at most this many tokens of reasoning per reply, then the reasoning channel is "
        "closed and the reply goes on (default: no bound; a request's reasoning_budget wins)",
    )
    s.add_argument(
        "--no-tool-reminder",
        dest="tool_reminder",
        action="store_false",
        help="do not follow the user's message with the one-line reminder of how to call a "
        "function (only used when the model's chat template does not advertise tools itself)",
    )
    s.add_argument(
        "--strict-formats",
        action="store_true",
        help="a schema with a format toolmask does not know is a 400 "
        "(default: the format is an annotation, as JSON Schema 2020-12 says)",
    )
    s.add_argument(
        "--no-grammar",
        dest="constrain",
        action="store_false",
        help="decode tool turns without a mask; replies are still read by the format's parser "
        "(the unconstrained baseline the benchmarks compare with)",
    )
    s.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="log level (default: info)",
    )


def model_name_for(path: Path) -> str:
    """The default served name: the file name without ``.gguf``."""
    name = path.name
    return name[: -len(".gguf")] if name.lower().endswith(".gguf") else name


def server_defaults(args: argparse.Namespace, metadata: Any) -> Any:
    """The :class:`~toolmask.server._defaults.ServerDefaults` of ``toolmask serve``: built-in,
    then the model's ``general.sampling.*`` metadata, then the flags given."""
    from toolmask.sampling import SamplingParams
    from toolmask.server._defaults import BUILTIN

    if args.max_tokens is not None and args.max_tokens < 0:
        raise ToolmaskError("--max-tokens must be >= 0 (0: the rest of the context)")
    out = BUILTIN.resolve(
        metadata,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        min_p=args.min_p,
    )
    if args.max_tokens is not None:
        out = dataclasses.replace(out, max_tokens=args.max_tokens or None)
    mode = getattr(args, "sampling", None)
    if mode is not None:
        out = dataclasses.replace(out, sampling=mode, source=f"{out.source}; flags (sampling)")
    budget = getattr(args, "reasoning_budget", None)
    if budget is not None:
        if budget < 0:
            raise ToolmaskError("--reasoning-budget must be >= 0")
        out = dataclasses.replace(out, reasoning_budget=budget)
    try:  # the same checks a request's values get
        SamplingParams(
            temperature=out.temperature, top_p=out.top_p, top_k=out.top_k, min_p=out.min_p
        )
    except ValueError as e:
        raise ToolmaskError(f"bad sampling default: {e}") from e
    return out


def run_serve(args: argparse.Namespace) -> int:
    """Load the model (:func:`load_engine`), build the app and serve with uvicorn until
    interrupted. Returns 0."""
    try:
        import uvicorn
    except ImportError as e:
        raise ToolmaskError("the server needs uvicorn: pip install 'toolmask[server]'") from e
    from toolmask.server._app import create_app

    level = getattr(logging, args.log_level.upper())
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    extra = list(getattr(args, "engine_args", None) or [])
    served = load_engine(args.engine, args, extra)
    defaults = server_defaults(args, getattr(served.backend, "metadata", {}))
    log.info("request defaults: %s", defaults)
    app = create_app(
        served.backend,
        model_name=served.name,
        queue_size=args.queue_size,
        engine=served.engine,
        fmt=args.format,
        strict_formats=args.strict_formats,
        constrain=args.constrain,
        defaults=defaults,
        tool_reminder=args.tool_reminder,
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
    return 0


# -- vLLM's memory on a CPU ------------------------------------------------------------------------
#: what vLLM's CPU backend needs besides the weights and the KV cache (torch, the compiled model,
#: the engine core and front end processes), kept free when toolmask sizes the KV cache
VLLM_CPU_RESERVE = 3 * 2**30
#: the engine arguments (and the environment variable) by which a user sizes vLLM's memory; when
#: one is given, toolmask sets nothing
VLLM_MEMORY_FLAGS = (
    "--gpu-memory-utilization",
    "--device-memory-utilization",
    "--kv-cache-memory-bytes",
)
VLLM_CPU_KV_ENV = "VLLM_CPU_KVCACHE_SPACE"


def vllm_cpu_kv_bytes(
    *,
    available: int,
    weights: int,
    per_token: int,
    max_model_len: int,
    max_num_seqs: int,
    reserve: int = VLLM_CPU_RESERVE,
) -> int:
    """The KV cache for vLLM's CPU backend, in bytes: room for ``max_num_seqs`` sequences of
    ``max_model_len`` tokens (``per_token`` bytes each), capped at half of the memory that is
    free once the weights and :data:`VLLM_CPU_RESERVE` are set aside, and never less than one
    sequence of ``max_model_len`` tokens (vLLM refuses a cache that cannot hold one). Rounded
    down to a MiB. Raises :class:`ToolmaskError` when even one sequence does not fit, naming
    what is free and what to lower."""
    one = per_token * max_model_len
    want = one * max(1, max_num_seqs)
    cap = (available - weights - reserve) // 2
    size = min(want, cap)
    if size < one:
        gib = 2**30
        raise ToolmaskError(
            f"vLLM needs {one / gib:.2f} GiB of KV cache for one {max_model_len}-token sequence "
            f"but only {available / gib:.1f} GiB of memory is free (weights {weights / gib:.2f} "
            f"GiB, {reserve / gib:.0f} GiB kept for the runtime): lower --ctx-size, free memory, "
            "or size it yourself (-- --kv-cache-memory-bytes N)"
        )
    return int(size) // 2**20 * 2**20


def vllm_memory_args(
    platform: str,
    extra: Sequence[str],
    env: Mapping[str, str],
    *,
    available: int,
    weights: int,
    per_token: int,
    max_model_len: int,
    max_num_seqs: int,
) -> list[str]:
    """The engine arguments ``toolmask serve --engine vllm`` adds for vLLM's memory: none on a
    GPU (vLLM's ``--gpu-memory-utilization`` default stays) or when the user sized it (a flag
    of :data:`VLLM_MEMORY_FLAGS` in ``extra``, or ``VLLM_CPU_KVCACHE_SPACE``); on vLLM's CPU
    backend, ``--kv-cache-memory-bytes`` from :func:`vllm_cpu_kv_bytes`. That backend otherwise
    reserves ``--gpu-memory-utilization`` (0.92) of the node's memory and refuses to start when
    less is free, which is the normal case on a machine that runs anything else. A pure
    function of its arguments (the caller reads the platform, the free memory and the model)."""
    given = {a.split("=", 1)[0] for a in extra if a.startswith("--")}
    if platform != "cpu" or given & set(VLLM_MEMORY_FLAGS) or env.get(VLLM_CPU_KV_ENV):
        return []
    size = vllm_cpu_kv_bytes(
        available=available,
        weights=weights,
        per_token=per_token,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
    )
    return ["--kv-cache-memory-bytes", str(size)]


def split_engine_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``argv`` cut at the first ``--``: toolmask's arguments, then the engine's."""
    argv = list(argv)
    if "--" in argv:
        k = argv.index("--")
        return argv[:k], argv[k + 1 :]
    return argv, []


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m toolmask.server [options]``."""
    p = argparse.ArgumentParser(prog="python -m toolmask.server", description="toolmask serve")
    _add_arguments(p)
    own, extra = split_engine_args(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(own)
    args.engine_args = extra

    try:
        return run_serve(args)
    except (ToolmaskError, OSError) as e:
        print(f"toolmask serve: error: {e}", file=sys.stderr)
        return 1
