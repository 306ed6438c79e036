"""ECMA-262 regular expressions (``u`` flag, no other flags): the syntax tree and its parser.

This is the dialect of JSON Schema's ``pattern`` / ``patternProperties``: the pattern and the
strings are sequences of code points (``^🐲*$`` matches ``"🐲🐲"``), ``\\d`` is ``[0-9]``, ``\\w``
is ``[A-Za-z0-9_]``, ``\\s`` is ECMA WhiteSpace + LineTerminator, ``.`` is any code point but
``\\n \\r \\u2028 \\u2029``, and ``^`` / ``$`` assert the start / end of the whole string (no
multiline flag) wherever they appear. ``\\b`` / ``\\B`` are handled exactly (the subset
construction tracks whether the previous code point was a word character).

Supported: literals, escapes (``\\n \\r \\t \\f \\v \\0 \\xHH \\uHHHH`` (surrogate pairs are
combined) ``\\u{H..}`` ``\\cX``, escaped punctuation), ``.``, classes with ranges and class
escapes, ``\\d \\D \\w \\W \\s \\S``, ``\\p{..}`` / ``\\P{..}`` for General_Category values
(from Python's :mod:`unicodedata`) plus ``Any``, ``ASCII`` and ``Assigned``, groups (capturing,
``(?:..)``, named), alternation, greedy and lazy quantifiers (same language), ``^ $ \\b \\B``.

Rejected with :class:`~toolmask.errors.GrammarSyntaxError` (with the position): lookarounds,
backreferences (``\\1``, ``\\k<n>``), scripts and other Unicode properties, inline modifiers, and
malformed syntax. As in Annex B (and Python), a ``{`` that does not start a quantifier, and
``}`` and ``]`` outside a class, are literals; an escaped ASCII letter or digit with no meaning
is an error rather than a guess.

Entry points: :func:`parse_regex` (the syntax tree of a pattern) and
:func:`strip_outer_anchors` / :func:`has_assertions` (what the full-match routes of
``_regex`` ask of it).
"""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from typing import TypeAlias

from toolmask.errors import GrammarSyntaxError, LimitError
from toolmask.grammar._charset import ANY_CHAR, MAX_CP, CharSet
from toolmask.grammar._nfa import BOL, EOL, NOT_WORD_BOUNDARY, WORD_BOUNDARY, WORD_CHARS
from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = [
    "CLASS_ESCAPES",
    "DIGIT_CHARS",
    "DOT_CHARS",
    "SPACE_CHARS",
    "WORD_CHARS",
    "RAlt",
    "RAssert",
    "RCat",
    "RChars",
    "RLook",
    "RNode",
    "RRepeat",
    "has_assertions",
    "parse_regex",
    "python_regex",
    "regex_backreferences",
    "strip_outer_anchors",
    "unicode_property",
]

DIGIT_CHARS = CharSet.range(0x30, 0x39)
#: ECMA-262 WhiteSpace + LineTerminator
SPACE_CHARS = CharSet.of(
    [
        (0x09, 0x0D),
        0x20,
        0xA0,
        0x1680,
        (0x2000, 0x200A),
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
        0xFEFF,
    ]
)
_LINE_TERMINATORS = CharSet.of([0x0A, 0x0D, 0x2028, 0x2029])
#: ``.`` without the ``s`` flag
DOT_CHARS = ANY_CHAR - _LINE_TERMINATORS

#: the class escapes \d \D \w \W \s \S and their character sets
CLASS_ESCAPES = {
    "d": DIGIT_CHARS,
    "D": DIGIT_CHARS.complement(),
    "w": WORD_CHARS,
    "W": WORD_CHARS.complement(),
    "s": SPACE_CHARS,
    "S": SPACE_CHARS.complement(),
}
_CONTROL_ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09, "f": 0x0C, "v": 0x0B}
_SYNTAX = set("^$\\.*+?()[]{}|/")

