"""ECMA-262 pattern syntax (``u`` flag): the recogniser behind the ``regex`` format.

:func:`is_ecma_regex` says whether a string is a syntactically valid ECMA-262 pattern in Unicode
mode with named groups. It is a recogniser, not a compiler: it accepts what ECMA-262 accepts,
backreferences and lookbehinds included, which toolmask's own regex compiler
(``toolmask.grammar._regex``, a subset that becomes automata) refuses. The two parsers answer
different questions, so they stay apart: validating a ``format: regex`` value must not depend
on what the grammar compiler can express.
"""

from __future__ import annotations

import re

__all__ = ["is_ecma_regex"]


class _EcmaSyntaxError(Exception):
    pass


_SYNTAX_CHARS = set("^$\\.*+?()[]{}|")
_GROUP_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_PROPERTY = re.compile(r"[A-Za-z_]+(?:=[A-Za-z0-9_]+)?")


class _EcmaRegexParser:
    """Recursive-descent recogniser of ECMA-262 ``Pattern[+UnicodeMode, +NamedCaptureGroups]``."""

    def __init__(self, src: str) -> None:
        self.s = src
        self.i = 0
        self.groups = 0
        self.names: set[str] = set()
        self.backrefs: list[int] = []
        self.named_refs: list[str] = []

    def fail(self) -> None:
        raise _EcmaSyntaxError(self.i)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def eat(self, text: str) -> bool:
        if self.s.startswith(text, self.i):
            self.i += len(text)
            return True
        return False

    def parse(self) -> None:
        self.disjunction()
        if self.i != len(self.s):
            self.fail()
        if any(n > self.groups for n in self.backrefs):
            self.fail()
        if any(n not in self.names for n in self.named_refs):
            self.fail()

    def disjunction(self) -> None:
        self.alternative()
        while self.eat("|"):
            self.alternative()

    def alternative(self) -> None:
        while self.i < len(self.s) and self.peek() not in "|)":
            self.term()

    def term(self) -> None:
        if self.eat("^") or self.eat("$") or self.eat("\\b") or self.eat("\\B"):
            return
        for look in ("(?=", "(?!", "(?<=", "(?<!"):
            if self.eat(look):
                self.disjunction()
                if not self.eat(")"):
                    self.fail()
                return  # quantified lookarounds are not allowed in unicode mode
        self.atom()
        self.quantifier()

    def quantifier(self) -> None:
        if self.eat("*") or self.eat("+") or self.eat("?"):
            self.eat("?")
            return
        if self.peek() == "{":
            m = re.compile(r"\{([0-9]+)(,([0-9]*))?\}").match(self.s, self.i)
            if m is None:
                self.fail()
                return
            lo = int(m.group(1))
            if m.group(3) and int(m.group(3)) < lo:
                self.fail()
            self.i = m.end()
            self.eat("?")

    def atom(self) -> None:
        c = self.peek()
        if c == "(":
            self.i += 1
            if self.eat("?:"):
                pass
            elif self.eat("?<"):
                m = _GROUP_NAME.match(self.s, self.i)
                if m is None or m.group(0) in self.names:
                    self.fail()
                    return
                self.names.add(m.group(0))
                self.i = m.end()
                if not self.eat(">"):
                    self.fail()
                self.groups += 1
            elif self.peek() == "?":
                self.fail()
            else:
                self.groups += 1
            self.disjunction()
            if not self.eat(")"):
                self.fail()
        elif c == "[":
            self.char_class()
        elif c == "\\":
            self.i += 1
            self.atom_escape()
        elif c == ".":
            self.i += 1
        elif c == "" or c in _SYNTAX_CHARS:
            self.fail()
        else:
            self.i += 1

    def atom_escape(self) -> None:
        c = self.peek()
        if c and c in "123456789":
            m = re.compile("[0-9]+").match(self.s, self.i)
            assert m is not None
            self.backrefs.append(int(m.group(0)))
            self.i = m.end()
            return
        if c == "k":
            self.i += 1
            m = _GROUP_NAME.match(self.s, self.i + 1) if self.peek() == "<" else None
            if m is None or self.s[m.end() : m.end() + 1] != ">":
                self.fail()
                return
            self.named_refs.append(m.group(0))
            self.i = m.end() + 1
            return
        if self.class_escape_set():
            return
        self.character_escape()

    def class_escape_set(self) -> bool:
        c = self.peek()
        if c and c in "dDsSwW":
            self.i += 1
            return True
        if c and c in "pP":
            self.i += 1
            if not self.eat("{"):
                self.fail()
            m = _PROPERTY.match(self.s, self.i)
            if m is None:
                self.fail()
                return True
            self.i = m.end()
            if not self.eat("}"):
                self.fail()
            return True
        return False

    def character_escape(self) -> int:
        """Parse a CharacterEscape and return its code point."""
        c = self.peek()
        simple = {"f": 0xC, "n": 0xA, "r": 0xD, "t": 0x9, "v": 0xB}
        if c in simple and c:
            self.i += 1
            return simple[c]
        if c == "c":
            nxt = self.peek(1)
            if nxt and nxt.isascii() and nxt.isalpha():
                self.i += 2
                return ord(nxt) % 32
            self.fail()
        if c == "0" and not (self.peek(1) and self.peek(1) in "0123456789"):
            self.i += 1
            return 0
        if c == "x":
            m = re.compile("[0-9A-Fa-f]{2}").match(self.s, self.i + 1)
            if m is None:
                self.fail()
                return 0
            self.i = m.end()
            return int(m.group(0), 16)
        if c == "u":
            return self.unicode_escape()
        if c and (c in _SYNTAX_CHARS or c == "/"):
            self.i += 1
            return ord(c)
        self.fail()
        return 0

    def unicode_escape(self) -> int:
        self.i += 1
        if self.eat("{"):
            m = re.compile("[0-9A-Fa-f]+").match(self.s, self.i)
            if m is None or int(m.group(0), 16) > 0x10FFFF:
                self.fail()
                return 0
            self.i = m.end()
            if not self.eat("}"):
                self.fail()
            return int(m.group(0), 16)
        m = re.compile("[0-9A-Fa-f]{4}").match(self.s, self.i)
        if m is None:
            self.fail()
            return 0
        self.i = m.end()
        cp = int(m.group(0), 16)
        if 0xD800 <= cp <= 0xDBFF and self.s.startswith("\\u", self.i):
            m2 = re.compile("[Dd][C-Fc-f][0-9A-Fa-f]{2}").match(self.s, self.i + 2)
            if m2 is not None:
                self.i = m2.end()
                return 0x10000 + ((cp - 0xD800) << 10) + (int(m2.group(0), 16) - 0xDC00)
        return cp

    def char_class(self) -> None:
        self.i += 1
        self.eat("^")
        while True:
            if self.i >= len(self.s):
                self.fail()
            if self.eat("]"):
                return
            lo = self.class_atom()
            if self.peek() == "-" and self.peek(1) != "]" and self.peek(1) != "":
                self.i += 1
                hi = self.class_atom()
                if lo is None or hi is None or lo > hi:
                    self.fail()

    def class_atom(self) -> int | None:
        """A class atom's code point, or None for a class escape (``\\d``, ``\\p{..}``)."""
        c = self.peek()
        if c != "\\":
            self.i += 1
            return ord(c)
        self.i += 1
        if self.eat("b"):
            return 8
        if self.eat("-"):
            return ord("-")
        if self.class_escape_set():
            return None
        return self.character_escape()


def is_ecma_regex(pattern: str) -> bool:
    """Whether ``pattern`` is a syntactically valid ECMA-262 regular expression (``u`` flag).

    Property escapes ``\\p{..}`` are accepted for any name or ``name=value`` of identifier
    characters (the property tables are not consulted); everything else is checked exactly.
    """
    try:
        _EcmaRegexParser(pattern).parse()
    except _EcmaSyntaxError:
        return False
    return True
