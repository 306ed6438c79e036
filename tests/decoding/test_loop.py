"""The masked token loop (``toolmask.decoding._loop``, through
:meth:`DecodingBackend.generate`) on a scripted model.

The model is a table from the tokens decoded so far to a logits row, over a six-token
vocabulary, so each rule of the loop is pinned exactly: masked sampling where the turn cannot
end, the model's own draw where it can (``end_on_exit``), and the distortion meter's records.
The same loop runs on the real GGUF in ``test_meter.py`` and the agent/server model tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import toolmask as tm
from toolmask.backends import DecodingBackend, StepDistortion

TOKENS: list[bytes | None] = [None, b"a", b"b", b"\n", b" more", b"c"]
EOS = 0
VOCAB = tm.Vocabulary.from_token_bytes(TOKENS, eos_ids=[EOS], special_texts={EOS: "<eos>"})


class Table(DecodingBackend):
    """Logits from a table keyed by the tokens decoded so far (default: ``default``)."""

    def __init__(self, table: dict[tuple[int, ...], list[float]], default: list[float]) -> None:
        self.vocab = VOCAB
        self.n_ctx = 64
        self.table = table
        self.default = default
        self.context: list[int] = []
        self.prompt_len = 0

    def sync_prompt(self, prompt: list[int]) -> int:
        self.context = list(prompt)
        self.prompt_len = len(prompt)
        return 0

    def feed(self, tokens: list[int]) -> None:
        self.context.extend(tokens)

    def logits(self) -> Any:
        key = tuple(self.context[self.prompt_len :])
        return np.array(self.table.get(key, self.default), dtype=np.float32)

    def encode(self, text: str) -> list[int]:
        ids = {b: i for i, b in enumerate(TOKENS) if b}
        return [ids[ch.encode()] for ch in text]

    def tokenize(self, text: str) -> list[int]:
        return self.encode(text)


def logits(prefer: list[int]) -> list[float]:
    """A row where ``prefer[0]`` is the top-1, ``prefer[1]`` the next, ...; others far below."""
    row = [-10.0] * len(TOKENS)
    for rank, t in enumerate(prefer):
        row[t] = 5.0 - rank
    return row


# root ::= "a" ("\n" "c")?   -- after "a" the turn may end; "b" and " more" are never allowed
GRAMMAR = tm.Grammar.from_gbnf('root ::= "a" ("\\n" "c")?')


def test_a_forbidden_draw_where_the_turn_can_end_ends_it() -> None:
    model = Table({(): logits([1]), (1,): logits([4, 3, EOS])}, logits([EOS]))
    compiled = tm.compile(GRAMMAR, VOCAB)
    gen = model.generate([1], compiled, max_tokens=8, meter=True)
    assert gen.text == b"a" and gen.finish_reason == "stop" and gen.exit_end
    last = gen.distortion[-1]
    assert last.accepting and last.removed and last.ended and not last.forced_continuation
    assert last.top1 == 4 and last.chosen == EOS


def test_without_end_on_exit_the_mask_forces_a_continuation() -> None:
    model = Table({(): logits([1]), (1,): logits([4, 3, EOS])}, logits([EOS]))
    compiled = tm.compile(GRAMMAR, VOCAB)
    gen = model.generate([1], compiled, max_tokens=8, meter=True, end_on_exit=False)
    assert gen.text == b"a\nc" and not gen.exit_end
    forced = [d for d in gen.distortion if d.forced_continuation]
    assert [d.step for d in forced] == [1]  # the meter names the step it happened at


def test_where_the_turn_cannot_end_the_mask_renormalises() -> None:
    # after "a\n" only "c" may follow: the model's top-1 " more" is removed, "c" is taken
    model = Table({(): logits([1]), (1,): logits([3]), (1, 3): logits([4, 5])}, logits([EOS]))
    compiled = tm.compile(GRAMMAR, VOCAB)
    gen = model.generate([1], compiled, max_tokens=8, meter=True)
    assert gen.text == b"a\nc"
    step = gen.distortion[2]
    assert isinstance(step, StepDistortion)
    assert step.removed and not step.accepting and step.chosen == 5 and step.top1 == 4
    assert 0.0 < step.removed_mass < 1.0
    # the mass removed is the softmax mass of every disallowed id (EOS included here)
    row = np.array(logits([4, 5]), dtype=np.float64)
    p = np.exp(row - row.max())
    p /= p.sum()
    assert step.removed_mass == pytest.approx(1.0 - p[5], rel=1e-9)


def test_sampling_at_an_accepting_state_keeps_allowed_draws() -> None:
    # the model's own draw is allowed ("\n"): the turn goes on exactly as it drew
    model = Table({(): logits([1]), (1,): logits([3, EOS]), (1, 3): logits([5])}, logits([EOS]))
    compiled = tm.compile(GRAMMAR, VOCAB)
    for seed in range(5):
        params = tm.SamplingParams(temperature=0.7, seed=seed)
        gen = model.generate([1], compiled, max_tokens=8, sampling=params)
        assert gen.text in (b"a", b"a\nc")
        assert not gen.exit_end or gen.text == b"a"
