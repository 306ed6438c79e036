"""canitoolcall's conformance matrix for toolmask's parsers: per family, strict pass / soft pass /
fail / unsupported over every bundled fixture, for the batch parse, the streams of
``tests/tools/canitoolcall_glue.py`` and both together (the case status), next to vLLM 0.30's
published column. With ``--acceptance``, also the turn grammars' acceptance of the fixtures'
exact ``raw_output`` per family and format (``grammar_accepts``: every mode of
``grammar_modes``), and the fixtures refused with the reason. Writes
``bench/results/canitoolcall.json`` and ``.txt`` (unless ``--family`` narrows the run).

    PYTHONPATH=src:. python bench/canitoolcall_matrix.py [--family SLUG] [--show-fail]
        [--acceptance]

vLLM's column: canitoolcall's README (2026-09-25 run) gives vLLM 0.30.0 268 pass + 86 soft pass
of 469 (115 fail); its ``results/2026-09-25/triage.jsonl`` lists every failing fixture, from
which the per-family fails below are counted (115 in all); pass + soft pass per family is the
family's fixtures less those. The split between pass and soft pass per family is not published.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
from pathlib import Path
from typing import Any

import canitoolcall
from canitoolcall.results import Status
from tests.tools.canitoolcall_glue import (
    FAMILIES,
    all_fixtures,
    evaluate_modes,
    format_for,
    grammar_accepts,
    grammar_modes,
    has_complete_calls,
)

#: vLLM 0.30.0's failing fixtures per family (canitoolcall triage.jsonl, 2026-09-25)
VLLM_FAILS = {
    "qwen3-hermes": 9, "qwen3-xml": 5, "gpt-oss": 5, "deepseek": 33, "kimi": 8, "glm": 7,
    "llama": 25, "mistral": 7, "gemma4": 16,
}  # fmt: skip
GOOD = (Status.PASS, Status.SOFT_PASS)
COLS = (Status.PASS, Status.SOFT_PASS, Status.FAIL, Status.ERROR, Status.UNSUPPORTED)
OUT = Path(__file__).parent / "results"


def acceptance(families: list[str], show: bool) -> tuple[dict[str, Any], list[str]]:
    """Per family/format: fixtures with complete calls whose raw_output the grammar accepts."""
    total: collections.Counter[str] = collections.Counter()
    ok: collections.Counter[str] = collections.Counter()
    refused: dict[str, str] = {}
    for fx in all_fixtures():
        name = format_for(fx)
        if (families and fx.family not in families) or not has_complete_calls(fx) or not name:
            continue
        why = [f"{mode}: {w}" for mode in grammar_modes(fx) if (w := grammar_accepts(fx, mode))]
        key = f"{fx.family}/{name}"
        total[key] += 1
        ok[key] += not why
        if why:
            refused[fx.id] = why[0]
            if show:
                print(f"refused  {fx.id}: {why[0][:200]}")
    lines = [f"{'family/format':32}{'accepted':>10}{'of':>6}"]
    for key in sorted(total):
        lines.append(f"{key:32}{ok[key]:>10}{total[key]:>6}")
    n, k = sum(total.values()), sum(ok.values())
    lines.append(f"{'all':32}{k:>10}{n:>6}   ({100 * k / max(n, 1):.1f}%)")
    from tests.tools.test_canitoolcall_grammar import GAPS  # why each should stay refused

    data = {
        "accepted": k,
        "of": n,
        "per_format": {key: {"accepted": ok[key], "of": total[key]} for key in sorted(total)},
        "refused": {
            fid: {"grammar": why, "why_not_admitted": GAPS.get(fid) or GAPS.get(f"{fid}@required")}
            for fid, why in refused.items()
        },
    }
    return data, lines


def table(counts: dict[str, collections.Counter[Status]], title: str) -> list[str]:
    lines = [f"{title:14}" + "".join(f"{c.value:>12}" for c in COLS) + f"{'total':>8}"]
    total: collections.Counter[Status] = collections.Counter()
    for fam in FAMILIES:
        if fam in counts:
            c = counts[fam]
            total.update(c)
            lines.append(f"{fam:14}" + "".join(f"{c[s]:>12}" for s in COLS) + f"{c.total():>8}")
    lines.append(f"{'all':14}" + "".join(f"{total[s]:>12}" for s in COLS) + f"{total.total():>8}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--family", action="append", default=[])
    ap.add_argument("--show-fail", action="store_true", help="print the failing checks")
    ap.add_argument("--acceptance", action="store_true", help="also the grammar acceptance")
    a = ap.parse_args()
    modes = ("case", "batch", "stream")
    counts = {m: collections.defaultdict(collections.Counter) for m in modes}
    failing: dict[str, list[str]] = {}
    for fx in all_fixtures():
        if a.family and fx.family not in a.family:
            continue
        *statuses, bad = evaluate_modes(fx)
        for m, st in zip(modes, statuses, strict=True):
            counts[m][fx.family][st] += 1
        if statuses[0] not in GOOD:
            failing[fx.id] = bad[:3]
        if a.show_fail and statuses[0] in (Status.FAIL, Status.ERROR, Status.SOFT_PASS):
            print(f"{statuses[0].value:9} {fx.id}")
            for line in bad[:3]:
                print("    " + line[:300])
    lines: list[str] = []
    for m, title in zip(modes, ("all checks", "batch", "streams"), strict=True):
        lines += [*table(counts[m], title), ""]
    lines.append(
        f"{'family':14}{'toolmask':>10}{'batch':>8}{'stream':>8}{'vLLM 0.30':>11}{'of':>6}"
    )
    per_family: dict[str, Any] = {}
    for fam in FAMILIES:
        if fam not in counts["case"]:
            continue
        n = counts["case"][fam].total()
        good = {m: sum(counts[m][fam][s] for s in GOOD) for m in modes}
        vllm = n - VLLM_FAILS[fam]
        lines.append(
            f"{fam:14}{good['case']:>10}{good['batch']:>8}{good['stream']:>8}{vllm:>11}{n:>6}"
        )
        per_family[fam] = {m: {s.value: counts[m][fam][s] for s in COLS} for m in modes} | {
            "fixtures": n,
            "vllm_0.30_pass_or_soft": vllm,
        }
    n_all = sum(f["fixtures"] for f in per_family.values())
    good_all = {m: sum(sum(counts[m][f][s] for s in GOOD) for f in per_family) for m in modes}
    vllm_all = sum(f["vllm_0.30_pass_or_soft"] for f in per_family.values())
    lines.append(
        f"{'all':14}{good_all['case']:>10}{good_all['batch']:>8}{good_all['stream']:>8}"
        f"{vllm_all:>11}{n_all:>6}   ({100 * good_all['case'] / max(n_all, 1):.1f}% vs "
        f"{100 * vllm_all / max(n_all, 1):.1f}%)"
    )
    result: dict[str, Any] = {
        "canitoolcall": canitoolcall.__version__,
        "conditions": {
            "parsers": "toolmask parse_turn (batch) and StreamParser (streams)",
            "streams": "canitoolcall's default strategies (one, special, token, rand:1..5:8) "
            "over character units with every family marker whole; char:1 synthetic",
            "machine": f"{platform.machine()}, load average {os.getloadavg()[0]:.2f}",
        },
        "pass_or_soft": {**good_all, "vllm_0.30": vllm_all, "fixtures": n_all},
        "per_family": per_family,
        "not_passing": failing,
    }
    if a.acceptance:
        acc, acc_lines = acceptance(a.family, a.show_fail)
        lines += ["", *acc_lines]
        result["acceptance"] = acc
    print("\n".join(lines))
    if not a.family:
        OUT.mkdir(exist_ok=True)
        (OUT / "canitoolcall.json").write_text(json.dumps(result, indent=1) + "\n")
        (OUT / "canitoolcall.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
