"""canitoolcall's conformance matrix for toolmask's parsers: per family, strict pass / soft pass /
fail / unsupported over every bundled fixture (batch parse and the streams of
``tests/tools/canitoolcall_glue.py``). With ``--acceptance``, also the turn grammars' acceptance
of the fixtures' exact ``raw_output`` per family and format (``grammar_accepts``: every mode of
``grammar_modes``), and the fixtures refused.

    PYTHONPATH=src:. python bench/canitoolcall_matrix.py [--family SLUG] [--show-fail]
        [--acceptance]
"""

from __future__ import annotations

import argparse
import collections

from canitoolcall.results import Status
from tests.tools.canitoolcall_glue import (
    FAMILIES,
    all_fixtures,
    evaluate,
    format_for,
    grammar_accepts,
    grammar_modes,
    has_complete_calls,
)


def acceptance(families: list[str], show: bool) -> None:
    """Per family/format: fixtures with complete calls whose raw_output the grammar accepts."""
    total: collections.Counter[str] = collections.Counter()
    ok: collections.Counter[str] = collections.Counter()
    for fx in all_fixtures():
        name = format_for(fx)
        if (families and fx.family not in families) or not has_complete_calls(fx) or not name:
            continue
        why = [w for mode in grammar_modes(fx) if (w := grammar_accepts(fx, mode)) is not None]
        key = f"{fx.family}/{name}"
        total[key] += 1
        ok[key] += not why
        if why and show:
            print(f"refused  {fx.id}: {why[0][:200]}")
    print(f"{'family/format':32}{'accepted':>10}{'of':>6}")
    for key in sorted(total):
        print(f"{key:32}{ok[key]:>10}{total[key]:>6}")
    print(f"{'all':32}{sum(ok.values()):>10}{sum(total.values()):>6}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--family", action="append", default=[])
    ap.add_argument("--show-fail", action="store_true", help="print the failing checks")
    ap.add_argument("--acceptance", action="store_true", help="also the grammar acceptance")
    a = ap.parse_args()
    counts: dict[str, collections.Counter[Status]] = collections.defaultdict(collections.Counter)
    for fx in all_fixtures():
        if a.family and fx.family not in a.family:
            continue
        status, bad = evaluate(fx)
        counts[fx.family][status] += 1
        if a.show_fail and status in (Status.FAIL, Status.ERROR, Status.SOFT_PASS):
            print(f"{status.value:9} {fx.id}")
            for line in bad[:3]:
                print("    " + line[:300])
    cols = (Status.PASS, Status.SOFT_PASS, Status.FAIL, Status.ERROR, Status.UNSUPPORTED)
    print(f"{'family':14}" + "".join(f"{c.value:>12}" for c in cols) + f"{'total':>8}")
    total: collections.Counter[Status] = collections.Counter()
    for fam in FAMILIES:
        if fam in counts:
            c = counts[fam]
            total.update(c)
            print(f"{fam:14}" + "".join(f"{c[s]:>12}" for s in cols) + f"{sum(c.values()):>8}")
    print(f"{'all':14}" + "".join(f"{total[s]:>12}" for s in cols) + f"{sum(total.values()):>8}")
    if a.acceptance:
        print()
        acceptance(a.family, a.show_fail)


if __name__ == "__main__":
    main()