# -- AST ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RChars:
    """One code point from ``cs``."""

    cs: CharSet


@dataclass(frozen=True, slots=True)
class RCat:
    items: tuple[RNode, ...]


@dataclass(frozen=True, slots=True)
class RAlt:
    items: tuple[RNode, ...]


@dataclass(frozen=True, slots=True)
class RRepeat:
    item: RNode
    min: int
    max: int | None


@dataclass(frozen=True, slots=True)
class RAssert:
    """A zero-width assertion: one of the Nfa conditions BOL, EOL, WORD_BOUNDARY, ..."""

    cond: int


@dataclass(frozen=True, slots=True)
class RLook:
    """A lookahead ``(?=body)`` / ``(?!body)`` (``negative``) opening at ``pos``."""

    body: RNode
    negative: bool
    pos: int


RNode: TypeAlias = RChars | RCat | RAlt | RRepeat | RAssert | RLook

# -- parser -------------------------------------------------------------------------------------


class _Parser:
    """Recursive descent over the pattern, building its syntax tree.

    ``backrefs``: a backreference is read as its group's language (see :meth:`backreference`)
    instead of refused. ``python``: the parser also writes, into :attr:`py`, a Python ``re``
    pattern that matches what the ECMA-262 one does (see :func:`python_regex`)."""

    def __init__(
        self,
        text: str,
        limits: Limits = DEFAULT_LIMITS,
        *,
        backrefs: bool = False,
        python: bool = False,
    ) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0
        self.max_depth = limits.max_regex_nesting
        self.in_look = False
        self.negative_look = False
        self.backrefs = backrefs or python
        #: the capturing groups' syntax trees by number - 1 (None while the group is open)
        self.groups: list[RNode | None] = []
        self.names: dict[str, int] = {}
        #: backreferences read (a number or a name, and where), checked once all groups are known
        self.refs: list[tuple[int | str, int]] = []
        self.py: list[str] | None = [] if python else None

    def emit(self, text: str) -> None:
        if self.py is not None:
            self.py.append(text)

    def error(self, message: str, pos: int | None = None) -> GrammarSyntaxError:
        return GrammarSyntaxError(
            message, text=self.text, pos=self.pos if pos is None else pos, source="regex"
        )

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < len(self.text) else ""

    def parse(self) -> RNode:
        node = self.disjunction()
        if self.pos < len(self.text):
            raise self.error("unmatched ')'")
        for ref, pos in self.refs:
            if ref not in self.names if isinstance(ref, str) else ref > len(self.groups):
                raise self.error("backreference to a group that does not exist", pos)
        return node

    def disjunction(self) -> RNode:
        alts = [self.alternative()]
        while self.peek() == "|":
            self.pos += 1
            self.emit("|")
            alts.append(self.alternative())
        return alts[0] if len(alts) == 1 else RAlt(tuple(alts))

    def alternative(self) -> RNode:
        items: list[RNode] = []
        text = self.text
        n = len(text)
        while self.pos < n and text[self.pos] not in "|)":
            items.append(self.term())
        return items[0] if len(items) == 1 else RCat(tuple(items))

    def term(self) -> RNode:
        start = self.pos
        c = self.peek()
        assertion: int | None = None
        if c == "^":
            assertion = BOL
        elif c == "$":
            assertion = EOL
        elif c == "\\" and self.peek(1) in ("b", "B"):
            assertion = WORD_BOUNDARY if self.peek(1) == "b" else NOT_WORD_BOUNDARY
        elif c == "(" and self.peek(1) == "?":
            for intro in ("(?<=", "(?<!"):
                if self.text.startswith(intro, self.pos):
                    what = "lookbehind" if intro == "(?<=" else "negative lookbehind"
                    raise self.error(f"{what} assertions are not supported")
            if self.peek(2) in ("=", "!"):
                return self.lookahead()
        if assertion is not None:
            self.pos += 1 if c in "^$" else 2
            if self.quantifier_at(self.pos) is not None:
                raise self.error("nothing to repeat (an assertion cannot be quantified)")
            self.emit(_PY_ASSERTIONS[assertion])
            return RAssert(assertion)
        atom = self.atom()
        q = self.quantifier_at(self.pos)
        if q is None:
            return atom
        lo, hi, end = q
        if hi is not None and hi < lo:
            raise self.error("numbers out of order in {} quantifier")
        self.emit(f"{{{lo},{'' if hi is None else hi}}}")
        self.pos = end
        if self.peek() == "?":  # lazy: same language
            self.pos += 1
        if self.quantifier_at(self.pos) is not None:
            raise self.error("nothing to repeat")
        del start
        return RRepeat(atom, lo, hi)

    def enter(self) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise LimitError(
                f"regex groups nest more than {self.max_depth} deep (at {self.pos})",
                limit="max_regex_nesting",
            )

    def lookahead(self) -> RNode:
        open_pos = self.pos
        negative = self.peek(2) == "!"
        if self.in_look:
            raise self.error("a lookahead inside a lookahead is not supported")
        self.pos += 3
        self.enter()
        self.in_look = True
        self.negative_look = negative
        self.emit("(?!" if negative else "(?=")
        body = self.disjunction()
        self.in_look = self.negative_look = False
        self.depth -= 1
        if self.peek() != ")":
            raise self.error("unterminated lookahead", open_pos)
        self.pos += 1
        self.emit(")")
        if self.quantifier_at(self.pos) is not None:
            raise self.error("nothing to repeat (a lookahead cannot be quantified)")
        return RLook(body, negative, open_pos)

    def quantifier_at(self, i: int) -> tuple[int, int | None, int] | None:
        """``(min, max, end)`` of a quantifier starting at ``i``, or None."""
        t = self.text
        if i >= len(t):
            return None
        c = t[i]
        if c == "*":
            return 0, None, i + 1
        if c == "+":
            return 1, None, i + 1
        if c == "?":
            return 0, 1, i + 1
        if c != "{":
            return None
        j = i + 1
        k = j
        while k < len(t) and t[k].isascii() and t[k].isdigit():
            k += 1
        if k == j:
            return None
        lo = int(t[j:k])
        if k < len(t) and t[k] == "}":
            return lo, lo, k + 1
        if k >= len(t) or t[k] != ",":
            return None
        k += 1
        m = k
        while m < len(t) and t[m].isascii() and t[m].isdigit():
            m += 1
        if m >= len(t) or t[m] != "}":
            return None
        return lo, (int(t[k:m]) if m > k else None), m + 1

    def atom(self) -> RNode:
        c = self.peek()
        if c == "(":
            return self.group()
        if c == "\\" and self.peek(1) != "" and self.peek(1) in _DECIMAL + "k":
            return self.backreference()
        if c == ".":
            self.pos += 1
            cs = DOT_CHARS
        elif c == "[":
            cs = self.char_class()
        elif c == "\\":
            cs, _ = self.escape(in_class=False)
        elif c in "*+?" or self.quantifier_at(self.pos) is not None:
            raise self.error("nothing to repeat")
        else:
            cp = self.literal_char()
            cs = CharSet(((cp, cp),))
        self.emit(_py_class(cs))
        return RChars(cs)

    def literal_char(self) -> int:
        cp = ord(self.text[self.pos])
        self.pos += 1
        if 0xD800 <= cp <= 0xDBFF and self.pos < len(self.text):
            low = ord(self.text[self.pos])
            if 0xDC00 <= low <= 0xDFFF:
                self.pos += 1
                return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
        return cp

    def group(self) -> RNode:
        open_pos = self.pos
        self.pos += 1
        number: int | None = len(self.groups) + 1  # a capturing group's number
        if self.peek() == "?":
            if self.peek(1) == ":":
                self.pos += 2
                number = None
            elif self.peek(1) == "<":
                end = self.text.find(">", self.pos)
                name = self.text[self.pos + 2 : end] if end >= 0 else ""
                if not name or not _is_identifier(name) or name in self.names:
                    raise self.error("invalid group name")
                self.names[name] = len(self.groups) + 1
                self.pos = end + 1
            else:
                raise self.error("unsupported group syntax (inline flags / modifiers)", open_pos)
        if number is not None:
            self.groups.append(None)
        self.emit("(" if number is not None else "(?:")
        self.enter()
        node = self.disjunction()
        self.depth -= 1
        if self.peek() != ")":
            raise self.error("unterminated group", open_pos)
        self.pos += 1
        self.emit(")")
        if number is not None:
            self.groups[number - 1] = node
        return node

    def backreference(self) -> RNode:
        """``\\N`` or ``\\k<name>`` at pos. Refused unless ``backrefs``; then read as the
        language of what it can match, which is regular: the group's own language without
        its assertions and lookaheads (the text a group captured is in it), or the empty
        string (the group did not take part; ECMA-262 then matches nothing), so
        ``(G')?``, a superset of what the reference matches. Inside a negative lookahead a
        superset would make the lookahead's complement a subset, so there the reference is
        read as the empty language instead (a subset, whose complement is a superset). A
        reference to a group not closed yet (itself, or a later one) always matches the
        empty string in ECMA-262 (captures are reset at each repetition): that is exact."""
        start = self.pos
        ref: int | str
        if self.peek(1) == "k":
            if not self.backrefs:
                raise self.error("named backreferences are not supported", start)
            end = self.text.find(">", self.pos + 3) if self.peek(2) == "<" else -1
            ref = self.text[self.pos + 3 : end] if end >= 0 else ""
            if not ref or not _is_identifier(ref):
                raise self.error("\\k must be followed by <group name>", start)
            self.pos = end + 1
        else:
            if not self.backrefs:
                raise self.error("backreferences are not supported", start)
            j = self.pos + 1
            while j < len(self.text) and self.text[j] in _DECIMAL + "0":
                j += 1
            ref = int(self.text[self.pos + 1 : j])
            self.pos = j
        self.refs.append((ref, start))
        number = self.names.get(ref) if isinstance(ref, str) else ref
        known = number is not None and number <= len(self.groups)
        group = self.groups[number - 1] if known and number is not None else None
        if group is None:  # not closed yet: the empty string, exactly
            self.emit("(?:)")
            return RCat(())
        self.emit(f"(?({number})\\{number})")  # Python: "unset" would fail, ECMA matches ""
        if self.negative_look:
            return RChars(CharSet())
        return RRepeat(_loosened(group), 0, 1)

    def char_class(self) -> CharSet:
        open_pos = self.pos
        self.pos += 1
        negate = self.peek() == "^"
        if negate:
            self.pos += 1
        acc: list[tuple[int, int]] = []
        text = self.text
        n = len(text)
        while True:
            if self.pos >= n:
                raise self.error("unterminated character class", open_pos)
            c = text[self.pos]
            if c == "]":
                self.pos += 1
                break
            a_pos = self.pos
            if c == "\\":
                a, a_cp = self.escape(in_class=True)
            else:
                a_cp = self.literal_char()
                a = None
            if self.pos + 1 < n and text[self.pos] == "-" and text[self.pos + 1] != "]":
                self.pos += 1
                _, b_cp = self.class_atom()
                if a_cp is None or b_cp is None:
                    raise self.error("a class escape cannot be a range bound", a_pos)
                if a_cp > b_cp:
                    raise self.error("range out of order in character class", a_pos)
                acc.append((a_cp, b_cp))
            elif a is None:
                assert a_cp is not None
                acc.append((a_cp, a_cp))
            else:
                acc.extend(a.ranges)
        cs = CharSet.from_ranges(acc)
        return cs.complement() if negate else cs

    def class_atom(self) -> tuple[CharSet | None, int | None]:
        """A class member: its set (None when it is the one code point returned) and its code
        point (None for a class escape such as ``\\d``)."""
        if self.peek() == "\\":
            return self.escape(in_class=True)
        return None, self.literal_char()

    def escape(self, *, in_class: bool) -> tuple[CharSet, int | None]:
        """Parse ``\\...`` at pos; returns the set and, if it is one code point, that code point."""
        start = self.pos
        self.pos += 1
        if self.pos >= len(self.text):
            raise self.error("\\ at end of pattern", start)
        c = self.text[self.pos]
        self.pos += 1
        if c in CLASS_ESCAPES:
            return CLASS_ESCAPES[c], None
        if c in "pP":
            cs = self.property(start)
            return (cs.complement() if c == "P" else cs), None
        cp: int
        if c in _CONTROL_ESCAPES:
            cp = _CONTROL_ESCAPES[c]
        elif c == "b" and in_class:
            cp = 0x08
        elif c == "-" and in_class:
            cp = 0x2D
        elif c == "0":
            if self.peek().isascii() and self.peek().isdigit():
                raise self.error("octal escapes are not allowed", start)
            cp = 0
        elif c in _DECIMAL:
            raise self.error("a backreference cannot be in a class", start)
        elif c == "k":
            raise self.error("\\k cannot be in a class", start)
        elif c == "c":
            x = self.peek()
            if not (x.isascii() and x.isalpha()):
                raise self.error("\\c must be followed by an ASCII letter", start)
            self.pos += 1
            cp = ord(x) % 32
        elif c == "x":
            cp = self.hex_digits(2, start)
        elif c == "u":
            cp = self.unicode_escape(start)
        elif c.isascii() and c.isalnum():
            raise self.error(f"unknown escape \\{c}", start)
        else:  # identity escape of punctuation / non-ASCII (SyntaxCharacter, '/', Annex B)
            self.pos -= 1
            cp = self.literal_char()
        return CharSet(((cp, cp),)), cp

    def hex_digits(self, n: int, start: int) -> int:
        h = self.text[self.pos : self.pos + n]
        if len(h) != n or not all(ch in "0123456789abcdefABCDEF" for ch in h):
            raise self.error(f"expected {n} hex digits", start)
        self.pos += n
        return int(h, 16)

    def unicode_escape(self, start: int) -> int:
        if self.peek() == "{":
            end = self.text.find("}", self.pos)
            h = self.text[self.pos + 1 : end] if end >= 0 else ""
            if not h or not all(ch in "0123456789abcdefABCDEF" for ch in h) or len(h) > 8:
                raise self.error("malformed \\u{...} escape", start)
            cp = int(h, 16)
            if cp > MAX_CP:
                raise self.error("code point out of range", start)
            self.pos = end + 1
            return cp
        cp = self.hex_digits(4, start)
        if 0xD800 <= cp <= 0xDBFF and self.text.startswith("\\u", self.pos):
            save = self.pos
            self.pos += 2
            try:
                low = self.hex_digits(4, start)
            except GrammarSyntaxError:
                self.pos = save
                return cp
            if 0xDC00 <= low <= 0xDFFF:
                return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
            self.pos = save
        return cp

    def property(self, start: int) -> CharSet:
        if self.peek() != "{":
            raise self.error("\\p must be followed by {name}", start)
        end = self.text.find("}", self.pos)
        if end < 0:
            raise self.error("unterminated \\p{...}", start)
        name = self.text[self.pos + 1 : end]
        self.pos = end + 1
        cs = unicode_property(name)
        if cs is None:
            raise self.error(
                f"unsupported Unicode property {name!r} (only General_Category values, "
                "Any, ASCII and Assigned are supported)",
                start,
            )
        return cs


