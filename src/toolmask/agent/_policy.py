"""Tool policies as data: which tools a step may call, applied by the mask only.

A policy is a callable ``policy(step, transcript) -> patterns | None`` (``None``: no narrowing).
Patterns are tool names or ``fnmatch`` globs (``browser_*``); a pattern starting with ``!``
removes what it matches from what the patterns before it allowed (``["*", "!shell_*"]``: every
tool but the shell tools). :func:`expand_tool_patterns` turns them into tool names.

Two helpers build policies from data:

- :class:`StateMachine`: a state names the tools (or name prefixes) allowed in it; a transition
  table moves between states on the calls the model made, replayed from the transcript of the
  current run (so the policy holds no mutable state and is safe to share);
- :class:`PoolFilter`: a tool with markers is left out of the pool unless the user's message
  matches one of them (whole words, case-insensitive). Tools without markers are always in.

The agent narrows only the grammar of the step (``allowed_tools``); the prompt advertises every
tool at every step, so the prompt of a conversation only grows and the backend's KV cache of its
prefix stays valid however the allowed set changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from toolmask.errors import ToolError
from toolmask.tools import ToolCall

if TYPE_CHECKING:
    from toolmask.agent._messages import Message

__all__ = ["PoolFilter", "StateMachine", "ToolPolicy", "expand_tool_patterns"]

#: ``policy(step, transcript) -> tool names / patterns, or None for no narrowing``
ToolPolicy = Callable[[int, "Sequence[Message]"], "Iterable[str] | None"]

#: ``transition(state, call) -> next state, or None to stay``
Transition = Callable[[str, ToolCall], "str | None"]


def expand_tool_patterns(patterns: Iterable[str], names: Sequence[str]) -> list[str]:
    """The tool ``names`` (in their order) selected by ``patterns``: names or ``fnmatch`` globs,
    applied in order, a ``!`` prefix removing its matches. A pattern that matches no tool is an
    error (a typo would otherwise silently allow nothing). O(patterns x names)."""
    chosen: set[str] = set()
    for pattern in patterns:
        remove = pattern.startswith("!")
        glob = pattern[1:] if remove else pattern
        hits = {n for n in names if fnmatchcase(n, glob)}
        if not hits:
            raise ToolError(f"the pattern {pattern!r} matches no tool; the tools are {list(names)}")
        chosen = chosen - hits if remove else chosen | hits
    return [n for n in names if n in chosen]


def _current_run(transcript: Sequence[Message]) -> Sequence[Message]:
    last_user = max((i for i, m in enumerate(transcript) if m.role == "user"), default=-1)
    return transcript[last_user + 1 :]


class StateMachine:
    """A policy from a state machine over the calls of the current run.

    ``states`` maps a state to the tool names or patterns allowed in it; ``start`` is the state
    at the user's message. ``transitions`` is either a table ``{state: {pattern: next_state}}``
    (the first pattern matching the call's name wins; no match: stay) or a callable
    ``transition(state, call) -> next_state | None``. Only calls that ran without error move
    the machine (a call whose tool message starts with ``error:`` does not). The state is
    recomputed from the transcript at each step: O(calls of the run).
    """

    def __init__(
        self,
        states: Mapping[str, Sequence[str]],
        start: str,
        transitions: Mapping[str, Mapping[str, str]] | Transition | None = None,
    ) -> None:
        self.states = {s: tuple(p) for s, p in states.items()}
        if start not in self.states:
            raise ToolError(f"the start state {start!r} is not one of {sorted(self.states)}")
        self.start = start
        self.transitions = transitions if transitions is not None else {}
        if isinstance(self.transitions, Mapping):
            for state, table in self.transitions.items():
                for target in [state, *table.values()]:
                    if target not in self.states:
                        raise ToolError(
                            f"the transition table names the unknown state {target!r}; the "
                            f"states are {sorted(self.states)}",
                            where=state,
                        )

    def _next(self, state: str, call: ToolCall) -> str:
        if callable(self.transitions):
            target = self.transitions(state, call)
        else:
            table = self.transitions.get(state, {})
            target = next((t for p, t in table.items() if fnmatchcase(call.name, p)), None)
        if target is None:
            return state
        if target not in self.states:
            raise ToolError(f"the transition went to the unknown state {target!r}", where=state)
        return target

    def state_at(self, transcript: Sequence[Message]) -> str:
        """The state after the successful calls of the current run (since the last user
        message)."""
        run = _current_run(transcript)
        failed = {
            m.tool_call_id
            for m in run
            if m.role == "tool" and m.tool_call_id is not None and m.content.startswith("error:")
        }
        state = self.start
        for m in run:
            if m.role != "assistant":
                continue
            for call in m.tool_calls:
                if call.id not in failed:
                    state = self._next(state, call)
        return state

    def __call__(self, step: int, transcript: Sequence[Message]) -> list[str]:
        return list(self.states[self.state_at(transcript)])


class PoolFilter:
    """A policy that leaves a tool out unless the user's message has one of its markers.

    ``markers`` maps a tool name or pattern to marker words or phrases (matched as whole words,
    case-insensitive, on the last user message) or to compiled regular expressions (used as
    given). Tools that no key matches are always in the pool. O(markers) regex searches per
    step.
    """

    def __init__(self, markers: Mapping[str, Iterable[str | re.Pattern[str]]]) -> None:
        self.markers: dict[str, list[re.Pattern[str]]] = {}
        for pattern, words in markers.items():
            compiled = [
                w if isinstance(w, re.Pattern) else re.compile(rf"\b{re.escape(w)}\b", re.I)
                for w in words
            ]
            if not compiled:
                raise ToolError(
                    "a marker list is empty: the tool could never be used", where=pattern
                )
            self.markers[pattern] = compiled

    def excluded(self, text: str) -> list[str]:
        """The patterns (keys of ``markers``) whose markers ``text`` does not match."""
        return [p for p, rxs in self.markers.items() if not any(rx.search(text) for rx in rxs)]

    def __call__(self, step: int, transcript: Sequence[Message]) -> list[str] | None:
        user = next((m.content for m in reversed(transcript) if m.role == "user"), "")
        out = self.excluded(user)
        return ["*", *(f"!{p}" for p in out)] if out else None
