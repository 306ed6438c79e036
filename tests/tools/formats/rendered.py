"""The checks every JSON-call family passes on what its own chat template renders.

Each case is the assistant turn that a vendored template (``tests/data/templates/``) renders
for one call ``get_weather(city="Paris", days=3)`` or for that call and ``get_time(zone=
"Europe/Paris")``, rendered the way ``transformers.apply_chat_template`` renders it (sandboxed
Jinja2, ``trim_blocks``, ``lstrip_blocks``, OpenAI ``tools``, an assistant message with
``tool_calls`` whose arguments are objects), copied byte for byte through the turn's end marker.
The engine stops at that marker (an end-of-turn token), so the reply the grammar and the parser
see is the turn without it.

:func:`check_case` asserts, for one case: the turn grammar takes the reply byte by byte and
with the format's markers as single special tokens, under ``required`` and ``auto``; the parser
gives back exactly the calls, batch and streamed in small chunks (equal); the same reply with an
unknown tool name, with an argument its schema refuses, under ``tool_choice`` none, or naming
another tool, is refused; a reply cut inside the call keeps its text in the content.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import toolmask as tm
from toolmask.tools import FORMATS, ParsedTurn, StreamParser, ToolTurn, sequential_call_id

from ..completions import accepts, split_special

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City"},
                    "days": {"type": "integer", "description": "Days"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Time in a zone.",
            "parameters": {
                "type": "object",
                "properties": {"zone": {"type": "string", "description": "Zone"}},
                "required": ["zone"],
            },
        },
    },
]
WEATHER = ("get_weather", {"city": "Paris", "days": 3})
TIME = ("get_time", {"zone": "Europe/Paris"})
ONE = [WEATHER]
TWO = [WEATHER, TIME]


@dataclass(frozen=True)
class Case:
    """One rendered turn: ``template`` (under ``tests/data/templates/``), ``turn`` (what the
    template renders for the assistant, through ``end``), ``calls`` it holds."""

    template: str
    turn: str
    end: str
    calls: list[tuple[str, dict[str, Any]]]
    #: the ids the template wrote, where it writes them
    ids: tuple[str, ...] = ()
    #: the prompt ends inside the reasoning channel (the reply starts with its text)
    reasoning_open: bool = False
    #: markers that are single special tokens in the family's vocabulary
    special: frozenset[str] = field(default_factory=frozenset)

    @property
    def reply(self) -> str:
        assert self.turn.endswith(self.end), (self.turn, self.end)
        return self.turn[: len(self.turn) - len(self.end)]


def _turn(fmt: str, case: Case, choice: Any, special: frozenset[str] = frozenset()) -> ToolTurn:
    return ToolTurn(
        TOOLS,
        fmt,
        choice,
        special_tokens=special,
        id_factory=sequential_call_id,
        reasoning_open=case.reasoning_open,
    )


def takes(fmt: str, case: Case, text: str, choice: Any = "required") -> bool:
    """Whether the turn grammar under ``choice`` takes ``text`` byte by byte."""
    m = tm.compile(_turn(fmt, case, choice).grammar()).matcher()
    return accepts(m, [text])


def takes_tokens(fmt: str, case: Case, text: str, choice: Any = "required") -> bool:
    """The same with the case's special markers as single tokens."""
    m = tm.compile(_turn(fmt, case, choice, case.special).grammar()).matcher()
    return accepts(m, split_special(text, case.special))


def parse(fmt: str, case: Case, text: str) -> ParsedTurn:
    return _turn(fmt, case, "auto").parse(text)


def check_stays_in_content(fmt: str, case: Case, texts: Sequence[str]) -> None:
    """Each of ``texts`` (a block malformed or cut short) gives no call: its text stays in the
    content, word for word, and the block is listed as malformed."""
    for text in texts:
        got = parse(fmt, case, text)
        assert got.calls == () and got.malformed and got.content == text, text


def stream(fmt: str, case: Case, text: str, size: int = 3) -> ParsedTurn:
    """``text`` fed to a StreamParser ``size`` characters at a time; the arguments the deltas
    carry for each call add up to its arguments."""
    s = StreamParser(
        FORMATS[fmt], id_factory=sequential_call_id, reasoning_open=case.reasoning_open
    )
    deltas = [d for i in range(0, len(text), size) for d in s.feed(text[i : i + size])]
    deltas += s.finish()
    args: dict[int, str] = {}
    for d in deltas:
        if d.index is not None:
            args[d.index] = args.get(d.index, "") + (d.arguments or "")
    got = [json.loads(args[i]) for i in sorted(args)]
    assert got == [c.arguments for c in s.result.calls]
    return s.result


def check_case(fmt: str, case: Case) -> None:
    """Every check of the module docstring, for ``case`` in format ``fmt``."""
    reply = case.reply
    for choice in ("required", "auto"):
        assert takes(fmt, case, reply, choice), f"{choice}: the grammar refuses {reply!r}"
        if case.special:
            assert takes_tokens(fmt, case, reply, choice), f"{choice}, as special tokens"
    batch = parse(fmt, case, reply)
    assert [(c.name, c.arguments) for c in batch.calls] == case.calls
    assert batch.content == "" and batch.malformed == ()
    if case.ids:
        assert tuple(c.id for c in batch.calls) == case.ids
    assert stream(fmt, case, reply) == batch
    assert stream(fmt, case, reply, size=1) == batch
    # negative controls: the same bytes with one change each
    name, args = case.calls[0]
    unknown = reply.replace(name, "get_wether", 1)
    assert unknown != reply and not takes(fmt, case, unknown), "an unknown tool name"
    key, value = next((k, v) for k, v in args.items() if isinstance(v, int))
    text = json.dumps(value)
    invalid = reply.replace(f'"{key}": {text}', f'"{key}": "{text}"', 1)
    assert invalid != reply and not takes(fmt, case, invalid), "a schema-invalid argument"
    assert not takes(fmt, case, reply, "none"), "a call under tool_choice none"
    other = next(t["function"]["name"] for t in TOOLS if t["function"]["name"] != name)
    named = {"type": "function", "function": {"name": other}}
    assert not takes(fmt, case, reply, named), "a call of another tool than the named one"
    if len(case.calls) == 1:
        assert takes(fmt, case, reply, {"type": "function", "function": {"name": name}})
    # a reply cut inside the arguments: its text stays in the content
    cut = reply[: reply.index(text, reply.index(f'"{key}"')) + len(text) - 1]
    got = parse(fmt, case, cut)
    assert got.calls == () and got.malformed, cut
    assert got.content.endswith(got.malformed[-1].text)
    assert got.malformed[-1].reason.startswith("truncated"), got.malformed[-1].reason
    assert stream(fmt, case, cut) == got
