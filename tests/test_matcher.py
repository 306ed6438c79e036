"""The matcher protocol and its implementations (issue 36).

* ``Matcher`` holds no state and cannot be made; each implementation (plain, filtered, the lazy
  turn's) derives from it alone, and no implementation reads a private member of another
  object: they are composed, not built on one another;
* every matcher a compiled grammar gives is a ``Matcher`` whose ``masks`` is a mask cache (or
  None without a vocabulary), never a marker; only a plain matcher is read from its cache by
  the batch filler;
* a filtered matcher is its two matchers in lockstep: at every step of random walks (tokens the
  mask allows, tokens it does not, EOS, rollbacks) its answers are those of the two plain
  matchers run side by side.
"""

from __future__ import annotations

import ast
import inspect
import random
import textwrap
from abc import ABC
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolmask as tm
from toolmask._matcher import FilteredMatcher, Matcher, PlainMatcher
from toolmask.grammar import Grammar, Rule, Special, choice, lit, plus, seq
from toolmask.tools import LazyTurnMatcher, ToolTurn

from .tools.toolset import NAMES, TOOLS

IMPLEMENTATIONS = [PlainMatcher, FilteredMatcher, LazyTurnMatcher]


def test_the_protocol_holds_no_state_and_cannot_be_made() -> None:
    assert tm.Matcher is Matcher
    assert Matcher.__slots__ == ()
    with pytest.raises(TypeError):
        Matcher()  # type: ignore[abstract]
    assert Matcher.masks.fget.__annotations__["return"] == "MaskCache | None"  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", IMPLEMENTATIONS, ids=lambda c: c.__name__)
def test_each_implementation_derives_from_the_protocol_alone(cls: type[Matcher]) -> None:
    assert cls.__mro__ == (cls, Matcher, ABC, object)
    assert not cls.__abstractmethods__  # type: ignore[attr-defined]


