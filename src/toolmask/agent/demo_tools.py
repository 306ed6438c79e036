"""Real local tools for ``toolmask demo``: exact decimal arithmetic, the time in a time zone,
and listing / reading files under one directory (nothing outside it is reachable)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal, InvalidOperation, getcontext
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from toolmask.agent._policy import StateMachine
from toolmask.tools import Tool

__all__ = ["ACT_ONCE", "DEMO_MARKERS", "demo_tools"]

MAX_READ = 4000

#: the words of each demo tool's domain, for :class:`~toolmask.agent.PoolFilter`: a tool is in
#: the pool only when the question has one of its words (the best mode of bench/convergence.py)
DEMO_MARKERS: dict[str, list[str]] = {
    "calculate": [
        "plus",
        "minus",
        "times",
        "divided",
        "divide",
        "multiply",
        "add",
        "subtract",
        "sum",
        "total",
    ],
    "current_time": ["time", "clock", "now", "date", "today"],
    "list_files": ["files", "folder", "directory", "list", "ls"],
    "read_file": ["read", "file", "contents", "says"],
}


def calculate(a: str, op: Literal["add", "sub", "mul", "div"], b: str) -> str:
    """Exact decimal arithmetic on two numbers.

    Args:
        a: The first number, as decimal text (e.g. "12.5").
        op: The operation: add, sub, mul or div.
        b: The second number, as decimal text.
    """
    getcontext().prec = 50
    try:
        x, y = Decimal(a), Decimal(b)
    except InvalidOperation as e:
        raise ValueError(f"not a decimal number: {a!r} or {b!r}") from e
    if op == "div" and y == 0:
        raise ValueError("division by zero")
    result = {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y if y else x}[op]
    return str(result.normalize())


def current_time(timezone: str) -> str:
    """The current date and time in an IANA time zone.

    Args:
        timezone: An IANA zone name such as "Europe/Paris".
    """
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise ValueError(f"unknown time zone {timezone!r}") from e
    return dt.datetime.now(zone).isoformat(timespec="seconds")


#: one tool, then the answer: ``final_answer`` is masked until a tool has run without error,
#: then it is the only tool allowed (the demo's questions each need one tool)
ACT_ONCE = StateMachine(
    {"act": ["*", "!final_answer"], "answer": ["final_answer"]},
    start="act",
    transitions={"act": {"*": "answer"}},
)


def demo_tools(root: str | Path) -> list[Tool]:
    """The demo's tools; the file tools see only ``root``."""
    base = Path(root).resolve()

    def inside(path: str) -> Path:
        p = (base / path).resolve()
        if p != base and base not in p.parents:
            raise ValueError(f"{path!r} is outside the demo directory")
        return p

    def list_files(directory: str = ".") -> list[str]:
        """List the files in a directory of the demo folder.

        Args:
            directory: A path relative to the demo folder ("." for the folder itself).
        """
        d = inside(directory)
        if not d.is_dir():
            raise ValueError(f"{directory!r} is not a directory")
        return sorted(p.name + ("/" if p.is_dir() else "") for p in d.iterdir())

    def read_file(path: str) -> str:
        """Read a text file of the demo folder (the first 4000 characters).

        Args:
            path: A path relative to the demo folder.
        """
        p = inside(path)
        if not p.is_file():
            raise ValueError(f"{path!r} is not a file")
        return p.read_text(encoding="utf-8", errors="replace")[:MAX_READ]

    fns: list[Any] = [calculate, current_time, list_files, read_file]
    where = {"directory": {"enum": _directories(base)}}
    return [_bounded(Tool.from_function(f), where) for f in fns]


#: at most this many directories in ``list_files``' enum (the folder itself first)
MAX_DIRS = 64


def _directories(base: Path) -> list[str]:
    """The directories ``list_files`` can list, as its ``directory`` enum: ``"."`` then the
    visible subdirectories two levels deep (at most :data:`MAX_DIRS`), so the grammar admits
    only paths that exist when the tools are made."""
    out = ["."]
    level = [base]
    for _ in range(2):
        nxt: list[Path] = []
        for d in level:
            try:
                subs = sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))
            except OSError:
                continue
            for p in subs:
                if len(out) >= MAX_DIRS:
                    return out
                out.append(p.relative_to(base).as_posix())
                nxt.append(p)
        level = nxt
    return out


#: what the grammar enforces on the demo's string arguments beyond their type: numbers look
#: like numbers, zone names like zone names, and no string runs to ``max_tokens``
BOUNDS: dict[str, dict[str, Any]] = {
    "a": {"pattern": r"^-?[0-9]+(\.[0-9]+)?$"},
    "b": {"pattern": r"^-?[0-9]+(\.[0-9]+)?$"},
    "timezone": {"pattern": r"^[A-Za-z_]+(/[A-Za-z_+-]+)*$", "maxLength": 40},
    "directory": {"minLength": 1, "maxLength": 100},
    "path": {"minLength": 1, "maxLength": 100},
}


def _bounded(tool: Tool, where: dict[str, dict[str, Any]]) -> Tool:
    props = {
        k: {**v, **BOUNDS.get(k, {}), **where.get(k, {})}
        for k, v in tool.parameters.get("properties", {}).items()
    }
    return dataclasses.replace(tool, parameters={**tool.parameters, "properties": props})
