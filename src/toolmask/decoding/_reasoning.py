"""The reasoning budget: after so many tokens inside the reasoning channel the decoder writes the
channel's close marker itself (through the grammar, which then applies ``tool_choice`` to what
follows), so a thinking model cannot spend the whole ``max_tokens`` thinking."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolmask.vocab import Vocabulary

__all__ = ["ReasoningBudget", "ReasoningTracker"]


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


class ReasoningTracker:
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
