"""Checks every family's tests run on a template's rendered turn (see :mod:`.rendered`): the turn
grammar takes the bytes (``required`` and ``auto``), the parser gives the calls back (batch and
streamed in small chunks, equal), an unknown tool name and a schema-invalid argument are refused,
``tool_choice`` none / named / parallel off behave, and a block cut short stays in content.
"""

from __future__ import annotations

import json
from typing import Any

import toolmask as tm
from toolmask.tools import FORMATS, StreamParser, ToolTurn, sequential_call_id

from ..completions import accepts, split_special
from .xml_rendered import CALLS, FORMAT_OF, RENDERED, TOOLS

SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def turn_for(
    fmt: str, tool_choice: Any, prompt_tail: str, *, parallel: bool = True, **kw: Any
) -> ToolTurn:
    f = FORMATS[fmt]
    return ToolTurn(
        TOOLS, f, tool_choice, parallel_tool_calls=parallel, id_factory=sequential_call_id,
        reasoning_open=f.prompt_opens_reasoning(prompt_tail), **kw,
    )  # fmt: skip


def takes(turn: ToolTurn, text: str, special: frozenset[str] = frozenset()) -> bool:
    """Whether the turn grammar accepts ``text`` byte by byte (markers in ``special`` as
    single special tokens) and ends in an accepting state."""
    return accepts(tm.compile(turn.grammar()).matcher(), split_special(text, special))


def streamed(turn: ToolTurn, text: str, size: int = 3) -> tuple[Any, dict[int, str]]:
    """The stream parser's result for ``text`` fed in ``size``-character chunks, and each
    call's arguments as the deltas spelled them."""
    sp = StreamParser(
        turn.format, id_factory=sequential_call_id, reasoning_open=turn.reasoning_open,
        schemas=SCHEMAS,
    )  # fmt: skip
    args: dict[int, str] = {}
    deltas = []
    for i in range(0, len(text), size):
        deltas += sp.feed(text[i : i + size])
    deltas += sp.finish()
    for d in deltas:
        if d.index is not None and d.arguments is not None:
            args[d.index] = args.get(d.index, "") + d.arguments
    return sp.result, args


def check_rendered(template: str, case: str) -> None:
    """Every check of the module docstring on one render."""
    tail, text = RENDERED[template, case]
    fmt = FORMAT_OF[template]
    want = CALLS[case]
    required = turn_for(fmt, "required", tail)
    auto = turn_for(fmt, "auto", tail)
    # the grammar takes the model's own bytes (prose before calls only under auto)
    assert takes(auto, text), f"{template} {case}: auto refuses the rendered turn"
    assert takes(required, text) == (case != "prose"), f"{template} {case}: required"
    # the parser gives the calls back, batch and streamed
    parsed = auto.parse(text)
    assert [(c.name, c.arguments) for c in parsed.calls] == want, parsed
    assert not parsed.malformed, parsed.malformed
    assert parsed.content == ("Let me check." if case == "prose" else ""), parsed.content
    assert parsed.reasoning == ("THINK" if "THINK" in text else ""), parsed.reasoning
    # the same with the format's markers as single special tokens
    f = FORMATS[fmt]
    marks = (f.block.open, f.block.close, f.reasoning_start, f.reasoning_end)
    special = frozenset(m for m in marks if m)
    assert takes(turn_for(fmt, "auto", tail, special_tokens=special), text, special)
    for size in (1, 3, 7):
        result, args = streamed(auto, text, size)
        assert result == parsed, size
        assert [json.loads(args[i]) for i in sorted(args)] == [a for _, a in want]
    # refusals: an unknown tool, an argument the schema rejects, a second call when parallel
    # calls are off, any call under none
    name = want[0][0]
    assert not takes(auto, text.replace(name, "no_such_tool")), "unknown tool taken"
    assert not takes(required, text.replace(name, "no_such_tool")), "unknown tool taken"
    bad = invalid(text)
    if bad is not None:
        assert not takes(auto, bad), f"{template} {case}: schema-invalid argument taken"
    single = turn_for(fmt, "required", tail, parallel=False)
    assert takes(single, text) == (len(want) == 1 and case != "prose")
    assert not takes(turn_for(fmt, "none", tail), text)
    # a named tool: that one only
    named = {"type": "function", "function": {"name": name}}
    other = {
        "type": "function",
        "function": {"name": "set_opts" if name != "set_opts" else "get_weather"},
    }
    assert takes(turn_for(fmt, named, tail), text) == (case != "prose")
    assert not takes(turn_for(fmt, other, tail), text)


def invalid(text: str) -> str | None:
    """``text`` with ``days`` written as a string where the schema wants an integer (None when
    the render has no ``days``)."""
    for good, bad in ((">3<", ">three<"), ("days=3", "days='three'")):
        if good in text:
            return text.replace(good, bad, 1)
    return None


def check_truncated(template: str) -> None:
    """The one-call render cut inside its block: no call, the raw text kept in content (and
    reported malformed), batch and streamed equal."""
    tail, text = RENDERED[template, "one"]
    turn = turn_for(FORMAT_OF[template], "auto", tail)
    cut = text[: text.index("Paris") + 3]
    parsed = turn.parse(cut)
    assert parsed.calls == ()
    assert parsed.malformed, parsed
    bad = parsed.malformed[0].text
    assert cut.endswith(bad) and parsed.content.endswith(bad)
    assert streamed(turn, cut)[0] == parsed


def check_prefixes(template: str, case: str) -> None:
    """Every prefix of a render (a reply cut anywhere) parses without raising, keeps every byte
    of the prefix somewhere in the result, and streams to the batch result."""
    tail, text = RENDERED[template, case]
    turn = turn_for(FORMAT_OF[template], "auto", tail)
    for n in range(len(text) + 1):
        cut = text[:n]
        parsed = turn.parse(cut)
        if not parsed.calls:  # nothing read as a call: the text stays (reasoning aside)
            assert parsed.content.strip() in cut
        assert streamed(turn, cut, 5)[0] == parsed, n
