"""The constrained-tool-use set of ``bench/convergence.py --set assistant``: a personal
assistant's planner, shaped like the pattern toolmask follows (a grammar per step built from the
step's tool pool, escape hatches always in the pool, a nested-schema tool).

Ten queries written for this benchmark (none from a published suite), three simple, three
medium, two complex and two ambiguous, over a pool of eight domain tools plus two escape
hatches (``request_new_executor``: "build me a tool I do not have"; ``request_location``: ask for
the user's location), which every mode keeps callable. ``ask_user`` has a nested schema: a
question of a kind (``choice`` with its options, ``text``, ``confirm``), optionally tied to the
result of an earlier step.

A query converges when the run ends with a right answer (its ``check``) and never called an
escape hatch; the two ambiguous queries converge when the model asks the user (``ask_user``)
before acting, and the fake user's reply then lets it finish. The clock is fixed
(2025-03-14 15:30 UTC, a Friday), and the world is a handful of contacts, files and messages
held in memory for the run.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any
from zoneinfo import ZoneInfo

NOW = dt.datetime(2025, 3, 14, 15, 30, tzinfo=dt.UTC)

CONTACTS = {
    "Silvia Rossi": "silvia.rossi@example.org",
    "Marco Bianchi": "marco.bianchi@example.org",
    "Dana Lee": "dana.lee@example.org",
}
ME = "me@example.org"

FILES = {
    "documents/lease.pdf": "(a PDF)",
    "documents/taxes-2024.pdf": "(a PDF)",
    "documents/recipes.txt": "pasta, risotto, soup",
    "notes/todo.txt": "1. call the plumber\n2. renew the passport\n3. buy stamps\n",
    "reports/budget-2025.csv": "item,amount\nrent,1200\nfood,450\ntravel,300\ntotal,1950\n",
    "reports/readme.md": "Budget figures are in budget-2025.csv.\n",
}


def _s(desc: str, **kw: Any) -> dict[str, Any]:
    return {"type": "string", "description": desc, **kw}


def _spec(
    name: str, doc: str, props: dict[str, Any], required: list[str] | None = None
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": doc,
            "parameters": {
                "type": "object",
                "properties": props,
                "required": list(props) if required is None else required,
                "additionalProperties": False,
            },
        },
    }


ESCAPES = ("request_new_executor", "request_location")

#: grammar+pool: a domain tool is in a step's pool only when the query has one of its words;
#: the escape hatches and ask_user carry no markers, so they are always in the pool
POOL_MARKERS = {
    "get_now": ["time", "now", "today", "date"],
    "find_files": ["find", "file", "files", "folder", "documents", "pdf", "reports", "budget"],
    "read_file": ["read", "file", "notes", "todo", "budget", "total", "first item"],
    "create_folder": ["create", "folder", "make", "directory"],
    "search_contacts": [
        "email",
        "address",
        "contact",
        "silvia",
        "marco",
        "dana",
        "message",
        "send",
        "appointment",
        "book",
    ],
    "send_message": ["send", "message", "email", "tell", "write"],
    "propose_slots": ["slot", "slots", "appointment", "meeting", "book", "schedule"],
}


@dataclass
class World:
    """What the tools act on during one run (fresh per query)."""

    folders: set[str] = field(default_factory=set)
    sent: list[dict[str, str]] = field(default_factory=list)
    asked: list[dict[str, Any]] = field(default_factory=list)
    #: the fake user's reply to ask_user (the query says what it is)
    reply: str = ""

    def get_now(self, timezone: str) -> str:
        try:
            zone = ZoneInfo(timezone)
        except (KeyError, ValueError) as e:
            raise ValueError(f"unknown time zone {timezone!r}") from e
        return NOW.astimezone(zone).strftime("%Y-%m-%d %H:%M (%A)")

    def find_files(self, pattern: str, folder: str = "") -> list[str]:
        base = folder.strip("/")
        return [
            p
            for p in FILES
            if (not base or p.startswith(base + "/"))
            and (fnmatchcase(p.rsplit("/", 1)[-1], pattern) or fnmatchcase(p, pattern))
        ]

    def read_file(self, path: str) -> str:
        text = FILES.get(path.strip("/"))
        if text is None:
            raise ValueError(f"no file {path!r}; use find_files")
        return text

    def create_folder(self, path: str) -> str:
        self.folders.add(path)
        return f"created {path}"

    def search_contacts(self, name: str) -> list[dict[str, str]]:
        words = name.lower().split()
        return [
            {"name": n, "email": e}
            for n, e in CONTACTS.items()
            if words and all(w in n.lower() for w in words)
        ]

    def send_message(self, to: str, subject: str, body: str) -> str:
        self.sent.append({"to": to, "subject": subject, "body": body})
        return f"sent to {to}"

    def propose_slots(self, request: dict[str, Any]) -> list[str]:
        window = request.get("window", {})
        start = dt.date.fromisoformat(window.get("from", "2025-03-17"))
        part = window.get("part_of_day", "any")
        hour = {"morning": 9, "afternoon": 14, "evening": 18}.get(part, 10)
        n = int(request.get("count", 3))
        days = [start + dt.timedelta(days=k) for k in range(7)]
        days = [d for d in days if d.weekday() < 5][:n]
        return [f"{d.isoformat()} {hour:02d}:00" for d in days]

    def ask_user(self, question: dict[str, Any]) -> str:
        self.asked.append(question)
        return self.reply or "(no answer)"

    def request_new_executor(self, description: str) -> str:
        return "unavailable: no new tools can be built now"

    def request_location(self, reason: str) -> str:
        return "unavailable: the location is private"


DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


class Holder:
    """The world of the query being run: the tools call into ``holder.world``, which each
    query replaces (so one agent serves every query of a mode)."""

    def __init__(self) -> None:
        self.world = World()

    def method(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(self.world, name)(*args, **kwargs)

        call.__name__ = name
        return call


def tools(holder: Holder) -> tuple[list[dict[str, Any]], dict[str, Callable[..., Any]]]:
    """The OpenAI tool specs (seven domain tools, ``ask_user`` with its nested schema, two
    escape hatches) and their implementations (calling into ``holder.world``)."""
    slot_request = {
        "type": "object",
        "description": "What to look for",
        "properties": {
            "with": _s("The contact's full name"),
            "window": {
                "type": "object",
                "properties": {
                    "from": _s("First day, YYYY-MM-DD", pattern=DATE),
                    "to": _s("Last day, YYYY-MM-DD", pattern=DATE),
                    "part_of_day": {
                        "type": "string",
                        "enum": ["morning", "afternoon", "evening", "any"],
                    },
                },
                "required": ["from", "to", "part_of_day"],
                "additionalProperties": False,
            },
            "count": {"type": "integer", "minimum": 1, "maximum": 10},
            "duration_minutes": {"type": "integer", "enum": [15, 30, 45, 60, 90]},
        },
        "required": ["with", "window", "count"],
        "additionalProperties": False,
    }
    question = {
        "type": "object",
        "description": "The question to put to the user",
        "properties": {
            "kind": {"type": "string", "enum": ["choice", "text", "confirm"]},
            "text": _s("The question, one sentence", minLength=1, maxLength=200),
            "options": {
                "type": "array",
                "items": {"type": "string", "maxLength": 80},
                "maxItems": 10,
                "description": "kind choice: the options to pick from",
            },
            "from_step": {
                "type": "integer",
                "minimum": 1,
                "description": "the step whose result the question is about, if any",
            },
        },
        "required": ["kind", "text"],
        "additionalProperties": False,
    }
    specs = [
        _spec(
            "get_now",
            "The current date and time in an IANA time zone.",
            {"timezone": _s("e.g. Europe/Rome or UTC")},
        ),
        _spec(
            "find_files",
            "Find files whose name matches a glob pattern (such as *.pdf), optionally in one "
            "folder (documents, notes, reports).",
            {"pattern": _s("A glob pattern"), "folder": _s("A folder name, or empty")},
            required=["pattern"],
        ),
        _spec("read_file", "Read a text file.", {"path": _s("The file's path, e.g. notes/x.txt")}),
        _spec("create_folder", "Create a folder.", {"path": _s("The folder's path")}),
        _spec(
            "search_contacts",
            "Find contacts by name: their full name and email address.",
            {"name": _s("A name or part of one")},
        ),
        _spec(
            "send_message",
            "Send an email.",
            {
                "to": _s("An email address (the user's own is " + ME + ")"),
                "subject": _s("The subject line"),
                "body": _s("The text"),
            },
        ),
        _spec(
            "propose_slots",
            "Propose free calendar slots for an appointment with a contact.",
            {"request": slot_request},
        ),
        _spec(
            "ask_user",
            "Ask the user a question and get the answer: to choose among options, to confirm, "
            "or for a detail the request leaves open.",
            {"question": question},
        ),
        _spec(
            "request_new_executor",
            "Ask for a new tool to be built when none of the tools can do the task.",
            {"description": _s("What the new tool should do")},
        ),
        _spec(
            "request_location",
            "Ask for the user's current location.",
            {"reason": _s("Why the location is needed")},
        ),
    ]
    fns: dict[str, Callable[..., Any]] = {
        name: holder.method(name)
        for name in (
            "get_now",
            "find_files",
            "read_file",
            "create_folder",
            "search_contacts",
            "send_message",
            "propose_slots",
            "ask_user",
            "request_new_executor",
            "request_location",
        )
    }
    return specs, fns


@dataclass(frozen=True)
class Query:
    """A query, its kind, what the fake user answers when asked, the tools a right first step
    calls, and the check of a converged run (``(world, answer, calls) -> bool``)."""

    prompt: str
    kind: str
    first: tuple[str, ...]
    check: Callable[[World, str, list[tuple[str, dict[str, Any]]]], bool]
    reply: str = ""


def _has(text: str, *words: str) -> bool:
    low = text.lower()
    return all(w.lower() in low for w in words)


def _called(calls: list[tuple[str, dict[str, Any]]], name: str) -> bool:
    return any(n == name for n, _ in calls)


def _mail_to(world: World, address: str, *words: str) -> bool:
    return any(m["to"] == address and _has(json.dumps(m), *words) for m in world.sent)


QUERIES: list[Query] = [
    # simple
    Query(
        "What time is it now in Rome?",
        "simple",
        ("get_now",),
        lambda w, a, c: bool(re.search(r"\b16[:.]30\b|4[:.]30 ?pm", a.lower())),
    ),
    Query(
        "Create the folder /tmp/x",
        "simple",
        ("create_folder",),
        lambda w, a, c: "/tmp/x" in w.folders,
    ),
    Query(
        "Which PDF files are in my documents folder?",
        "simple",
        ("find_files",),
        lambda w, a, c: _has(a, "lease", "taxes-2024"),
    ),
    # medium
    Query(
        "What is Silvia's email address?",
        "medium",
        ("search_contacts",),
        lambda w, a, c: "silvia.rossi@example.org" in a.lower(),
    ),
    Query(
        "What is the first item on my todo list in notes/todo.txt?",
        "medium",
        ("read_file", "find_files"),
        lambda w, a, c: _has(a, "plumber"),
    ),
    Query(
        "Send Marco an email saying the meeting moved to 3 pm.",
        "medium",
        ("search_contacts",),
        lambda w, a, c: _mail_to(w, CONTACTS["Marco Bianchi"], "3"),
    ),
    # complex
    Query(
        "Propose 3 morning slots next week for an appointment with Silvia Rossi, and after I "
        "pick one, email me the choice.",
        "complex",
        ("propose_slots", "search_contacts"),
        lambda w, a, c: _called(c, "ask_user") and _mail_to(w, ME, "2025-03-18"),
        reply="The second one, please.",
    ),
    Query(
        "Find the budget file in the reports folder, read it, and tell me the total.",
        "complex",
        ("find_files", "read_file"),
        lambda w, a, c: "1950" in a.replace(",", ""),
    ),
    # ambiguous: the right move is to ask first
    Query(
        "Send it to Dana.",
        "ambiguous",
        ("ask_user", "search_contacts"),
        lambda w, a, c: _called(c, "ask_user") and _mail_to(w, CONTACTS["Dana Lee"], "stamps"),
        reply="The shopping reminder: buy stamps.",
    ),
    Query(
        "Book something with Silvia.",
        "ambiguous",
        ("ask_user", "propose_slots", "search_contacts"),
        lambda w, a, c: _called(c, "ask_user") and _called(c, "propose_slots"),
        reply="A 30-minute call next week, in the afternoon.",
    ),
]
