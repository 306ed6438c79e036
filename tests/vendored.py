"""The vendored test data under ``tests/data`` (what, from where, licence: tests/data/README.md).

Loaders raise when a file is missing: a test that needs the data fails, it never skips.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
SUITE = DATA / "JSON-Schema-Test-Suite"
SUITE_DIR = SUITE / "tests" / "draft2020-12"
BENCH_DIR = DATA / "jsonschemabench"
#: the JSONSchemaBench splits vendored, in report order
BENCH_SPLITS = ("Glaiveai2K", "Github_trivial", "Github_easy", "JME", "Handwritten", "Synthesized")


@dataclass(frozen=True)
class BenchRecord:
    """One JSONSchemaBench schema (MaskBench form): ``tests`` are ``{"valid", "data"}``."""

    name: str  # the upstream file name without .json, e.g. "Glaiveai2K---get_news_abc"
    split: str
    schema: Any
    tests: list[dict[str, Any]]


def bench_records(split: str | None = None) -> list[BenchRecord]:
    """Every record of ``split`` (all splits when None), in file-name order."""
    out: list[BenchRecord] = []
    for s in BENCH_SPLITS if split is None else (split,):
        path = BENCH_DIR / f"{s}.jsonl.gz"
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                out.append(BenchRecord(rec["name"], s, rec["schema"], rec.get("tests") or []))
    if split is None:
        out.sort(key=lambda r: r.name)
    return out


def suite_files(sub: str = "") -> list[Path]:
    """The draft 2020-12 test files under ``sub`` (recursively), sorted."""
    base = SUITE_DIR / sub
    files = sorted(base.rglob("*.json"))
    if not files:
        raise FileNotFoundError(f"no JSON-Schema-Test-Suite files under {base}")
    return files


def suite_remotes() -> dict[str, Any]:
    """The documents remote-``$ref`` tests expect at http://localhost:1234/, by URI."""
    out: dict[str, Any] = {}
    base = SUITE / "remotes"
    for p in sorted(base.rglob("*.json")):
        rel = p.relative_to(base).as_posix()
        out["http://localhost:1234/" + rel] = json.loads(p.read_text(encoding="utf-8"))
    if not out:
        raise FileNotFoundError(f"no remote documents under {base}")
    return out


TEMPLATE_DIR = DATA / "templates"


def chat_templates() -> list[Path]:
    """Every vendored chat template (``<collection>/<file>.jinja``), sorted."""
    files = sorted(TEMPLATE_DIR.glob("*/*.jinja"))
    if not files:
        raise FileNotFoundError(f"no chat templates under {TEMPLATE_DIR}")
    return files


def chat_template(name: str) -> Path:
    """The vendored chat template ``<collection>/<file>.jinja``."""
    path = TEMPLATE_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"no vendored chat template {path}")
    return path


SCHEMASTORE_DIR = DATA / "schemastore"


def schemastore_schemas() -> dict[str, Any]:
    """The vendored real-world schemas (``schemastore/<name>.json``), by name, sorted."""
    out = {
        p.stem: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(SCHEMASTORE_DIR.glob("*.json"))
    }
    if not out:
        raise FileNotFoundError(f"no schemas under {SCHEMASTORE_DIR}")
    return out
