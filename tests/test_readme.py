"""The README's shell example runs as written (its Python blocks run in ``tests/test_docs.py``,
with every page of ``docs/``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```(python|bash)\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
PYTHON = [code for lang, code in BLOCKS if lang == "python"]


def test_readme_has_examples() -> None:
    assert len(PYTHON) >= 3


def test_cli_example_runs(tmp_path: Path) -> None:
    block = next(code for lang, code in BLOCKS if lang == "bash" and "toolmask grammar" in code)
    script = block.replace(".venv/bin/toolmask", f"{sys.executable} -m toolmask.cli")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "root ::=" in (tmp_path / "turn.gbnf").read_text()
    assert "start:" in done.stdout or "root" in done.stdout
