"""What a decode returns: :class:`Generation`, the distortion meter's
:class:`StepDistortion`, and the ``on_token`` hook's type (``on_token(token_ids, text) ->
stop?``: called after every accepted chunk; returning True stops the decode with
``finish_reason == "stop"``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Generation", "OnToken", "StepDistortion"]

#: ``on_token(token_ids, text) -> stop?``: see the module docstring.
OnToken = Callable[[list[int], bytes], bool | None]


@dataclass(frozen=True, slots=True)
class StepDistortion:
    """What the mask did to the model at one sampling step (the distortion meter).

    ``step``: index of the token in ``Generation.tokens`` (the EOS that ended the reply has
    index ``len(tokens)``); ``offset``: byte offset of that token in ``Generation.text``;
    ``top1``: the model's most likely token before masking; ``chosen``: the token sampled;
    ``removed``: the mask removed ``top1``; ``removed_mass``: the probability mass (softmax of
    the raw logits, temperature 1) of every token the mask removed; ``top1_is_end``: ``top1``
    is an end-of-turn token; ``accepting``: the turn could end here (the end-of-turn token
    was allowed); ``ended``: this step ended the turn (``chosen`` is an end-of-turn token,
    drawn by the model or standing for a forbidden draw under ``end_on_exit``). A step with
    ``removed`` and ``accepting`` that did not end the turn is a *forced continuation*: the
    mask made the model write more where it could have stopped.
    """

    step: int
    offset: int
    top1: int
    chosen: int
    removed: bool
    removed_mass: float
    top1_is_end: bool
    accepting: bool = False
    ended: bool = False

    @property
    def forced_continuation(self) -> bool:
        """The mask removed the model's choice where the turn could end, and it went on."""
        return self.removed and self.accepting and not self.ended


@dataclass
class Generation:
    """One completion: its tokens and text, why it stopped, and timings.

    ``finish_reason`` is ``"stop"`` (EOS, grammar finished, or ``on_token`` asked to stop) or
    ``"length"`` (``max_tokens`` reached, or the context window is full).
    ``forced_tokens`` counts the tokens appended without a sampling step (jump-forward).
    ``distortion`` holds one :class:`StepDistortion` per masked sampling step when the
    generation ran with ``meter=True`` (else it is empty). ``exit_end``: the turn ended because
    the model drew a token the grammar forbids where the turn could end (``end_on_exit``).
    """

    tokens: list[int]
    text: bytes
    finish_reason: str
    prompt_tokens: int
    reused_prefix: int
    step_s: list[float] = field(default_factory=list)  # model forward passes, one per step
    mask_s: list[float] = field(default_factory=list)  # bitmask fill per sampled token
    first_token_s: float = 0.0
    forced_tokens: int = 0
    sampled_tokens: int = 0
    distortion: list[StepDistortion] = field(default_factory=list)
    exit_end: bool = False
    #: tokens spent inside the reasoning channel; whether the :class:`ReasoningBudget` closed it
    reasoning_tokens: int = 0
    reasoning_cut: bool = False
    #: the decoding mode (:func:`toolmask.decoding.mode_names`) and its cost: model calls
    #: (``forward_passes``; a batch counts once, the prompt's included) and the token positions
    #: they evaluated (``evaluated_tokens``; prompt tokens not reused included)
    mode: str = "plain"
    forward_passes: int = 0
    evaluated_tokens: int = 0
    #: ``exact`` / ``aligned``: branches chosen by whole-sequence probability, and finite
    #: branches over the budget that fell back to token-by-token
    exact_branches: int = 0
    branch_fallbacks: int = 0
    #: ``aligned``: the particles (beam width at temperature 0) and the resampling rounds
    particles: int = 1
    resamples: int = 0
    #: call or prose first, where the decoder chose it at the start of an ``auto`` turn (the
    #: request's :class:`~toolmask.decoding.Opening`; ``exact``, sampled): the model's
    #: probability of opening a call block, and whether the reply opened with one (None: no
    #: choice was made)
    call_probability: float | None = None
    call_first: bool | None = None

    @property
    def passes_per_token(self) -> float:
        """Model calls per generated token (the prompt's call included)."""
        return self.forward_passes / max(1, len(self.tokens))
