"""Every ```python block of the README and of ``docs/*.md`` runs as written.

The blocks of one page run in order in one namespace (a later block may use what an earlier one
defined), from the repository's root. A page whose blocks load the real model (``LlamaCpp``) is
marked ``model``. A block that deliberately cannot run here (it talks to a running server, say)
says so in its first line, ``# not run: <reason>``, visible to the reader; such blocks are
counted in :data:`NOT_RUN` so that a new one is a decision, not an accident. ``docs/README.md``
indexes every page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import toolmask as tm
from toolmask.models import DEFAULT_MODEL, TEST_MODEL, resolve_model

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)
NOT_RUN_LINE = re.compile(r"\A# not run: \S")
#: what makes a block need a real model (llama-cpp-python, and the test model or the default
#: model, which ``make venv`` installs and pulls)
NEEDS_MODEL = re.compile(r"\bLlamaCpp\b")

#: blocks that are not run, per page (each with ``# not run: <reason>`` first): keep it rare
NOT_RUN = {"README.md": 1, "docs/server.md": 1}


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(page: Path) -> list[tuple[int, str]]:
    """The page's Python blocks: (line of the block's first code line, code)."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in FENCE.finditer(text)]


def _param(page: Path) -> object:
    needs_model = any(NEEDS_MODEL.search(code) for _, code in blocks(page))
    return pytest.param(page, id=name(page), marks=[pytest.mark.model] if needs_model else [])


RUNNABLE = [_param(p) for p in PAGES if any(not NOT_RUN_LINE.match(c) for _, c in blocks(p))]


def _require_model() -> None:
    pytest.importorskip("toolmask.backends.llama_cpp")
    pytest.importorskip("llama_cpp")
    try:
        resolve_model(TEST_MODEL, fetch=False)
        resolve_model(DEFAULT_MODEL, fetch=False)
    except tm.ToolmaskError as e:  # pragma: no cover - only without the default model
        pytest.skip(str(e))


@pytest.mark.parametrize("page", RUNNABLE)
def test_python_blocks_run(
    page: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if request.node.get_closest_marker("model"):
        _require_model()
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "docs_example"}
    for line, code in blocks(page):
        if not NOT_RUN_LINE.match(code):
            # padded so that a traceback names the page's own line numbers
            exec(compile("\n" * (line - 1) + code, str(page), "exec"), namespace)


def test_blocks_not_run_are_few_and_counted() -> None:
    counted = {}
    for page in PAGES:
        n = sum(1 for _, code in blocks(page) if NOT_RUN_LINE.match(code))
        if n:
            counted[name(page)] = n
    assert counted == NOT_RUN


def test_the_docs_index_lists_every_page() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert pages <= linked, sorted(pages - linked)
    assert "docs/README.md" in (ROOT / "README.md").read_text(encoding="utf-8")
