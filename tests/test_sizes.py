"""Sizes that keep a module readable: no module of ``src/toolmask`` over 800 lines, no function
over 120 (its ``def`` to its last line, docstring and nested functions included). The C kernel
(``src/toolmask/_csrc``) is held to the same rules: no file over 800 lines, no function over
120 (its signature's first line to its closing brace), found by a brace-matching scan of the
top-level definitions after comments, literals and preprocessor lines are blanked.

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
CSRC = SRC / "_csrc"
PAGE = ROOT / "docs" / "architecture.md"

MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 120


def _blank_c(text: str) -> str:
    """``text`` with comments, string and character literals and preprocessor lines (with
    their continuations) replaced by spaces; newlines kept, so line numbers stay."""
    out: list[str] = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":  # a directive, indented or not
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("/*", i):
            j = text.index("*/", i + 2) + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            out.append(c)
            at_line_start = c == "\n" or (at_line_start and c in " \t")
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def _c_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each top-level function definition: a ``{`` at depth
    0 whose header (the text since the previous top-level ``;`` or ``}``) ends with ``)`` and
    has no ``=`` (an initializer); its first line is the header's first non-blank one."""
    found: list[tuple[str, int, int]] = []
    depth, line = 0, 1
    header, first = "", 0
    start: tuple[str, int] | None = None
    for c in _blank_c(text):
        if depth == 0:
            if c == "{":
                m = re.search(r"(\w+)\s*\((?:[^()]|\([^()]*\))*\)\s*$", header)
                start = (m.group(1), first) if m and "=" not in header else None
                depth = 1
            elif c in ";}":
                header = ""
            else:
                if not header.strip() and not c.isspace():
                    first = line
                header += c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if start is not None:
                    found.append((start[0], start[1], line))
                header = ""
        if c == "\n":
            line += 1
    return found


def _oversized() -> set[str]:
    """``path`` for each module over the bound, ``path:qualified.name`` for each function."""
    out: set[str] = set()
    for path in sorted(CSRC.glob("*.[ch]")):
        rel = path.relative_to(SRC.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            out.add(rel)
        for name, first, last in _c_functions(text):
            if last - first + 1 > MAX_FUNCTION_LINES:
                out.add(f"{rel}:{name}")
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


def test_the_c_scan_finds_functions() -> None:
    """The brace scan on a sample: functions with multi-line signatures, braces in comments,
    literals and macros, an initializer and a struct, which are not functions."""
    sample = "\n".join(
        [
            "#define M(x) do { if (x) { } } while (0)",
            "typedef struct {",
            "    int a;",
            "} S;",
            "static const int T[] = {1, 2};",
            "/* { */",
            "static int",
            "f(int a,",
            "  int b) {",
            '    const char *s = "}";',
            "    if (a) { return '{'; }",
            "    return b;",
            "}",
            "",
            "static void g(void) { }",
        ]
    )
    assert _c_functions(sample) == [("f", 7, 13), ("g", 15, 15)]
    kernel = [name for p in CSRC.glob("*.[ch]") for name, _, _ in _c_functions(p.read_text())]
    assert "mc_fill_rep" in kernel and "PyInit__native" in kernel


def test_size_exceptions_are_needed_and_explained() -> None:
    exceptions = _exceptions()
    assert sorted(exceptions.keys() - _oversized()) == [], "delete them from the sizes table"
    assert all(len(reason) > 10 for reason in exceptions.values())