_DECIMAL = "123456789"
#: the Python ``re`` spelling of each assertion, with ECMA-262's meaning: the start and the very
#: end of the string (Python's ``$`` also matches before a final newline), and word
#: boundaries over ASCII word characters
_PY_ASSERTIONS = {
    BOL: "\\A",
    EOL: "\\Z",
    WORD_BOUNDARY: "(?a:\\b)",
    NOT_WORD_BOUNDARY: "(?a:\\B)",
}


def _py_class(cs: CharSet) -> str:
    """A Python ``re`` atom for one code point of ``cs`` (every code point escaped)."""
    if not cs:
        return "(?!)"
    if len(cs.ranges) == 1 and cs.ranges[0][0] == cs.ranges[0][1]:
        return f"\\U{cs.ranges[0][0]:08x}"
    body = "".join(
        f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in cs.ranges
    )
    return f"[{body}]"


def _loosened(node: RNode) -> RNode:
    """``node`` without its assertions and lookaheads (each read as the empty string): a
    superset of the texts ``node`` matches wherever it stands."""
    if isinstance(node, (RAssert, RLook)):
        return RCat(())
    if isinstance(node, RCat):
        return RCat(tuple(_loosened(x) for x in node.items))
    if isinstance(node, RAlt):
        return RAlt(tuple(_loosened(x) for x in node.items))
    if isinstance(node, RRepeat):
        return RRepeat(_loosened(node.item), node.min, node.max)
    return node


