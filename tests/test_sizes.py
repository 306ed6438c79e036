"""Sizes that keep a module readable: no module of ``src/toolmask`` over 800 lines, no function
over 120 (its ``def`` to its last line, docstring and nested functions included).

Generated tables would be exempt (none today); the exceptions are the table between the
``sizes`` markers of ``docs/architecture.md``, each with its reason, and an exception nothing
needs any more fails too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "toolmask"
PAGE = ROOT / "docs" / "architecture.md"

MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 120


def _oversized() -> set[str]:
    """``path`` for each module over the bound, ``path:qualified.name`` for each function."""
    out: set[str] = set()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            out.add(rel)
        stack: list[tuple[ast.AST, str]] = [(ast.parse(text), "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    assert child.end_lineno is not None
                    size = child.end_lineno - child.lineno + 1
                    if not isinstance(child, ast.ClassDef) and size > MAX_FUNCTION_LINES:
                        out.add(f"{rel}:{name}")
                    stack.append((child, name + "."))
                else:
                    stack.append((child, prefix))
    return out


def _exceptions() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    m = re.search(r"<!-- sizes:begin -->\n(.*?)<!-- sizes:end -->", text, re.S)
    assert m, f"{PAGE.name} has no sizes table"
    rows = [line for line in m.group(1).splitlines() if line.startswith("|")][2:]
    out: dict[str, str] = {}
    for row in rows:
        where, reason = (cell.strip() for cell in row.strip("|").split("|"))
        out[where.strip("`")] = reason
    return out


def test_modules_and_functions_are_small() -> None:
    assert sorted(_oversized() - _exceptions().keys()) == []


def test_size_exceptions_are_needed_and_explained() -> None:
    exceptions = _exceptions()
    assert sorted(exceptions.keys() - _oversized()) == [], "delete them from the sizes table"
    assert all(len(reason) > 10 for reason in exceptions.values())
