"""The ``exact`` mode: where the grammar offers a finite set of complete alternatives (an enum
value, a tool name, another call or the end), choose one by its whole token sequence's
probability; mask token by token elsewhere. Sampled, under an ``auto`` turn, it also chooses
call or prose first by the model's probability of opening a call
(:mod:`toolmask.decoding._opening`). See ``docs/sampling.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolmask.decoding._lookup import BranchLookup
from toolmask.decoding._loop import Step, TokenLoop
from toolmask.decoding._opening import choose_call_or_prose
from toolmask.errors import ToolmaskError

if TYPE_CHECKING:
    from toolmask._compile import Matcher
    from toolmask.decoding._engine import ModelEngine
    from toolmask.decoding._protocol import DecodeRequest
    from toolmask.decoding._result import Generation

__all__ = ["ExactDecoder"]


class ExactDecoder:
    """The masked token loop with a branch step before each sampling step (none when
    ``branch_alternatives < 2``). Owns a :class:`~toolmask.decoding._lookup.BranchLookup`:
    branches and their scored alternatives are reused across this engine's requests."""

    def __init__(self) -> None:
        self.branches = BranchLookup()

    def decode(self, engine: ModelEngine, request: DecodeRequest) -> Generation:
        p_call = call_first = None
        # greedy: the auto turn's argmax at its first token is already the exact one
        if request.opening and request.compiled is not None and not request.sampling.greedy:
            request, p_call, call_first = choose_call_or_prose(engine, request)
        branch = self.step if request.decoding.branch_alternatives >= 2 else None
        gen = TokenLoop(engine, request, branch).run()
        gen.call_probability, gen.call_first = p_call, call_first
        return gen

    def step(self, loop: TokenLoop, m: Matcher, row: Any) -> Step:
        """Where the state opens a finite branch, choose it by whole-sequence probability and
        append it (None: no branch here, or one over the budget, counted)."""
        gen = loop.gen
        context = loop.prompt + loop.out
        lazy, fallback = self.branches.lookup(loop.engine, m, context, row, loop.request.decoding)
        if lazy is None:
            gen.branch_fallbacks += fallback
            return None
        passes, evaluated = lazy.passes, lazy.evaluated
        dec = lazy.draw(loop.sampling.temperature, loop.sampler.uniform)
        gen.forward_passes += lazy.passes - passes
        gen.evaluated_tokens += lazy.evaluated - evaluated
        if dec is None:
            gen.branch_fallbacks += 1
            return None
        gen.exact_branches += 1
        chunk = dec.tokens[: loop.max_tokens - len(loop.out)]
        for t in chunk:
            if not m.accept_token(t):  # cannot happen: the alternatives are the grammar's
                raise ToolmaskError(f"matcher refused branch token {t}")
        gen.sampled_tokens += 1
        if not dec.end or len(chunk) < len(dec.tokens):
            return loop.appended(chunk) if chunk else None
        if chunk and loop.emit(chunk):
            return "stop"
        gen.exit_end = True
        gen.finish_reason = "stop"
        return "stop"
