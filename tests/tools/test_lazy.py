"""Lazy turns (issue 25): a tool's arguments compile when a reply first enters them.

* the same language as the eager turn: ``test_grammar``'s table (its auto and required
  cells: every format, parallel and reasoning) through ``compile(lazy=True)``, and random
  calls byte by byte against the eager compile (allowed bytes and special tokens at every
  step);
* the same masks, token for token, on Qwen3's vocabulary in six formats, with subsets;
* a token that runs from a name into the arguments in one piece (a vocabulary made for it):
  its mask and acceptance are the eager turn's, and the tool compiles on the way;
* nothing compiles until a reply enters a tool's arguments; a schema that cannot compile
  raises naming its tool when it is entered;
* the batch filler leaves lazy rows and filtered rows to the rows themselves (their masks are
  not a state's cached mask);
* a subset's turn as its own grammar (a plain matcher), as the turn over every tool and a name
  filter (a filtered matcher) and lazily: the same masks and verdicts, token for token.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmask as tm
from toolmask._matcher import FilteredMatcher, PlainMatcher
from toolmask.errors import SchemaError
from toolmask.grammar import Special
from toolmask.tools import LazyTurnGrammar, LazyTurnMatcher, ToolTurn

from .completions import Piece, accepts, render
from .test_grammar import CELLS, THOUGHT, Mode, _good_and_bad, _has_reasoning, _id, _turn
from .test_parts import PROPERTY_FORMATS, _walk
from .toolset import NAMES, TOOLS, VALID

#: the table's auto and required cells: a lazy turn is the turn over every tool in one of those
#: modes (``none`` compiles no tool; a subset is that turn and a name filter, whose
#: intersection ``test_parts`` checks, and the random-subset test below runs it lazily)
LAZY_CELLS = [c for c in CELLS if c[1].label in ("auto", "required")]


@pytest.mark.parametrize("cell", LAZY_CELLS, ids=[_id(c) for c in LAZY_CELLS])
def test_lazy_turn_table(cell: tuple[str, Mode, bool, bool]) -> None:
    """``test_grammar``'s table through ``compile(lazy=True)``: the same verdicts."""
    fmt_name, mode, parallel, reasoning = cell
    turn = _turn(fmt_name, mode, parallel, reasoning=reasoning)
    compiled = turn.compile(lazy=True)
    assert isinstance(compiled, LazyTurnGrammar)
    good, bad = _good_and_bad(turn, mode, parallel)
    if _has_reasoning(fmt_name) and reasoning:
        from .completions import reasoning_text

        thought = reasoning_text(turn.format, THOUGHT)
        good = [(f"reasoning, {lb}", [thought, *p]) for lb, p in good]
        bad = [(f"reasoning, {lb}", [thought, *p]) for lb, p in bad]
    for label, pieces in good:
        assert accepts(compiled.matcher(), pieces), f"rejected valid completion ({label})"
    for label, pieces in bad:
        assert not accepts(compiled.matcher(), pieces), f"accepted bad completion ({label})"


