"""What every backend shares: the :class:`Backend` protocol (what the agent and the server call)
and :class:`DecodingBackend`, the base of an in-process engine.

A backend turns prompt token ids into one completion under a compiled grammar::

    gen = backend.generate(prompt_ids, compiled, max_tokens=256, sampling=params,
                           decoding="exact", on_token=callback)

``compiled`` must be compiled for ``backend.vocab`` (``None`` decodes unconstrained, for
baselines). ``on_token(ids, text)`` is called after every accepted chunk: one sampled token, or
a block of forced tokens appended without sampling (``text`` is the chunk's bytes). Returning
``True`` stops the generation there with ``finish_reason == "stop"``; this is how a server
honours stop strings and cancels a request whose client went away.

How the reply is drawn is the decoding mode's (:mod:`toolmask.decoding`): a
:class:`DecodingBackend` is a :class:`~toolmask.decoding.ModelEngine` (four primitives to
implement, defaults for the rest) and hands each request to the decoder its mode names. The
result (:class:`~toolmask.decoding.Generation`), the distortion meter's
:class:`~toolmask.decoding.StepDistortion` and the :class:`~toolmask.decoding.ReasoningBudget`
are the decoding layer's; this package re-exports them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from toolmask.decoding import (
    DecodeRequest,
    Decoders,
    DecodingParams,
    Generation,
    OnToken,
    Opening,
    ReasoningBudget,
    logits_by_trie,
    resolve_params,
)
from toolmask.errors import ToolmaskError
from toolmask.sampling import Sampler, SamplingParams

if TYPE_CHECKING:
    from toolmask import CompiledGrammar
    from toolmask.vocab import Vocabulary

__all__ = ["Backend", "DecodingBackend"]


class Backend(Protocol):
    """What :class:`toolmask.agent.Agent` and the server need from a model
    (:meth:`DecodingBackend.generate` documents the arguments). They pass ``decoding``
    always, ``reasoning_budget`` and ``opening`` only where set."""

    vocab: Vocabulary

    def tokenize(self, text: str) -> list[int]: ...

    def generate(
        self,
        prompt: list[int],
        compiled: CompiledGrammar | None,
        *,
        max_tokens: int = 256,
        sampling: SamplingParams | str | None = None,
        decoding: DecodingParams | str | None = None,
        on_token: OnToken | None = None,
        reasoning_budget: ReasoningBudget | None = None,
        opening: Opening | None = None,
    ) -> Generation: ...


class DecodingBackend(ABC):
    """An in-process engine: a :class:`~toolmask.decoding.ModelEngine` whose
    :meth:`generate` runs the decoder of the requested mode.

    Subclasses set ``vocab`` and ``n_ctx`` and implement :meth:`tokenize`,
    :meth:`sync_prompt` (evaluate a prompt, reusing what the context already holds),
    :meth:`feed` (evaluate tokens after the context, one batch), :meth:`logits` (the last
    position's logits row, numpy) and :meth:`encode` (the model's own tokenisation of text,
    no BOS, special texts as text). A backend whose logits live on an accelerator overrides
    :meth:`sampler` and :meth:`host_logits`: its ``logits`` row may then be a device tensor,
    which the decoders only hand to the sampler, so the mask is filled while the forward pass
    runs. One that evaluates many sequences in one batch overrides :meth:`logits_many`.
    """

    vocab: Vocabulary
    n_ctx: int
    #: this engine's decoders, one per mode (made on first use: see :attr:`decoders`)
    _decoders: Decoders

    @abstractmethod
    def tokenize(self, text: str) -> list[int]:
        """The model's own tokenisation; special-token texts become their ids."""

    @abstractmethod
    def sync_prompt(self, prompt: list[int]) -> int:
        """Evaluate ``prompt``; return how many leading tokens were reused from the cache."""

    @abstractmethod
    def feed(self, tokens: list[int]) -> None:
        """Evaluate ``tokens`` after what the context holds (one batch)."""

    @abstractmethod
    def logits(self) -> Any:
        """The logits row after the last evaluated token (1-D, width >= vocabulary): numpy,
        or whatever :meth:`sampler`'s sampler takes."""

    @abstractmethod
    def encode(self, text: str) -> list[int]:
        """The model's tokenisation of ``text`` as plain text (no BOS, no special ids)."""

    def sampler(self, params: SamplingParams) -> Any:
        """What draws tokens from :meth:`logits` rows (``sample(logits, bitmask=None) ->
        int``): the numpy :class:`~toolmask.sampling.Sampler`. A backend whose logits stay on
        a device returns one that samples there (:class:`~toolmask.sampling.TorchSampler`)."""
        return Sampler(params)

    def host_logits(self) -> Any:
        """The last logits row as a numpy array (the meter and :meth:`score` read it)."""
        return np.asarray(self.logits())

    def logits_many(
        self, context: list[int], continuations: list[list[int]], every: bool = False
    ) -> tuple[list[Any], int, int]:
        """:meth:`toolmask.decoding.ModelEngine.logits_many`; this default is
        :func:`~toolmask.decoding.logits_by_trie` (one sequence, about one call per node of
        the continuations' token trie)."""
        return logits_by_trie(self, context, continuations, every)

    def detokenize(self, tokens: list[int]) -> bytes:
        table = self.vocab.token_bytes
        return b"".join(table[t] or b"" for t in tokens)

    @property
    def decoders(self) -> Decoders:
        """This engine's decoders, one per mode; each keeps its bounded caches (scored
        branches are a function of this model's rows) across requests."""
        try:
            return self._decoders
        except AttributeError:
            self._decoders = Decoders()
            return self._decoders

    def score(self, context: list[int], continuations: Sequence[list[int]]) -> list[float]:
        """The model's own log-probability of each continuation after ``context``: the sum over
        its tokens of the unmasked log-softmax. The context's KV prefix is reused; each
        continuation costs one forward pass per token (plus the context's last token)."""
        if not context:
            raise ToolmaskError("the context is empty")
        out: list[float] = []
        for cont in continuations:
            total = 0.0
            if cont:
                self.sync_prompt(context)
            for i, token in enumerate(cont):
                if i:
                    self.feed([cont[i - 1]])
                row = np.asarray(self.host_logits(), dtype=np.float64)
                top = float(row.max())
                total += float(row[token]) - top - float(np.log(np.exp(row - top).sum()))
            out.append(total)
        return out

    def generate(
        self,
        prompt: list[int],
        compiled: CompiledGrammar | None,
        *,
        max_tokens: int = 256,
        sampling: SamplingParams | str | None = None,
        decoding: DecodingParams | str | None = None,
        on_token: OnToken | None = None,
        jump_forward: bool = True,
        meter: bool = False,
        end_on_exit: bool = True,
        reasoning_budget: ReasoningBudget | None = None,
        exclude_first: np.ndarray | None = None,
        opening: Opening | None = None,
    ) -> Generation:
        """Decode after ``prompt`` under ``compiled`` (``None``: unconstrained, for baselines).

        ``sampling``: the token sampler's :class:`SamplingParams`, or None (greedy), or a mode
        name (the shorthand ``sampling="exact"``: that mode, greedy). ``decoding``: the mode
        and its budgets, :class:`~toolmask.decoding.DecodingParams` or a mode name (default
        ``plain``). ``plain`` masks each token; ``exact`` chooses finite branches by their
        whole sequence's probability (:mod:`toolmask.decoding.exact`); ``aligned`` draws the
        reply by sequential Monte Carlo over ``particles`` sequences, or searches by beam at
        temperature 0 (:mod:`toolmask.decoding.aligned`); a registered mode of your own
        (:func:`toolmask.decoding.register_mode`) likewise. See ``docs/sampling.md``.

        Each step fills the matcher's bitmask (cached per automaton state), samples from the
        masked logits (greedy unless ``sampling`` says otherwise) and feeds the token to the
        matcher and the model. With ``jump_forward``, text the grammar forces is appended as
        the model's own tokens in one batch, without sampling
        (:func:`~toolmask.decoding.forced_tokens`). Stops at EOS, when the grammar is
        finished, when ``on_token`` returns true (``"stop"``), or at ``max_tokens`` / a full
        context (``"length"``). Raises :class:`ContextOverflowError` when the prompt does not
        fit. ``meter=True`` records the distortion meter (:class:`StepDistortion`) at every
        masked sampling step; forced text is then fed token by token through the sampler
        instead of jumped over, so every step is measured.

        ``end_on_exit`` (default): where the grammar lets the turn end (the matcher accepts),
        the model draws from its own distribution, and a token the grammar forbids ends the
        turn instead of being redrawn from what the mask leaves. The model's mass on leaving a
        complete answer is mass on ending it, so prose after a finished call ends the turn
        rather than becoming a second call. Elsewhere this is the same distribution as masked
        sampling (a forbidden draw redrawn from the mask is the renormalised mask).

        Under a grammar, a special token it admits (a marker such as Harmony's ``<|channel|>``)
        is written as its text in ``Generation.text`` and ``on_token``, so the parser reads it.

        ``reasoning_budget``: after that many tokens inside the reasoning channel, the close
        marker is appended as the model's tokens without sampling, when the grammar accepts it
        there (else at the next step: a character cut in the middle); the grammar goes on
        from the closed channel (``Generation.reasoning_tokens``, ``reasoning_cut``).

        ``exclude_first`` (bool ``[V]``, under a grammar): tokens the reply must not start
        with, whatever the grammar allows there; the first token is drawn from the rest by the
        model's probability (renormalised).

        ``opening``: the turn may open with a call block or with prose
        (:class:`~toolmask.decoding.Opening`). The exact mode, sampled, chooses one by the
        model's probability of opening a call (``Generation.call_probability``,
        ``call_first``): a call first is decoded under the opening's call grammar, prose first
        with the opener's tokens excluded at the first token
        (:func:`~toolmask.decoding.opener_tokens`), so a call may still follow the prose. The
        other modes decode the turn as it is.
        """
        sp, dp = resolve_params(sampling, decoding)
        request = DecodeRequest(
            prompt,
            compiled,
            max_tokens=max_tokens,
            sampling=sp,
            decoding=dp,
            on_token=on_token,
            jump_forward=jump_forward,
            meter=meter,
            end_on_exit=end_on_exit,
            reasoning_budget=reasoning_budget,
            exclude_first=exclude_first,
            opening=opening,
        )
        return self.decoders.decode(self, request)  # checks the grammar's vocabulary, the prompt
