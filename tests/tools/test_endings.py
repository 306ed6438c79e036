"""The end of a turn follows the model: whitespace after the last call never commits to more.

With a real vocabulary (Qwen3's 151k tokens), in every format x tool_choice mode x parallel
on/off: after a complete call, every whitespace-only token the mask allows leaves the matcher
in a state where the end of the turn (EOS) is allowed, and a second call still needs the
format's opener.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import toolmask as tm
from toolmask.tools import FORMATS, ToolTurn

from .completions import accepts, render
from .toolset import TOOLS, VALID

#: the formats with a generation grammar (the others parse only, see test_canitoolcall)
GRAMMAR_FORMATS = sorted(n for n, f in FORMATS.items() if f.has_grammar)

pytest.importorskip("quicktok")

MODES = {
    "auto": "auto",
    "required": "required",
    "named": {"type": "function", "function": {"name": "get_weather"}},
    "allowed_required": {"type": "allowed_tools", "mode": "required", "tools": ["get_weather"]},
}
CELLS = list(itertools.product(GRAMMAR_FORMATS, sorted(MODES), [True, False]))


@pytest.fixture(scope="module")
def vocab() -> tm.Vocabulary:
    return tm.Vocabulary.from_quicktok("qwen3")


def _whitespace_ids(vocab: tm.Vocabulary) -> list[int]:
    return [
        i
        for i, b in enumerate(vocab.token_bytes)
        if b and not b.strip(b" \t\n\r") and i not in vocab.eos_ids
    ]


@pytest.mark.parametrize("cell", CELLS, ids=["-".join(map(str, c)) for c in CELLS])
def test_whitespace_after_the_last_call_can_end_the_turn(
    cell: tuple[str, str, bool], vocab: tm.Vocabulary
) -> None:

    fmt_name, mode, parallel = cell
    turn = ToolTurn(TOOLS, fmt_name, MODES[mode], parallel_tool_calls=parallel)
    compiled = tm.compile(turn.grammar(), vocab)
    fmt = turn.format
    pieces = render(fmt, [("get_weather", VALID["get_weather"][0])])
    m = compiled.matcher()
    assert accepts(m, pieces)
    eos = min(vocab.eos_ids)
    allowed = set(m.allowed_token_ids().tolist())
    assert eos in allowed, "the end of the turn must be allowed right after the call"
    ws = [t for t in _whitespace_ids(vocab) if t in allowed]
    assert ws, "the model's newline after the call must be allowed"
    for t in ws:
        assert m.accept_token(t)
        after = m.allowed_token_ids()
        assert eos in set(after.tolist()), (
            f"{vocab.token_bytes[t]!r} after the call commits the model to more output"
        )
        # a bare second call object after the whitespace is not a call: it needs the opener
        # (where text may follow the calls, it is that text)
        more = m.accept_bytes(b'{"name": "get_weather"')
        assert more == fmt.layout.prose_after_calls
        m.rollback(2 if more else 1)


@pytest.mark.parametrize("fmt_name", GRAMMAR_FORMATS)
def test_newline_between_blocks_is_not_a_call(fmt_name: str) -> None:
    """Parallel calls: whitespace between blocks, then the opener; EOS in between is fine."""
    turn = ToolTurn(TOOLS, fmt_name, "required", parallel_tool_calls=True)
    m = tm.compile(turn.grammar()).matcher()
    one = render(turn.format, [("get_weather", VALID["get_weather"][0])])
    assert accepts(m, [*one, "\n"])
    assert m.is_accepting()


def test_eos_mass_is_not_moved_onto_a_second_call(vocab: tm.Vocabulary) -> None:
    """The bitmask after ``</tool_call>\\n`` allows EOS and the openers' first bytes only (the
    format's own ``<tool_call>`` and its habits', Qwen2.5-Coder's fence ``` ```json ```)."""
    turn = ToolTurn(TOOLS, "hermes", "required", parallel_tool_calls=True)
    compiled = tm.compile(turn.grammar(), vocab)
    m = compiled.matcher()
    assert accepts(m, [*render(turn.format, [("get_weather", VALID["get_weather"][0])]), "\n"])
    ids = m.allowed_token_ids()
    texts = {vocab.token_bytes[i] for i in ids.tolist() if vocab.token_bytes[i] is not None}
    openers = [o.encode() for o in turn.format.block_triggers()]
    assert all(
        t.strip(b" \t\n\r") == b"" or any(o.startswith(t.lstrip()) for o in openers) for t in texts
    )
    assert set(vocab.eos_ids) & set(ids.tolist())
    assert np.all(ids >= 0)
