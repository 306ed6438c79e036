"""Call or prose first, at the start of an ``auto`` turn: written once, here.

Under ``tool_choice="auto"`` a reply may open with a call block or with prose. Nothing is
masked at its first token (prose may start with anything), so the model's own probability of
opening a call (:func:`opening_odds`) is already the exact conditional there. A caller that
decodes such a turn describes it with an :class:`~toolmask.decoding.Opening`
(:func:`call_opener` says whether a turn is one); a decoder that wants the choice
(``exact``, sampled) makes it with :func:`choose_call_or_prose`: a call first is decoded under
the turn's ``required`` grammar, prose first under the turn itself with the opener's tokens
excluded at the first token only (:func:`opener_tokens`), so a call may still follow the
prose. See ``docs/sampling.md``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from toolmask.decoding._scoring import prefix_index
from toolmask.errors import ToolmaskError

if TYPE_CHECKING:
    from toolmask.decoding._engine import ModelEngine
    from toolmask.decoding._protocol import DecodeRequest
    from toolmask.sampling import SamplingParams
    from toolmask.tools import ToolTurn
    from toolmask.vocab import Vocabulary

__all__ = [
    "call_opener",
    "choose_call_or_prose",
    "choose_opening",
    "opener_tokens",
    "opening_odds",
]


def call_opener(turn: ToolTurn) -> str | None:
    """The call block's opener text where ``turn`` may open with a call or with prose at its
    first token (``auto`` with callable tools, a format that opens calls with a trigger, no
    reasoning channel first); None elsewhere."""
    if turn.tool_choice.mode != "auto" or turn.reasoning_open:
        return None
    if turn.reasoning and turn.format.reasoning_opener:
        return None
    if not turn.callable_tools:
        return None
    return turn.format.trigger_text or None


#: opener_tokens' memo: (vocabulary fingerprint, opener ids) -> its mask
_OPENERS: dict[tuple[str, tuple[int, ...]], np.ndarray] = {}


def opener_tokens(vocab: Vocabulary, opener: Sequence[int]) -> np.ndarray:
    """bool ``[V]``: the first tokens of a reply that opens with the tokens ``opener`` (a call
    block's opener): its first token, and every token whose text is a prefix of the opener's
    text or starts with it (it may merge with what follows). Memoised per vocabulary and
    opener (the first call walks the vocabulary once)."""
    if not opener:
        raise ToolmaskError("the opener must not be empty")
    key = (vocab.fingerprint, tuple(opener))
    got = _OPENERS.get(key)
    if got is None:
        V = vocab.vocab_size
        text = b"".join(
            (vocab.token_bytes[t] if 0 <= t < V else None) or vocab.special.get(t, "").encode()
            for t in opener
        )
        got = np.zeros(V, dtype=bool)
        for i, piece in enumerate(vocab.token_bytes):
            if piece and (text.startswith(piece) or piece.startswith(text)):
                got[i] = True
        if 0 <= opener[0] < V:
            got[opener[0]] = True
        if len(_OPENERS) >= 8:
            _OPENERS.pop(next(iter(_OPENERS)))
        _OPENERS[key] = got
    return got


def opening_odds(
    engine: ModelEngine, prompt: list[int], opener: list[int], temperature: float = 1.0
) -> tuple[float, float]:
    """Call or prose at the start of a reply after ``prompt``: ``(p_call, p_prose_top)``.

    ``p_call`` is the probability that the reply starts with the tokens ``opener`` (a call
    block's opener) when each token is drawn from the model's row at ``temperature``
    (``softmax(logits / T)``, as plain decoding draws it, no top-k/top-p filter): the
    product of their probabilities, the last one counted with every token that starts with
    its text (it may merge with what follows; a special token by itself). At temperature 1
    that is the model's own probability of opening a call; towards 0 it tends to 1 where
    greedy decoding would open the call and to 0 where it would not. ``p_prose_top`` is
    the probability, at the same temperature, of the most likely first token that does not
    begin the opener (neither a prefix of its text nor starting with it; the end token
    included). Unmasked. Cost: two model calls at most (the prompt, reused when the context
    holds it, and one batch over the opener)."""
    if not prompt or not opener:
        raise ToolmaskError("the prompt and the opener must not be empty")
    if not temperature > 0 or not math.isfinite(temperature):
        raise ToolmaskError(f"opening_odds needs a temperature > 0, got {temperature}")
    engine.sync_prompt(prompt)
    vocab = engine.vocab
    V = vocab.vocab_size
    rows = [np.asarray(engine.logits()[:V], dtype=np.float64)]
    if len(opener) > 1:
        got, _, _ = engine.logits_many(prompt, [opener[:-1]], True)
        rows += [np.asarray(r, dtype=np.float64) for r in got[0]]
    logp = []
    for row in rows:
        row = row / temperature
        top = float(row.max())
        logp.append(row - (top + float(np.log(np.exp(row - top).sum()))))
    total = 0.0
    for k, (lp, t) in enumerate(zip(logp, opener, strict=True)):
        piece = vocab.token_bytes[t] if 0 <= t < V else b""
        if k == len(opener) - 1 and piece:
            sub = lp[prefix_index(vocab).starting_with(piece)]
            m = float(sub.max())
            total += m + float(np.log(np.exp(sub - m).sum()))
        else:
            total += float(lp[t])
    first = np.exp(logp[0])
    return float(np.exp(total)), float(first[~opener_tokens(vocab, opener)].max())


def choose_opening(p_call: float, params: SamplingParams) -> bool:
    """Call or prose first at the start of an ``auto`` turn, sampled: a call with probability
    ``p_call``, from a generator seeded by ``params.seed``. ``p_call`` is
    :func:`opening_odds` at ``params.temperature``: the opener's tokens each drawn at that
    temperature, as the model's own sampler would draw them.

    The temperature is applied per token, not to the two sides as wholes: "prose" is not one
    string but every reply that does not open a call, and ``(1 - p) ** (1 / T)`` would treat
    its mass as a single string's. On a small model that puts 8% on a call whose first token
    is still its most likely one, that whole-side tempering at T = 0.2 gives the call 1e-5 and
    the exact mode would never call, while greedy decoding (T -> 0) calls. Per token, T -> 0
    agrees with greedy decoding and T = 1 is the model's own probability.

    Not for temperature 0 (ValueError): there the mask removes nothing at the first token of
    an ``auto`` turn, so greedy decoding of the turn as it is already takes the argmax of the
    exact conditional (the tokens that begin the opener against the best prose token), and the
    exact mode decodes greedy ``auto`` turns that way."""
    if params.greedy:
        raise ValueError("choose_opening samples; at temperature 0 decode the auto turn as it is")
    p = min(1.0, max(0.0, p_call))
    rng = np.random.default_rng(params.seed)
    return bool(rng.random() < p)


def choose_call_or_prose(
    engine: ModelEngine, request: DecodeRequest
) -> tuple[DecodeRequest, float, bool]:
    """Choose call or prose first for ``request`` (which carries an ``opening``; sampled):
    ``(the request to decode, p_call, call first)``. A call first: the request under the
    opening's call grammar; prose first: the request with the opener's tokens excluded at its
    first token. Either way without the opening. Cost: :func:`opening_odds`."""
    opening = request.opening
    assert opening is not None
    opener = engine.tokenize(opening.opener)
    p, _ = opening_odds(engine, request.prompt, opener, temperature=request.sampling.temperature)
    if choose_opening(p, request.sampling):
        return dataclasses.replace(request, compiled=opening.call(), opening=None), p, True
    excluded = opener_tokens(engine.vocab, opener)
    return dataclasses.replace(request, exclude_first=excluded, opening=None), p, False
