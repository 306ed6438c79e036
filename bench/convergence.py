"""Does the agent loop reach the right answer? Convergence of five loop modes on SmolLM2.

The tasks below were written for this benchmark (none comes from a published suite). Each one
has a checkable final answer and needs one to four calls of real local tools:

* exact decimal arithmetic (``calculate``), unit conversion (``convert_units``, exact factors);
* dates and time zones under a fixed clock, 2025-03-14T15:30:00Z (``current_time``,
  ``convert_time``, ``add_days``, ``days_between``, ``weekday``);
* file search and reading under a temporary folder made for the run (``find_files``,
  ``read_file``);
* read-only SQL on a small SQLite database made for the run (``sql_query``);
* escape hatches that no task needs (``run_shell``, ``web_search``, ``ask_user``): they answer
  that they are unavailable; their use is counted.

Modes (greedy decoding, the same tools advertised in the same prompt format):

* ``unconstrained``: no grammar, the reply is only parsed (prose ends the run);
* ``auto``: ``tool_choice="auto"`` every step, prose ends the run;
* ``required``: ``tool_choice="required"`` every step; nothing can end the run but the step
  limit or the blocked counter, so it never answers (``reached`` says whether a tool result
  held the answer);
* ``grammar``: ``Agent(mode="grammar")``: every step a required call over the tools plus
  ``final_answer``, which ends the run;
* ``grammar+pool``: grammar mode with a :class:`~toolmask.agent.PoolFilter` that leaves the
  escape hatches out of the mask unless the question has their markers;
* ``grammar+likelihood``, ``grammar+pool+likelihood``: grammar mode (without and with the
  escape-hatch filter) with ``name_choice="likelihood"``: each step's tool is the allowed name
  the model finds most likely as a whole, then the call is decoded under it;
  ``grammar+pool+likelihood+act-once`` adds ``ACT_ONCE``: the policies of ``toolmask demo``
  with the model's own choice of tool in place of the per-tool markers;
* ``grammar+pool+act-once``: the same policies with the name decoded by the mode in use
  (``--sampling exact`` chooses it by whole-sequence probability inside the decoder);
* ``grammar+act-once``, ``grammar+likelihood+act-once``: generic policies only, no marker of
  any tool (not even the escape hatches'): ``ACT_ONCE`` alone, the name decoded by the mode in
  use or chosen by likelihood;
* ``grammar+markers``: the pool filter with markers for every tool (the words of its domain,
  ``DOMAIN_MARKERS``, written per tool, not per task): a tool is in the pool only when the
  question has one of its words. The prompt still advertises every tool;
* ``grammar+markers+act-once``: the same, and a :class:`~toolmask.agent.StateMachine` that
  allows ``final_answer`` alone once one tool has run without error (it cannot pass the tasks
  that need two or more steps).

The grammar modes run with ``answer_after=1`` (``--answer-after``): ``final_answer`` is masked
until a tool has run without error.

Per mode: converged (the final answer is right), first tool right, reached (some tool result
held the answer), escape-hatch calls, steps, generated tokens, prompt tokens evaluated (the
reused KV prefix left out), wall time. Prints a table and writes
``bench/results/convergence.json``.

    nice .venv/bin/python bench/convergence.py [--modes grammar,auto] [--every 2] [--limit 10]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, getcontext
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from _assistant import _s, _spec  # noqa: E402
from toolmask.agent import Agent, PoolFilter, StateMachine, Transcript  # noqa: E402
from toolmask.decoding import DecodingParams  # noqa: E402
from toolmask.sampling import SamplingParams  # noqa: E402

NOW = dt.datetime(2025, 3, 14, 15, 30, tzinfo=dt.UTC)
NUMBER = r"^-?[0-9]+(\.[0-9]+)?$"
DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
DATETIME = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}$"
ZONE = r"^[A-Za-z_]+(/[A-Za-z_]+)*$"

# -- the tools ----------------------------------------------------------------------------------


def _dec(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation as e:
        raise ValueError(f"not a decimal number: {text!r}") from e


def _show(x: Decimal) -> str:
    q = x.quantize(Decimal("0.000001"), rounding=ROUND_HALF_EVEN) if x != x.to_integral() else x
    out = format(q.normalize(), "f")
    return out


def calculate(a: str, op: str, b: str) -> str:
    getcontext().prec = 50
    x, y = _dec(a), _dec(b)
    if op == "div" and y == 0:
        raise ValueError("division by zero")
    return _show({"add": x + y, "sub": x - y, "mul": x * y, "div": x / y if y else x}[op])


# factor to the base unit of its dimension (m, kg, l), exact
UNITS: dict[str, tuple[str, Decimal]] = {
    "km": ("length", Decimal("1000")),
    "m": ("length", Decimal("1")),
    "cm": ("length", Decimal("0.01")),
    "mm": ("length", Decimal("0.001")),
    "mi": ("length", Decimal("1609.344")),
    "ft": ("length", Decimal("0.3048")),
    "in": ("length", Decimal("0.0254")),
    "kg": ("mass", Decimal("1")),
    "g": ("mass", Decimal("0.001")),
    "lb": ("mass", Decimal("0.45359237")),
    "oz": ("mass", Decimal("0.028349523125")),
    "l": ("volume", Decimal("1")),
    "ml": ("volume", Decimal("0.001")),
    "gal": ("volume", Decimal("3.785411784")),
}
TEMPS = ("c", "f", "k")


def convert_units(value: str, from_unit: str, to_unit: str) -> str:
    getcontext().prec = 50
    v = _dec(value)
    if from_unit in TEMPS or to_unit in TEMPS:
        if from_unit not in TEMPS or to_unit not in TEMPS:
            raise ValueError(f"cannot convert {from_unit} to {to_unit}")
        c = {"c": v, "f": (v - 32) * 5 / 9, "k": v - Decimal("273.15")}[from_unit]
        out = {"c": c, "f": c * 9 / 5 + 32, "k": c + Decimal("273.15")}[to_unit]
        return _show(out)
    (dim_a, fa), (dim_b, fb) = UNITS[from_unit], UNITS[to_unit]
    if dim_a != dim_b:
        raise ValueError(f"cannot convert {dim_a} ({from_unit}) to {dim_b} ({to_unit})")
    return _show(v * fa / fb)


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise ValueError(f"unknown time zone {name!r}") from e


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError as e:
        raise ValueError(f"not a date (YYYY-MM-DD): {text!r}") from e


def current_time(timezone: str) -> str:
    now = NOW.astimezone(_zone(timezone))
    return f"{now:%Y-%m-%d %H:%M} ({now:%A}, {timezone})"


def convert_time(time: str, from_zone: str, to_zone: str) -> str:
    try:
        t = dt.datetime.strptime(time, "%Y-%m-%d %H:%M")
    except ValueError as e:
        raise ValueError(f"not a time (YYYY-MM-DD HH:MM): {time!r}") from e
    out = t.replace(tzinfo=_zone(from_zone)).astimezone(_zone(to_zone))
    return f"{out:%Y-%m-%d %H:%M} ({to_zone})"


def add_days(date: str, days: int) -> str:
    return (_date(date) + dt.timedelta(days=days)).isoformat()


def days_between(start: str, end: str) -> int:
    return (_date(end) - _date(start)).days


def weekday(date: str) -> str:
    return f"{_date(date):%A}"


FILES = {
    "notes/meeting.txt": "Meeting with Ana on Friday at 10:00. Budget: 4200 euros.\n",
    "notes/shopping.txt": "eggs\nmilk\nbread\n",
    "reports/2024-q4.csv": "region,sales\nnorth,1200\nsouth,950\n",
    "reports/summary.md": "# Summary\nTotal sales: 2150\n",
    "src/app.py": "print('hello')\nVERSION = '1.4.2'\n",
    "README.txt": "Project Kestrel. Owner: Dana Lee.\n",
}

EMPLOYEES = [
    (1, "Ana", "sales", 4200),
    (2, "Bo", "eng", 5100),
    (3, "Cyd", "eng", 4800),
    (4, "Dee", "ops", 3900),
    (5, "Eli", "sales", 4500),
]
ORDERS = [
    (1, "acme", "120.50", "2025-03-01"),
    (2, "acme", "80.25", "2025-03-02"),
    (3, "globex", "300.00", "2025-03-02"),
    (4, "initech", "45.75", "2025-03-03"),
]


class Sandbox:
    """The folder and the database of one run (made fresh, removed at the end)."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="toolmask-conv-")
        self.root = Path(self._tmp.name)
        for rel, text in FILES.items():
            p = self.root / "files" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        self.db = self.root / "shop.db"
        with sqlite3.connect(self.db) as con:
            con.execute("CREATE TABLE employees (id INTEGER, name TEXT, dept TEXT, salary INT)")
            con.execute("CREATE TABLE orders (id INTEGER, customer TEXT, amount TEXT, day TEXT)")
            con.executemany("INSERT INTO employees VALUES (?, ?, ?, ?)", EMPLOYEES)
            con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", ORDERS)

    def close(self) -> None:
        self._tmp.cleanup()

    def _inside(self, path: str) -> Path:
        base = (self.root / "files").resolve()
        p = (base / path).resolve()
        if p != base and base not in p.parents:
            raise ValueError(f"{path!r} is outside the folder")
        return p

    def find_files(self, pattern: str) -> list[str]:
        base = (self.root / "files").resolve()
        found = [
            str(p.relative_to(base))
            for p in sorted(base.rglob("*"))
            if p.is_file() and (fnmatchcase(p.name, pattern) or fnmatchcase(str(p), pattern))
        ]
        return found

    def read_file(self, path: str) -> str:
        p = self._inside(path)
        if not p.is_file():
            raise ValueError(f"no file {path!r}; use find_files")
        return p.read_text(encoding="utf-8")[:2000]

    def sql_query(self, sql: str) -> list[list[Any]]:
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            rows = con.execute(sql).fetchmany(20)
        except sqlite3.Error as e:
            raise ValueError(f"SQL error: {e}") from e
        finally:
            con.close()
        return [list(r) for r in rows]


