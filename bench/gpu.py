"""GPU serving: the decode step, its floor, toolmask's mask fill and what of it stays visible.

What is measured (issue 26's table, plus the visible share with overlap):

* **models**: random-initialised Qwen3-8B and Qwen3-1.7B shapes (transformers ``Qwen3Config``,
  bf16, nothing downloaded) with the Qwen3 vocabulary of ``quicktok`` (151,936 logits);
* **decode step** at B = 1, 16, 64 with a 512-token static KV cache (prefilled to 256): eager
  ("plain") and replayed from a CUDA graph. The graph is captured from transformers' own
  forward over its ``StaticCache``; :class:`MiniQwen3` (the same weights, the same step written
  in plain torch, checked against transformers' logits) is captured too, and stands in when
  transformers' forward cannot be captured;
* **floor**: the bytes a decode step must read (weights except the input embedding's unused
  rows, plus the B x 512 KV entries) over the device's measured copy bandwidth
  (``2 * bytes / time`` of a 1 GiB device-to-device copy);
* **fill**: toolmask's batch bitmask fill for B rows, each row one of the 12 tool schemas of
  ``bench/masks.py`` forced through a valid instance token by token (the instances tokenised by
  ``Vocabulary.encode_greedy``, EOS last); one step = every unfinished row's ``fill_bitmask``
  and ``is_accepting`` (what the vLLM processor's fill does), timed per step: cold (a fresh
  :class:`toolmask.GrammarCompiler`: every state seen for the first time) and warm (the same
  compiler, new matchers, the same instances); single-thread, and through toolmask's batch API
  when it has one; the peers (xgrammar ``batch_fill_next_token_bitmask``, 8 threads;
  llguidance ``fill_next_token_bitmask_par``) when importable, on the same rows;
* **shares**: the fill's mean and p99 over the graph step and over the floor (8B and 1.7B);
* **visible share**: the graph step replayed, the next step's bitmask filled on the CPU while it
  runs, uploaded (pinned, asynchronous) and applied to the step's logits, then one
  synchronisation; visible = that step's wall time minus the graph step alone;
* **apply** and **sampler**: applying a [B, V] bitmask (Triton kernel, byte lookup table, the old
  [B, W, 32] unpacking) and sampling on the device vs copying the logits to numpy;
* **backend**: toolmask's transformers backend decoding under a tool schema on the 8B model, per
  token: forward, fill, visible wait, sampling, and the overhead beyond forward and mask
  (``DecodeTimings``), with device sampling and with the numpy sampler.

    python bench/gpu.py --out DIR            # a CUDA machine, under 6 minutes
    python bench/gpu.py --out DIR --quick    # fewer repetitions, about half the time
    python bench/gpu.py --tiny --out DIR     # CPU: a tiny Qwen3 config, B = 1, 2 (the tests)

Installs and downloads nothing: needs torch, transformers, numpy, quicktok-v1 and toolmask
(``pip install --no-deps --no-build-isolation -e .`` or ``setup.py build_ext --inplace`` from the
repository root; ``src/`` is put on ``sys.path``); Triton, xgrammar and llguidance are used when
importable. Writes ``DIR/gpu.json`` (default ``bench/results/``) and prints a table. Every phase
has a time budget; a phase that would overrun it is skipped and says so in the JSON.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import inspect
import json
import math
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

RESULTS = ROOT / "bench" / "results"

#: Qwen3-8B and Qwen3-1.7B (their published configs; weights random)
SHAPES: dict[str, dict[str, Any]] = {
    "qwen3-8b": {
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "tie_word_embeddings": False,
    },
    "qwen3-1.7b": {
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "tie_word_embeddings": True,
    },
    "tiny": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "tie_word_embeddings": False,
    },
}
VOCAB_SIZE = 151936  # Qwen3's logits width (the tokenizer's ids padded)


@dataclass(frozen=True)
class Plan:
    """What one run measures, and how many times."""

    device: str
    models: tuple[str, ...]
    batches: tuple[int, ...]
    kv_len: int
    plain_reps: int
    graph_reps: int
    micro_reps: int
    backend_tokens: int
    schemas: int  # how many of the 12 tool schemas
    budget_s: float
    copy_bytes: int


def make_plan(args: argparse.Namespace) -> Plan:
    if args.tiny:
        return Plan("cpu", ("tiny",), (1, 2), 64, 3, 3, 3, 6, 4, 240.0, 1 << 24)
    q = args.quick
    return Plan(
        "cuda",
        ("qwen3-8b", "qwen3-1.7b"),
        (1, 16, 64),
        512,
        5 if q else 10,
        20 if q else 50,
        10 if q else 30,
        16 if q else 32,
        12,
        200.0 if q else 330.0,
        1 << 30,
    )


# -- small helpers ---------------------------------------------------------------------------------
class Budget:
    """Wall-clock budget for the whole run; phases ask before they start."""

    def __init__(self, seconds: float) -> None:
        self.t0 = time.perf_counter()
        self.seconds = seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float:
        return self.seconds - self.elapsed()


def stats(xs: list[float]) -> dict[str, float]:
    """mean / p50 / p99 / max of ``xs`` (seconds in, microseconds out)."""
    if not xs:
        return {"n": 0}
    s = sorted(xs)
    n = len(s)
    return {
        "n": n,
        "mean_us": 1e6 * sum(s) / n,
        "p50_us": 1e6 * s[n // 2],
        "p99_us": 1e6 * s[min(n - 1, math.ceil(0.99 * n) - 1)],
        "max_us": 1e6 * s[-1],
    }


class Timer:
    """Times a callable: CUDA events on a GPU (device time of what the callable queues, after a
    synchronisation), ``perf_counter`` on the CPU."""

    def __init__(self, torch: Any, device: str) -> None:
        self.torch = torch
        self.cuda = device == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def each(self, fn: Callable[[], Any], reps: int, warmup: int = 2) -> list[float]:
        """Seconds per call, one entry per repetition."""
        for _ in range(warmup):
            fn()
        self.sync()
        out = []
        for _ in range(reps):
            if self.cuda:
                a = self.torch.cuda.Event(enable_timing=True)
                b = self.torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                out.append(a.elapsed_time(b) / 1000)
            else:
                t = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t)
        return out


def _version(pkg: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(pkg)
    except PackageNotFoundError:
        return "?"


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:500]


@contextmanager
def phase(report: dict[str, Any], name: str, budget: Budget, need_s: float) -> Iterator[bool]:
    """Run a phase when the budget allows; record its wall time or why it was skipped. The
    body runs only when the yielded flag is True; an exception is recorded, not raised."""
    if budget.left() < need_s:
        report.setdefault("skipped", {})[name] = f"budget: {budget.left():.0f} s left"
        yield False
        return
    t = time.perf_counter()
    try:
        yield True
    except Exception as e:  # a phase that fails is reported, the rest still runs
        report.setdefault("errors", {})[name] = _error(e)
        traceback.print_exc()
    report.setdefault("phase_s", {})[name] = round(time.perf_counter() - t, 2)


# -- vocabulary, schemas, forced token sequences ---------------------------------------------------
def tool_schemas() -> list[tuple[str, dict[str, Any], list[Any]]]:
    """The 12 tool schemas of bench/masks.py (loaded by path: no package import)."""
    spec = importlib.util.spec_from_file_location("_bench_masks", ROOT / "bench" / "masks.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out: list[tuple[str, dict[str, Any], list[Any]]] = mod.TOOL_SCHEMAS
    return out


def dumps(x: Any) -> bytes:
    return json.dumps(x, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass
class Workload:
    """Compiled-grammar inputs: per schema its grammar and its forced token runs."""

    names: list[str]
    grammars: list[Any]
    runs: list[list[list[int]]]  # schema -> instance -> tokens (EOS last)

    def rows(self, batch: int) -> list[tuple[int, list[int]]]:
        """Row i: schema i % S, instance (i // S) % 2."""
        s = len(self.names)
        return [(i % s, self.runs[i % s][(i // s) % len(self.runs[i % s])]) for i in range(batch)]


def workload(vocab: Any, n_schemas: int) -> Workload:
    import toolmask as tm

    names, grammars, runs = [], [], []
    eos = min(vocab.eos_ids)
    for name, schema, insts in tool_schemas()[:n_schemas]:
        names.append(name)
        grammars.append(tm.Grammar.from_json_schema(schema))
        runs.append([[*vocab.encode_greedy(dumps(x)), eos] for x in insts[:2]])
    return Workload(names, grammars, runs)


# -- the fill --------------------------------------------------------------------------------------
def batch_api() -> Callable[[list[Any], Any], None] | None:
    """toolmask's threaded batch fill, when ``toolmask.mask`` has one: the one place that
    names it (``fill(matchers, bitmask)``, rows in order). None before it exists."""
    import toolmask.mask as tmm

    fn = getattr(tmm, "fill_batch", None)
    return fn if callable(fn) else None


def fill_single(matchers: list[Any], bm: Any) -> None:
    """One thread, the GIL held: each row's bitmask and accepting test (what the vLLM
    processor's fill does per row)."""
    for i, m in enumerate(matchers):
        m.fill_bitmask(bm, i)
        m.is_accepting()


def run_fill(
    wl: Workload,
    vocab: Any,
    batch: int,
    compiler: Any,
    filler: Callable[[list[Any], Any], None],
    on_step: Callable[[Any], None] | None = None,
) -> tuple[list[float], int]:
    """Force ``batch`` rows through their runs; per step, the fill time of the unfinished rows.
    Returns (seconds per step, tokens the masks rejected: must be 0). ``on_step(bitmask)`` runs
    after each timed fill (the overlap phase uploads and applies it there)."""
    compiled = [compiler.compile(g, vocab) for g in wl.grammars]
    rows = wl.rows(batch)
    matchers = [compiled[s].matcher() for s, _ in rows]
    words = (vocab.vocab_size + 31) // 32
    bm = np.zeros((batch, words), dtype=np.int32)
    longest = max(len(r) for _, r in rows)
    out: list[float] = []
    rejected = 0
    for step in range(longest):
        live = [i for i, (_, r) in enumerate(rows) if step < len(r)]
        ms = [matchers[i] for i in live]
        view = bm[: len(live)]
        t = time.perf_counter()
        filler(ms, view)
        out.append(time.perf_counter() - t)
        if on_step is not None:
            on_step(view)
        for j, i in enumerate(live):
            tok = rows[i][1][step]
            if not (int(view[j, tok >> 5]) >> (tok & 31)) & 1:
                rejected += 1
            if tok not in vocab.eos_ids:
                matchers[i].accept_token(tok)
    return out, rejected


def measure_fills(wl: Workload, vocab: Any, plan: Plan) -> dict[str, Any]:
    import toolmask as tm

    out: dict[str, Any] = {}
    api = batch_api()
    fillers: dict[str, Callable[[list[Any], Any], None]] = {"single": fill_single}
    if api is not None:
        fillers["batch_api"] = api
    # a grammar outside the workload, on a compiler of its own
    scratch = tm.GrammarCompiler().compile(tm.Grammar.from_json_schema({"type": "integer"}), vocab)
    for batch in plan.batches:
        for fname, filler in fillers.items():
            # untimed: the filler's first call at this batch size (its threads, buffers), so
            # the cold run below pays for its own states only
            filler(
                [scratch.matcher() for _ in range(batch)],
                np.zeros((batch, (vocab.vocab_size + 31) // 32), dtype=np.int32),
            )
            compiler = tm.GrammarCompiler()
            compiler.vocab_index(vocab)  # per vocabulary, not per state: outside the timing
            cold, rej_c = run_fill(wl, vocab, batch, compiler, filler)
            warm, rej_w = run_fill(wl, vocab, batch, compiler, filler)
            out[f"{fname}/B={batch}"] = {
                "cold": stats(cold),
                "warm": stats(warm),
                "rejected": rej_c + rej_w,
                "_cold_s": cold,
            }
    return out


def measure_peers(wl: Workload, vocab: Any, plan: Plan) -> dict[str, Any]:
    """xgrammar's and llguidance's parallel batch fills on the same rows, when importable."""
    out: dict[str, Any] = {}
    schemas = tool_schemas()[: len(wl.names)]
    words = (vocab.vocab_size + 31) // 32
    tokens = [
        vocab.token_bytes[i] or vocab.special.get(i, "").encode()
        for i in range(len(vocab.token_bytes))
    ]

    def drive(
        start: Callable[[int], Any],
        fill: Callable[[list[Any], Any], None],
        accept: Callable[[Any, int], Any],
        batch: int,
        spare: Callable[[], Any],
    ) -> tuple[list[float], list[float], int]:
        """(cold step times, warm step times, tokens the masks or matchers rejected).
        ``spare()`` is a matcher of a grammar outside the workload: one untimed fill of it
        starts the peer's thread pool and buffers before the cold run."""
        rows = wl.rows(batch)
        res = []
        rejected = 0
        fill([spare()], np.zeros((1, words), dtype=np.int32))
        for _ in range(2):  # cold (first compile's use), then warm
            ms = [start(s) for s, _ in rows]
            bm = np.zeros((batch, words), dtype=np.int32)
            times = []
            for step in range(max(len(r) for _, r in rows)):
                live = [i for i, (_, r) in enumerate(rows) if step < len(r)]
                t = time.perf_counter()
                fill([ms[i] for i in live], bm[: len(live)])
                times.append(time.perf_counter() - t)
                for j, i in enumerate(live):
                    tok = rows[i][1][step]
                    if not (int(bm[j, tok >> 5]) >> (tok & 31)) & 1:
                        rejected += 1
                    if tok not in vocab.eos_ids and accept(ms[i], tok) is False:
                        rejected += 1
            res.append(times)
        return res[0], res[1], rejected

    if importlib.util.find_spec("xgrammar") is not None:
        try:
            import torch
            import xgrammar as xgr

            info = xgr.TokenizerInfo(
                tokens,
                xgr.VocabType.RAW,
                vocab_size=vocab.vocab_size,
                stop_token_ids=sorted(vocab.eos_ids),
            )
            comp = xgr.GrammarCompiler(info, max_threads=8, cache_enabled=False)
            t0 = time.perf_counter()
            handles = [
                comp.compile_json_schema(json.dumps(s), any_whitespace=False, separators=(",", ":"))
                for _, s, _ in schemas
            ]
            compile_s = time.perf_counter() - t0
            bmx = xgr.BatchGrammarMatcher(max_threads=8)

            def xfill(ms: list[Any], bm: Any) -> None:
                bmx.batch_fill_next_token_bitmask(ms, torch.from_numpy(bm))

            res: dict[str, Any] = {
                "version": _version("xgrammar"),
                "threads": 8,
                "compile_s": compile_s,
            }
            spare = comp.compile_json_schema('{"type": "integer"}')
            for batch in plan.batches:
                cold, warm, rej = drive(
                    lambda s: xgr.GrammarMatcher(handles[s]),
                    xfill,
                    lambda m, t: m.accept_token(t),
                    batch,
                    lambda: xgr.GrammarMatcher(spare),
                )
                res[f"B={batch}"] = {"cold": stats(cold), "warm": stats(warm), "rejected": rej}
            out["xgrammar"] = res
        except Exception as e:
            out["xgrammar"] = {"error": _error(e)}
    if importlib.util.find_spec("llguidance") is not None:
        try:
            import llguidance as llg
            import llguidance.numpy as lln

            class RawTok:
                def __init__(self) -> None:
                    self.tokens = tokens
                    self.eos_token_id = min(vocab.eos_ids)
                    self.bos_token_id = vocab.bos_id
                    self.special_token_ids = sorted(vocab.special)

                def __call__(self, data: bytes) -> list[int]:
                    return list(vocab.encode_greedy(data))

            # llguidance 1.6 takes one EOS id (an int); the forced runs end with the lowest
            tok = llg.LLTokenizer(
                llg.TokenizerWrapper(RawTok()),
                n_vocab=vocab.vocab_size,
                eos_token=min(vocab.eos_ids),
            )
            threads = min(12, os.cpu_count() or 1)
            ex = llg.LLExecutor(threads)
            grams = [
                llg.LLMatcher.grammar_from_json_schema(
                    json.dumps(s),
                    defaults={
                        "whitespace_flexible": False,
                        "item_separator": ",",
                        "key_separator": ":",
                    },
                )
                for _, s, _ in schemas
            ]

            def lfill(ms: list[Any], bm: Any) -> None:
                lln.fill_next_token_bitmask_par(ex, [(m, i) for i, m in enumerate(ms)], bm)

            res = {"version": _version("llguidance"), "threads": threads}
            spare = llg.LLMatcher.grammar_from_json_schema('{"type": "integer"}')
            for batch in plan.batches:
                cold, warm, rej = drive(
                    lambda s: llg.LLMatcher(tok, grams[s], log_level=0),
                    lfill,
                    lambda m, t: m.consume_token(t),
                    batch,
                    lambda: llg.LLMatcher(tok, spare, log_level=0),
                )
                res[f"B={batch}"] = {"cold": stats(cold), "warm": stats(warm), "rejected": rej}
            out["llguidance"] = res
        except Exception as e:
            out["llguidance"] = {"error": _error(e)}
    return out


# -- models ----------------------------------------------------------------------------------------
def qwen3_config(transformers: Any, name: str) -> Any:
    return transformers.Qwen3Config(
        vocab_size=VOCAB_SIZE,
        max_position_embeddings=40960,
        rms_norm_eps=1e-6,
        rope_theta=1_000_000.0,
        **SHAPES[name],
    )


def build_model(torch: Any, transformers: Any, name: str, device: str) -> Any:
    """A randomly initialised bf16 Qwen3 of the named shape, built on ``device``."""
    cfg = qwen3_config(transformers, name)
    torch.manual_seed(0)
    with torch.device(device):
        try:
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        except TypeError:  # transformers 4.x
            model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    return model.to(device=device, dtype=torch.bfloat16).eval()


def weight_bytes_read(model: Any, batch: int) -> int:
    """Parameter bytes one decode step reads: all of them, except that an untied input
    embedding contributes only the B rows it looks up."""
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    emb = model.get_input_embeddings().weight
    out = model.get_output_embeddings().weight
    if emb.data_ptr() != out.data_ptr():
        total -= emb.numel() * emb.element_size()
        total += batch * emb.shape[1] * emb.element_size()
    return int(total)


def shape_bytes(name: str, batch: int, kv_len: int) -> tuple[int, int]:
    """(weight bytes read, KV bytes) of a decode step, from the shape alone (bf16)."""
    s = SHAPES[name]
    h, inter, layers = s["hidden_size"], s["intermediate_size"], s["num_hidden_layers"]
    nh, kvh, hd = s["num_attention_heads"], s["num_key_value_heads"], s["head_dim"]
    per_layer = h * nh * hd + 2 * h * kvh * hd + nh * hd * h + 3 * h * inter + 2 * h + 2 * hd
    params = layers * per_layer + h + VOCAB_SIZE * h  # + final norm + lm_head
    params += batch * h  # the embedding rows looked up (tied: already in the lm_head)
    kv = 2 * layers * batch * kv_len * kvh * hd
    return 2 * params, 2 * kv


def make_static_cache(
    torch: Any, transformers: Any, cfg: Any, batch: int, kv_len: int, device: str
) -> Any:
    """transformers' StaticCache, whatever its constructor (4.x: batch, device and dtype up
    front; 5.x: lazily sized at the first update)."""
    cls = transformers.StaticCache
    sig = inspect.signature(cls.__init__).parameters
    kw: dict[str, Any] = {}
    if "config" in sig:
        kw["config"] = cfg
    if "max_cache_len" in sig:
        kw["max_cache_len"] = kv_len
    for name in ("max_batch_size", "batch_size"):
        if name in sig:
            kw[name] = batch
    if "device" in sig:
        kw["device"] = device
    if "dtype" in sig:
        kw["dtype"] = torch.bfloat16
    return cls(**kw)


class HFStep:
    """One decode token for B rows through transformers' own forward over a StaticCache of
    ``kv_len`` prefilled to ``kv_len // 2`` (inputs in static tensors, for graph capture)."""

    def __init__(
        self, torch: Any, transformers: Any, model: Any, batch: int, kv_len: int, device: str
    ) -> None:
        self.torch, self.model = torch, model
        params = inspect.signature(model.forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"
        self.has_cache_position = "cache_position" in params
        self.keep = "logits_to_keep" in params
        self.cache = make_static_cache(torch, transformers, model.config, batch, kv_len, device)
        p = kv_len // 2
        gen = torch.Generator(device="cpu").manual_seed(batch)
        prompt = torch.randint(0, 151643, (batch, p), generator=gen).to(device)
        self._call(
            prompt, torch.arange(p, device=device).expand(batch, p), torch.arange(p, device=device)
        )
        # transformers 5.x keeps each layer's write position in the cache (a tensor that every
        # update advances, inside a CUDA graph too): put it back after each step, so repeated
        # steps write the same slot instead of running off the end of the cache
        layers = getattr(self.cache, "layers", None) or []
        cums = [getattr(layer, "cumulative_length", None) for layer in layers]
        self._cum_t = [c for c in cums if isinstance(c, torch.Tensor)]
        self._cum_i = [x for x, c in zip(layers, cums, strict=True) if isinstance(c, int)]
        self._p = p
        self.ids = torch.randint(0, 151643, (batch, 1), generator=gen).to(device)
        self.position_ids = torch.full((batch, 1), p, device=device, dtype=torch.long)
        self.cache_position = torch.tensor([p], device=device)
        self.logits: Any = None

    def _call(self, ids: Any, pos: Any, cache_pos: Any) -> Any:
        kw: dict[str, Any] = {self.cache_arg: self.cache, "use_cache": True}
        if self.has_cache_position:
            kw["cache_position"] = cache_pos
        if self.keep:
            kw["logits_to_keep"] = 1
        return self.model(input_ids=ids, position_ids=pos, **kw).logits[:, -1]

    def __call__(self) -> Any:
        self.logits = self._call(self.ids, self.position_ids, self.cache_position)
        if self._cum_t:
            self.torch._foreach_sub_(self._cum_t, 1)
        for layer in self._cum_i:
            layer.cumulative_length = self._p
        return self.logits


class MiniQwen3:
    """Qwen3's decode step in plain torch over a transformers model's weights, with its own
    static KV cache (``[layers, B, kv_heads, kv_len, head_dim]``, position ``kv_len // 2``):
    RMSNorm, q/k norms, rotary embedding, grouped-query attention (SDPA with a mask over the
    filled slots), SwiGLU. Every shape is static and nothing reads back to the host, so it can
    always be captured in a CUDA graph. :func:`check_mini` compares it with transformers."""

    def __init__(
        self, torch: Any, model: Any, batch: int, kv_len: int, device: str, pos: int | None = None
    ) -> None:
        self.torch = torch
        cfg = model.config
        self.cfg = cfg
        self.nh, self.kvh, self.hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.eps = cfg.rms_norm_eps
        self.layers = list(model.model.layers)
        self.embed = model.get_input_embeddings().weight
        self.norm = model.model.norm.weight
        self.head = model.get_output_embeddings().weight
        dt = self.embed.dtype
        n = len(self.layers)
        self.k = torch.zeros((n, batch, self.kvh, kv_len, self.hd), dtype=dt, device=device)
        self.v = torch.zeros_like(self.k)
        rot = model.model.rotary_emb  # its inverse frequencies, whatever the config calls theta
        inv = rot.inv_freq.float().to(device)
        scale = float(getattr(rot, "attention_scaling", 1.0))
        ang = torch.outer(torch.arange(kv_len, device=device).float(), inv)
        emb = torch.cat([ang, ang], dim=-1)
        self.cos, self.sin = (emb.cos() * scale).to(dt), (emb.sin() * scale).to(dt)
        self.kv_len = kv_len
        self.pos = torch.tensor([kv_len // 2 if pos is None else pos], device=device)
        gen = torch.Generator(device="cpu").manual_seed(batch)
        self.ids = torch.randint(0, 151643, (batch, 1), generator=gen).to(device)
        self.logits: Any = None

    def _rms(self, x: Any, w: Any) -> Any:
        t = self.torch
        xf = x.float()
        return (xf * t.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * w

    def _rope(self, x: Any) -> Any:  # x [B, heads, 1, hd]
        cos = self.cos[self.pos].view(1, 1, 1, -1)
        sin = self.sin[self.pos].view(1, 1, 1, -1)
        half = self.hd // 2
        rot = self.torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rot * sin

    def __call__(self) -> Any:
        t = self.torch
        f = t.nn.functional
        b = self.ids.shape[0]
        h = f.embedding(self.ids, self.embed)  # [B, 1, H]
        mask = (t.arange(self.kv_len, device=h.device) <= self.pos).view(1, 1, 1, -1)
        for i, layer in enumerate(self.layers):
            at, mlp = layer.self_attn, layer.mlp
            x = self._rms(h, layer.input_layernorm.weight)
            q = f.linear(x, at.q_proj.weight).view(b, 1, self.nh, self.hd)
            k = f.linear(x, at.k_proj.weight).view(b, 1, self.kvh, self.hd)
            v = f.linear(x, at.v_proj.weight).view(b, 1, self.kvh, self.hd)
            q = self._rope(self._rms(q, at.q_norm.weight).transpose(1, 2))
            k = self._rope(self._rms(k, at.k_norm.weight).transpose(1, 2))
            self.k[i].index_copy_(2, self.pos, k)
            self.v[i].index_copy_(2, self.pos, v.transpose(1, 2))
            # grouped-query attention without copying K/V: the heads sharing a KV head are
            # that head's "queries" (head h reads KV head h // group, as repeat_interleave)
            qg = q.reshape(b, self.kvh, self.nh // self.kvh, self.hd)
            a = f.scaled_dot_product_attention(qg, self.k[i], self.v[i], attn_mask=mask)
            h = h + f.linear(a.reshape(b, 1, -1), at.o_proj.weight)
            x = self._rms(h, layer.post_attention_layernorm.weight)
            up = f.silu(f.linear(x, mlp.gate_proj.weight)) * f.linear(x, mlp.up_proj.weight)
            h = h + f.linear(up, mlp.down_proj.weight)
        self.logits = f.linear(self._rms(h, self.norm), self.head)[:, -1]
        return self.logits


def check_mini(torch: Any, model: Any, device: str, n: int = 8) -> float:
    """The largest |difference| between MiniQwen3 stepping through ``n`` tokens one at a time
    and transformers' forward over all of them, relative to the logits' spread."""
    gen = torch.Generator(device="cpu").manual_seed(1)
    ids = torch.randint(0, 151643, (1, n), generator=gen).to(device)
    want = model(input_ids=ids).logits[0, -1].float()
    mini = MiniQwen3(torch, model, 1, 32, device, pos=0)
    for i in range(n):
        mini.ids = ids[:, i : i + 1]
        mini.pos.fill_(i)
        got = mini()[0].float()
    return float((got - want).abs().max() / want.std())


def capture(torch: Any, fn: Callable[[], Any], device: str) -> Callable[[], Any]:
    """A replay of ``fn`` (which writes its outputs to its own static tensors): a CUDA graph on
    a GPU (three warm-up calls on a side stream, then the capture); on the CPU, ``fn`` itself
    after one call (so the same code runs)."""
    if device != "cuda":
        fn()
        return fn
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph.replay  # type: ignore[no-any-return]


def copy_bandwidth(torch: Any, device: str, nbytes: int, timer: Timer) -> float:
    """Device copy bandwidth, bytes per second: 2 * bytes (read + write) / copy time."""
    bufs = [torch.empty(nbytes // 2, dtype=torch.bfloat16, device=device).normal_()]
    bufs.append(torch.empty_like(bufs[0]))
    best = min(timer.each(lambda: bufs[1].copy_(bufs[0]), 5, warmup=2))
    bufs.clear()
    return 2 * nbytes / best


# -- the overlapped step ---------------------------------------------------------------------------
def warm_up_path(
    torch: Any, replay: Callable[[], Any], step: Any, db: Any, batch: int, device: str
) -> None:
    """Run every piece of the overlapped step once per row count 1..``batch`` (reserve, host
    write, upload, apply to the step's logits, synchronise), untimed: what a first use costs
    (Triton's compile, pinned allocation, the copy engine's first transfer) is paid here, not
    in the first timed step. The logits are scratch: each timed step's replay rewrites them."""
    from toolmask.sampling import apply_bitmask_torch

    db.reserve(batch)
    for _ in range(2):
        replay()
        for n in range(1, batch + 1):
            host = db.reserve(n)
            host[...] = -1
            apply_bitmask_torch(step.logits[:n], db.upload(n))
        if device == "cuda":
            torch.cuda.synchronize()


def measure_overlap(
    torch: Any,
    replay: Callable[[], Any],
    step: Any,
    wl: Workload,
    vocab: Any,
    batch: int,
    device: str,
    graph_s: float,
) -> dict[str, Any]:
    """Per step: replay the graph, fill the next bitmask on the CPU while it runs, upload it
    (pinned, asynchronous) and apply it to the step's logits, synchronise. Visible = wall -
    the graph step alone. Cold (fresh compiler), then warm."""
    import toolmask as tm
    from toolmask.sampling import DeviceBitmask, apply_bitmask_torch

    words = (vocab.vocab_size + 31) // 32
    db = DeviceBitmask(words, device, batch)
    out: dict[str, Any] = {}

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    # first uses stay out of the timings: the pinned rows, the first upload, the apply kernel
    # (Triton compiles per logits dtype and specialises on a row count of 1), for every row
    # count the steps will use (rows finish and the batch shrinks); then the replay itself
    warm_up_path(torch, replay, step, db, batch, device)
    # the baseline: the same replay and wait, measured the same way, with no mask at all
    base = []
    for _ in range(20):
        t = time.perf_counter()
        replay()
        sync()
        base.append(time.perf_counter() - t)
    base_s = sorted(base)[len(base) // 2]
    out["baseline_wall"] = stats(base)
    compiler = tm.GrammarCompiler()
    compiler.vocab_index(vocab)
    for kind in ("cold", "warm"):
        walls: list[float] = []
        fills: list[float] = []
        started = [0.0]

        def filler(
            ms: list[Any], view: Any, fills: list[float] = fills, started: list[float] = started
        ) -> None:
            started[0] = time.perf_counter()
            replay()  # queued: the GPU runs the step while the CPU fills below
            t = time.perf_counter()
            fill_single(ms, view)
            fills.append(time.perf_counter() - t)

        def after(view: Any, walls: list[float] = walls, started: list[float] = started) -> None:
            n = view.shape[0]
            host = db.reserve(n)
            host[...] = view  # a memcpy of B * W * 4 bytes into pinned memory
            apply_bitmask_torch(step.logits[:n], db.upload(n))
            sync()
            walls.append(time.perf_counter() - started[0])

        _, rejected = run_fill(wl, vocab, batch, compiler, filler, after)
        visible = [max(0.0, w - base_s) for w in walls]
        out[kind] = {
            "wall": stats(walls),
            "fill": stats(fills),
            "visible": stats(visible),
            "predicted_visible": stats([max(0.0, f - graph_s) for f in fills]),
            "visible_share_mean": (sum(visible) / len(visible)) / graph_s if visible else None,
            "visible_share_p99": stats(visible).get("p99_us", 0) / 1e6 / graph_s
            if visible
            else None,
            "rejected": rejected,
        }
    return out


# -- apply and sampler micro-benchmarks ------------------------------------------------------------
def measure_micro(torch: Any, device: str, plan: Plan, timer: Timer) -> dict[str, Any]:
    from toolmask.sampling import (
        Sampler,
        SamplingParams,
        TorchSampler,
        apply_bitmask_torch,
        bitmask_from_ids,
    )

    out: dict[str, Any] = {"apply": {}, "sampler": {}}
    rng = np.random.default_rng(0)
    methods = ["unpack", "lut"] + (["triton"] if device == "cuda" else [])
    sampled = SamplingParams(temperature=0.7, top_p=0.8, top_k=20, seed=0)
    for batch in plan.batches:
        logits = torch.randn((batch, VOCAB_SIZE), device=device, dtype=torch.bfloat16)
        masks = np.stack(
            [
                bitmask_from_ids(np.flatnonzero(rng.random(VOCAB_SIZE) < 0.5), VOCAB_SIZE)
                for _ in range(batch)
            ]
        )
        dev_mask = torch.from_numpy(masks).to(device)
        ref = None
        res: dict[str, Any] = {}
        for m in methods:
            x = logits.float()
            try:
                res[m] = stats(
                    timer.each(
                        lambda x=x, m=m, d=dev_mask: apply_bitmask_torch(x, d, method=m),
                        plan.micro_reps,
                    )
                )
                # the CPU's side: what issuing one call costs the thread that decodes
                timer.sync()
                t = time.perf_counter()
                for _ in range(plan.micro_reps):
                    apply_bitmask_torch(x, dev_mask, method=m)
                res[m]["issue_us"] = 1e6 * (time.perf_counter() - t) / plan.micro_reps
                timer.sync()
                if ref is None:
                    ref = x
                else:
                    res[m]["agrees"] = bool(torch.equal(ref, x))
            except Exception as e:
                res[m] = {"error": _error(e)}
        out["apply"][f"B={batch}"] = res
        srow: dict[str, Any] = {}
        for label, params in (("greedy", SamplingParams(temperature=0.0)), ("sampled", sampled)):
            ts = TorchSampler(params)
            walls = []
            for _ in range(plan.micro_reps + 2):
                t = time.perf_counter()
                ts.sample_batch(logits, masks)
                walls.append(time.perf_counter() - t)
            srow[f"device/{label}"] = stats(walls[2:])
            ns = Sampler(params)
            walls = []
            for _ in range(4):  # numpy at B = 64 is tens of milliseconds a step
                t = time.perf_counter()
                host = logits.float().cpu().numpy()
                for r in range(batch):
                    ns.sample(host[r], masks[r])
                walls.append(time.perf_counter() - t)
            srow[f"numpy/{label}"] = stats(walls[1:])  # the first: first-use costs
        out["sampler"][f"B={batch}"] = srow
    return out


# -- the transformers backend ----------------------------------------------------------------------
def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map (byte-level BPE token strings)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = keep[:]
    n = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(keep, (chr(c) for c in cs), strict=True))


def hf_tokenizer(transformers: Any, vocab: Any) -> Any:
    """A fast HF tokenizer over the vocabulary's exact token bytes (byte-level BPE without
    merges: it tokenises text byte by byte, which is all the prompt needs; the decode loop
    works on ids), its special tokens at their ids, ``<|im_end|>`` as EOS."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    b2u = _bytes_to_unicode()
    table: dict[str, int] = {}
    for i, b in enumerate(vocab.token_bytes):
        if i in vocab.special or not b:
            continue
        table.setdefault("".join(b2u[x] for x in b), i)
    for i, text in vocab.special.items():
        table[text] = i
    tk = Tokenizer(models.BPE(vocab=table, merges=[], fuse_unk=False))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens(
        [
            AddedToken(vocab.special[i], special=True, normalized=False)
            for i in sorted(vocab.special)
        ]
    )
    eos = next(
        (vocab.special[i] for i in sorted(vocab.eos_ids) if "im_end" in vocab.special[i]), None
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tk, eos_token=eos or vocab.special[min(vocab.eos_ids)]
    )


def measure_backend(
    torch: Any, transformers: Any, model: Any, vocab: Any, plan: Plan, wl: Workload
) -> dict[str, Any]:
    """toolmask's transformers backend decoding a tool schema's JSON on ``model``: per-token
    forward, fill, wait, sampling and overhead, device sampling vs numpy, greedy vs sampled."""
    import toolmask as tm
    from toolmask.backends.transformers import Transformers
    from toolmask.sampling import SamplingParams

    out: dict[str, Any] = {}
    tok = hf_tokenizer(transformers, vocab)
    samplings = {
        "greedy": SamplingParams(temperature=0.0),
        "sampled": SamplingParams(temperature=0.7, top_p=0.8, top_k=20, seed=0),
    }
    be = Transformers(model, tok)
    out["vocab_matches"] = be.vocab.fingerprint == vocab.fingerprint
    compiled = tm.compile(wl.grammars[0], be.vocab)
    prompt = be.tokenize("Call the weather tool for Paris; answer with its JSON arguments.")
    for device_sampling in (True, False):
        be.device_sampling = device_sampling  # read by each generate: one model, both samplers
        for label, params in samplings.items():
            # one untimed generation first: the first forwards at each cache length, the
            # sampler's pinned buffers and kernels are first uses, not per-token costs
            be.generate(
                prompt,
                compiled,
                max_tokens=plan.backend_tokens,
                sampling=params,
                jump_forward=False,
            )
            be.timings.clear()
            gens = []
            for _ in range(4):
                g = be.generate(
                    prompt,
                    compiled,
                    max_tokens=plan.backend_tokens,
                    sampling=params,
                    jump_forward=False,
                )
                gens.append(
                    {
                        "tokens": len(g.tokens),
                        "finish": g.finish_reason,
                        "valid_prefix": bool(compiled.matcher().accept_bytes(g.text)),
                    }
                )
                if len(be.timings) >= plan.backend_tokens:
                    break
            key = f"{'device' if device_sampling else 'numpy'}/{label}"
            out[key] = {"summary": be.timings.summary(), "generations": gens}
    return out


# -- the run ---------------------------------------------------------------------------------------
def machine(torch: Any) -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for pkg in (
        "torch",
        "transformers",
        "triton",
        "xgrammar",
        "llguidance",
        "numpy",
        "quicktok-v1",
    ):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "gpu": gpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "packages": versions,
    }


def run_model(
    torch: Any,
    transformers: Any,
    name: str,
    plan: Plan,
    budget: Budget,
    report: dict[str, Any],
    wl: Workload,
    vocab: Any,
    timer: Timer,
    bandwidth: float,
    with_backend: bool,
) -> None:
    dev = plan.device
    res: dict[str, Any] = report["models"].setdefault(name, {})
    need = 40.0 if name == "qwen3-8b" else 25.0
    with phase(res, "build", budget, need) as ok:
        if not ok:
            return
        model = build_model(torch, transformers, name, dev)
        res["params"] = sum(p.numel() for p in model.parameters())
        with torch.inference_mode():
            res["mini_vs_transformers"] = check_mini(torch, model, dev)
    if "model" not in locals():
        return
    by: dict[str, Any] = res.setdefault("by_batch", {})
    with torch.inference_mode():
        for batch in plan.batches:
            row: dict[str, Any] = by.setdefault(f"B={batch}", {})
            wb, kvb = weight_bytes_read(model, batch), shape_bytes(name, batch, plan.kv_len)[1]
            row["bytes"] = {"weights": wb, "kv": kvb}
            row["floor_s"] = (wb + kvb) / bandwidth
            graph_s = None
            replay = step = None
            with phase(row, "hf", budget, 10.0) as ok:
                if ok:
                    hf = HFStep(torch, transformers, model, batch, plan.kv_len, dev)
                    row["plain"] = stats(timer.each(hf, plan.plain_reps))
                    try:
                        if dev == "cuda":  # a step that reads back to the host cannot be captured
                            torch.cuda.set_sync_debug_mode("error")
                            try:
                                hf()
                            finally:
                                torch.cuda.set_sync_debug_mode("default")
                        rp = capture(torch, hf, dev)
                        row["graph_hf"] = stats(timer.each(rp, plan.graph_reps))
                        replay, step = rp, hf
                    except Exception as e:
                        row["graph_hf"] = {"error": _error(e)}
                        del hf
                        gc.collect()
            with phase(row, "mini", budget, 8.0) as ok:
                if ok:
                    mini = MiniQwen3(torch, model, batch, plan.kv_len, dev)
                    rp = capture(torch, mini, dev)
                    row["graph_mini"] = stats(timer.each(rp, plan.graph_reps))
                    if replay is None:
                        replay, step = rp, mini
            for key in ("graph_hf", "graph_mini"):
                if "mean_us" in row.get(key, {}):
                    graph_s = row[key]["mean_us"] / 1e6
                    row["graph_used"] = key
                    break
            if replay is not None and graph_s is not None:
                with phase(row, "overlap", budget, 15.0) as ok:
                    if ok:
                        row["overlap"] = measure_overlap(
                            torch, replay, step, wl, vocab, batch, dev, graph_s
                        )
            replay = step = hf = mini = rp = None  # this batch's caches and graphs go
            if dev == "cuda":
                torch.cuda.synchronize()
            gc.collect()
            if dev == "cuda":
                torch.cuda.empty_cache()
        if with_backend:
            with phase(res, "backend", budget, 30.0) as ok:
                if ok:
                    res["backend"] = measure_backend(torch, transformers, model, vocab, plan, wl)
    del model
    gc.collect()
    if dev == "cuda":
        torch.cuda.empty_cache()


def shares(report: dict[str, Any], plan: Plan, bandwidth: float) -> list[dict[str, Any]]:
    """The table's share rows: fill mean / p99 over the graph step and over the floors."""
    rows = []
    fills = report.get("fill", {})
    for batch in plan.batches:
        f = fills.get(f"single/B={batch}", {}).get("cold", {})
        if "mean_us" not in f:
            continue
        row: dict[str, Any] = {
            "batch": batch,
            "fill_cold_mean_us": f["mean_us"],
            "fill_cold_p99_us": f["p99_us"],
        }
        for name in plan.models:
            m = report["models"].get(name, {}).get("by_batch", {}).get(f"B={batch}", {})
            g = m.get(m.get("graph_used", ""), {})
            if "mean_us" in g:
                row[f"{name}/graph_share_mean"] = f["mean_us"] / g["mean_us"]
                row[f"{name}/graph_share_p99"] = f["p99_us"] / g["mean_us"]
            wb, kvb = shape_bytes(name, batch, plan.kv_len)
            floor_us = 1e6 * (wb + kvb) / bandwidth
            row[f"{name}/floor_us"] = floor_us
            row[f"{name}/floor_share_mean"] = f["mean_us"] / floor_us
            row[f"{name}/floor_share_p99"] = f["p99_us"] / floor_us
            ov = m.get("overlap", {}).get("cold", {})
            if ov.get("visible_share_mean") is not None:
                row[f"{name}/visible_share_mean"] = ov["visible_share_mean"]
                row[f"{name}/visible_share_p99"] = ov["visible_share_p99"]
        rows.append(row)
    return rows


def _q(d: dict[str, Any], unit: str = "us") -> str:
    if "mean_us" not in d:
        return d.get("error", "-")[:40] if isinstance(d, dict) else "-"
    f = 1.0 if unit == "us" else 1e-3
    return f"{d['mean_us'] * f:,.1f} / {d['p99_us'] * f:,.1f} / {d['max_us'] * f:,.1f}"


def print_table(report: dict[str, Any], plan: Plan) -> None:
    print(
        f"\nbench/gpu.py on {report['machine'].get('gpu') or report['machine']['cpu']}"
        f" ({report['wall_s']:.0f} s;"
        f" copy bandwidth {report.get('bandwidth_Bps', 0) / 1e9:,.0f} GB/s)"
    )
    bs = plan.batches
    print("| | " + " | ".join(f"B = {b}" for b in bs) + " |")
    print("|---|" + "---|" * len(bs))
    for name in plan.models:
        by = report["models"].get(name, {}).get("by_batch", {})
        for key, label in (
            ("plain", "plain"),
            ("graph_hf", "CUDA graph (transformers)"),
            ("graph_mini", "CUDA graph (MiniQwen3)"),
        ):
            cells = [_q(by.get(f"B={b}", {}).get(key, {}), "ms") for b in bs]
            print(
                f"| {name} decode step, {label}, mean / p99 / max (ms) | "
                + " | ".join(cells)
                + " |"
            )
        cells = [f"{by.get(f'B={b}', {}).get('floor_s', float('nan')) * 1e3:.2f}" for b in bs]
        print(f"| {name} floor (ms) | " + " | ".join(cells) + " |")
    fills = report.get("fill", {})
    for fname in ("single", "batch_api"):
        for kind in ("cold", "warm"):
            cells = [_q(fills.get(f"{fname}/B={b}", {}).get(kind, {})) for b in bs]
            if any(c != "-" for c in cells):
                print(
                    f"| toolmask fill {fname}, {kind}, mean / p99 / max (µs) | "
                    + " | ".join(cells)
                    + " |"
                )
    for peer, res in report.get("peers", {}).items():
        if "error" in res:
            print(f"| {peer} | " + " | ".join([res["error"][:60]] + [""] * (len(bs) - 1)) + " |")
            continue
        for kind in ("cold", "warm"):
            cells = [_q(res.get(f"B={b}", {}).get(kind, {})) for b in bs]
            rej = sum(res.get(f"B={b}", {}).get("rejected", 0) for b in bs)
            print(
                f"| {peer} {res.get('version', '')}, {res.get('threads', '')} threads, "
                f"{kind}, mean / p99 / max (µs){f', {rej} REJECTED' if rej else ''} | "
                + " | ".join(cells)
                + " |"
            )
    share_rows = {r["batch"]: r for r in report.get("shares", [])}
    for name in plan.models:
        for what in ("graph", "floor", "visible"):
            cells = []
            for b in bs:
                r = share_rows.get(b, {})
                mean, p99 = r.get(f"{name}/{what}_share_mean"), r.get(f"{name}/{what}_share_p99")
                cells.append("-" if mean is None else f"{100 * mean:.2f}% / {100 * p99:.2f}%")
            print(
                f"| toolmask cold fill, share of the {name} {what}, mean / p99 | "
                + " | ".join(cells)
                + " |"
            )
    be = report["models"].get(plan.models[0], {}).get("backend", {})
    print(f"| backend vocabulary matches quicktok's | {be.get('vocab_matches')} |")
    for key, res in be.items():
        if isinstance(res, dict) and "summary" in res:
            s = res["summary"]
            print(
                f"| backend {key}: overhead (p50) / sample (hidden) / fill / wait / forward (ms) | "
                f"{s.get('overhead_ms', float('nan')):.3f} "
                f"({s.get('overhead_p50_ms', float('nan')):.3f}) / "
                f"{s.get('sample_ms', float('nan')):.3f} "
                f"({s.get('sample_hidden_ms', float('nan')):.3f}) / "
                f"{s.get('fill_ms', float('nan')):.3f} / {s.get('wait_ms', float('nan')):.3f} / "
                f"{s.get('forward_ms', float('nan')):.2f} | steps {s.get('steps')} |"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--out", default=str(RESULTS), help="folder for gpu.json (default bench/results)"
    )
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (GPU)")
    ap.add_argument("--tiny", action="store_true", help="CPU: a tiny Qwen3 config, B = 1, 2")
    ap.add_argument("--no-peers", action="store_true", help="skip xgrammar and llguidance")
    args = ap.parse_args(argv)
    plan = make_plan(args)
    budget = Budget(plan.budget_s)
    import torch
    import transformers

    if plan.device == "cpu":
        torch.set_num_threads(1)  # torch's spinning workers crawl on a shared machine
    if plan.device == "cuda" and not torch.cuda.is_available():
        print("bench/gpu.py: no CUDA device (use --tiny on a CPU)", file=sys.stderr)
        return 2
    from toolmask.vocab import Vocabulary

    report: dict[str, Any] = {"plan": plan.__dict__, "machine": machine(torch), "models": {}}
    timer = Timer(torch, plan.device)
    vocab = Vocabulary.from_quicktok("qwen3", vocab_size=VOCAB_SIZE)
    wl = workload(vocab, plan.schemas)
    report["workload"] = {"schemas": wl.names, "tokens": [[len(r) for r in rs] for rs in wl.runs]}
    with phase(report, "fill", budget, 10.0) as ok:
        if ok:
            report["fill"] = measure_fills(wl, vocab, plan)
            report["batch_api"] = batch_api() is not None
    with phase(report, "bandwidth", budget, 5.0) as ok:
        if ok:
            report["bandwidth_Bps"] = copy_bandwidth(torch, plan.device, plan.copy_bytes, timer)
    bandwidth = report.get("bandwidth_Bps") or 1e12
    with phase(report, "micro", budget, 10.0) as ok:
        if ok:
            report["micro"] = measure_micro(torch, plan.device, plan, timer)
    for i, name in enumerate(plan.models):
        run_model(
            torch,
            transformers,
            name,
            plan,
            budget,
            report,
            wl,
            vocab,
            timer,
            bandwidth,
            with_backend=i == 0,
        )
        if i == 0 and not args.no_peers:
            with phase(report, "peers", budget, 30.0) as ok:
                if ok:
                    report["peers"] = measure_peers(wl, vocab, plan)
    report["shares"] = shares(report, plan, bandwidth)
    report["wall_s"] = budget.elapsed()
    for v in report.get("fill", {}).values():
        v.pop("_cold_s", None)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / ("gpu-tiny.json" if args.tiny else "gpu.json")
    path.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    print_table(report, plan)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
