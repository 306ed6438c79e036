"""The registry of wire formats: one list of names, each the module of its name, and every place
that lists the formats (detection's clue table, docs/tools.md, the README) naming the same ones;
the formats package a leaf of the tool layer, its formats independent of each other."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from toolmask.tools import FORMATS
from toolmask.tools.formats import BUILTIN, RULES, FormatSpec, module_of

from ...test_imports import IMPORTS, MODULES

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = "toolmask.tools.formats"
_NAME = re.compile(r"`([a-z0-9_]+)`")


def test_every_builtin_is_registered_in_order() -> None:
    assert list(FORMATS)[: len(BUILTIN)] == list(BUILTIN)
    assert len(set(BUILTIN)) == len(BUILTIN)


def test_module_names_match_what_they_register() -> None:
    for name in BUILTIN:
        spec = importlib.import_module(module_of(name)).SPEC
        assert isinstance(spec, FormatSpec)
        assert spec.name == name
        assert FORMATS[name] is spec


def test_the_package_holds_formats_and_private_modules_only() -> None:
    public = {
        m.rpartition(".")[2]
        for m in MODULES
        if m.startswith(PACKAGE + ".") and not m.rpartition(".")[2].startswith("_")
    }
    assert public == set(BUILTIN)


def test_detection_rules_name_registered_formats() -> None:
    assert {name for name, _ in RULES} <= set(BUILTIN)


def _wire_format_section(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i)]


def test_docs_tools_lists_the_registry() -> None:
    """The format tables of docs/tools.md ("Wire formats") name exactly the registered ones."""
    text = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    section = _wire_format_section(text, "## Wire formats", "## Detection by proof")
    names: set[str] = set()
    for line in section.splitlines():
        first = line.split("|")[1] if line.startswith("| `") else ""
        names |= set(_NAME.findall(first))
    assert names == set(BUILTIN)


def test_readme_lists_the_registry() -> None:
    """The README's table of proven formats and the sentence after it name exactly the
    registered ones."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = _wire_format_section(text, "| format | proven on", "are proven on their own")
    names: set[str] = set()
    for line in section.splitlines():
        first = line.split("|")[1] if line.startswith("| `") else line
        names |= set(_NAME.findall(first))
    assert names == set(BUILTIN)


def test_formats_is_a_leaf_of_the_tool_layer() -> None:
    """Nothing in ``toolmask.tools.formats`` imports a module of ``toolmask.tools`` outside
    the package (type-only and lazy imports included)."""
    outside = [
        imp.where()
        for imp in IMPORTS
        if imp.importer.startswith(PACKAGE)
        and imp.target.startswith("toolmask.tools")
        and not imp.target.startswith(PACKAGE)
    ]
    assert outside == []


def test_formats_never_import_each_other() -> None:
    """A format module imports private modules of the package (codecs, shared texts and
    readers), never another format."""
    formats = {f"{PACKAGE}.{name}" for name in BUILTIN}
    crossing = [imp.where() for imp in IMPORTS if imp.importer in formats and imp.target in formats]
    assert crossing == []
