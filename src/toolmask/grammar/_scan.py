"""The text cursor shared by the hand-written grammar frontends (GBNF, Lark).

Positions are character offsets into ``text``; errors carry line, column and a caret through
:class:`~toolmask.errors.GrammarSyntaxError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from toolmask.errors import GrammarSyntaxError
from toolmask.grammar._ir import Grammar, Rule

__all__ = ["Scanner"]


class Scanner:
    """A cursor over grammar source: peeking, blanks and comments, integers, located errors."""

    #: the dialect named in error messages
    source: ClassVar[str] = ""
    #: texts that start a comment running to the end of the line
    comments: ClassVar[tuple[str, ...]] = ("#",)
    #: what a definition is called in error messages ("rule", "name")
    noun: ClassVar[str] = "name"

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str, pos: int | None = None) -> GrammarSyntaxError:
        return GrammarSyntaxError(
            message, text=self.text, pos=self.pos if pos is None else pos, source=self.source
        )

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < len(self.text) else ""

    def space(self, newline_ok: bool) -> None:
        """Skip blanks (and line breaks when ``newline_ok``) and comments."""
        t = self.text
        while self.pos < len(t):
            c = t[self.pos]
            if c in " \t" or (newline_ok and c in "\r\n"):
                self.pos += 1
            elif any(t.startswith(m, self.pos) for m in self.comments):
                while self.pos < len(t) and t[self.pos] not in "\r\n":
                    self.pos += 1
            else:
                break

    def integer(self) -> int:
        """A run of ASCII digits."""
        start = self.pos
        while self.peek() and self.peek() in "0123456789":
            self.pos += 1
        if self.pos == start:
            raise self.error("expected an integer")
        return int(self.text[start : self.pos])

    def grammar(
        self, parsed: Sequence[tuple[Rule, int]], refs: Iterable[tuple[str, int]], start: str
    ) -> Grammar:
        """The :class:`Grammar` of the parsed rules (each with its source position), after the
        checks every frontend shares: no name defined twice, every reference (name, position)
        defined, and a ``start`` rule. Errors point at the offending position. O(rules + refs).
        """
        defined: dict[str, int] = {}
        for rule, pos in parsed:
            if rule.name in defined:
                raise self.error(f"{rule.name!r} is defined twice", pos)
            defined[rule.name] = pos
        for name, pos in refs:
            if name not in defined:
                raise self.error(f"undefined {self.noun} {name!r}", pos)
        if start not in defined:
            raise self.error(f"missing start rule {start!r}", len(self.text.rstrip()))
        return Grammar(tuple(r for r, _ in parsed), start)
