"""canitoolcall's conformance matrix for toolmask's parsers: per family, strict pass / soft pass /
fail / unsupported over every bundled fixture (batch parse and the streams of
``tests/tools/canitoolcall_glue.py``).

    PYTHONPATH=src:. python bench/canitoolcall_matrix.py [--family SLUG] [--show-fail]
"""

from __future__ import annotations

import argparse
import collections

from canitoolcall.results import Status
from tests.tools.canitoolcall_glue import FAMILIES, all_fixtures, evaluate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--family", action="append", default=[])
    ap.add_argument("--show-fail", action="store_true", help="print the failing checks")
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


if __name__ == "__main__":
    main()