def run_shell(command: str) -> str:
    return "unavailable: there is no shell here"


def web_search(query: str) -> str:
    return "unavailable: there is no network here"


def ask_user(question: str) -> str:
    return "unavailable: the user is away"


#: grammar+markers: every tool gets the words of its domain as markers (written per tool, not
#: per task); a tool is in the pool only when the question has one of its words
DOMAIN_MARKERS = {
    "calculate": [
        "plus",
        "minus",
        "times",
        "divide",
        "divided",
        "multiply",
        "add",
        "subtract",
        "sum",
        "total",
        "double",
        "cost",
        "costs",
    ],
    "convert_units": [
        "convert",
        "miles",
        "km",
        "kilometres",
        "kg",
        "pounds",
        "pound",
        "ounces",
        "litres",
        "millilitres",
        "centimetres",
        "feet",
        "fahrenheit",
        "celsius",
        "degrees",
    ],
    "current_time": ["time", "today", "now"],
    "convert_time": ["when it is"],
    "add_days": ["after", "from today", "days from", "will it be"],
    "days_between": ["days are", "how many days", "days between"],
    "weekday": ["weekday", "day of the week"],
    "find_files": ["find", "file", "files", "folder", "csv", "txt", "python"],
    "read_file": ["read", "file", "txt", "md", "py", "csv", "notes", "report", "according"],
    "sql_query": ["employee", "employees", "salary", "orders", "order", "department"],
}

