"""``toolmask serve --engine vllm``: the server's generation queue on vLLM's async engine.

:class:`VllmEngine` has the interface of :class:`toolmask.server.Engine` (the
:class:`~toolmask.server.JobQueue` protocol: ``submit`` a :class:`~toolmask.server.Job`, get a
future of a :class:`~toolmask.server.Finished`; ``full``, ``reject``, the ``/health`` counters), so
the OpenAI front end (validation, errors, ``tool_choice``, parsing, streaming) is the same code
for both engines. What differs is below the queue: every admitted job goes to vLLM at once, and
vLLM's scheduler batches them (continuous batching, up to ``max_num_seqs`` sequences a step).
The mask comes from :class:`~toolmask.integrations.vllm.ToolmaskLogitsProcessor` in vLLM's
engine core, which compiles the job's turn spec (``Job.spec``) for the model's vocabulary; the
server compiles the same spec for parsing the reply, so both read one grammar.

:class:`VllmModel` is what the front end needs of the model besides decoding: the vocabulary
(the same one the processor builds, from the folder's ``tokenizer.json``), the chat template,
the tokenizer and the context size.

vLLM runs on its own asyncio loop in a daemon thread (``toolmask-vllm``): the front end stays
the same thread-and-future code as with llama.cpp.

:func:`load_serve_engine` is the loader the server's engine table
(:data:`toolmask.server.cli.ENGINES`) names for ``--engine vllm``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolmask.backends import Generation
from toolmask.errors import ToolmaskError
from toolmask.integrations.vllm._core import EXTRA_ARGS_KEY
from toolmask.integrations.vllm._vocab import vocabulary_from_tokenizer
from toolmask.server import (
    Cancelled,
    Finished,
    Job,
    JobCounters,
    QueueFull,
    TextStream,
    token_budget,
)
from toolmask.server.cli import ServedModel, model_name_for, vllm_memory_args

__all__ = ["VllmEngine", "VllmModel", "engine_args", "kv_bytes_per_token", "load_serve_engine"]

log = logging.getLogger("toolmask.server")

#: the generation-config fields read as the model's sampling defaults, by the GGUF metadata key
#: the server's defaults read them under
_SAMPLING_KEYS = {
    "temperature": "general.sampling.temp",
    "top_p": "general.sampling.top_p",
    "top_k": "general.sampling.top_k",
    "min_p": "general.sampling.min_p",
}


class VllmModel:
    """The served model as the front end sees it: ``vocab``, ``chat_template``, ``tokenize``,
    ``n_ctx`` and ``metadata`` (the sampling defaults of ``generation_config.json`` under the
    GGUF keys :func:`~toolmask.server.cli.server_defaults` reads). Decoding is vLLM's:
    :meth:`generate` raises."""

    def __init__(self, path: str | Path, n_ctx: int) -> None:
        try:
            from transformers import AutoTokenizer  # type: ignore[import-not-found, unused-ignore]
        except ImportError as e:  # pragma: no cover - transformers comes with vLLM
            raise ToolmaskError("--engine vllm needs transformers (it comes with vLLM)") from e
        self.path = Path(path)
        config = _read_json(self.path / "config.json")
        gen = _read_json(self.path / "generation_config.json", missing_ok=True)
        size = config.get("vocab_size") or config.get("text_config", {}).get("vocab_size")
        if not isinstance(size, int):
            raise ToolmaskError(f"{self.path / 'config.json'} has no vocab_size")
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.path))
        eos = gen.get("eos_token_id")
        eos_ids = eos if isinstance(eos, list) else ([eos] if isinstance(eos, int) else [])
        self.vocab = vocabulary_from_tokenizer(self.tokenizer, size, eos_ids)
        self.n_ctx = n_ctx
        self.chat_template: str | None = getattr(self.tokenizer, "chat_template", None)
        self.bos_text: str = self.tokenizer.bos_token or ""
        self.eos_text: str = self.tokenizer.eos_token or ""
        self.metadata = {
            key: gen[name] for name, key in _SAMPLING_KEYS.items() if gen.get(name) is not None
        }

    def tokenize(self, text: str) -> list[int]:
        """The model's own tokenisation; special-token texts become their ids (no BOS added:
        the chat template writes it)."""
        ids: list[int] = self.tokenizer.encode(text, add_special_tokens=False)
        return ids

    def generate(self, *_args: Any, **_kw: Any) -> Generation:
        raise ToolmaskError("with --engine vllm, vLLM decodes: submit jobs to VllmEngine")


def _read_json(path: Path, *, missing_ok: bool = False) -> dict[str, Any]:
    if missing_ok and not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ToolmaskError(f"cannot read {path}: {e}") from e
    if not isinstance(data, dict):
        raise ToolmaskError(f"{path} is not a JSON object")
    return data


def engine_args(
    model: str | Path,
    *,
    max_model_len: int,
    max_num_seqs: int,
    extra: Sequence[str] = (),
) -> Any:
    """vLLM's ``AsyncEngineArgs`` for ``model`` with toolmask's logits processor, parsed by
    vLLM's own command-line parser so that ``extra`` (e.g. ``--tensor-parallel-size 2
    --distributed-executor-backend ray``) means exactly what it means to ``vllm serve``.
    ``--max-model-len`` and ``--max-num-seqs`` come from the toolmask flags unless ``extra``
    sets them."""
    from vllm.engine.arg_utils import (  # type: ignore[import-not-found, unused-ignore]
        AsyncEngineArgs,
    )
    from vllm.utils.argparse_utils import (  # type: ignore[import-not-found, unused-ignore]
        FlexibleArgumentParser,
    )

    parser = AsyncEngineArgs.add_cli_args(FlexibleArgumentParser(prog="toolmask serve -- "))
    argv = ["--model", str(model)]
    given = {a.split("=", 1)[0] for a in extra if a.startswith("--")}
    if "--max-model-len" not in given:
        argv += ["--max-model-len", str(max_model_len)]
    if "--max-num-seqs" not in given:
        argv += ["--max-num-seqs", str(max_num_seqs)]
    try:
        ns = parser.parse_args([*argv, *extra])
    except SystemExit as e:
        raise ToolmaskError(f"bad vLLM engine arguments: {' '.join(extra)}") from e
    args = AsyncEngineArgs.from_cli_args(ns)
    _size_cpu_memory(args, Path(model), extra)
    procs = list(args.logits_processors or [])
    mine = "toolmask.integrations.vllm:ToolmaskLogitsProcessor"
    if mine not in procs:
        procs.append(mine)
    args.logits_processors = procs
    return args


def _size_cpu_memory(args: Any, model: Path, extra: Sequence[str]) -> None:
    """On vLLM's CPU backend, size the KV cache from the memory that is free
    (:func:`toolmask.server.cli.vllm_memory_args`) unless the user sized it; on a GPU nothing
    changes."""
    from vllm.platforms import current_platform  # type: ignore[import-not-found, unused-ignore]

    platform = "cpu" if current_platform.is_cpu() else str(current_platform.device_type)
    if platform != "cpu":
        return
    config = _read_json(model / "config.json") if (model / "config.json").is_file() else {}
    added = vllm_memory_args(
        platform,
        extra,
        os.environ,
        available=_available_memory(),
        weights=sum(p.stat().st_size for p in model.glob("*.safetensors"))
        + sum(p.stat().st_size for p in model.glob("*.bin")),
        per_token=kv_bytes_per_token(config),
        max_model_len=int(args.max_model_len or 4096),
        max_num_seqs=int(args.max_num_seqs or 1),
    )
    if added:
        args.kv_cache_memory_bytes = int(added[1])
        log.info(
            "vLLM on the CPU: %.2f GiB of KV cache, sized from the free memory "
            "(-- --kv-cache-memory-bytes N or --gpu-memory-utilization F to choose)",
            args.kv_cache_memory_bytes / 2**30,
        )


def kv_bytes_per_token(config: dict[str, Any]) -> int:
    """Bytes of keys and values one token takes in every layer, from a Hugging Face
    ``config.json`` (its ``text_config`` for a multimodal model): 2 x layers x KV heads x head
    size x the dtype's bytes (2 unless the config says float32)."""
    c = config.get("text_config") or config
    layers = int(c.get("num_hidden_layers") or 1)
    heads = int(c.get("num_attention_heads") or 1)
    kv = int(c.get("num_key_value_heads") or heads)
    head_dim = int(c.get("head_dim") or (int(c.get("hidden_size") or 0) // heads) or 128)
    dtype = str(c.get("dtype") or c.get("torch_dtype") or config.get("torch_dtype") or "")
    size = 4 if dtype in ("float32", "float") else 2
    return 2 * layers * kv * head_dim * size


def _available_memory() -> int:
    """Bytes of memory the kernel says are available (``MemAvailable``; psutil elsewhere)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    import psutil  # type: ignore[import-untyped, unused-ignore]  # a vLLM dependency

    return int(psutil.virtual_memory().available)


class VllmEngine(JobCounters):
    """The server's queue on vLLM (see the module docstring). ``capacity`` =
    ``max_num_seqs`` decoding + ``queue_size`` waiting; a job beyond it is refused
    (:class:`QueueFull`, the server's 429). Counters as :class:`~toolmask.server.Engine`:
    ``served``, ``cancelled``, ``failed``, ``rejected``, ``busy``, ``waiting``."""

    needs_spec = True
    #: the reasoning budget is not applied inside vLLM's step (a request that sets one is a 400)
    supports_reasoning_budget = False

    def __init__(self, model: VllmModel, args: Any, *, queue_size: int = 16) -> None:
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        self.backend = model
        self.queue_size = queue_size
        self.max_num_seqs = int(args.max_num_seqs or 1)
        self.n_ctx: int | None = model.n_ctx
        super().__init__()
        self._inflight = 0
        self._lock = threading.Lock()
        self._eos = frozenset(model.vocab.eos_ids)
        self._table = model.vocab.token_bytes
        self._marks = {
            t: s.encode() for t, s in model.vocab.special.items() if t not in model.vocab.eos_ids
        }
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="toolmask-vllm")
        self._thread.daemon = True
        self._thread.start()
        self.llm: Any = self._call(self._start(args), timeout=None)

    # -- the loop thread --------------------------------------------------------------------------
    def _call(self, coro: Any, timeout: float | None = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _start(self, args: Any) -> Any:
        from vllm.v1.engine.async_llm import (  # type: ignore[import-not-found, unused-ignore]
            AsyncLLM,
        )

        return AsyncLLM.from_engine_args(args)

    # -- the queue interface ----------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        return self.max_num_seqs + self.queue_size

    @property
    def busy(self) -> bool:
        return self._inflight > 0

    @property
    def waiting(self) -> int:
        return max(0, self._inflight - self.max_num_seqs)

    @property
    def full(self) -> bool:
        return self._inflight >= self.capacity

    def retry_after(self) -> float:
        """Seconds after which a refused client should try again: the average service time
        of a job (1 s before any finished) times the waiting jobs per decoding slot, halved as
        in :meth:`Engine.retry_after <toolmask.server.Engine.retry_after>`."""
        per_job = self.service_s if self.service_s is not None else 1.0
        rounds = max(1, -(-self._inflight // self.max_num_seqs))
        return max(0.05, per_job * rounds / 2)

    def reject(self) -> QueueFull:
        self.rejected += 1
        return QueueFull(f"{self.capacity} requests are already in flight", self.retry_after())

    def submit(self, job: Job) -> concurrent.futures.Future[Finished]:
        """Admit ``job`` (QueueFull beyond :attr:`capacity`) and start it on vLLM."""
        with self._lock:
            if self._inflight >= self.capacity:
                raise self.reject()
            self._inflight += 1
        asyncio.run_coroutine_threadsafe(self._run(job), self._loop)
        return job.future

    def close(self, timeout: float = 30.0) -> None:
        """Abort what runs, shut vLLM's engine core down and stop the loop thread."""
        try:
            self.llm.shutdown()
        except Exception:  # pragma: no cover - best effort at exit
            log.exception("vLLM shutdown failed")
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)

    # -- one job ----------------------------------------------------------------------------------
    async def _run(self, job: Job) -> None:
        began = time.monotonic()
        try:
            if job.cancel.is_set():
                self.cancelled += 1
                job.future.set_exception(Cancelled("the client went away"))
                return
            if not job.future.set_running_or_notify_cancel():
                return
            try:
                result = await self._generate(job)
            except BaseException as e:
                self.settle(job, e)
            else:
                self.settle(job, result)
        finally:
            self.took(time.monotonic() - began)
            with self._lock:
                self._inflight -= 1

    def _params(self, job: Job, max_tokens: int) -> Any:
        from vllm import SamplingParams as VSamplingParams  # type: ignore[import-not-found, unused-ignore]
        from vllm.sampling_params import (  # type: ignore[import-not-found, unused-ignore]
            RequestOutputKind,
        )

        s = job.sampling
        return VSamplingParams(
            n=1,
            temperature=s.temperature,
            top_p=s.top_p,
            top_k=s.top_k if s.top_k > 0 else 0,
            min_p=s.min_p,
            seed=s.seed,
            max_tokens=max_tokens,
            detokenize=False,
            skip_special_tokens=False,
            output_kind=RequestOutputKind.DELTA,
            extra_args={EXTRA_ARGS_KEY: job.spec} if job.spec is not None else None,
        )

    async def _generate(self, job: Job) -> Finished:
        queued = time.monotonic() - job.enqueued
        prompt = self.backend.tokenize(job.prompt)
        job.prompt_tokens = len(prompt)
        max_tokens = token_budget(len(prompt), job.max_tokens, self.n_ctx)
        if job.on_start is not None:
            job.on_start(len(prompt))
        params = self._params(job, max_tokens)
        rid = "toolmask-" + uuid.uuid4().hex
        stream = TextStream(job.stops)
        marks = self._marks if job.spec is not None else {}
        table, eos = self._table, self._eos
        tokens: list[int] = []
        text = bytearray()
        reason = "length"
        t0 = time.perf_counter()
        first = 0.0
        cached = 0
        stopped = False
        gen = self.llm.generate({"prompt_token_ids": prompt}, params, rid)
        try:
            async for out in gen:
                done = out.outputs[0]
                if out.num_cached_tokens:
                    cached = int(out.num_cached_tokens)
                new = [t for t in done.token_ids if t not in eos]
                if new:
                    if not tokens:
                        first = time.perf_counter() - t0
                    tokens.extend(new)
                    data = b"".join(table[t] or marks.get(t, b"") for t in new)
                    text += data
                    piece, stop = stream.feed(data)
                    if piece and job.on_text is not None:
                        job.on_text(piece)
                    if stop:
                        stopped = True
                if done.finish_reason is not None:
                    reason = "length" if done.finish_reason == "length" else "stop"
                if stopped or job.cancel.is_set():
                    reason = "stop"
                    break
        finally:
            if stopped or job.cancel.is_set():
                await self.llm.abort(rid)
            await gen.aclose()
        rest = stream.finish()
        if rest and job.on_text is not None:
            job.on_text(rest)
        g = Generation(tokens, bytes(text), reason, len(prompt), cached)
        g.first_token_s = first
        g.sampled_tokens = len(tokens)
        return Finished(g, stream.text, "stop" if stream.stopped else reason, queued)


def load_serve_engine(args: argparse.Namespace, extra: list[str]) -> ServedModel:
    """``toolmask serve --engine vllm`` (the loader :data:`toolmask.server.cli.ENGINES` names):
    the model, engine and served name. A GGUF (or no ``--model``: the embedded SmolLM2) is
    converted once to a Hugging Face folder (:func:`toolmask.backends.transformers.export_hf`,
    cached); ``extra`` goes to vLLM's engine parser unchanged (:func:`engine_args`)."""
    if getattr(args, "reasoning_budget", None) is not None:
        raise ToolmaskError("--reasoning-budget is not supported with --engine vllm")
    from toolmask.models import CATALOGUE, resolve_model

    path = Path(args.model) if args.model else None
    if args.model in CATALOGUE:  # a catalogue name: its GGUF, pulled on first use
        path = resolve_model(args.model)
    if path is None or path.is_file():  # a GGUF: its HF folder, written once and cached
        from toolmask.backends.transformers import export_hf

        log.info("converting %s for vLLM (cached after the first time)", path or "SmolLM2")
        name = args.model_name or (model_name_for(path) if path else "SmolLM2-135M-Instruct.Q4_1")
        path = export_hf(path)
    else:
        name = args.model_name or path.name
    if not (path / "config.json").is_file():
        raise ToolmaskError(f"{path} is not a Hugging Face model folder (no config.json)")
    log.info("loading %s with vLLM", path)
    model = VllmModel(path, n_ctx=args.ctx_size)
    eargs = engine_args(
        path, max_model_len=args.ctx_size, max_num_seqs=args.max_num_seqs, extra=extra
    )
    model.n_ctx = int(eargs.max_model_len or args.ctx_size)
    return ServedModel(model, VllmEngine(model, eargs, queue_size=args.queue_size), name)
