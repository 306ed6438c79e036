"""llama.cpp's GBNF dialect: :func:`parse_gbnf` (text -> IR) and :func:`to_gbnf` (IR -> text).

Supported syntax, following llama.cpp's ``llama-grammar.cpp`` parser:

* rules ``name ::= body``; names are ``[a-zA-Z0-9-]+``; a rule ends at the end of its line,
  except that newlines may follow ``::=`` and ``|`` and may appear anywhere inside ``( )``;
* ``"literal"`` and ``[class]`` / ``[^class]`` with ranges ``a-z``; escapes in both: ``\\n \\r
  \\t \\\\ \\" \\[ \\] \\- \\xHH \\uHHHH \\UHHHHHHHH``; ``.`` is any code point;
* grouping ``( )``, alternation ``|``, postfix ``* + ?`` and ``{m} {m,} {m,n}`` (and ``{,n}``,
  which llama.cpp itself rejects and :func:`to_gbnf` never prints);
* ``# comments`` to the end of the line;
* ``<token>`` names one special token of the vocabulary by its text -> :class:`Special`.
  Token ids ``<[123]>`` and negated tokens ``!<...>`` have no IR counterpart and are errors.

GBNF works on code points: literals are UTF-8 encoded, classes go through :func:`utf8_node`,
and a negated class is the complement within all code points (surrogates excluded).
Differences from llama.cpp, all stricter: a rule defined twice is an error (llama.cpp keeps the
last), an empty range ``[z-a]`` is an error, and repetition bounds are kept exactly (llama.cpp
turns a maximum above 2000 into "unbounded").
"""

from __future__ import annotations

from toolmask._cache import CacheSet, using
from toolmask.errors import GrammarError
from toolmask.grammar._charset import ANY_CHAR, CharSet, utf8_node
from toolmask.grammar._ir import (
    Grammar,
    Node,
    Rule,
    RuleRef,
    Special,
    choice,
    lit,
    register_frontend,
    register_printer,
    repeat,
    seq,
)
from toolmask.grammar._printing import (
    CAlt,
    Class,
    CNode,
    CRep,
    CSeq,
    Ref,
    Text,
    Tok,
    class_forms,
    postfix,
    special_text,
    to_code_points,
    unique_names,
    words,
)
from toolmask.grammar._scan import Scanner

__all__ = ["parse_gbnf", "to_gbnf"]

_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t"} | {c: c for c in '\\"[]-'}
_HEX_LEN = {"x": 2, "u": 4, "U": 8}
MAX_REPETITION = 2000
"""llama.cpp refuses a minimum above this and turns a larger maximum into 'unbounded'."""