@settings(max_examples=30, deadline=None)
@given(
    fmt=st.sampled_from(PROPERTY_FORMATS),
    allowed=st.sets(st.sampled_from(NAMES), min_size=1, max_size=len(NAMES)),
    required=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_lazy_accepts_exactly_what_the_eager_turn_accepts(
    fmt: str, allowed: set[str], required: bool, seed: int
) -> None:
    choice = {
        "type": "allowed_tools",
        "mode": "required" if required else "auto",
        "tools": sorted(allowed),
    }
    turn = ToolTurn(TOOLS, fmt, choice)
    lazy = turn.compile(lazy=True)
    eager = tm.GrammarCompiler().compile(turn.grammar())
    rng = random.Random(seed)
    for name in NAMES:
        args = VALID[name][rng.randrange(len(VALID[name]))]
        other = VALID[rng.choice(NAMES)][0]
        for a in (args, other):
            two = [(name, a), (rng.choice(NAMES), VALID[name][0])]
            for calls in ([(name, a)], two):
                verdict = _walk(lazy, eager, render(turn.format, calls))
                assert verdict[0] == verdict[1], (name, a)


@pytest.fixture(scope="module")
def qwen3_vocab() -> tm.Vocabulary:
    return tm.Vocabulary.from_quicktok("qwen3")


def _token_ids(vocab: tm.Vocabulary, pieces: list[Piece]) -> list[int]:
    special = {text: tid for tid, text in vocab.special.items()}
    ids: list[int] = []
    for p in pieces:
        if isinstance(p, Special):
            ids.append(special[p.text])
        else:
            ids.extend(vocab.encode_greedy(p.encode()))
    return ids


@pytest.mark.parametrize("fmt", PROPERTY_FORMATS)
@pytest.mark.parametrize("subset", [False, True])
def test_lazy_masks_equal_the_eager_masks(
    qwen3_vocab: tm.Vocabulary, fmt: str, subset: bool
) -> None:
    """Token for token through two calls, the lazy turn's mask is the eager turn's; only the
    tools entered are compiled."""
    sp = frozenset(qwen3_vocab.special.values())
    choice: Any = "required"
    if subset:
        choice = {"type": "allowed_tools", "mode": "required", "tools": NAMES[:3]}
    turn = ToolTurn(TOOLS, fmt, choice, special_tokens=sp)
    with tm.GrammarCompiler().activate():  # a turn of its own: no tool compiled yet
        lazy = turn.compile(qwen3_vocab, lazy=True)
        eager = turn.compile(qwen3_vocab, lazy=False)
    ml, me = lazy.matcher(), eager.matcher()
    assert isinstance(ml, LazyTurnMatcher)
    calls = [(NAMES[0], VALID[NAMES[0]][0]), (NAMES[2], VALID[NAMES[2]][-1])]
    pieces = render(turn.format, calls, special_tokens=sp)
    for tid in _token_ids(qwen3_vocab, pieces):
        assert (ml.mask() == me.mask()).all(), qwen3_vocab.token_bytes[tid]
        assert ml.allowed_specials() == me.allowed_specials()
        assert ml.accept_token(tid) and me.accept_token(tid)
    assert (ml.mask() == me.mask()).all()
    assert ml.is_accepting() and me.is_accepting()
    assert ml.compiled_tools <= {NAMES[0], NAMES[2]}
    ml.rollback(ml.n_accepted)
    assert ml.n_accepted == 0 and (ml.mask() == eager.matcher().mask()).all()


def _crossing_vocab() -> tm.Vocabulary:
    """Bytes, plus tokens that run from the end of a name into the arguments."""
    tokens: list[bytes | None] = [bytes([b]) for b in range(256)]
    tokens += [
        b'weather", "arguments": {"',
        b'", "arguments": {"c',
        b'_web", "arguments": {',
        b"<tool_call>",
        b"</tool_call>",
        b"<|end|>",
    ]
    n = len(tokens)
    return tm.Vocabulary.from_token_bytes(
        tokens,
        eos_ids=[n - 1],
        special_ids=[n - 3, n - 2, n - 1],
        special_texts={n - 3: "<tool_call>", n - 2: "</tool_call>", n - 1: "<|end|>"},
    )


def test_a_token_that_runs_from_a_name_into_the_arguments() -> None:
    vocab = _crossing_vocab()
    sp = frozenset(vocab.special.values())
    turn = ToolTurn(TOOLS, "hermes", "required", special_tokens=sp)
    lazy = turn.compile(vocab, lazy=True)
    eager = turn.compile(vocab, lazy=False)
    cross = vocab.encode_greedy(b'weather", "arguments": {"')
    assert len(cross) == 1
    for prefix in (b'\n{"name": "get_', b'\n{"name": "search'):
        ml, me = lazy.matcher(), eager.matcher()
        for m in (ml, me):
            assert m.accept_special("<tool_call>") and m.accept_bytes(prefix)
        assert (ml.mask() == me.mask()).all()
        assert ml.accept_token(cross[0]) == me.accept_token(cross[0])
        assert (ml.mask() == me.mask()).all()
    ml = lazy.matcher()
    assert ml.accept_special("<tool_call>") and ml.accept_bytes(b'\n{"name": "get_')
    assert ml.accept_token(cross[0])
    assert "get_weather" in ml.compiled_tools
    assert ml.accept_bytes(b'city": "Oslo"}}') and not ml.accept_bytes(b"x")
    assert not lazy.matcher().accept_bytes(b'<tool_call>\n{"name": "get_weather", "arguments": 3')


def test_nothing_compiles_until_a_reply_enters_the_arguments() -> None:
    tools = [
        {"name": f"tool_{i}", "parameters": {"type": "object", "properties": {"x": {}}}}
        for i in range(40)
    ]
    tools[7]["parameters"] = {"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}}
    compiler = tm.GrammarCompiler()
    with compiler.activate():
        turn = ToolTurn(tools, "hermes", "required")
        compiled = turn.compile()  # over LAZY_MIN_TOOLS: lazy by default
        assert isinstance(compiled, LazyTurnGrammar)
        assert compiled.compiled_tools == frozenset()
        assert len(compiler.cache("tools.parts", limit="max_tool_parts")) == 0
        m = compiled.matcher()
        assert m.accept_bytes(b'<tool_call>\n{"name": "tool_1')
        assert m.allowed_bytes() and compiled.compiled_tools == frozenset()
        assert m.accept_bytes(b'2", "arguments": {"x": [1, {}]}}')
        assert compiled.compiled_tools == {"tool_12"}
        bad = compiled.matcher()
        with pytest.raises(SchemaError) as info:
            bad.accept_bytes(b'<tool_call>\n{"name": "tool_7", "arguments": ')
        assert info.value.tool == "tool_7"
        with pytest.raises(SchemaError):
            turn.compile(lazy=False)


def test_the_batch_filler_leaves_lazy_and_filtered_rows_to_themselves(
    qwen3_vocab: tm.Vocabulary,
) -> None:
    sp = frozenset(qwen3_vocab.special.values())
    sub = {"type": "allowed_tools", "mode": "required", "tools": ["get_weather"]}
    rows: list[Any] = []
    for lazy in (True, False):
        for choice in ("required", sub):
            compiled = ToolTurn(TOOLS, "hermes", choice, special_tokens=sp).compile(
                qwen3_vocab, lazy=lazy
            )
            m = compiled.matcher()
            assert m.accept_special("<tool_call>") and m.accept_bytes(b'\n{"name": "')
            rows.append(m)
    out = np.zeros((len(rows), (qwen3_vocab.vocab_size + 31) // 32), dtype=np.int32)
    tm.mask.fill_batch(rows, out)
    for i, m in enumerate(rows):
        assert (out[i] == m.mask()).all(), i
    assert not (out[0] == out[1]).all()  # the subset's mask is narrower


@pytest.mark.parametrize("fmt", PROPERTY_FORMATS)
def test_plain_filtered_and_lazy_matchers_agree(qwen3_vocab: tm.Vocabulary, fmt: str) -> None:
    """A subset's turn three ways, token for token through two calls and an EOS: its own
    grammar compiled whole (a plain matcher), the turn over every tool run with the subset's
    name filter (a filtered matcher) and the lazy turn with that filter. The same masks,
    bytes, special tokens, forced bytes and verdicts; the batch filler's rows are the
    matchers' own masks."""
    sp = frozenset(qwen3_vocab.special.values())
    choice = {"type": "allowed_tools", "mode": "required", "tools": NAMES[:3]}
    turn = ToolTurn(TOOLS, fmt, choice, special_tokens=sp)
    compiler = tm.GrammarCompiler()
    with compiler.activate():
        lazy = turn.compile(qwen3_vocab, lazy=True)
        eager = turn.compile(qwen3_vocab, lazy=False)
        whole = compiler.compile(turn.grammar(), qwen3_vocab)
    rows = [whole.matcher(), eager.matcher(), lazy.matcher()]
    assert [type(m) for m in rows] == [PlainMatcher, FilteredMatcher, LazyTurnMatcher]
    out = np.zeros((len(rows), (qwen3_vocab.vocab_size + 31) // 32), dtype=np.int32)
    calls = [(NAMES[0], VALID[NAMES[0]][0]), (NAMES[2], VALID[NAMES[2]][-1])]
    ids = _token_ids(qwen3_vocab, render(turn.format, calls, special_tokens=sp))
    for tid in [*ids, min(qwen3_vocab.eos_ids)]:
        done = tm.mask.fill_batch(rows, out)
        masks = [m.mask() for m in rows]
        for i, m in enumerate(rows):
            assert (out[i] == masks[i]).all(), (i, qwen3_vocab.token_bytes[tid])
            assert bool(done.accepting[i]) == m.is_accepting()
            assert bool(done.finished[i]) == m.is_finished()
            assert (masks[i] == masks[0]).all(), (i, qwen3_vocab.token_bytes[tid])
        for query in ("allowed_bytes", "allowed_specials", "is_accepting", "forced_bytes"):
            assert len({getattr(m, query)() for m in rows}) == 1, query
        assert [m.accept_token(tid) for m in rows] == [True] * len(rows)
    assert all(m.stopped and m.is_finished() for m in rows)