def _is_identifier(name: str) -> bool:
    return name.isidentifier() or all(ch.isalnum() or ch in "_$" for ch in name)


def parse_regex(pattern: str, *, limits: Limits = DEFAULT_LIMITS, backrefs: bool = False) -> RNode:
    """Parse an ECMA-262 pattern (``u`` flag) to its AST; GrammarSyntaxError if malformed,
    LimitError when groups nest more than ``limits.max_regex_nesting`` deep.

    ``backrefs``: a backreference (``\\1``, ``\\k<name>``) is read as the language of
    what its group can match (a superset of the pattern's language, see
    ``_Parser.backreference``) instead of refused: for callers that check the exact pattern
    afterwards (:func:`python_regex`)."""
    return _Parser(pattern, limits, backrefs=backrefs).parse()


def regex_backreferences(pattern: str, *, limits: Limits = DEFAULT_LIMITS) -> int:
    """How many backreferences ``pattern`` has (raises what :func:`parse_regex` raises for
    anything else it refuses)."""
    p = _Parser(pattern, limits, backrefs=True)
    p.parse()
    return len(p.refs)


def python_regex(pattern: str, *, limits: Limits = DEFAULT_LIMITS) -> str:
    """A Python ``re`` pattern that matches (``re.search``) exactly where the ECMA-262 one
    (``u`` flag) does, as toolmask reads it: every class written out as code points (``\\d``
    is ``[0-9]``, ``.`` excludes the four line terminators, ``\\s`` is ECMA's white space),
    ``$`` the very end, word boundaries over ASCII, named groups numbered, and a
    backreference to a group that did not take part matching the empty string, as in
    ECMA-262 (``(?(1)\\1)``). One difference remains: ECMA-262 resets the captures inside a
    repeated group at each repetition, Python keeps the last ones, so a backreference to a
    group of the same repetition that has not matched in this round matches its text from the
    round before. Raises what :func:`parse_regex` raises for syntax it refuses (lookbehinds,
    Unicode properties beyond General_Category, inline flags)."""
    p = _Parser(pattern, limits, python=True)
    p.parse()
    assert p.py is not None
    return "".join(p.py)