def _private_reads(cls: type) -> list[str]:
    """``x._name`` in ``cls``'s body where ``x`` is not ``self``, ``self._name`` that ``cls``
    does not define itself (dunders aside), and any ``super()``: a member read from another
    object's insides, or from a base."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    own = set(cls.__dict__) | set(cls.__dict__.get("__slots__", ()))
    bad: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            mine = isinstance(node.value, ast.Name) and node.value.id == "self"
            if node.attr.startswith("__") or (mine and node.attr in own):
                continue
            bad.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "super":
            bad.append(f"line {node.lineno}: super()")
    return bad


@pytest.mark.parametrize("cls", IMPLEMENTATIONS, ids=lambda c: c.__name__)
def test_no_implementation_reads_a_private_member_of_another_object(cls: type) -> None:
    assert _private_reads(cls) == []


def test_the_private_read_check_can_fail() -> None:
    class Peeks(PlainMatcher):
        def f(self, other: Any) -> Any:
            return other._state, self._history, super().__init__(other)

    assert len(_private_reads(Peeks)) == 3


def _vocab() -> tm.Vocabulary:
    """Bytes, a few longer tokens, the hermes call markers and an EOS."""
    tokens: list[bytes | None] = [bytes([b]) for b in range(256)]
    tokens += [b'{"name": "', b'", "arguments": {', b"get_", b'"}}', b"<tool_call>"]
    tokens += [b"</tool_call>", b"<|end|>"]
    n = len(tokens)
    return tm.Vocabulary.from_token_bytes(
        tokens,
        eos_ids=[n - 1],
        special_ids=[n - 3, n - 2, n - 1],
        special_texts={n - 3: "<tool_call>", n - 2: "</tool_call>", n - 1: "<|end|>"},
    )


VOCAB = _vocab()
SUBSET = {"type": "allowed_tools", "mode": "required", "tools": NAMES[:2]}


def _kinds(vocab: tm.Vocabulary | None) -> dict[str, Matcher]:
    sp = frozenset(VOCAB.special.values())
    out: dict[str, Matcher] = {}
    for lazy in (False, True):
        for label, tool_choice in (("all", "required"), ("subset", SUBSET)):
            turn = ToolTurn(TOOLS, "hermes", tool_choice, special_tokens=sp)
            with tm.GrammarCompiler().activate():
                out[f"{'lazy' if lazy else 'eager'} {label}"] = turn.compile(
                    vocab, lazy=lazy
                ).matcher()
    return out


def test_every_matcher_is_a_matcher_with_a_typed_mask_cache() -> None:
    kinds = _kinds(VOCAB)
    assert type(kinds["eager all"]) is PlainMatcher
    assert type(kinds["eager subset"]) is FilteredMatcher
    assert type(kinds["lazy all"]) is LazyTurnMatcher
    assert type(kinds["lazy subset"]) is LazyTurnMatcher
    for label, m in kinds.items():
        assert isinstance(m, tm.Matcher), label
        assert isinstance(m.masks, tm.mask.MaskCache), label
        assert m.cached_by_state == (label == "eager all"), label
        assert m.accept_special("<tool_call>") and m.accept_bytes(b'\n{"name": "')
        assert isinstance(m.masks, tm.mask.MaskCache), label
    for label, m in _kinds(None).items():
        assert m.masks is None, label
        with pytest.raises(ValueError, match="without a vocabulary"):
            m.mask()
        with pytest.raises(ValueError, match="without a vocabulary"):
            tm.mask.fill_batch([m], np.zeros((1, 9), dtype=np.int32))


def _specials() -> tuple[tm.Grammar, tm.Grammar]:
    """Two grammars over the call markers and two letters that allow different special tokens
    at the same point."""
    call, end = Special("<tool_call>"), Special("</tool_call>")
    main = Grammar((Rule("root", plus(choice(lit("a"), lit("b"), call, end))),))
    filt = Grammar((Rule("root", plus(choice(lit("a"), call, seq(end, lit("b"))))),))
    return main, filt


def _grammars() -> list[tuple[tm.CompiledGrammar, tm.CompiledGrammar]]:
    """(main, filter) pairs: a tool turn and its name filter; a schema and a regex; two
    grammars over special tokens."""
    sp = frozenset(VOCAB.special.values())
    turn = ToolTurn(TOOLS, "hermes", SUBSET, special_tokens=sp)
    with tm.GrammarCompiler().activate():
        restricted = turn.compile(VOCAB, lazy=False)
        whole = ToolTurn(TOOLS, "hermes", "required", special_tokens=sp).compile(VOCAB, lazy=False)
    assert restricted.filter is not None
    obj = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    schema = tm.compile(tm.Grammar.from_json_schema(obj), VOCAB)
    regex = tm.compile(tm.Grammar.from_regex(r'\{"a": ?"[a-c]*"(, ?"b": ?[0-9]+)?\}'), VOCAB)
    main, filt = (tm.compile(g, VOCAB) for g in _specials())
    return [(whole, restricted.filter), (schema, regex), (main, filt)]


PAIRS = _grammars()


def _same(m: Matcher, a: Matcher, b: Matcher) -> None:
    """``m`` answers as ``a`` and ``b`` in lockstep."""
    assert m.n_accepted == a.n_accepted == b.n_accepted
    assert m.stopped == a.stopped
    assert m.state == a.state and m.automaton is a.automaton and m.masks is a.masks
    assert (m.mask() == (a.mask() & b.mask())).all()
    row = np.zeros((2, m.masks.index.words), dtype=np.int32)  # type: ignore[union-attr]
    m.fill_bitmask(row, 1)
    assert (row[1] == m.mask()).all()
    assert m.allowed_bytes() == (a.allowed_bytes() & b.allowed_bytes())
    assert m.allowed_specials() == (a.allowed_specials() & b.allowed_specials())
    assert m.is_accepting() == (a.is_accepting() and b.is_accepting())
    done = m.stopped or (m.is_accepting() and not m.allowed_bytes() and not m.allowed_specials())
    assert m.is_finished() == done


def _forced(a: Matcher, b: Matcher) -> bytes:
    """The forced bytes of the pair, stepped on the two plain matchers."""
    out = bytearray()
    cap = a.automaton.limits.max_forced_bytes
    while len(out) < cap and not (a.is_accepting() and b.is_accepting()):
        mask = a.allowed_bytes() & b.allowed_bytes()
        if mask == 0 or mask & (mask - 1) or (a.allowed_specials() & b.allowed_specials()):
            break
        byte = bytes((mask.bit_length() - 1,))
        assert a.accept_bytes(byte) and b.accept_bytes(byte)
        out += byte
    a.rollback(len(out))
    b.rollback(len(out))
    return bytes(out)


@settings(max_examples=30, deadline=None)
@given(pair=st.sampled_from(range(len(PAIRS))), seed=st.integers(0, 2**16))
def test_a_filtered_matcher_is_its_two_matchers_in_lockstep(pair: int, seed: int) -> None:
    main, filt = PAIRS[pair]
    m = FilteredMatcher(main.matcher(), filt.matcher())
    a, b = main.matcher(), filt.matcher()
    rng = random.Random(seed)
    size = VOCAB.vocab_size
    for _ in range(40):
        _same(m, a, b)
        assert m.forced_bytes() == _forced(a, b)
        allowed = m.allowed_token_ids().tolist()
        tid = rng.choice(allowed) if allowed and rng.random() < 0.8 else rng.randrange(size)
        ok = m.accept_token(tid)
        ra = a.accept_token(tid)
        rb = b.accept_token(tid) if ra else False
        if ra and not rb:
            a.rollback(1)
        assert ok == (ra and rb) == (tid in allowed), tid
        if m.n_accepted and rng.random() < 0.15:
            n = rng.randint(1, m.n_accepted)
            for x in (m, a, b):
                x.rollback(n)
        if m.stopped:
            _same(m, a, b)
            assert not m.accept_token(tid) and not m.accept_bytes(b"{")
            for x in (m, a, b):
                x.rollback(1)
    with pytest.raises(ValueError, match="cannot roll back"):
        m.rollback(m.n_accepted + 1)
    m.reset()
    assert m.n_accepted == 0 and m.state == main.automaton.initial