class _Parser(Scanner):
    source = "gbnf"
    noun = "rule"

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.refs: list[tuple[str, int]] = []

    def name(self) -> str:
        start = self.pos
        while self.peek() and self.peek() in _WORD_CHARS:
            self.pos += 1
        if self.pos == start:
            raise self.error("expected a rule name")
        return self.text[start : self.pos]

    def char(self) -> int:
        """One (possibly escaped) code point of a literal or class."""
        c = self.peek()
        if not c:
            raise self.error("unexpected end of input")
        if c != "\\":
            self.pos += 1
            return ord(c)
        start = self.pos
        e = self.peek(1)
        if e in _SIMPLE_ESCAPES:
            self.pos += 2
            return ord(_SIMPLE_ESCAPES[e])
        if e in _HEX_LEN:
            n = _HEX_LEN[e]
            digits = self.text[self.pos + 2 : self.pos + 2 + n]
            if len(digits) != n or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise self.error(f"expected {n} hex digits after \\{e}", start)
            value = int(digits, 16)
            if value > 0x10FFFF:
                raise self.error(f"code point {value:#x} is above U+10FFFF", start)
            self.pos += 2 + n
            return value
        raise self.error(f"unknown escape \\{e}" if e else "unexpected end of input", start)

    # -- grammar ---------------------------------------------------------------------------------
    def parse(self) -> list[tuple[Rule, int]]:
        rules: list[tuple[Rule, int]] = []
        self.space(True)
        while self.pos < len(self.text):
            start = self.pos
            name = self.name()
            self.space(False)
            if not self.text.startswith("::=", self.pos):
                raise self.error("expected '::='")
            self.pos += 3
            self.space(True)
            body = self.alternates(nested=False)
            c = self.peek()
            if c == "\r":
                self.pos += 2 if self.peek(1) == "\n" else 1
            elif c == "\n":
                self.pos += 1
            elif c == ")":
                raise self.error("unbalanced ')'")
            elif c:
                raise self.error("expected a newline or the end of the grammar")
            self.space(True)
            rules.append((Rule(name, body), start))
        return rules

    def alternates(self, nested: bool) -> Node:
        alts = [self.sequence(nested)]
        while self.peek() == "|":
            self.pos += 1
            self.space(True)
            alts.append(self.sequence(nested))
        return choice(*alts)

    def sequence(self, nested: bool) -> Node:
        items: list[Node] = []
        while True:
            c = self.peek()
            start = self.pos
            if c == '"':
                self.pos += 1
                chars: list[str] = []
                while self.peek() != '"':
                    if not self.peek():
                        raise self.error("unterminated string literal", start)
                    chars.append(chr(self.char()))
                self.pos += 1
                text = "".join(chars)
                try:
                    items.append(lit(text))
                except UnicodeEncodeError:
                    raise self.error("a surrogate code point cannot be encoded", start) from None
            elif c == "[":
                items.append(self.char_class())
            elif c in ("<", "!"):
                items.append(self.token())
            elif c and c in _WORD_CHARS:
                name = self.name()
                self.refs.append((name, start))
                items.append(RuleRef(name))
            elif c == "(":
                self.pos += 1
                self.space(True)
                inner = self.alternates(nested=True)
                if self.peek() != ")":
                    raise self.error("expected ')'" if self.peek() else "unclosed '('", start)
                self.pos += 1
                items.append(inner)
            elif c == ".":
                self.pos += 1
                items.append(utf8_node(ANY_CHAR))
            elif c in ("*", "+", "?", "{"):
                lo, hi = self.repetition(nested)
                if not items:
                    raise self.error(f"'{c}' has no item to repeat", start)
                items[-1] = repeat(items[-1], lo, hi)
                continue  # repetition() already skipped trailing space
            else:
                return seq(*items)
            self.space(nested)

    def repetition(self, nested: bool) -> tuple[int, int | None]:
        c = self.peek()
        start = self.pos
        self.pos += 1
        if c != "{":
            self.space(nested)
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        self.space(False)
        lo = 0 if self.peek() == "," else self.integer()
        self.space(False)
        hi: int | None
        if self.peek() == "}":
            hi = lo
        elif self.peek() == ",":
            self.pos += 1
            self.space(False)
            hi = self.integer() if self.peek().isdigit() else None
            self.space(False)
            if self.peek() != "}":
                raise self.error("expected '}'")
        else:
            raise self.error("expected ',' or '}' in repetition")
        self.pos += 1
        if hi is not None and hi < lo:
            raise self.error(f"bad repetition {{{lo},{hi}}}: maximum below minimum", start)
        self.space(nested)
        return lo, hi

    def char_class(self) -> Node:
        start = self.pos
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while self.peek() != "]":
            if not self.peek():
                raise self.error("unterminated character class", start)
            at = self.pos
            lo = self.char()
            hi = lo
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                hi = self.char()
                if hi < lo:
                    raise self.error(f"empty range {chr(lo)!r}-{chr(hi)!r} in class", at)
            ranges.append((lo, hi))
        self.pos += 1
        cs = CharSet.from_ranges(ranges)
        return utf8_node(cs.complement() if negated else cs)

    def token(self) -> Node:
        start = self.pos
        if self.peek() == "!":
            raise self.error("negated tokens !<...> are not supported", start)
        if self.peek(1) == "[":
            raise self.error("token ids <[N]> are not supported; name the token by its text")
        end = self.text.find(">", self.pos)
        if end < 0:
            raise self.error("unterminated token <...>", start)
        self.pos = end + 1
        return Special(self.text[start : self.pos])


def parse_gbnf(text: str, *, start: str = "root", caches: CacheSet | None = None) -> Grammar:
    """Parse GBNF ``text`` into a :class:`Grammar` whose start rule is ``start``.

    Rule names are kept verbatim. Raises :class:`GrammarSyntaxError` (line, column, caret) on
    malformed text, an undefined rule reference, a rule defined twice, or a missing start rule.
    O(len(text)) plus the UTF-8 expansion of the classes, memoised in ``caches`` (None: the
    cache set in use, see :mod:`toolmask._cache`).
    """
    with using(caches):
        p = _Parser(text)
        return p.grammar(p.parse(), p.refs, start)


# -- printer -------------------------------------------------------------------------------------