# -- Unicode properties ---------------------------------------------------------------------------

_GC_NAMES: dict[str, tuple[str, ...]] = {
    "L": ("letter",),
    "LC": ("casedletter",),
    "Lu": ("uppercaseletter",),
    "Ll": ("lowercaseletter",),
    "Lt": ("titlecaseletter",),
    "Lm": ("modifierletter",),
    "Lo": ("otherletter",),
    "M": ("mark", "combiningmark"),
    "Mn": ("nonspacingmark",),
    "Mc": ("spacingmark",),
    "Me": ("enclosingmark",),
    "N": ("number",),
    "Nd": ("decimalnumber", "digit"),
    "Nl": ("letternumber",),
    "No": ("othernumber",),
    "P": ("punctuation", "punct"),
    "Pc": ("connectorpunctuation",),
    "Pd": ("dashpunctuation",),
    "Ps": ("openpunctuation",),
    "Pe": ("closepunctuation",),
    "Pi": ("initialpunctuation",),
    "Pf": ("finalpunctuation",),
    "Po": ("otherpunctuation",),
    "S": ("symbol",),
    "Sm": ("mathsymbol",),
    "Sc": ("currencysymbol",),
    "Sk": ("modifiersymbol",),
    "So": ("othersymbol",),
    "Z": ("separator",),
    "Zs": ("spaceseparator",),
    "Zl": ("lineseparator",),
    "Zp": ("paragraphseparator",),
    "C": ("other",),
    "Cc": ("control", "cntrl"),
    "Cf": ("format",),
    "Cs": ("surrogate",),
    "Co": ("privateuse",),
    "Cn": ("unassigned",),
}
_GC_LOOKUP: dict[str, str] = {}
for _code, _aliases in _GC_NAMES.items():
    _GC_LOOKUP[_code.lower()] = _code
    for _alias in _aliases:
        _GC_LOOKUP[_alias] = _code


