"""The imports of ``src/toolmask`` run one way, as ``docs/architecture.md`` draws them.

Every module's imports are read with :mod:`ast`: at module level, inside functions and under
``if TYPE_CHECKING:`` alike (a type named in an annotation is a dependency too: an upward one
would let a lower layer know a higher layer's types, and a cycle through annotations is a
cycle in the design). Imports by string count too: ``importlib.import_module("toolmask...")``
(or ``__import__``) with a constant name, and a ``"toolmask.module:name"`` reference (how a
loader table or a plug-in registration names a module to import later). A bare dotted string
(a logger's name, a package named in an error message) is no import. Three rules, each failing
with the offending import and its line:

* **layers**: a module of unit ``A`` imports a module of unit ``B`` only where the table in
  ``docs/architecture.md`` lets ``A`` import ``B`` (a unit is a top-level module or subpackage
  of ``toolmask``; the table lists each one's stage and what it may import, all of a lower
  stage);
* **private**: no module imports another unit's private module (a path component ``_name``
  below the unit) or private name;
* **cycles**: the module graph has no cycle (no import whose target leads back to its importer).

The page's exception table lists the imports these rules let through, each with its reason;
an exception that no import needs any more fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PAGE = ROOT / "docs" / "architecture.md"

#: the unit of the package front (``toolmask/__init__.py``)
FRONT = "toolmask"
#: compiled extension modules (imported by string; not Python modules of the graph)
EXTENSIONS = frozenset({"toolmask._native"})
#: ``"toolmask.module:name"``: a module and one of its names, imported by whoever reads it
REFERENCE = re.compile(r"(toolmask(?:\.\w+)*):(\w+)")


@dataclass(frozen=True, slots=True)
class Import:
    importer: str  # module name
    target: str  # module name
    names: tuple[str, ...]  # the names a ``from`` import takes (empty for ``import x``)
    line: int

    def where(self) -> str:
        return f"{self.importer}:{self.line} imports {self.target}"


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted((SRC / "toolmask").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _import_call(func: ast.expr) -> bool:
    """``importlib.import_module``, ``import_module`` or ``__import__``."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__")


