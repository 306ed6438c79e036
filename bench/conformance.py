"""Conformance figures: the JSON-Schema-Test-Suite and JSONSchemaBench, by the grammar alone and
by grammar + post-decode validator. Prints tables and writes bench/results/conformance.json.
Both corpora are the copies vendored under tests/data (see tests/data/README.md).

    .venv/bin/python bench/conformance.py [--suite-only] [--splits Glaiveai2K,...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.schema.conformance import Compiled, iter_bench, remotes, suite_cases
from tests.vendored import BENCH_SPLITS

RESULTS = Path(__file__).resolve().parent / "results"


def pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "-"


def run_suite() -> dict[str, Any]:
    cases = suite_cases()
    rem = remotes()
    compiled: dict[str, Compiled] = {}
    classes: Counter[str] = Counter()
    grammar_only = 0
    by_file: dict[str, Counter[str]] = defaultdict(Counter)
    for case in cases:
        c = compiled.get(case.group)
        if c is None:
            c = compiled[case.group] = Compiled(case.schema, resources=rem)
        cls = c.classify(case.data, case.valid)
        classes[cls] += 1
        by_file[case.group.split("#")[0]][cls] += 1
        if c.grammar_only_pass(case.data, case.valid):
            grammar_only += 1
    n = len(cases)
    with_validator = classes["pass"] + classes["pass_validator"]
    print(f"\nJSON-Schema-Test-Suite draft2020-12: {n} instances, {len(compiled)} schemas")
    print(f"  grammar alone            {grammar_only:5d}  {pct(grammar_only, n)}")
    print(f"  grammar + validator      {with_validator:5d}  {pct(with_validator, n)}")
    for k in ("pass", "pass_validator", "false_negative", "unsupported", "limit", "false_positive"):
        print(f"  {k:24s} {classes[k]:5d}")
    return {
        "instances": n,
        "grammar_only_pass": grammar_only,
        "grammar_plus_validator_pass": with_validator,
        "classes": dict(classes),
        "by_file": {k: dict(v) for k, v in sorted(by_file.items())},
    }


def run_bench(splits: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    names = splits or list(BENCH_SPLITS)
    print("\nJSONSchemaBench dev: compile rate, compile time, instance classes")
    print(
        f"  {'split':16s} {'schemas':>7s} {'compiled':>9s} {'rate':>7s}"
        f" {'p50 ms':>8s} {'p99 ms':>8s}"
        f" {'inst':>6s} {'right':>7s} {'gram.only':>9s} {'FP':>4s}"
    )
    refusals: dict[str, Counter[str]] = {}
    refused: dict[str, list[str]] = {}
    for split in names:
        refusals[split] = Counter()
        times: list[float] = []
        n = ok = 0
        classes: Counter[str] = Counter()
        gram_only = 0
        inst = 0
        for stem, schema, tests in iter_bench(split):
            n += 1
            t0 = time.perf_counter()
            c = Compiled(schema)
            times.append((time.perf_counter() - t0) * 1000)
            if c.kind is None:
                ok += 1
            else:
                reason = f"{c.kind}:{c.reason}"
                refusals[split][reason] += 1
                refused.setdefault(reason, []).append(stem)
            for t in tests:
                inst += 1
                cls = c.classify(t["data"], bool(t["valid"]))
                classes[cls] += 1
                if c.grammar_only_pass(t["data"], bool(t["valid"])):
                    gram_only += 1
        right = classes["pass"] + classes["pass_validator"]
        times.sort()
        p50 = statistics.median(times) if times else 0.0
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))] if times else 0.0
        print(
            f"  {split:16s} {n:7d} {ok:9d} {pct(ok, n):>7s} {p50:8.1f} {p99:8.1f}"
            f" {inst:6d} {pct(right, inst):>7s} {pct(gram_only, inst):>9s}"
            f" {classes['false_positive']:4d}"
        )
        out[split] = {
            "schemas": n,
            "compiled": ok,
            "compile_ms_p50": p50,
            "compile_ms_p99": p99,
            "instances": inst,
            "classes": dict(classes),
            "grammar_only_pass": gram_only,
            "refusals": dict(refusals[split]),
        }
    print_refusals(refusals, names)
    out["refused"] = {k: sorted(v) for k, v in sorted(refused.items())}
    return out


def print_refusals(refusals: dict[str, Counter[str]], names: list[str]) -> None:
    """The refused schemas by reason (``limit:<Limits field>`` for a LimitError,
    ``unsupported:<keyword>`` for a SchemaError), one column per split."""
    reasons = sorted({r for c in refusals.values() for r in c})
    print("\nJSONSchemaBench dev: refusals by reason")
    short = [s[:10] for s in names]
    print(f"  {'reason':40s}" + "".join(f" {s:>10s}" for s in short) + f" {'total':>6s}")
    for r in reasons:
        counts = [refusals[s][r] for s in names]
        print(f"  {r:40s}" + "".join(f" {c:10d}" for c in counts) + f" {sum(counts):6d}")
    totals = [sum(refusals[s].values()) for s in names]
    print(f"  {'all':40s}" + "".join(f" {c:10d}" for c in totals) + f" {sum(totals):6d}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite-only", action="store_true")
    ap.add_argument("--bench-only", action="store_true")
    ap.add_argument("--splits", default="")
    args = ap.parse_args()
    report: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
        },
        "load_avg": os.getloadavg(),
    }
    if not args.bench_only:
        report["suite"] = run_suite()
    if not args.suite_only:
        report["jsonschemabench"] = run_bench([s for s in args.splits.split(",") if s] or None)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "conformance.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
