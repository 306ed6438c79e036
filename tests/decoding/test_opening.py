"""Call or prose first, the exact mode's choice at the start of an ``auto`` turn: the decoder
draws it by the model's probability of opening a call (:func:`opening_odds` at the request's
temperature, :func:`choose_opening` with its seed), decodes a call first under the opening's
call grammar and prose first with the opener's tokens excluded at the first token; greedy, and
in the other modes, the turn is decoded as it is.

The model is the toy of :mod:`tests.decoding.toy`, leaning towards the opener ``<c>`` so that
both choices occur; the grammars stand for a turn (prose, or a call block) and its ``required``
variant."""

from __future__ import annotations

import numpy as np

import toolmask as tm
from tests.decoding.toy import TOKENS, VOCAB, Toy
from toolmask.decoding import Opening, choose_opening, opener_tokens, opening_odds
from toolmask.sampling import SamplingParams

AUTO = tm.compile(tm.Grammar.from_gbnf('root ::= [a-z] [a-z] | "<c>" [0-9]'), VOCAB)
CALL = tm.compile(tm.Grammar.from_gbnf('root ::= "<c>" [0-9]'), VOCAB)
OPENER = "<c>"


class Keen(Toy):
    """The toy, leaning towards writing the opener at the start of its reply."""

    def __init__(self, prompt_len: int) -> None:
        super().__init__(seed=3)
        self.start = prompt_len

    def row(self, seq: tuple[int, ...]) -> np.ndarray:
        row = super().row(seq)
        done = b"".join(TOKENS[t] or b"" for t in seq[self.start :])
        if OPENER.encode().startswith(done) and len(done) < len(OPENER):
            row[TOKENS.index(OPENER.encode()[len(done) : len(done) + 1])] += 7.0
        return row


def _setup() -> tuple[Keen, list[int], list[int], list[int]]:
    prompt = Toy().tokenize("Q:")
    model = Keen(len(prompt))
    return model, prompt, model.tokenize(OPENER), []


def test_the_exact_mode_draws_call_or_prose_by_the_model() -> None:
    model, prompt, opener, asked = _setup()

    def call() -> tm.CompiledGrammar:
        asked.append(1)
        return CALL

    opening = Opening(OPENER, call)
    p, _ = opening_odds(model, prompt, opener, 1.0)
    assert 0.1 < p < 0.9
    excluded = opener_tokens(VOCAB, opener)
    firsts = []
    for seed in range(60):
        params = SamplingParams(seed=seed)
        gen = model.generate(prompt, AUTO, sampling=params, decoding="exact", opening=opening)
        want = choose_opening(p, params)
        assert gen.call_probability == p and gen.call_first is want
        if want:  # decoded under the call grammar
            assert CALL.matcher().accept_bytes(gen.text) and gen.text.startswith(b"<c>")
        else:  # the turn itself, the opener's tokens left out at the first token only
            assert AUTO.matcher().accept_bytes(gen.text) and not excluded[gen.tokens[0]]
        firsts.append(want)
    assert 0 < sum(firsts) < len(firsts)  # both choices occur
    assert len(asked) == sum(firsts)  # the call grammar is asked for only when chosen


def test_the_temperature_is_the_requests() -> None:
    model, prompt, opener, _ = _setup()
    opening = Opening(OPENER, lambda: CALL)
    params = SamplingParams(temperature=0.5, seed=1)
    gen = model.generate(prompt, AUTO, sampling=params, decoding="exact", opening=opening)
    cold, _ = opening_odds(model, prompt, opener, 0.5)
    assert gen.call_probability == cold != opening_odds(model, prompt, opener, 1.0)[0]


def test_greedy_and_the_other_modes_decode_the_turn_as_it_is() -> None:
    model, prompt, _, asked = _setup()
    opening = Opening(OPENER, lambda: asked.append(1) or CALL)  # type: ignore[func-returns-value]
    greedy = SamplingParams(temperature=0.0)
    hot = SamplingParams(seed=0)
    for sampling, mode in ((greedy, "exact"), (hot, "plain"), (hot, "aligned")):
        gen = model.generate(prompt, AUTO, sampling=sampling, decoding=mode, opening=opening)
        assert gen.call_probability is None and gen.call_first is None
        assert AUTO.matcher().accept_bytes(gen.text)
        fresh = _setup()[0]  # (a decoder's memo of scored branches would move the draws)
        bare = fresh.generate(prompt, AUTO, sampling=sampling, decoding=mode)
        assert bare.text == gen.text  # the opening changed nothing
    assert not asked
