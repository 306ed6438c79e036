"""Which schemas toolmask refuses, and which are slow, under the library's own limits.

Compiles every JSONSchemaBench schema vendored under tests/data (or the schemas of a folder of
MaskBench-form files, ``--dir``) with ``DEFAULT_LIMITS`` (``max_compile_seconds`` included,
unlike bench/conformance.py, which lifts it so that its verdicts do not depend on the load),
each in a worker process with a wall-clock timeout of its own, so that a compilation that never
reaches the deadline check is seen too. Each schema is compiled to a grammar and then to its
byte-level automaton (``tm.compile``), and the instances its record holds are run through it.
Prints the refusals by kind (``limit:<Limits field>``, ``unsupported:<keyword>``, ``timeout``,
``internal:<exception>``) and the slowest schemas with the phase that took the time, and writes
bench/results/refusals.json.

    .venv/bin/python bench/refusals.py [--dir ../shared/data/jsonschemabench-dev | --schemastore]
        [--timeout 60] [--out refusals.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).resolve().parent / "results"


def _records(folder: str | None, schemastore: bool) -> list[tuple[str, Any, list[Any]]]:
    if schemastore:
        from tests.vendored import schemastore_schemas

        return [(name, schema, []) for name, schema in schemastore_schemas().items()]
    if folder:
        out = []
        for p in sorted(Path(folder).glob("*.json")):
            rec = json.loads(p.read_text(encoding="utf-8"))
            out.append((p.stem, rec["schema"], rec.get("tests") or []))
        return out
    from tests.vendored import bench_records

    return [(r.name, r.schema, r.tests) for r in bench_records()]


def _one(args: tuple[str, Any, list[Any]]) -> dict[str, Any]:
    """Compile one schema in this worker; the verdict and the time of each phase."""
    import logging

    import toolmask as tm
    from toolmask.errors import LimitError, SchemaError

    logging.getLogger("toolmask.schema").setLevel(logging.ERROR)  # unknown-format notes
    name, schema, tests = args
    row: dict[str, Any] = {"name": name, "kind": "ok"}
    t0 = time.perf_counter()
    try:
        g = tm.Grammar.from_json_schema(schema)
        t1 = time.perf_counter()
        row["schema_s"] = t1 - t0
        c = tm.compile(g)
        t2 = time.perf_counter()
        row["automaton_s"] = t2 - t1
        for t in tests:
            text = json.dumps(t["data"], ensure_ascii=False, separators=(",", ":"))
            c.matcher().accept_bytes(text.encode("utf-8", "surrogatepass"))
        row["instances_s"] = time.perf_counter() - t2
        row["rules"] = len(g.rules)
    except LimitError as e:
        row["kind"] = f"limit:{e.limit}"
        row["error"] = str(e)[:300]
    except SchemaError as e:
        row["kind"] = f"unsupported:{e.keyword or 'schema'}"
        row["error"] = str(e)[:300]
        if "could not be compiled" in str(e):
            row["kind"] = "internal:SchemaError"
    except Exception as e:  # a compiler fault: reported, never hidden
        row["kind"] = f"internal:{type(e).__name__}"
        row["error"] = str(e)[:300]
    row["total_s"] = time.perf_counter() - t0
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="", help="a folder of MaskBench-form .json files")
    ap.add_argument("--schemastore", action="store_true", help="tests/data/schemastore instead")
    ap.add_argument("--timeout", type=float, default=60.0, help="wall-clock seconds per schema")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated record names")
    ap.add_argument("--out", default="refusals.json")
    args = ap.parse_args()
    recs = _records(args.dir or None, args.schemastore)
    if args.only:
        keep = set(args.only.split(","))
        recs = [r for r in recs if r[0] in keep]
    rows: list[dict[str, Any]] = []
    ctx = mp.get_context("spawn")
    pending = list(recs)
    while pending:
        # a pool per batch, so that a worker stuck past the timeout is killed with its batch
        batch, pending = pending[: 50 * args.workers], pending[50 * args.workers :]
        with ctx.Pool(args.workers, maxtasksperchild=50) as pool:
            futures = [(r[0], pool.apply_async(_one, (r,))) for r in batch]
            for name, fut in futures:
                try:
                    rows.append(fut.get(timeout=args.timeout))
                except mp.TimeoutError:
                    rows.append({"name": name, "kind": "timeout", "total_s": args.timeout})
                    pool.terminate()
                    # the rest of the batch goes round again in a fresh pool
                    done = {r["name"] for r in rows}
                    pending = [r for r in batch if r[0] not in done] + pending
                    break
    kinds = Counter(r["kind"] for r in rows)
    print(f"\n{len(rows)} schemas, timeout {args.timeout:.0f} s, load {os.getloadavg()[0]:.1f}")
    print(f"  {'kind':44s} {'schemas':>7s}")
    for k, n in sorted(kinds.items(), key=lambda kv: (kv[0] != "ok", kv[0])):
        print(f"  {k:44s} {n:7d}")
    print("\nrefused:")
    for r in rows:
        if r["kind"] != "ok":
            print(f"  {r['name']:48s} {r['kind']:32s} {r['total_s']:7.2f} s")
    slow = sorted(rows, key=lambda r: -r["total_s"])[:15]
    print("\nslowest (s): total, schema -> grammar, grammar -> automaton, instances")
    for r in slow:
        print(
            f"  {r['name']:48s} {r['total_s']:7.2f} {r.get('schema_s', 0):7.2f}"
            f" {r.get('automaton_s', 0):7.2f} {r.get('instances_s', 0):7.2f}  {r['kind']}"
        )
    RESULTS.mkdir(exist_ok=True)
    report = {
        "source": "tests/data/schemastore"
        if args.schemastore
        else args.dir or "tests/data/jsonschemabench",
        "timeout_s": args.timeout,
        "load_avg": os.getloadavg(),
        "kinds": dict(kinds),
        "rows": rows,
    }
    (RESULTS / args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
