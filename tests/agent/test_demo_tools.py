"""The demo's tools declare the values their arguments can take, so the grammar admits only
those: ``list_files``' directory is ``"."`` or a directory that exists under the demo folder."""

from __future__ import annotations

from pathlib import Path

import toolmask as tm
from toolmask.agent.demo_tools import MAX_DIRS, demo_tools
from toolmask.tools import ToolTurn


def _list_files_schema(root: Path) -> dict[str, object]:
    tool = next(t for t in demo_tools(root) if t.name == "list_files")
    return dict(tool.parameters["properties"]["directory"])


def test_directory_enum_is_the_folder_and_its_subdirectories(tmp_path: Path) -> None:
    (tmp_path / "docs" / "api").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / ".git").mkdir()  # hidden: not offered
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "docs" / "api" / "deep").mkdir()  # three levels down: not offered
    assert _list_files_schema(tmp_path)["enum"] == [".", "docs", "src", "docs/api"]


def test_directory_enum_is_bounded(tmp_path: Path) -> None:
    for i in range(MAX_DIRS + 10):
        (tmp_path / f"d{i:03d}").mkdir()
    enum = _list_files_schema(tmp_path)["enum"]
    assert isinstance(enum, list) and len(enum) == MAX_DIRS and enum[0] == "."


def test_grammar_admits_only_existing_directories(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    turn = ToolTurn(demo_tools(tmp_path), tool_choice="required")
    grammar = tm.compile(turn.grammar())
    head = b'<tool_call>\n{"name": "list_files", "arguments": {"directory": '
    for value, ok in ((b'"."', True), (b'"docs"', True), (b'"demo_folder"', False)):
        m = grammar.matcher()
        assert m.accept_bytes(head + value + b"}}\n</tool_call>") is ok, value
