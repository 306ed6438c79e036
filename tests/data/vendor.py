"""Rebuild the vendored test data from upstream checkouts (run by hand; tests never run it).

    python tests/data/vendor.py --suite PATH/JSON-Schema-Test-Suite --bench PATH/bench-dev-dir

* ``--suite``: a JSON-Schema-Test-Suite checkout; copies ``LICENSE``, ``tests/draft2020-12/``
  and the ``remotes/`` documents the draft 2020-12 tests refer to.
* ``--bench``: a folder of JSONSchemaBench records in MaskBench form (``Split---id.json``,
  ``JME_n.json``); writes one gzipped JSON Lines file per split, one record per line with its
  file name (without ``.json``) under ``"name"``, in file-name order. Byte-for-byte
  reproducible (gzip mtime 0).
* ``--schemastore``: the ``check_jsonschema/builtin_schemas/vendor`` folder of an unpacked
  ``check-jsonschema`` wheel (``pip download --no-deps check-jsonschema``); copies the schemas
  of :data:`SCHEMASTORE` byte for byte, with their licence files.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: remote documents the draft 2020-12 tests load (by URI under http://localhost:1234/)
REMOTES = ["draft2020-12", "draft2019-09/ignore-prefixItems.json"]


def vendor_suite(src: Path) -> None:
    dst = HERE / "JSON-Schema-Test-Suite"
    if dst.exists():
        shutil.rmtree(dst)
    (dst / "tests").mkdir(parents=True)
    shutil.copy(src / "LICENSE", dst / "LICENSE")
    shutil.copytree(src / "tests" / "draft2020-12", dst / "tests" / "draft2020-12")
    for rel in REMOTES:
        s, d = src / "remotes" / rel, dst / "remotes" / rel
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():
            shutil.copytree(s, d)
        else:
            shutil.copy(s, d)


#: the schemas of check-jsonschema's vendored copies taken, with their licence file (under
#: that folder's ``licenses/``): SchemaStore's own (Apache-2.0) and those whose authors'
#: permissive licence ships beside them. Left out: renovate (AGPL-3.0), snapcraft (GPL-3.0),
#: and circle-ci, mergify and woodpecker-ci, whose licence the wheel does not ship.
SCHEMASTORE: dict[str, str] = {
    **dict.fromkeys(
        [
            "bamboo-spec",
            "cloudbuild",
            "codecov",
            "dependabot",
            "drone-ci",
            "github-actions",
            "github-discussion",
            "github-issue-config",
            "github-issue-forms",
            "github-workflows",
            "travis",
        ],
        "LICENSE.schemastore",
    ),
    "azure-pipelines": "LICENSE.azure-pipelines",
    "bitbucket-pipelines": "LICENSE.bitbucket-pipelines",
    "buildkite": "LICENSE.buildkite",
    "changie": "LICENSE.changie",
    "citation-file-format": "LICENSE.citation-file-format",
    "compose-spec": "LICENSE.compose-spec",
    "gitlab-ci": "LICENSE.gitlab",
    "meltano": "LICENSE.meltano",
    "readthedocs": "LICENSE.readthedocs",
    "taskfile": "LICENSE.task",
}


def vendor_schemastore(src: Path) -> None:
    dst = HERE / "schemastore"
    (dst / "licenses").mkdir(parents=True, exist_ok=True)
    for name, licence in sorted(SCHEMASTORE.items()):
        shutil.copy(src / f"{name}.json", dst / f"{name}.json")
        shutil.copy(src / "licenses" / licence, dst / "licenses" / licence)
    shutil.copy(src / "README.md", dst / "licenses" / "UPSTREAM-README.md")


def _finite(v: Any) -> bool:
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list):
        return all(_finite(x) for x in v)
    if isinstance(v, dict):
        return all(_finite(x) for x in v.values())
    return True


def split_of(name: str) -> str:
    return name.split("---")[0] if "---" in name else re.sub(r"_[0-9]+$", "", name)


def vendor_bench(src: Path) -> None:
    dst = HERE / "jsonschemabench"
    dst.mkdir(exist_ok=True)
    by_split: dict[str, list[str]] = {}
    for path in sorted(src.glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        assert _finite(rec), f"{path.name}: a value JSON Lines cannot keep"
        line = json.dumps({"name": path.stem, **rec}, ensure_ascii=False, allow_nan=False)
        assert json.loads(line) == {"name": path.stem, **rec}
        by_split.setdefault(split_of(path.stem), []).append(line)
    for split, lines in sorted(by_split.items()):
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
            gz.write(("\n".join(lines) + "\n").encode("utf-8"))
        (dst / f"{split}.jsonl.gz").write_bytes(buf.getvalue())
        print(f"{split}: {len(lines)} records, {len(buf.getvalue())} bytes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", type=Path)
    ap.add_argument("--bench", type=Path)
    ap.add_argument("--schemastore", type=Path)
    args = ap.parse_args()
    if args.suite:
        vendor_suite(args.suite)
    if args.bench:
        vendor_bench(args.bench)
    if args.schemastore:
        vendor_schemastore(args.schemastore)


if __name__ == "__main__":
    main()
