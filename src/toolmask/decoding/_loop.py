"""The masked token loop, written once: :class:`TokenLoop`, which the ``plain`` and ``exact``
modes run (``exact`` with a branch step, :data:`BranchStep`), and the distortion meter's
:func:`measure_distortion`. The contract is
:meth:`toolmask.backends.DecodingBackend.generate`'s."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from toolmask.decoding._engine import forced_tokens
from toolmask.decoding._reasoning import ReasoningTracker
from toolmask.decoding._result import Generation, StepDistortion
from toolmask.errors import ToolmaskError
from toolmask.sampling import bitmask_from_ids, bitmask_to_bool

if TYPE_CHECKING:
    from toolmask._compile import Matcher
    from toolmask.decoding._engine import ModelEngine
    from toolmask.decoding._protocol import DecodeRequest

__all__ = ["BranchStep", "Step", "TokenLoop", "measure_distortion"]

#: what one step of :class:`TokenLoop` did: ``"stop"`` (decoding ends), ``"next"`` (a chunk
#: was appended, decoding goes on); ``None`` from a step that did nothing (the next one runs)
Step = Literal["stop", "next"] | None

#: a mode's step before each sampling step under a grammar: ``(loop, matcher, the logits row
#: on the host) -> Step``; None lets the masked sampling step run
BranchStep = Callable[["TokenLoop", "Matcher", Any], Step]


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


class TokenLoop:
    """One decode, token by token: its state and its three kinds of step (the reasoning
    budget's forced close, jump-forward over forced text, one sampling step; ``branch`` runs
    before each sampling step under a grammar). :meth:`run` decodes."""

    def __init__(
        self, engine: ModelEngine, request: DecodeRequest, branch: BranchStep | None = None
    ) -> None:
        self.engine = engine
        self.request = request
        self.vocab = vocab = engine.vocab
        self.prompt = prompt = request.prompt
        self.max_tokens = request.max_tokens
        self.on_token = request.on_token
        self.meter = request.meter
        self.sampling = request.sampling
        self.branch = branch
        self.sampler = engine.sampler(request.sampling)
        self.t0 = time.perf_counter()
        reused = engine.sync_prompt(prompt)
        compiled = request.compiled
        self.m = m = compiled.matcher() if compiled is not None else None
        self.bitmask = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
        self.eos = eos = vocab.eos_ids
        self.end_id = min(eos) if eos else -1
        self.end_on_exit = request.end_on_exit and self.end_id >= 0
        self.table = vocab.token_bytes
        #: a special token the grammar admits is a marker: its text is text
        self.marks: dict[int, bytes] = {}
        if m is not None:
            self.marks = {t: s.encode() for t, s in vocab.special.items() if t not in eos}
        self.out: list[int] = []
        self.out_bytes = 0  # bytes of text in ``out`` (for the meter's offsets)
        mode = request.decoding.mode
        self.gen = Generation([], b"", "length", len(prompt), reused, mode=mode)
        self.gen.forward_passes = 1
        self.gen.evaluated_tokens = len(prompt) - reused
        budget = request.reasoning_budget
        self.budget = ReasoningTracker(budget, vocab) if budget is not None else None
        #: exclude_first as bitmask words of the tokens the first step may draw (None: no rule)
        self.first_keep: np.ndarray | None = None
        if request.exclude_first is not None:
            if m is None:
                raise ToolmaskError("exclude_first needs a grammar")
            keep = np.flatnonzero(
                ~np.asarray(request.exclude_first, dtype=bool)[: vocab.vocab_size]
            )
            self.first_keep = bitmask_from_ids(keep, vocab.vocab_size)

    def run(self) -> Generation:
        """Decode until the grammar is finished, the model ends the turn, ``on_token`` asks to
        stop, or the budget or the context is spent."""
        m = self.m
        jump = m is not None and self.request.jump_forward and not self.meter
        while len(self.out) < self.max_tokens:
            if m is not None and m.is_finished():
                self.gen.finish_reason = "stop"
                break
            step = self.close_reasoning() if self.budget is not None and self.budget.due() else None
            if step is None and jump:
                assert m is not None
                step = self.jump_forward(m)
            if step is None:
                step = self.sample()
            if step == "stop":
                break
        return self.result()

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
        if len(out) >= self.max_tokens or len(self.prompt) + len(out) >= self.engine.n_ctx:
            gen.finish_reason = "length"
            return True
        s1 = time.perf_counter()
        self.engine.feed(chunk)
        gen.step_s.append(time.perf_counter() - s1)
        gen.forward_passes += 1
        gen.evaluated_tokens += len(chunk)
        return False

    def appended(self, chunk: list[int]) -> Step:
        """Append ``chunk`` (:meth:`emit`) as a step."""
        return "stop" if self.emit(chunk) else "next"

    def close_reasoning(self) -> Step:
        """The budget is spent: append the channel's close marker without sampling, when the
        grammar accepts it here (else None: sample, try again next step)."""
        assert self.budget is not None
        m = self.m
        chunk = self.budget.close_ids(self.engine.encode)[: self.max_tokens - len(self.out)]
        taken = 0
        while m is not None and taken < len(chunk) and m.accept_token(chunk[taken]):
            taken += 1
        if m is None or taken == len(chunk):
            self.gen.forced_tokens += len(chunk)
            self.gen.reasoning_cut = True
            self.budget.state = "after"
            return self.appended(chunk)
        m.rollback(taken)  # not here (inside a character)
        return None

    def jump_forward(self, m: Matcher) -> Step:
        """Append the text the grammar forces as the model's own tokens (None when none)."""
        chunk = forced_tokens(self.engine, m)[: self.max_tokens - len(self.out)]
        accepted = 0
        for t in chunk:
            if not m.accept_token(t):
                break
            accepted += 1
        if not accepted:
            return None
        self.gen.forced_tokens += accepted
        return self.appended(chunk[:accepted])

    def sample(self) -> Step:
        """One sampling step under the mask (see ``end_on_exit`` in ``generate``), after the
        mode's branch step."""
        gen, m = self.gen, self.m
        logits = self.engine.logits()
        if self.branch is not None and m is not None and (self.first_keep is None or self.out):
            # a host copy: scoring the branch reuses the engine's buffer
            host = np.array(self.engine.host_logits()[: self.vocab.vocab_size])
            step = self.branch(self, m, host)
            if step is not None:
                return step
        token = self._masked(m, logits) if m is not None else int(self.sampler.sample(logits))
        gen.sampled_tokens += 1
        if token in self.eos:
            if not self.out:
                gen.first_token_s = time.perf_counter() - self.t0
            gen.finish_reason = "stop"
            return "stop"
        return self.appended([token])

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
                self.engine.host_logits(), bitmask, self.vocab.vocab_size, eos
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