def _loose(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch not in "_- ")


@functools.cache
def _categories() -> dict[str, CharSet]:
    """Two-letter General_Category -> code points (one pass over all code points, ~0.5 s)."""
    runs: dict[str, list[tuple[int, int]]] = {}
    category = unicodedata.category
    prev = category("\0")
    lo = 0
    for cp in range(1, MAX_CP + 1):
        cat = category(chr(cp))
        if cat != prev:
            runs.setdefault(prev, []).append((lo, cp - 1))
            prev, lo = cat, cp
    runs.setdefault(prev, []).append((lo, MAX_CP))
    return {k: CharSet.from_ranges(v) for k, v in runs.items()}


def unicode_property(name: str) -> CharSet | None:
    """The code points of ``\\p{name}`` (loose matching of names), or None if unsupported."""
    key = _loose(name)
    for prefix in ("generalcategory=", "gc="):
        if key.startswith(prefix):
            key = key[len(prefix) :]
            break
    else:
        if key == "any":
            return ANY_CHAR
        if key == "ascii":
            return CharSet.range(0, 0x7F)
        if key == "assigned":
            return _categories().get("Cn", CharSet()).complement()
    code = _GC_LOOKUP.get(key)
    if code is None:
        return None
    cats = _categories()
    if code == "LC":
        return cats.get("Lu", CharSet()) | cats.get("Ll", CharSet()) | cats.get("Lt", CharSet())
    if len(code) == 1:
        out = CharSet()
        for k, v in cats.items():
            if k[0] == code:
                out = out | v
        return out
    return cats.get(code, CharSet())


def strip_outer_anchors(ast: RNode) -> RNode:
    """In full-match mode a ``^`` opening / ``$`` closing a top-level alternative is a no-op."""
    alts = ast.items if isinstance(ast, RAlt) else (ast,)
    out: list[RNode] = []
    for alt in alts:
        items = list(alt.items) if isinstance(alt, RCat) else [alt]
        while items and items[0] == RAssert(BOL):
            items.pop(0)
        while items and items[-1] == RAssert(EOL):
            items.pop()
        out.append(items[0] if len(items) == 1 else RCat(tuple(items)))
    return out[0] if len(out) == 1 else RAlt(tuple(out))


def has_assertions(node: RNode) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is RCat or t is RAlt:
            stack.extend(n.items)  # type: ignore[union-attr]
        elif t is RRepeat:
            stack.append(n.item)  # type: ignore[union-attr]
        elif t is RAssert or t is RLook:
            return True
    return False