ESCAPES = ("run_shell", "web_search", "ask_user")
MARKERS = {
    "run_shell": ["shell", "terminal", "command line"],
    "web_search": ["web", "internet", "online", "google"],
    "ask_user": ["ask me", "ask the user"],
}


UNIT_NAMES = sorted([*UNITS, *TEMPS])


def tools(box: Sandbox) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The OpenAI tool specs and their implementations."""
    specs = [
        _spec(
            "calculate",
            "Exact decimal arithmetic on two numbers: a op b.",
            {
                "a": _s("The first number, e.g. 12.5", pattern=NUMBER),
                "op": {"type": "string", "enum": ["add", "sub", "mul", "div"]},
                "b": _s("The second number", pattern=NUMBER),
            },
        ),
        _spec(
            "convert_units",
            "Convert a value between units: km m cm mm mi ft in, kg g lb oz, l ml gal, "
            "c f k (temperatures).",
            {
                "value": _s("The value, e.g. 5", pattern=NUMBER),
                "from_unit": {"type": "string", "enum": UNIT_NAMES},
                "to_unit": {"type": "string", "enum": UNIT_NAMES},
            },
        ),
        _spec(
            "current_time",
            "The current date and time in an IANA time zone.",
            {"timezone": _s("e.g. Europe/Paris or UTC", pattern=ZONE)},
        ),
        _spec(
            "convert_time",
            "Convert a local time from one IANA time zone to another.",
            {
                "time": _s("YYYY-MM-DD HH:MM", pattern=DATETIME),
                "from_zone": _s("IANA zone of the time", pattern=ZONE),
                "to_zone": _s("IANA zone wanted", pattern=ZONE),
            },
        ),
        _spec(
            "add_days",
            "The date a number of days after (or before, if negative) a date.",
            {
                "date": _s("YYYY-MM-DD", pattern=DATE),
                "days": {"type": "integer", "minimum": -100000, "maximum": 100000},
            },
        ),
        _spec(
            "days_between",
            "The number of days from start to end.",
            {"start": _s("YYYY-MM-DD", pattern=DATE), "end": _s("YYYY-MM-DD", pattern=DATE)},
        ),
        _spec(
            "weekday", "The day of the week of a date.", {"date": _s("YYYY-MM-DD", pattern=DATE)}
        ),
        _spec(
            "find_files",
            "Find files in the folder whose name matches a glob pattern such as *.txt.",
            {"pattern": _s("A glob pattern", minLength=1, maxLength=40)},
        ),
        _spec(
            "read_file",
            "Read a text file of the folder.",
            {"path": _s("A path relative to the folder", minLength=1, maxLength=80)},
        ),
        _spec(
            "sql_query",
            "Run a read-only SQL query on the database. Tables: employees(id, name, dept, "
            "salary), orders(id, customer, amount, day).",
            {"sql": _s("One SELECT statement", minLength=1, maxLength=200)},
        ),
        _spec("run_shell", "Run a shell command.", {"command": _s("The command")}),
        _spec("web_search", "Search the web.", {"query": _s("The query")}),
        _spec("ask_user", "Ask the user a question.", {"question": _s("The question")}),
    ]
    fns: dict[str, Any] = {
        "calculate": calculate,
        "convert_units": convert_units,
        "current_time": current_time,
        "convert_time": convert_time,
        "add_days": add_days,
        "days_between": days_between,
        "weekday": weekday,
        "find_files": box.find_files,
        "read_file": box.read_file,
        "sql_query": box.sql_query,
        "run_shell": run_shell,
        "web_search": web_search,
        "ask_user": ask_user,
    }
    return specs, fns


# -- the tasks ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """A question, its answer (a number, or words that must all appear), the tools a right
    first step may call, and the fewest tool steps that reach the answer."""

    prompt: str
    answer: str
    first: tuple[str, ...]
    steps: int = 1


C, U, T, F, Q = (
    ("calculate",),
    ("convert_units",),
    ("current_time",),
    ("find_files",),
    ("sql_query",),
)
R = ("read_file",)
FR = ("find_files", "read_file")

TASKS: list[Task] = [
    # arithmetic
    Task("What is 12.75 plus 0.35?", "13.1", C),
    Task("What is 19.99 times 3?", "59.97", C),
    Task("Subtract 4.2 from 10.", "5.8", C),
    Task("Divide 7 by 8.", "0.875", C),
    Task("What is 1234.5 minus 234.5?", "1000", C),
    Task("Multiply 0.1 by 0.2.", "0.02", C),
    Task("What is 3.5 plus 1.5, times 4?", "20", C, 2),
    Task("A book costs 12.40 and a pen 3.15. What do two of each cost?", "31.1", C, 2),
    # units
    Task("Convert 5 miles to kilometres.", "8.04672", U),
    Task("How many pounds is 10 kg?", "22.046226", U),
    Task("What is 100 degrees Fahrenheit in Celsius?", "37.777778", U),
    Task("Convert 2.5 litres to millilitres.", "2500", U),
    Task("How many centimetres are in 3 feet?", "91.44", U),
    Task("Convert 20 degrees Celsius to Fahrenheit.", "68", U),
    Task("How many ounces are in one pound?", "16", U),
    Task("Convert 3 miles to km, then add 2 km.", "6.828032", U, 2),
    Task("Convert 10 kg to pounds, then multiply by 2.", "44.092452", U, 2),
    # dates and time zones (the clock: 2025-03-14 15:30 UTC)
    Task("What time is it in Tokyo (Asia/Tokyo)?", "00:30", T),
    Task("What is the date today in UTC?", "2025-03-14", T),
    Task("What time is it in New York (America/New_York)?", "11:30", T),
    Task("What date is 30 days after 2025-01-15?", "2025-02-14", ("add_days",)),
    Task("Which weekday is 2025-12-25?", "Thursday", ("weekday",)),
    Task("How many days are there from 2025-01-01 to 2025-03-01?", "59", ("days_between",)),
    Task(
        "When it is 2025-06-01 09:00 in London (Europe/London), what time is it in Sydney "
        "(Australia/Sydney)?",
        "18:00",
        ("convert_time",),
    ),
    Task("What date will it be 100 days from today (UTC)?", "2025-06-22", T, 2),
    Task("Which weekday is it today in Tokyo (Asia/Tokyo)?", "Saturday", T),
    Task("How many days are left from today (UTC) until 2025-12-25?", "286", T, 2),
    # files
    Task("Which file ends in .csv?", "2024-q4.csv", F),
    Task("How many .txt files are there?", "3", F),
    Task("What version is written in src/app.py?", "1.4.2", R),
    Task("Who owns the project, according to README.txt?", "Dana Lee", R),
    Task("What is the first item in notes/shopping.txt?", "eggs", R),
    Task("What is the total sales figure in reports/summary.md?", "2150", R),
    Task("Find the meeting notes and tell me the budget.", "4200", FR, 2),
    Task("Which python file is in the folder?", "app.py", F),
    Task("Read reports/2024-q4.csv and add the sales of north and south.", "2150", R, 2),
    Task("Find the CSV report, read it, and add the north and south sales.", "2150", FR, 3),
    Task(
        "Find the CSV report, read it, add the north and south sales, and double the total.",
        "4300",
        FR,
        4,
    ),
    # the database
    Task("How many employees are there?", "5", Q),
    Task("What is Bo's salary?", "5100", Q),
    Task("Which employee has the highest salary?", "Bo", Q),
    Task("What is the total amount of all orders?", "546.5", Q),
    Task("How many employees work in the eng department?", "2", Q),
    Task("What is the average salary in the sales department?", "4350", Q),
    Task("What is the total of acme's orders?", "200.75", Q),
    Task("How many orders were placed on 2025-03-02?", "2", Q),
    Task("What is Bo's salary minus Dee's salary?", "1200", Q, 2),
    Task("What is Ana's salary divided by 12?", "350", Q, 2),
]

_NUM = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
#: dates, times and digits inside words are not numbers of an answer (a reply that echoes the
#: question's 2025-03-02 does not answer "2")
_NOT_NUMBERS = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|\w*[A-Za-z_]\w*")


def _numbers(text: str) -> list[Decimal]:
    text = _NOT_NUMBERS.sub(" ", text)
    return [Decimal(m.replace(",", "")) for m in _NUM.findall(text)]


def right(answer: str | None, expected: str) -> bool:
    """Whether ``answer`` holds ``expected``: a number equal to it (an answer rounded to at
    least two decimals, or to the expected's own, counts), else every expected word, as a
    whole word, case-insensitive."""
    if not answer:
        return False
    if re.fullmatch(r"-?\d+(\.\d+)?", expected):
        e = Decimal(expected)
        for a in _numbers(answer):
            places = max(0, -a.as_tuple().exponent)  # type: ignore[operator]
            need = min(2, max(0, -e.as_tuple().exponent))  # type: ignore[operator]
            if a == e or (places >= need and e.quantize(Decimal(1).scaleb(-places)) == a):
                return True
        return False
    return all(
        re.search(rf"(?<![\w.-]){re.escape(w)}(?![\w-])", answer, re.I) for w in expected.split()
    )


# -- the modes ----------------------------------------------------------------------------------

MODES = (
    "unconstrained",
    "auto",
    "required",
    "grammar",
    "grammar+pool",
    "grammar+likelihood",
    "grammar+pool+likelihood",
    "grammar+pool+likelihood+act-once",
    "grammar+pool+act-once",
    "grammar+act-once",
    "grammar+likelihood+act-once",
    "grammar+markers",
    "grammar+markers+act-once",
)

#: grammar+markers+act-once: a state machine that allows the answer tool alone once one tool
#: has run without error (right for the one-step tasks, too short for the others)
ACT_ONCE = StateMachine(
    {"act": ["*", "!final_answer"], "answer": ["final_answer"]},
    start="act",
    transitions={"act": {"*": "answer"}},
)


def make_agent(mode: str, backend: Any, specs: list[Any], fns: dict[str, Any], args: Any) -> Agent:
    common: dict[str, Any] = {
        "functions": fns,
        "max_steps": args.max_steps,
        "max_tokens": args.max_tokens,
        "parallel_tool_calls": False,
    }
    if mode == "unconstrained":
        return Agent(backend, specs, constrained=False, **common)
    if mode in ("auto", "required"):
        return Agent(backend, specs, tool_choice=mode, **common)
    policy: Any = None
    if mode in ("grammar+pool", "grammar+pool+likelihood"):
        policy = PoolFilter(MARKERS)
    elif mode in ("grammar+pool+likelihood+act-once", "grammar+pool+act-once"):
        policy = [PoolFilter(MARKERS), ACT_ONCE]
    elif mode in ("grammar+act-once", "grammar+likelihood+act-once"):
        policy = ACT_ONCE
    elif mode == "grammar+markers":
        policy = PoolFilter({**MARKERS, **DOMAIN_MARKERS})
    elif mode == "grammar+markers+act-once":
        policy = [PoolFilter({**MARKERS, **DOMAIN_MARKERS}), ACT_ONCE]
    return Agent(
        backend,
        specs,
        mode="grammar",
        policy=policy,
        answer_after=args.answer_after,
        name_choice="likelihood" if "+likelihood" in mode else "decode",
        **common,
    )


def with_sampling(agent: Agent, sampling: str) -> Agent:
    """The agent decoding in ``sampling`` mode (greedy)."""
    if sampling != "plain":
        agent.sampling = SamplingParams(temperature=0.0)
        agent.decoding = DecodingParams(sampling)
    return agent


def score(task: Task, t: Transcript) -> dict[str, Any]:
    calls = [c for m in t if m.role == "assistant" for c in m.tool_calls]
    results = [m.content for m in t if m.role == "tool"]
    out = t.outcome
    return {
        "prompt": task.prompt,
        "expected": task.answer,
        "answer": out.answer,
        "stop": out.stop,
        "converged": right(out.answer, task.answer),
        "first_tool_right": bool(calls) and calls[0].name in task.first,
        "reached": any(right(r, task.answer) for r in results),
        "calls": [f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in calls],
        "escapes": sum(c.name in ESCAPES for c in calls),
        "steps": out.steps,
        "tokens": out.tokens,
        "prompt_tokens": out.prompt_tokens,
        "message": out.message,
    }


#: the modes of ``--set assistant``: no grammar; auto every step (prose ends the run); grammar
#: mode (a call every step, final_answer ends it); grammar mode with the step's tool pool
ASSISTANT_MODES = ("unconstrained", "auto", "grammar", "grammar+pool")


def _summary(rows: list[dict[str, Any]], t0: float) -> dict[str, Any]:
    """One mode's figures over its rows (``t0``: when the mode started)."""
    n = len(rows)
    return {
        "converged": sum(r["converged"] for r in rows),
        "first_tool_right": sum(r["first_tool_right"] for r in rows),
        "reached": sum(r["reached"] for r in rows),
        "escapes": sum(r["escapes"] for r in rows),
        "steps_mean": round(sum(r["steps"] for r in rows) / n, 2),
        "tokens_mean": round(sum(r["tokens"] for r in rows) / n, 1),
        "prompt_tokens_mean": round(sum(r["prompt_tokens"] for r in rows) / n, 1),
        "latency_mean_s": round(sum(r["wall_s"] for r in rows) / n, 2),
        "wall_s": round(time.perf_counter() - t0, 1),
        "runs": rows,
    }


def _header(args: Any, model: str, n: int, of: int, clock: dt.datetime, **extra: Any) -> dict:
    """The report's conditions (its ``modes`` filled as they run)."""
    return {
        "set": args.set,
        "via": args.via,
        "model": model,
        "tasks": n,
        "of_tasks": of,
        "every": args.every,
        "max_steps": args.max_steps,
        "max_tokens": args.max_tokens,
        "answer_after": args.answer_after,
        "sampling": "greedy" if args.sampling == "plain" else f"greedy, {args.sampling}",
        "clock": clock.isoformat(),
        "load_before": os.getloadavg(),
        "cpus": len(os.sched_getaffinity(0)),
        "threads": args.threads,
        **extra,
        "modes": {},
    }


def _progress(mode: str, i: int, n: int, prompt: str, row: dict[str, Any]) -> None:
    mark = "ok " if row["converged"] else "-- "
    print(
        f"{mode:24} {i + 1:2}/{n} {mark}{prompt[:50]!r} -> "
        f"{str(row['answer'])[:40]!r} [{', '.join(row['calls'])[:100]}]",
        flush=True,
    )


def _assistant_row(q: Any, world: Any, answer: str | None, calls: list[Any], **rest: Any) -> dict:
    """A row of the assistant set: converged when the query's check holds and no escape hatch
    was called."""
    import _assistant as A

    escapes = sum(n in A.ESCAPES for n, _ in calls)
    ok = q.check(world, answer or "", calls)
    return {
        "prompt": q.prompt,
        "kind": q.kind,
        "answer": answer,
        "converged": ok and escapes == 0,
        "first_tool_right": bool(calls) and calls[0][0] in q.first,
        "reached": ok,
        "calls": [f"{n}({json.dumps(a, ensure_ascii=False)})" for n, a in calls],
        "escapes": escapes,
        **rest,
    }


def run_assistant(args: Any, backend: Any, modes: list[str]) -> dict[str, Any]:
    """``--set assistant``: the ten queries of :mod:`_assistant` in each mode."""
    import _assistant as A

    holder = A.Holder()
    specs, fns = A.tools(holder)
    queries = A.QUERIES[: args.limit] if args.limit else A.QUERIES
    report = _header(args, Path(backend.model_path).name, len(queries), len(A.QUERIES), A.NOW)
    common: dict[str, Any] = {
        "functions": fns,
        "max_steps": args.max_steps,
        "max_tokens": args.max_tokens,
        "parallel_tool_calls": False,
    }
    for base in modes:
        if base == "unconstrained":
            agent = Agent(backend, specs, constrained=False, **common)
        elif base == "auto":
            agent = Agent(backend, specs, tool_choice="auto", **common)
        else:
            policy = PoolFilter(A.POOL_MARKERS) if base == "grammar+pool" else None
            agent = Agent(
                backend,
                specs,
                mode="grammar",
                policy=policy,
                answer_after=args.answer_after,
                **common,
            )
        agent = with_sampling(agent, args.sampling)
        mode = base if args.sampling == "plain" else f"{base}@{args.sampling}"
        rows = []
        t0 = time.perf_counter()
        for i, q in enumerate(queries):
            holder.world = A.World(reply=q.reply)
            s = time.perf_counter()
            t = agent.run(q.prompt)
            calls = [
                (c.name, c.arguments) for m in t if m.role == "assistant" for c in m.tool_calls
            ]
            out = t.outcome
            row = _assistant_row(
                q,
                holder.world,
                out.answer,
                calls,
                stop=out.stop,
                steps=out.steps,
                tokens=out.tokens,
                prompt_tokens=out.prompt_tokens,
                message=out.message,
                wall_s=round(time.perf_counter() - s, 2),
            )
            rows.append(row)
            _progress(mode, i, len(queries), q.prompt, row)
        report["modes"][mode] = _summary(rows, t0)
        report["load_after"] = os.getloadavg()
        Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return report


#: the modes of ``--via serve``: the tool_choice an OpenAI client's loop sends every step
SERVE_MODES = ("auto", "required")


def run_via_serve(args: Any, modes: list[str]) -> dict[str, Any]:
    """``--via serve``: each task through ``toolmask serve`` and an OpenAI client's own loop
    (:mod:`_serve_loop`), under each ``tool_choice`` in ``modes``."""
    import _assistant as A
    import _serve_loop as S
    from toolmask.models import TEST_MODEL, resolve_model

    gguf = str(resolve_model(args.model or TEST_MODEL))
    assistant = args.set == "assistant"
    holder = A.Holder()
    box = None if assistant else Sandbox()
    if assistant:
        specs, fns = A.tools(holder)
        items: list[Any] = list(A.QUERIES[: args.limit] if args.limit else A.QUERIES)
    else:
        assert box is not None
        os.chdir(box.root)
        specs, fns = tools(box)
        items = TASKS[:: args.every][: args.limit or None]
    report = _header(
        args,
        Path(gguf).name,
        len(items),
        len(A.QUERIES if assistant else TASKS),
        A.NOW if assistant else NOW,
    )
    try:
        with S.serve(gguf, args.threads) as client:
            for choice in modes:
                mode = f"serve+{choice}"
                rows = []
                t0 = time.perf_counter()
                for i, item in enumerate(items):
                    if assistant:
                        holder.world = A.World(reply=item.reply)
                    s = time.perf_counter()
                    res = S.run_loop(
                        client,
                        item.prompt,
                        specs,
                        fns,
                        tool_choice=choice,
                        max_steps=args.max_steps,
                        max_tokens=args.max_tokens,
                    )
                    calls = [(n, a) for n, a in res.calls if n != "final_answer"]
                    rest = {
                        "stop": res.stop,
                        "steps": res.steps,
                        "tokens": res.tokens,
                        "prompt_tokens": res.prompt_tokens,
                        "wall_s": round(time.perf_counter() - s, 2),
                    }
                    if assistant:
                        row = _assistant_row(item, holder.world, res.answer, calls, **rest)
                    else:
                        row = {
                            "prompt": item.prompt,
                            "answer": res.answer,
                            "converged": right(res.answer, item.answer),
                            "first_tool_right": bool(calls) and calls[0][0] in item.first,
                            "reached": any(right(r, item.answer) for r in res.results),
                            "calls": [
                                f"{n}({json.dumps(a, ensure_ascii=False)})" for n, a in calls
                            ],
                            "escapes": sum(n in ESCAPES for n, _ in calls),
                            **rest,
                        }
                    rows.append(row)
                    _progress(mode, i, len(items), item.prompt, row)
                report["modes"][mode] = _summary(rows, t0)
                report["load_after"] = os.getloadavg()
                Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    finally:
        if box is not None:
            box.close()
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--model",
        default=None,
        help="a GGUF or a catalogue name (default: the test model, smollm2-135m)",
    )
    ap.add_argument(
        "--via",
        default="agent",
        choices=["agent", "serve"],
        help="agent: the library's Agent in-process; serve: toolmask serve and an OpenAI "
        "client's own loop (modes: the tool_choice sent, " + ", ".join(SERVE_MODES) + ")",
    )
    ap.add_argument(
        "--set",
        default="tasks",
        choices=["tasks", "assistant"],
        help="tasks: the 50 tasks above; assistant: the constrained-tool-use set of "
        "bench/_assistant.py (ten queries, modes " + ", ".join(ASSISTANT_MODES) + ")",
    )
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated, of " + str(MODES))
    ap.add_argument("--every", type=int, default=1, help="run every k-th task (a subset)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many tasks (0: all)")
    ap.add_argument("--max-steps", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument(
        "--answer-after",
        type=int,
        default=1,
        help="grammar modes: tools that must run without error before final_answer (default 1)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="llama.cpp threads (default: every core; 1 is faster on a machine already loaded)",
    )
    ap.add_argument(
        "--sampling",
        default="plain",
        choices=["plain", "exact", "aligned"],
        help="the agent's decoding mode (greedy); a mode other than plain is reported as "
        "MODE@SAMPLING (default: plain)",
    )
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "convergence.json"))
    ap.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="only merge the modes of earlier result files (runs of the same tasks split across "
        "processes) into --out and print the table",
    )
    args = ap.parse_args()
    args.out = str(Path(args.out).resolve())  # the tasks' runs chdir into their sandbox
    if args.merge:
        merged: dict[str, Any] = {}
        for f in args.merge:
            part = json.loads(Path(f).read_text())
            modes = {**merged.get("modes", {}), **part["modes"]}
            loads = [merged.get("load_before", part["load_before"]), part["load_before"]]
            merged = {**part, "modes": modes, "load_before": max(loads)}
        ordered = {
            m: merged["modes"][m]
            for base in MODES
            for m in merged["modes"]
            if m == base or m.startswith(base + "@")
        }
        merged["modes"] = ordered
        Path(args.out).write_text(json.dumps(merged, indent=1, ensure_ascii=False) + "\n")
        print_table(merged)
        return
    from toolmask.backends.llama_cpp import LlamaCpp
    from toolmask.models import TEST_MODEL

    known = ASSISTANT_MODES if args.set == "assistant" else MODES
    if args.via == "serve":
        known = SERVE_MODES
    if args.modes == ",".join(MODES):
        args.modes = ",".join(known)
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in known]
    if bad:
        ap.error(f"unknown modes {bad}; the modes are {known}")
    if args.via == "serve":
        print_table(run_via_serve(args, modes))
        return
    backend = LlamaCpp(args.model or TEST_MODEL, n_ctx=4096, n_threads=args.threads)
    path = str(backend.model_path)
    if args.set == "assistant":
        print_table(run_assistant(args, backend, modes))
        return
    tasks = TASKS[:: args.every]
    if args.limit:
        tasks = tasks[: args.limit]
    box = Sandbox()
    os.chdir(box.root)  # nothing the tools do can reach the repository
    specs, fns = tools(box)
    report = _header(args, Path(path).name, len(tasks), len(TASKS), NOW)
    out = Path(args.out)
    try:
        for base in modes:
            agent = with_sampling(make_agent(base, backend, specs, fns, args), args.sampling)
            mode = base if args.sampling == "plain" else f"{base}@{args.sampling}"
            rows = []
            t0 = time.perf_counter()
            for i, task in enumerate(tasks):
                s = time.perf_counter()
                row = score(task, agent.run(task.prompt))
                row["wall_s"] = round(time.perf_counter() - s, 2)
                rows.append(row)
                _progress(mode, i, len(tasks), task.prompt, row)
            report["modes"][mode] = _summary(rows, t0)
            report["load_after"] = os.getloadavg()
            out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    finally:
        box.close()
    print_table(report)


def print_table(report: dict[str, Any]) -> None:
    n = report["tasks"]
    print(
        f"\n{report['model']}, {n} of {report['of_tasks']} tasks, greedy, max_steps "
        f"{report['max_steps']}, max_tokens {report['max_tokens']}, {report['cpus']} CPUs, "
        f"load {report['load_before'][0]:.1f} -> {report['load_after'][0]:.1f}"
    )
    head = (
        f"{'mode':24} converged  first tool  reached  escapes  steps  tokens  prompt tok  wall s"
        "  mean s"
    )
    print(head)
    print("-" * len(head))
    for mode, m in report["modes"].items():
        print(
            f"{mode:24} {m['converged']:>4}/{n:<4} {m['first_tool_right']:>5}/{n:<4} "
            f"{m['reached']:>4}/{n:<3} {m['escapes']:>7} {m['steps_mean']:>6} "
            f"{m['tokens_mean']:>7} {m['prompt_tokens_mean']:>11} {m['wall_s']:>7}"
            f"  {m.get('latency_mean_s', round(m['wall_s'] / n, 2)):>6}"
        )


if __name__ == "__main__":
    main()
