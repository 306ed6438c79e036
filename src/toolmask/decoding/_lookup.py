"""The exact-branch lookup, written once: :class:`BranchLookup`, the bounded cache a decoder owns.

At a matcher's state it finds the finite branch (:func:`~toolmask.decoding._branch.find_branch`,
cached by automaton state) and builds the :class:`~toolmask.decoding._scoring.LazyBranch` that
scores its alternatives after the context. Scored branches are kept by (automaton, state,
budgets, context): the model's rows are a function of the tokens, so sequences with the same
tokens (aligned particles) share the rows one of them evaluated, and a prompt asked again
reuses them. One lookup object per decoder, and so per engine (a decoder is made per engine).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolmask.decoding._branch import Branch, find_branch
from toolmask.decoding._scoring import LazyBranch

if TYPE_CHECKING:
    from toolmask._compile import Matcher
    from toolmask.automaton import Automaton, AutomatonState
    from toolmask.decoding._engine import ModelEngine
    from toolmask.decoding._protocol import DecodingParams

__all__ = ["BranchLookup"]

#: the branches kept by automaton state (the table is cleared when it passes this)
MAX_STATES = 4096
#: the scored branches kept (the oldest goes first)
MAX_SCORED = 64


class BranchLookup:
    """The finite branch at a matcher's state, scored lazily after a context (see the module
    docstring). Bounded: :data:`MAX_STATES` branches by state, :data:`MAX_SCORED` scored
    branches."""

    def __init__(self, *, max_states: int = MAX_STATES, max_scored: int = MAX_SCORED) -> None:
        self.max_states = max_states
        self.max_scored = max_scored
        self._branches: dict[tuple[int, AutomatonState, int], tuple[Automaton, Branch]] = {}
        self._scored: dict[tuple[Any, ...], tuple[Automaton, LazyBranch | None]] = {}

    def branch(self, a: Automaton, s: AutomatonState, max_alternatives: int) -> Branch:
        """:func:`~toolmask.decoding._branch.find_branch`, memoised by state."""
        key = (id(a), s, max_alternatives)
        hit = self._branches.get(key)
        if hit is None or hit[0] is not a:
            if len(self._branches) > self.max_states:
                self._branches.clear()
            hit = self._branches[key] = (a, find_branch(a, s, max_alternatives=max_alternatives))
        return hit[1]

    def lookup(
        self,
        engine: ModelEngine,
        m: Matcher,
        context: list[int],
        row: Any,
        params: DecodingParams,
    ) -> tuple[LazyBranch | None, bool]:
        """The branch at ``m``'s state after ``context`` (whose logits ``row`` the caller
        holds): ``(lazy, fallback)``. ``lazy`` is None where there is no finite branch here,
        or one over ``params``' budget or whose alternatives cannot be tokenised as the
        grammar allows; ``fallback`` says it was one of the last two (a counted fallback to
        token-by-token). ``m`` is left as it was."""
        a = m.automaton
        br = self.branch(a, m.state, params.branch_alternatives)
        if br.alternatives is None:
            return None, br.over_budget
        key = (id(a), m.state, params.branch_alternatives, params.branch_tokens, *context)
        hit = self._scored.get(key)
        if hit is not None and hit[0] is a:
            return hit[1], hit[1] is None
        lazy = LazyBranch.build(
            br.alternatives,
            m=m,
            vocab=engine.vocab,
            encode=engine.encode,
            logits_many=engine.logits_many,
            context=list(context),
            row=row,
            max_tokens=params.branch_tokens,
        )
        if len(self._scored) >= self.max_scored:
            self._scored.pop(next(iter(self._scored)))
        self._scored[key] = (a, lazy)
        return lazy, lazy is None
