"""``TurnOptions``: what a turn's grammar and parser depend on besides its tools, its format and
``tool_choice``, as one frozen value."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from toolmask.tools.formats import FormatSpec

__all__ = ["TurnOptions"]


@dataclass(frozen=True)
class TurnOptions:
    """How one assistant turn is written, besides its tools, format and ``tool_choice``.

    ``parallel``: more than one call may be written (a format whose template renders one call
    per turn admits one anyway). ``special_tokens``: the vocabulary's special-token texts;
    markers among them are single tokens in the grammar. ``schema_options``: options of
    :func:`~toolmask.schema.compile_json_schema` for every tool, over the format's own
    :class:`~toolmask.tools.formats.Values` (``"limits"``: the compile limits). ``reasoning``:
    the turn may start with the format's reasoning channel. ``reasoning_open``: the prompt
    ended inside the channel, so the turn starts with reasoning (:meth:`for_format` keeps it
    only for a format that has a channel). ``habit_prose``: under ``tool_choice="none"``, a
    habit's opener (:attr:`FormatSpec.habits`, a ```` ```json ```` fence) is plain text, as a
    user asking for no call may want a JSON fence in the answer, and the parser reads it so.
    ``False`` asks for words: the reply holds some text that is not whitespace and does not
    open (after whitespace) with a habit opener's leading punctuation nor with the first byte
    of a bare call (``{`` of hermes' ``{"name"``); a fence may still follow words, as text.
    This is an agent's answer step and the server's ``tool_choice="none"`` over tools: a model
    set on calling would otherwise open its call, which the mask cuts (the fence's three
    backticks, or ``{"name``), and stop. Only the opening is held: a fence that names a tool
    later in the reply, kept out, would be cut inside the name the same way.

    Frozen: a turn that differs in one option is another value (:meth:`replace`), never a
    changed one, so every cache keyed by it stays right. ``schema_options`` is a read-only
    copy."""

    parallel: bool = True
    special_tokens: frozenset[str] = frozenset()
    schema_options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    reasoning: bool = True
    reasoning_open: bool = False
    habit_prose: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "parallel", bool(self.parallel))
        object.__setattr__(self, "special_tokens", frozenset(self.special_tokens))
        object.__setattr__(self, "schema_options", MappingProxyType(dict(self.schema_options)))
        object.__setattr__(self, "reasoning", bool(self.reasoning))
        object.__setattr__(self, "reasoning_open", bool(self.reasoning_open))
        object.__setattr__(self, "habit_prose", bool(self.habit_prose))

    @classmethod
    def of(
        cls,
        fmt: FormatSpec,
        *,
        parallel: bool = True,
        special_tokens: Iterable[str] = (),
        schema_options: Mapping[str, Any] | None = None,
        reasoning: bool = True,
        reasoning_open: bool = False,
    ) -> TurnOptions:
        """The options of a turn in ``fmt`` (``reasoning_open`` only where it has a channel)."""
        return cls(
            parallel, frozenset(special_tokens), schema_options or {}, reasoning, reasoning_open
        ).for_format(fmt)

    def for_format(self, fmt: FormatSpec) -> TurnOptions:
        """These options for a turn in ``fmt``: ``reasoning_open`` cleared for a format
        without a reasoning channel."""
        if self.reasoning_open and not fmt.reasoning.end:
            return self.replace(reasoning_open=False)
        return self

    def replace(self, **changes: Any) -> TurnOptions:
        """These options with ``changes``."""
        return dataclasses.replace(self, **changes)

    def key(self) -> str:
        """The options as canonical JSON, for cache keys (``schema_options["caches"]`` left
        out; values JSON cannot write by their ``repr``)."""
        return json.dumps(
            [
                sorted(self.special_tokens),
                {k: v for k, v in self.schema_options.items() if k != "caches"},
                self.parallel,
                self.reasoning,
                self.reasoning_open,
                self.habit_prose,
            ],
            sort_keys=True,
            default=repr,
        )
