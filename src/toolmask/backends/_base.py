"""What every backend shares: the :class:`Generation` result, the :class:`Backend` protocol and
the ``on_token`` streaming hook.

A backend turns prompt token ids into one completion under a compiled grammar::

    gen = backend.generate(prompt_ids, compiled, max_tokens=256, sampling=params,
                           on_token=callback)

``compiled`` must be compiled for ``backend.vocab`` (``None`` decodes unconstrained, for
baselines). ``on_token(ids, text)`` is called after every accepted chunk: one sampled token, or
a block of forced tokens appended without sampling (``text`` is the chunk's bytes). Returning
``True`` stops the generation there with ``finish_reason == "stop"``; this is how a server
honours stop strings and cancels a request whose client went away.

A :class:`ReasoningBudget` bounds the reasoning channel: after that many tokens of reasoning the
decoder writes the channel's close marker itself (through the grammar, which then applies
``tool_choice`` to what follows), so a thinking model cannot spend the whole ``max_tokens``
thinking.

With ``meter=True`` every masked sampling step also records a :class:`StepDistortion`: the
model's own top-1 token, whether the mask removed it and the probability mass it removed
(``Generation.distortion``). :func:`toolmask.tools.distortion_sites` then says where in the
turn each step was (prose, envelope, key, value, after a block, ...).
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from toolmask.backends._branch import branch_at
from toolmask.backends._result import Generation, OnToken, StepDistortion
from toolmask.backends._scoring import LazyBranch, prefix_index
from toolmask.errors import ContextOverflowError, ToolmaskError
from toolmask.sampling import (
    Sampler,
    SamplingParams,
    bitmask_from_ids,
    bitmask_to_bool,
    sampling_params,
)

if TYPE_CHECKING:
    from toolmask import CompiledGrammar, Matcher
    from toolmask.vocab import Vocabulary

__all__ = [
    "Backend",
    "ContextOverflowError",
    "DecodingBackend",
    "Generation",
    "OnToken",
    "ReasoningBudget",
    "StepDistortion",
    "check_compiled_for",
    "opener_tokens",
]


@dataclass(frozen=True, slots=True)
class ReasoningBudget:
    """At most ``tokens`` tokens inside the reasoning channel, then the decoder writes
    ``close`` (the channel's close marker) without sampling.

    ``opener``: the text that opens the channel at the start of a reply (after optional
    whitespace; ``""`` when only the prompt opens it); ``open``: the prompt already opened it,
    so the reply starts inside. Build one for a tool turn with :meth:`for_turn`.
    """

    tokens: int
    close: str
    opener: str = ""
    open: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or self.tokens < 0:
            raise ValueError(f"a reasoning budget is a number of tokens >= 0, not {self.tokens!r}")
        if not self.close:
            raise ValueError("a reasoning budget needs the channel's close marker")

    @classmethod
    def for_turn(cls, turn: Any, tokens: int | None) -> ReasoningBudget | None:
        """The budget for a :class:`~toolmask.tools.ToolTurn` (its format's channel, its
        ``reasoning`` / ``reasoning_open``); None when ``tokens`` is None or the turn cannot
        reason."""
        if tokens is None or turn is None:
            return None
        fmt = turn.format
        opener = fmt.reasoning_opener
        if not fmt.reasoning_end or not (turn.reasoning_open or (turn.reasoning and opener)):
            return None
        return cls(tokens, fmt.reasoning_end, opener, bool(turn.reasoning_open))


class _ReasoningTracker:
    """Follows the reply token by token: whether it is inside the reasoning channel and how
    many tokens it spent there. Special tokens count as their text."""

    def __init__(self, budget: ReasoningBudget, vocab: Vocabulary) -> None:
        self.budget = budget
        self.vocab = vocab
        self.buf = b""
        self.state = "inside" if budget.open else "before"
        self.start = 0  # where the reasoning text starts in ``buf``
        self.spent = 0
        self.opener = budget.opener.encode()
        self.close = budget.close.encode()

    def feed(self, ids: list[int]) -> None:
        special = self.vocab.special
        table = self.vocab.token_bytes
        for t in ids:
            self.buf += table[t] or special.get(t, "").encode()
            if self.state == "before":
                head = self.buf.lstrip(b" \t\r\n")
                if self.opener and head.startswith(self.opener):
                    self.state = "inside"
                    self.start = len(self.buf) - len(head) + len(self.opener)
                elif not self.opener or not self.opener.startswith(head):
                    self.state = "after"  # the reply does not reason
            elif self.state == "inside":
                if self.close in self.buf[self.start :]:
                    self.state = "after"
                else:
                    self.spent += 1

    def due(self) -> bool:
        return self.state == "inside" and self.spent >= self.budget.tokens

    def close_ids(self, encode: Callable[[str], list[int]]) -> list[int]:
        """The close marker as tokens: the vocabulary's special tokens it holds by id, the
        rest as the model's tokenisation of the text."""
        text = self.budget.close
        specials = {s: i for i, s in self.vocab.special.items() if s and s in text}
        out: list[int] = []
        i = j = 0
        while j < len(text):
            hit = max((s for s in specials if text.startswith(s, j)), key=len, default=None)
            if hit is None:
                j += 1
                continue
            out += encode(text[i:j]) if j > i else []
            out.append(specials[hit])
            i = j = j + len(hit)
        return out + (encode(text[i:]) if i < len(text) else [])


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


def _allowed(bitmask: Any, token: int) -> bool:
    """Whether ``token``'s bit is set in the int32 ``bitmask`` (False past its end)."""
    word = token >> 5
    return 0 <= word < len(bitmask) and bool(int(bitmask[word]) >> (token & 31) & 1)


def measure_distortion(
    logits: Any, bitmask: Any, vocab_size: int, eos: frozenset[int] | set[int]
) -> tuple[int, bool, float, bool]:
    """``(top1, removed, removed_mass, top1_is_end)`` for one logits row under ``bitmask``.
    Cost: one softmax over the vocabulary (about 0.3 ms at 49k ids)."""
    row = np.asarray(logits[:vocab_size], dtype=np.float64)
    top = int(row.argmax())
    allowed = bitmask_to_bool(bitmask, vocab_size)
    p = np.exp(row - row[top])
    total = float(p.sum())
    kept = float(p[allowed].sum())
    return top, not bool(allowed[top]), max(0.0, 1.0 - kept / total), top in eos


class Backend(Protocol):
    """What :class:`toolmask.agent.Agent` and the server need from a model."""

    vocab: Vocabulary

    def tokenize(self, text: str) -> list[int]: ...

    def generate(
        self,
        prompt: list[int],
        compiled: CompiledGrammar | None,
        *,
        max_tokens: int = 256,
        sampling: SamplingParams | str | None = None,
        on_token: OnToken | None = None,
        reasoning_budget: ReasoningBudget | None = None,
    ) -> Generation: ...


def check_compiled_for(compiled: CompiledGrammar | None, vocab: Vocabulary) -> None:
    """Raise unless ``compiled`` is ``None`` or was compiled for ``vocab``."""
    if compiled is None:
        return
    if compiled.vocab is None:
        raise ToolmaskError("compile the grammar with this backend's vocabulary")
    if compiled.vocab.fingerprint != vocab.fingerprint:
        raise ToolmaskError("the grammar was compiled for another vocabulary")


class DecodingBackend(ABC):
    """The masked decode loop, written once; a model engine supplies four primitives.

    Subclasses set ``vocab`` and ``n_ctx`` and implement :meth:`_sync_prompt` (evaluate a
    prompt, reusing what the context already holds), :meth:`_feed` (evaluate tokens after the
    context, one batch), :meth:`_logits` (the last position's logits row, numpy) and
    :meth:`_encode` (the model's own tokenisation of text, no BOS, special texts as text).
    A backend whose logits live on an accelerator overrides :meth:`_sampler` and
    :meth:`_host_logits`: its ``_logits`` row may then be a device tensor, which the loop only
    hands to the sampler, so the mask is filled while the forward pass runs.
    """

    vocab: Vocabulary
    n_ctx: int

    @abstractmethod
    def _sync_prompt(self, prompt: list[int]) -> int:
        """Evaluate ``prompt``; return how many leading tokens were reused from the cache."""

    @abstractmethod
    def _feed(self, tokens: list[int]) -> None:
        """Evaluate ``tokens`` after what the context holds (one batch)."""

    @abstractmethod
    def _logits(self) -> Any:
        """The logits row after the last evaluated token (1-D, width >= vocabulary): numpy,
        or whatever :meth:`_sampler`'s sampler takes."""

    @abstractmethod
    def _encode(self, text: str) -> list[int]:
        """The model's tokenisation of ``text`` as plain text (no BOS, no special ids)."""

    def _sampler(self, params: SamplingParams) -> Any:
        """What draws tokens from :meth:`_logits` rows (``sample(logits, bitmask=None) ->
        int``): the numpy :class:`~toolmask.sampling.Sampler`. A backend whose logits stay on
        a device returns one that samples there (:class:`~toolmask.sampling.TorchSampler`)."""
        return Sampler(params)

    def _host_logits(self) -> Any:
        """The last logits row as a numpy array (the meter and :meth:`score` read it)."""
        return np.asarray(self._logits())

    def detokenize(self, tokens: list[int]) -> bytes:
        table = self.vocab.token_bytes
        return b"".join(table[t] or b"" for t in tokens)

    def forced_tokens(self, m: Matcher) -> list[int]:
        """Tokens to append without sampling: the model's own tokenisation of the matcher's
        forced bytes (cut before a partial UTF-8 character), less its last token (which could
        merge with what follows), kept while each token's bytes are inside the forced text."""
        forced = m.forced_bytes()
        if len(forced) < 2:
            return []
        for cut in range(len(forced), max(len(forced) - 4, 0), -1):
            try:
                text = forced[:cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            forced = forced[:cut]
            break
        else:
            return []
        out: list[int] = []
        pos = 0
        table = self.vocab.token_bytes
        for t in self._encode(text)[:-1]:
            piece = table[t]
            if not piece or forced[pos : pos + len(piece)] != piece:
                break
            out.append(t)
            pos += len(piece)
        return out

    def _logits_many(
        self, context: list[int], continuations: list[list[int]], every: bool = False
    ) -> tuple[list[Any], int, int]:
        """The logits after ``context`` and each (non-empty) continuation, with the cost:
        ``(rows, model calls, token positions evaluated)``. ``rows[i]`` is the float32 row
        after all of ``continuations[i]``, or with ``every`` a ``[len(c), V]`` array of the
        rows after each of its prefixes. The arrays are owned by the caller. Afterwards the
        model's context is ``context`` again (the next :meth:`_logits` is the row after it).

        This default walks the continuations' token trie in sorted order, each node reusing
        its predecessor's prefix: about one call per trie node, plus one to come back. An
        engine that evaluates many sequences in one batch overrides it."""
        V = self.vocab.vocab_size
        nodes: dict[tuple[int, ...], Any] = {}
        for c in continuations:
            for k in range(1 if every else len(c), len(c) + 1):
                nodes.setdefault(tuple(c[:k]), None)
        passes = evaluated = 0
        for key in sorted(nodes):
            seq = context + list(key)
            evaluated += len(seq) - self._sync_prompt(seq)
            passes += 1
            nodes[key] = np.array(self._logits()[:V], dtype=np.float32)
        if nodes:
            evaluated += len(context) - self._sync_prompt(context)
            passes += 1
        out: list[Any] = []
        for c in continuations:
            if every:
                out.append(np.stack([nodes[tuple(c[:k])] for k in range(1, len(c) + 1)]))
            else:
                out.append(nodes[tuple(c)])
        return out, passes, evaluated

    def opening_odds(
        self, prompt: list[int], opener: list[int], temperature: float = 1.0
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
        self._sync_prompt(prompt)
        vocab = self.vocab
        V = vocab.vocab_size
        rows = [np.asarray(self._logits()[:V], dtype=np.float64)]
        if len(opener) > 1:
            got, _, _ = self._logits_many(prompt, [opener[:-1]], True)
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
                self._sync_prompt(context)
            for i, token in enumerate(cont):
                if i:
                    self._feed([cont[i - 1]])
                row = np.asarray(self._host_logits(), dtype=np.float64)
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
        on_token: OnToken | None = None,
        jump_forward: bool = True,
        meter: bool = False,
        end_on_exit: bool = True,
        reasoning_budget: ReasoningBudget | None = None,
        exclude_first: np.ndarray | None = None,
    ) -> Generation:
        """Decode after ``prompt`` under ``compiled`` (``None``: unconstrained, for baselines).

        ``sampling``: :class:`SamplingParams`, a mode name (``"plain"``, ``"exact"``,
        ``"aligned"``: that mode, greedy) or None (greedy plain masking). ``exact`` chooses
        finite branches by their whole sequence's probability
        (:mod:`toolmask.backends._branch`); ``aligned`` draws the reply by sequential Monte
        Carlo over ``particles`` sequences, or searches by beam at temperature 0
        (:mod:`toolmask.backends._aligned`). See ``docs/sampling.md``.

        Each step fills the matcher's bitmask (cached per automaton state), samples from the
        masked logits (greedy unless ``sampling`` says otherwise) and feeds the token to the
        matcher and the model. With ``jump_forward``, text the grammar forces is appended as
        the model's own tokens in one batch, without sampling (:meth:`forced_tokens`). Stops at
        EOS, when the grammar is finished, when ``on_token`` returns true (``"stop"``), or at
        ``max_tokens`` / a full context (``"length"``). Raises :class:`ContextOverflowError`
        when the prompt does not fit. ``meter=True`` records the distortion meter
        (:class:`StepDistortion`) at every masked sampling step; forced text is then fed token
        by token through the sampler instead of jumped over, so every step is measured.

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
        model's probability (renormalised). The exact mode's "prose first" under ``auto``
        excludes the call opener's tokens (:func:`opener_tokens`): the reply opens with prose,
        and a call may still follow it where the turn allows one.
        """
        check_compiled_for(compiled, self.vocab)
        if len(prompt) >= self.n_ctx:
            raise ContextOverflowError(len(prompt), self.n_ctx)
        if not prompt:
            raise ToolmaskError("the prompt is empty")
        params = sampling_params(sampling)
        if params.mode == "aligned" and compiled is not None:
            if reasoning_budget is not None:
                raise ToolmaskError("a reasoning budget is not supported with sampling='aligned'")
            if exclude_first is not None:
                raise ToolmaskError("exclude_first is not supported with sampling='aligned'")
            from toolmask.backends._aligned import decode_aligned

            return decode_aligned(
                self,
                prompt,
                compiled,
                params,
                max_tokens=max_tokens,
                on_token=on_token,
                end_on_exit=end_on_exit,
            )
        run = _Run(
            self,
            prompt,
            compiled,
            max_tokens=max_tokens,
            sampling=params,
            on_token=on_token,
            meter=meter,
            end_on_exit=end_on_exit,
            reasoning_budget=reasoning_budget,
            exclude_first=exclude_first,
        )
        m = run.m
        while len(run.out) < max_tokens:
            if m is not None and m.is_finished():
                run.gen.finish_reason = "stop"
                break
            step = run.close_reasoning() if run.budget is not None and run.budget.due() else None
            if step is None and m is not None and jump_forward and not meter:
                step = run.jump_forward(m)
            if step is None:
                step = run.sample()
            if step == "stop":
                break
        return run.result()


#: what one step of :class:`_Run` did: ``"stop"`` (decoding ends), ``"next"`` (a chunk was
#: appended, decoding goes on); ``None`` from a step that did nothing (the next one runs)
_Step = Literal["stop", "next"] | None


class _Run:
    """One call of :meth:`DecodingBackend.generate`: its state and its three kinds of step (the
    reasoning budget's forced close, jump-forward over forced text, one sampling step). The
    contract is :meth:`DecodingBackend.generate`'s."""

    def __init__(
        self,
        backend: DecodingBackend,
        prompt: list[int],
        compiled: CompiledGrammar | None,
        *,
        max_tokens: int,
        sampling: SamplingParams | None,
        on_token: OnToken | None,
        meter: bool,
        end_on_exit: bool,
        reasoning_budget: ReasoningBudget | None,
        exclude_first: np.ndarray | None = None,
    ) -> None:
        self.backend = backend
        self.vocab = vocab = backend.vocab
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.on_token = on_token
        self.meter = meter
        self.params = params = sampling or SamplingParams(temperature=0.0)
        self.sampler = backend._sampler(params)
        self.exact = params.mode == "exact" and params.branch_alternatives >= 2
        self.t0 = time.perf_counter()
        reused = backend._sync_prompt(prompt)
        self.m = m = compiled.matcher() if compiled is not None else None
        self.bitmask = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
        self.eos = eos = vocab.eos_ids
        self.end_id = min(eos) if eos else -1
        self.end_on_exit = end_on_exit and self.end_id >= 0
        self.table = vocab.token_bytes
        #: a special token the grammar admits is a marker: its text is text
        self.marks: dict[int, bytes] = {}
        if m is not None:
            self.marks = {t: s.encode() for t, s in vocab.special.items() if t not in eos}
        self.out: list[int] = []
        self.out_bytes = 0  # bytes of text in ``out`` (for the meter's offsets)
        self.gen = Generation([], b"", "length", len(prompt), reused, mode=params.mode)
        self.gen.forward_passes = 1
        self.gen.evaluated_tokens = len(prompt) - reused
        self.budget = (
            _ReasoningTracker(reasoning_budget, vocab) if reasoning_budget is not None else None
        )
        #: exclude_first as bitmask words of the tokens the first step may draw (None: no rule)
        self.first_keep: np.ndarray | None = None
        if exclude_first is not None:
            if m is None:
                raise ToolmaskError("exclude_first needs a grammar")
            keep = np.flatnonzero(~np.asarray(exclude_first, dtype=bool)[: vocab.vocab_size])
            self.first_keep = bitmask_from_ids(keep, vocab.vocab_size)

    def emit(self, chunk: list[int]) -> bool:
        """Append ``chunk`` and feed it to the model; True when decoding must stop."""
        out, gen = self.out, self.gen
        if not out:
            gen.first_token_s = time.perf_counter() - self.t0
        out.extend(chunk)
        if self.budget is not None:
            self.budget.feed(chunk)
        text = b"".join(self.table[t] or self.marks.get(t, b"") for t in chunk)
        self.out_bytes += len(text)
        stop = False
        if self.on_token is not None:
            stop = bool(self.on_token(chunk, text))
        if stop or (self.m is not None and self.m.is_finished()):
            gen.finish_reason = "stop"
            return True
        if len(out) >= self.max_tokens or len(self.prompt) + len(out) >= self.backend.n_ctx:
            gen.finish_reason = "length"
            return True
        s1 = time.perf_counter()
        self.backend._feed(chunk)
        gen.step_s.append(time.perf_counter() - s1)
        gen.forward_passes += 1
        gen.evaluated_tokens += len(chunk)
        return False

    def _appended(self, chunk: list[int]) -> _Step:
        return "stop" if self.emit(chunk) else "next"

    def close_reasoning(self) -> _Step:
        """The budget is spent: append the channel's close marker without sampling, when the
        grammar accepts it here (else None: sample, try again next step)."""
        assert self.budget is not None
        m = self.m
        chunk = self.budget.close_ids(self.backend._encode)[: self.max_tokens - len(self.out)]
        taken = 0
        while m is not None and taken < len(chunk) and m.accept_token(chunk[taken]):
            taken += 1
        if m is None or taken == len(chunk):
            self.gen.forced_tokens += len(chunk)
            self.gen.reasoning_cut = True
            self.budget.state = "after"
            return self._appended(chunk)
        m.rollback(taken)  # not here (inside a character)
        return None

    def jump_forward(self, m: Matcher) -> _Step:
        """Append the text the grammar forces as the model's own tokens (None when none)."""
        chunk = self.backend.forced_tokens(m)[: self.max_tokens - len(self.out)]
        accepted = 0
        for t in chunk:
            if not m.accept_token(t):
                break
            accepted += 1
        if not accepted:
            return None
        self.gen.forced_tokens += accepted
        return self._appended(chunk[:accepted])

    def sample(self) -> _Step:
        """One sampling step under the mask (see ``end_on_exit`` in ``generate``)."""
        gen, m = self.gen, self.m
        logits = self.backend._logits()
        if self.exact and m is not None and (self.first_keep is None or self.out):
            # a host copy: scoring the branch reuses the backend's buffer
            host = np.array(self.backend._host_logits()[: self.vocab.vocab_size])
            step = self.branch(m, host)
            if step is not None:
                return step
        token = self._masked(m, logits) if m is not None else int(self.sampler.sample(logits))
        gen.sampled_tokens += 1
        if token in self.eos:
            if not self.out:
                gen.first_token_s = time.perf_counter() - self.t0
            gen.finish_reason = "stop"
            return "stop"
        return self._appended([token])

    def branch(self, m: Matcher, row: Any) -> _Step:
        """``exact``: where the state opens a finite branch, choose it by whole-sequence
        probability and append it (None: no branch here, or one over the budget, counted)."""
        prm, gen, a = self.params, self.gen, m.automaton
        cache: dict[Any, Any] = self.backend.__dict__.setdefault("_branch_cache", {})
        br = branch_at(cache, a, m.state, prm.branch_alternatives)
        if br.alternatives is None:
            gen.branch_fallbacks += br.over_budget
            return None
        backend = self.backend
        context = self.prompt + self.out
        # a branch scored for this very context and state before (the same prompt asked
        # again) is reused: the model's scores are a function of the tokens
        memo: dict[Any, Any] = backend.__dict__.setdefault("_scored_cache", {})
        mkey = (id(a), m.state, prm.branch_alternatives, prm.branch_tokens, tuple(context))
        hit = memo.get(mkey)
        if hit is not None and hit[0] is a:
            lazy = hit[1]
        else:
            lazy = LazyBranch.build(
                br.alternatives,
                m=m,
                vocab=self.vocab,
                encode=backend._encode,
                logits_many=backend._logits_many,
                context=context,
                row=row,
                max_tokens=prm.branch_tokens,
            )
            if len(memo) >= 32:
                memo.pop(next(iter(memo)))
            memo[mkey] = (a, lazy)
        if lazy is None:
            gen.branch_fallbacks += 1
            return None
        passes, evaluated = lazy.passes, lazy.evaluated
        dec = lazy.draw(prm.temperature, self.sampler.uniform)
        gen.forward_passes += lazy.passes - passes
        gen.evaluated_tokens += lazy.evaluated - evaluated
        if dec is None:
            gen.branch_fallbacks += 1
            return None
        gen.exact_branches += 1
        chunk = dec.tokens[: self.max_tokens - len(self.out)]
        for t in chunk:
            if not m.accept_token(t):  # cannot happen: the alternatives are the grammar's
                raise ToolmaskError(f"matcher refused branch token {t}")
        gen.sampled_tokens += 1
        if not dec.end or len(chunk) < len(dec.tokens):
            return self._appended(chunk) if chunk else None
        if chunk and self.emit(chunk):
            return "stop"
        gen.exit_end = True
        gen.finish_reason = "stop"
        return "stop"

    def _masked(self, m: Matcher, logits: Any) -> int:
        """The token of a masked sampling step, fed to the matcher (the end id when the model
        left a turn that could end there); records the meter's step."""
        gen, bitmask = self.gen, self.bitmask
        s0 = time.perf_counter()
        m.fill_bitmask(bitmask)
        keep = self.first_keep if not self.out else None
        if keep is not None:
            bitmask &= keep
        gen.mask_s.append(time.perf_counter() - s0)
        accepting = m.is_accepting()
        exited = False
        if self.end_on_exit and accepting:
            # the turn may end here: the model's own draw decides; a draw the grammar
            # forbids means the model is done with what the grammar describes
            token = int(self.sampler.sample(logits, keep))  # keep: None past the first token
            if not _allowed(bitmask, token):
                token, exited = self.end_id, True
        else:
            token = int(self.sampler.sample(logits, bitmask))
        if self.meter:
            eos = self.eos
            top, removed, mass, is_end = measure_distortion(
                self.backend._host_logits(), bitmask, self.vocab.vocab_size, eos
            )
            gen.distortion.append(
                StepDistortion(
                    len(self.out),
                    self.out_bytes,
                    top,
                    token,
                    removed,
                    mass,
                    is_end,
                    accepting,
                    token in eos,
                )
            )
        if exited:
            gen.exit_end = True
        elif not m.accept_token(token):  # cannot happen for a token the mask allowed
            raise ToolmaskError(f"matcher refused sampled token {token}")
        return token

    def result(self) -> Generation:
        gen = self.gen
        gen.tokens = self.out
        gen.text = b"".join(self.table[t] or self.marks.get(t, b"") for t in self.out)
        if self.budget is not None:
            gen.reasoning_tokens = self.budget.spent
        return gen