def _string_imports(module: str, tree: ast.AST) -> Iterator[Import]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _import_call(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                name = arg.value
                if name.split(".")[0] == "toolmask" and name not in EXTENSIONS:
                    yield Import(module, _nearest_module(name), (), node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            ref = REFERENCE.fullmatch(node.value)
            if ref is not None:
                target, attr = ref.groups()
                if target in MODULES:
                    yield Import(module, target, (attr,), node.lineno)
                else:
                    yield Import(module, _nearest_module(target), (), node.lineno)


def _imports(module: str, path: Path) -> Iterator[Import]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    yield from _string_imports(module, tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "toolmask":
                    yield Import(module, _nearest_module(alias.name), (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "toolmask":
                continue
            plain: list[str] = []
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:  # ``from toolmask.schema import _langs``: a module
                    yield Import(module, sub, (), node.lineno)
                else:
                    plain.append(alias.name)
            if plain:
                yield Import(module, _nearest_module(target), tuple(plain), node.lineno)


def _nearest_module(name: str) -> str:
    while name not in MODULES and "." in name:
        name = name.rpartition(".")[0]
    return name


IMPORTS = [imp for mod, path in MODULES.items() for imp in _imports(mod, path)]


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else FRONT


def _private_part(imp: Import) -> str | None:
    """The private component through which ``imp`` reaches into another unit, if any."""
    if unit_of(imp.importer) == unit_of(imp.target):
        return None
    for part in imp.target.split(".")[2:]:
        if part.startswith("_") and not part.startswith("__"):
            return part
    for name in imp.names:
        if name.startswith("_") and not name.startswith("__"):
            return name
    return None


# -- the page ---------------------------------------------------------------------------------


def _table(marker: str) -> list[list[str]]:
    text = PAGE.read_text(encoding="utf-8")
    m = re.search(rf"<!-- {marker}:begin -->\n(.*?)<!-- {marker}:end -->", text, re.S)
    assert m, f"{PAGE.name} has no {marker} table"
    rows = [line for line in m.group(1).splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


@dataclass(frozen=True, slots=True)
class Layer:
    stage: int
    may_import: frozenset[str]


def _layers() -> dict[str, Layer]:
    rows = _table("layers")
    stage_of: dict[str, int] = {}
    for stage, units, _what, _may in rows:
        for u in _names(units):
            stage_of[u] = int(stage)
    out: dict[str, Layer] = {}
    for stage, units, _what, may in rows:
        below = {u for u, s in stage_of.items() if s < int(stage)}
        allowed = below if may.strip() == "all below" else set(_names(may))
        for u in _names(units):
            out[u] = Layer(int(stage), frozenset(allowed))
    return out


@dataclass(frozen=True, slots=True)
class Exception_:
    importer: str
    target: str
    rule: str
    reason: str


def _exceptions() -> list[Exception_]:
    out = []
    for importer, target, rule, reason in _table("exceptions"):
        (imp,) = _names(importer)
        (tgt,) = _names(target)
        out.append(Exception_(imp, tgt, rule, reason))
    return out


LAYERS = _layers()
EXCEPTIONS = _exceptions()


def _excepted(rule: str) -> set[tuple[str, str]]:
    return {(e.importer, e.target) for e in EXCEPTIONS if e.rule == rule}


# -- the rules --------------------------------------------------------------------------------


def layer_violations() -> list[Import]:
    out = []
    for imp in IMPORTS:
        a, b = unit_of(imp.importer), unit_of(imp.target)
        if a != b and b not in LAYERS[a].may_import:
            out.append(imp)
    return out


def private_violations() -> list[Import]:
    return [imp for imp in IMPORTS if _private_part(imp) is not None]


def _graph(skip: set[tuple[str, str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in IMPORTS:
        if imp.target != imp.importer and (imp.importer, imp.target) not in skip:
            graph[imp.importer].add(imp.target)
    return graph


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen = {start}
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def cycles(skip: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The imports that lie on a cycle: ``a -> b`` where ``b`` leads back to ``a`` (imports in
    ``skip`` left out). O(imports x modules)."""
    graph = _graph(skip)
    return sorted((a, b) for a, bs in graph.items() for b in bs if _reaches(graph, b, a))


# -- tests ------------------------------------------------------------------------------------


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(m) for m in MODULES}
    assert units - LAYERS.keys() == set(), "units missing from docs/architecture.md"
    assert LAYERS.keys() - units == set(), "layers for units that do not exist"


def test_layers_point_down() -> None:
    for unit, layer in LAYERS.items():
        for other in layer.may_import:
            assert LAYERS[other].stage < layer.stage, f"{unit} may import {other}: not below it"


def test_no_import_from_a_higher_or_unlisted_layer() -> None:
    allowed = _excepted("layers")
    bad = [i.where() for i in layer_violations() if (i.importer, i.target) not in allowed]
    assert bad == []


def test_no_private_import_across_units() -> None:
    allowed = _excepted("private")
    bad = [i.where() for i in private_violations() if (i.importer, i.target) not in allowed]
    assert bad == []


def test_no_cycle() -> None:
    assert cycles(_excepted("cycle")) == []


@pytest.mark.parametrize("rule", ["layers", "private", "cycle"])
def test_exceptions_are_needed(rule: str) -> None:
    """Every exception is an import that exists and breaks its rule (the list only shrinks)."""
    found = {
        "layers": {(i.importer, i.target) for i in layer_violations()},
        "private": {(i.importer, i.target) for i in private_violations()},
        "cycle": {(i.importer, i.target) for i in IMPORTS},
    }[rule]
    stale = sorted(_excepted(rule) - found)
    assert stale == [], f"{rule} exceptions no import needs: delete them from {PAGE.name}"
    if rule == "cycle":
        # each cycle exception breaks a cycle: without it, its import lies on one
        for edge in sorted(_excepted("cycle")):
            assert edge in cycles(_excepted("cycle") - {edge}), f"{edge} breaks no cycle"


def test_exceptions_have_reasons() -> None:
    for e in EXCEPTIONS:
        assert e.rule in ("layers", "private", "cycle"), e
        assert len(e.reason) > 10, e


def test_string_imports_are_read() -> None:
    code = (
        "import importlib\n"
        "importlib.import_module('toolmask.grammar._ir')\n"
        "importlib.import_module('toolmask._native')\n"  # a compiled extension: no module here
        "LOADERS = {'x': 'toolmask.schema:compile_json_schema', 'y': 'toolmask.tools.nope:f'}\n"
        "log = 'toolmask.server'\n"  # a logger's name: no import
        "'''toolmask.vocab:Vocabulary'''\n"
    )
    got = sorted((i.target, i.names) for i in _string_imports("toolmask.mask._x", ast.parse(code)))
    assert got == [
        ("toolmask.grammar._ir", ()),
        ("toolmask.schema", ("compile_json_schema",)),
        ("toolmask.tools", ()),
        ("toolmask.vocab", ("Vocabulary",)),
    ]
    # the engine table's string is an import the rules see (and the page excepts)
    engines = {i.target for i in IMPORTS if i.importer == "toolmask.server.cli"}
    assert "toolmask.integrations.vllm" in engines