def gbnf_name(name: str) -> str:
    """camelCase form of an IR rule name, within GBNF's ``[a-zA-Z0-9-]`` (``json_value`` ->
    ``jsonValue``); ``r`` when the name has no alphanumerics."""
    ws = words(name)
    if not ws:
        return "r"
    return ws[0] + "".join(w[:1].upper() + w[1:] for w in ws[1:])


def _char(cp: int, in_class: bool) -> str:
    c = chr(cp)
    if c == "\\":
        return "\\\\"
    if c == "\n":
        return "\\n"
    if c == "\r":
        return "\\r"
    if c == "\t":
        return "\\t"
    if in_class and c in "[]":
        return "\\" + c
    if in_class and c in "-^":  # llguidance's GBNF reader rejects \-; llama.cpp has no \^
        return f"\\x{cp:02X}"
    if not in_class and c == '"':
        return '\\"'
    if cp < 0x20 or cp == 0x7F or (cp >= 0x80 and not c.isprintable()):
        if cp < 0x100:
            return f"\\x{cp:02X}"
        if cp <= 0xFFFF:
            return f"\\u{cp:04X}"
        return f"\\U{cp:08X}"
    return c


def _class(cs: CharSet) -> str:
    negated, shown = class_forms(cs)
    if negated and not shown.ranges:  # any code point; xgrammar has no '.'
        negated, shown = False, CharSet.range(0, 0x10FFFF)
    parts: list[str] = []
    for lo, hi in shown.ranges:
        if lo == hi:
            parts.append(_char(lo, True))
        elif hi == lo + 1:
            parts.append(_char(lo, True) + _char(hi, True))
        else:
            parts.append(f"{_char(lo, True)}-{_char(hi, True)}")
    return ("[^" if negated else "[") + "".join(parts) + "]"


_NOTHING_GBNF = "[^\\x00-\\U0010FFFF]"


def _render(n: CNode, names: dict[str, str], rule: str) -> str:
    if isinstance(n, Text):
        return '"' + "".join(_char(ord(c), False) for c in n.text) + '"'
    if isinstance(n, Class):
        return _NOTHING_GBNF if n.chars.is_empty() else _class(n.chars)
    if isinstance(n, Ref):
        return names[n.name]
    if isinstance(n, Tok):
        return special_text(n.text, dialect="gbnf", rule=rule)
    if isinstance(n, CSeq):
        if not n.items:
            return '""'
        return " ".join(
            f"({_render(i, names, rule)})"
            if isinstance(i, CAlt) and i.items
            else _render(i, names, rule)
            for i in n.items
        )
    if isinstance(n, CAlt):
        if not n.items:
            return _NOTHING_GBNF
        return " | ".join(_render(i, names, rule) for i in n.items)
    inner = _render(n.item, names, rule)
    if isinstance(n.item, (CSeq, CRep)) or (isinstance(n.item, CAlt) and n.item.items):
        inner = f"({inner})"
    return postfix(inner, n.min, n.max, _count)


def _count(lo: int, hi: int) -> str:
    return f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"


def to_gbnf(grammar: Grammar) -> str:
    """Print ``grammar`` in llama.cpp's GBNF dialect, one rule per line, ``root`` first.

    Rule names become camelCase within ``[a-zA-Z0-9-]`` (made unique with ``-2``, ``-3``...
    suffixes); the start rule is always ``root``. Byte classes are printed as code-point classes
    (see :mod:`toolmask.grammar._printing`). Raises :class:`GrammarError` for byte-level
    constructs that are not whole UTF-8 characters, for special tokens not written ``<...>``,
    and for repetition bounds above llama.cpp's limit of 2000.
    """
    order = [grammar.start] + [r.name for r in grammar.rules if r.name != grammar.start]
    names = unique_names(order, gbnf_name, reserved={grammar.start: "root"}, sep="-")
    lines = []
    for name in order:
        body = to_code_points(grammar[name].body, dialect="gbnf", rule=name)
        _check_bounds(body, name)
        lines.append(f"{names[name]} ::= {_render(body, names, name)}")
    return "\n".join(lines) + "\n"


def _check_bounds(n: CNode, rule: str) -> None:
    if isinstance(n, CRep):
        top = max(n.min, n.max or 0)
        if top > MAX_REPETITION:
            raise GrammarError(
                f"gbnf: rule {rule!r}: repetition {{{n.min},{n.max}}} exceeds llama.cpp's limit "
                f"of {MAX_REPETITION}"
            )
        _check_bounds(n.item, rule)
    elif isinstance(n, (CSeq, CAlt)):
        for i in n.items:
            _check_bounds(i, rule)


register_frontend("gbnf", parse_gbnf)
register_printer("gbnf", to_gbnf)
