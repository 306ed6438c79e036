"""The Lark dialect llguidance accepts: :func:`parse_lark` (text -> IR) and :func:`to_lark`.

Supported syntax (see ``docs/grammars.md``):

* rules ``name: alt | alt`` (lowercase, optional ``?``/``!`` prefix, ``_`` allowed) and terminals
  ``NAME: ...`` (uppercase); both become IR rules of the same name (prefix dropped); a
  definition continues on following lines that start with ``|``, and anywhere inside ``( )`` /
  ``[ ]``; priorities ``name.2:`` and the ``[capture]`` option are accepted and ignored;
* ``"strings"`` (Python escapes; ``"..."i`` case-insensitive), ``"a".."z"`` ranges,
  ``/regex/`` (ECMA-262 syntax through :func:`toolmask.grammar._regex.regex_node`; one-character
  classes, the form :func:`to_lark` prints, are read directly), ``( )``, ``[ ]``
  (optional), ``* + ?``, ``~ n``, ``~ n..m`` and llguidance's ``{n}``, ``{n,}``, ``{,m}``,
  ``{n,m}``; ``-> alias`` is ignored; ``//`` and ``#`` comments;
* ``<text>`` -> :class:`Special` (a special token named by its text; not inside terminals);
* ``%import common.X [-> Y]`` / ``%import common (X, Y)`` for a fixed table of common terminals;
  ``%llguidance {...}`` is skipped.

Errors (:class:`GrammarSyntaxError` with line/column): regex flags, ``%ignore``, ``%declare``,
``%json``, ``@subgrammar``, other imports, token ids ``<[...]>``, lexeme options that change
the language (``lazy``, ``stop``, ``suffix``, ``max_tokens``, ``temperature``), a terminal
referring to a rule, undefined names, a missing start rule.

The IR ignores Lark's lexing: the language of the result is the context-free language of the
grammar text, as if every terminal were inlined.
"""

from __future__ import annotations

import re

from toolmask._cache import CacheSet, using
from toolmask.errors import GrammarError, GrammarSyntaxError
from toolmask.grammar._charset import CharSet, utf8_node
from toolmask.grammar._ir import (
    Grammar,
    Node,
    Rule,
    RuleRef,
    Special,
    byte_class,
    choice,
    iter_nodes,
    lit,
    opt,
    plus,
    register_frontend,
    register_printer,
    repeat,
    seq,
    star,
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
from toolmask.grammar.passes._walk import nullable_rules

__all__ = ["COMMON_TERMINALS", "parse_lark", "to_lark"]

_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHARS = _NAME_START | frozenset("0123456789-")
_STRING_ESCAPES = {
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "f": "\f",
    "v": "\v",
    "a": "\a",
    "b": "\b",
    "0": "\0",
    "\\": "\\",
    '"': '"',
    "'": "'",
}
_HEX_LEN = {"x": 2, "u": 4, "U": 8}
_IGNORED_OPTIONS = frozenset({"capture", "stop_capture"})


def _digit() -> Node:
    return byte_class((0x30, 0x39))


def _common() -> dict[str, Node]:
    """Lark's ``common.lark`` terminals, built directly in the IR (no regex module needed)."""
    digit = _digit()
    hexdigit = byte_class((0x30, 0x39), (0x41, 0x46), (0x61, 0x66))
    lcase = byte_class((0x61, 0x7A))
    ucase = byte_class((0x41, 0x5A))
    letter = choice(lcase, ucase)
    integer = plus(digit)
    newline = plus(seq(opt(lit("\r")), lit("\n")))
    string_char = choice(
        utf8_node(CharSet.of('"\\\n').complement()),
        seq(lit("\\"), utf8_node(CharSet.of("\n").complement())),
    )
    decimal = choice(seq(integer, lit("."), star(digit)), seq(lit("."), integer))
    exp = seq(byte_class(0x45, 0x65), opt(byte_class(0x2B, 0x2D)), integer)
    float_ = choice(seq(integer, exp), seq(decimal, opt(exp)))
    number = choice(float_, integer)
    sign = opt(byte_class(0x2B, 0x2D))
    return {
        "DIGIT": digit,
        "HEXDIGIT": hexdigit,
        "INT": integer,
        "SIGNED_INT": seq(sign, integer),
        "DECIMAL": decimal,
        "FLOAT": float_,
        "SIGNED_FLOAT": seq(sign, float_),
        "NUMBER": number,
        "SIGNED_NUMBER": seq(sign, number),
        "LCASE_LETTER": lcase,
        "UCASE_LETTER": ucase,
        "LETTER": letter,
        "WORD": plus(letter),
        "CNAME": seq(choice(lit("_"), letter), star(choice(lit("_"), letter, digit))),
        "WS_INLINE": plus(byte_class(0x20, 0x09)),
        "WS": plus(byte_class(0x20, 0x09, 0x0A, 0x0C, 0x0D)),
        "CR": lit("\r"),
        "LF": lit("\n"),
        "NEWLINE": newline,
        "ESCAPED_STRING": seq(lit('"'), star(string_char), lit('"')),
    }


COMMON_TERMINALS: frozenset[str] = frozenset(_common())
"""The names ``%import common.X`` accepts."""


class _Parser(Scanner):
    source = "lark"
    comments = ("#", "//")

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.refs: list[tuple[str, str, int]] = []  # (from rule, name, pos)
        self.specials: list[tuple[str, int]] = []  # (rule, pos)
        self.current = ""

    def name(self) -> str:
        start = self.pos
        if self.peek() not in _NAME_START or not self.peek():
            raise self.error("expected a name")
        while self.peek() and self.peek() in _NAME_CHARS:
            if self.peek() == "-" and self.peek(1) == ">":
                break
            self.pos += 1
        return self.text[start : self.pos]

    # -- statements ------------------------------------------------------------------------------
    def parse(self) -> list[tuple[Rule, int]]:
        rules: list[tuple[Rule, int]] = []
        while True:
            self.space(True)
            if self.pos >= len(self.text):
                return rules
            start = self.pos
            if self.peek() == "%":
                rules.extend(self.directive())
            else:
                rules.append((self.definition(), start))
            self.end_of_statement()

    def end_of_statement(self) -> None:
        self.space(False)
        if self.peek() and self.peek() not in "\r\n":
            raise self.error(f"unexpected {self.peek()!r}")

    def directive(self) -> list[tuple[Rule, int]]:
        start = self.pos
        self.pos += 1
        word = self.name()
        self.space(False)
        if word == "llguidance":
            self.skip_json(start)
            return []
        if word != "import":
            raise self.error(f"%{word} is not supported", start)
        if not self.text.startswith("common", self.pos):
            raise self.error("only '%import common' is supported", self.pos)
        self.pos += len("common")
        table = _common()
        out: list[tuple[Rule, int]] = []
        if self.peek() == ".":
            self.pos += 1
            at = self.pos
            name = self.name()
            self.space(False)
            alias = name
            if self.text.startswith("->", self.pos):
                self.pos += 2
                self.space(False)
                alias = self.name()
            if name not in table:
                raise self.error(f"common.{name} is not supported", at)
            return [(Rule(alias, table[name]), at)]
        self.space(False)
        if self.peek() != "(":
            raise self.error("expected '.' or '(' after %import common")
        self.pos += 1
        while True:
            self.space(True)
            at = self.pos
            name = self.name()
            if name not in table:
                raise self.error(f"common.{name} is not supported", at)
            out.append((Rule(name, table[name]), at))
            self.space(True)
            if self.peek() == ",":
                self.pos += 1
                continue
            if self.peek() == ")":
                self.pos += 1
                return out
            raise self.error("expected ',' or ')'")

    def skip_json(self, start: int) -> None:
        if self.peek() != "{":
            raise self.error("expected '{'")
        depth = 0
        in_str = False
        while self.pos < len(self.text):
            c = self.text[self.pos]
            self.pos += 1
            if in_str:
                if c == "\\":
                    self.pos += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return
        raise self.error("unterminated JSON object", start)

    def definition(self) -> Rule:
        if self.peek() in ("?", "!"):
            self.pos += 1
        at = self.pos
        name = self.name()
        self.current = name
        if self.peek() == ".":  # priority
            self.pos += 1
            if self.peek() == "-":
                self.pos += 1
            self.integer()
        if self.peek() == "[":
            self.options()
        self.space(False)
        if self.peek() != ":":
            msg = "templates are not supported" if self.peek() == "{" else "expected ':'"
            raise self.error(msg)
        self.pos += 1
        self.space(False)
        body = self.alternates(depth=0)
        if _is_terminal(name):
            for n in iter_nodes(body):
                if isinstance(n, Special):
                    raise self.error(f"terminal {name} cannot contain a special token", at)
        return Rule(name, body)

    def options(self) -> None:
        start = self.pos
        close = self.text.find("]", self.pos)
        if close < 0:
            raise self.error("unterminated options", start)
        for opt_text in self.text[self.pos + 1 : close].split(","):
            key = opt_text.split("=", 1)[0].strip()
            if key and key not in _IGNORED_OPTIONS:
                msg = f"lexeme option {key!r} changes the language; not supported"
                raise self.error(msg, start)
        self.pos = close + 1

    # -- expressions -----------------------------------------------------------------------------
    def alternates(self, depth: int) -> Node:
        alts = [self.sequence(depth)]
        while True:
            self.space(depth > 0)
            if self.peek() == "|":
                self.pos += 1
                self.space(True)
                alts.append(self.sequence(depth))
                continue
            if depth == 0 and self.peek() in ("\r", "\n"):
                save = self.pos
                self.space(True)
                if self.peek() == "|":
                    continue
                self.pos = save
            return choice(*alts)

    def sequence(self, depth: int) -> Node:
        items: list[Node] = []
        while True:
            self.space(depth > 0)
            c = self.peek()
            if not c or c in "|)]\r\n" or (c == "/" and self.peek(1) == "/"):
                return seq(*items)
            if self.text.startswith("->", self.pos):
                self.pos += 2
                self.space(False)
                self.name()
                continue
            items.append(self.postfix(self.atom(depth), depth))

    def postfix(self, node: Node, depth: int) -> Node:
        while True:
            c = self.peek()
            start = self.pos
            if c in ("*", "+", "?"):
                self.pos += 1
                node = repeat(node, *{"*": (0, None), "+": (1, None), "?": (0, 1)}[c])
            elif c == "~":
                self.pos += 1
                self.space(False)
                lo = self.integer()
                hi = lo
                if self.text.startswith("..", self.pos):
                    self.pos += 2
                    hi = self.integer()
                if hi < lo:
                    raise self.error(f"bad repetition ~{lo}..{hi}", start)
                node = repeat(node, lo, hi)
            elif c == "{":
                self.pos += 1
                self.space(False)
                lo = self.integer() if self.peek() != "," else 0
                self.space(False)
                top: int | None = lo
                if self.peek() == ",":
                    self.pos += 1
                    self.space(False)
                    top = self.integer() if self.peek().isdigit() else None
                    self.space(False)
                if self.peek() != "}":
                    raise self.error("expected '}'")
                self.pos += 1
                if top is not None and top < lo:
                    raise self.error(f"bad repetition {{{lo},{top}}}", start)
                node = repeat(node, lo, top)
            else:
                return node

    def atom(self, depth: int) -> Node:
        c = self.peek()
        start = self.pos
        if c == '"':
            text = self.string()
            if self.peek() == "i":
                self.pos += 1
                return seq(*(_caseless(ch) for ch in text))
            if self.text.startswith("..", self.pos):
                self.pos += 2
                at = self.pos
                if self.peek() != '"':
                    raise self.error("expected a string after '..'")
                hi = self.string()
                if len(text) != 1 or len(hi) != 1 or ord(hi) < ord(text):
                    raise self.error("a range needs two single characters, low..high", at)
                return utf8_node(CharSet.range(ord(text), ord(hi)))
            try:
                return lit(text)
            except UnicodeEncodeError:
                raise self.error("a surrogate code point cannot be encoded", start) from None
        if c == "/":
            return self.regex()
        if c in ("(", "["):
            self.pos += 1
            inner = self.alternates(depth + 1)
            self.space(True)
            close = ")" if c == "(" else "]"
            if self.peek() != close:
                raise self.error(f"expected {close!r}" if self.peek() else f"unclosed {c!r}", start)
            self.pos += 1
            return inner if c == "(" else opt(inner)
        if c == "<":
            if self.peek(1) == "[":
                raise self.error("token ids <[N]> are not supported; name the token by its text")
            end = self.text.find(">", self.pos)
            if end < 0 or "\n" in self.text[self.pos : end]:
                raise self.error("unterminated special token <...>", start)
            self.pos = end + 1
            self.specials.append((self.current, start))
            return Special(self.text[start : self.pos])
        if c == "%":
            raise self.error("%json and other inline directives are not supported", start)
        if c == "@":
            raise self.error("subgrammar references @name are not supported", start)
        if c and c in _NAME_START:
            name = self.name()
            self.refs.append((self.current, name, start))
            return RuleRef(name)
        raise self.error(f"unexpected {c!r}" if c else "unexpected end of input")

    def string(self) -> str:
        start = self.pos
        self.pos += 1
        out: list[str] = []
        while True:
            c = self.peek()
            if not c or c in "\r\n":
                raise self.error("unterminated string literal", start)
            if c == '"':
                self.pos += 1
                return "".join(out)
            if c != "\\":
                out.append(c)
                self.pos += 1
                continue
            at = self.pos
            e = self.peek(1)
            if e in _STRING_ESCAPES:
                out.append(_STRING_ESCAPES[e])
                self.pos += 2
            elif e in _HEX_LEN:
                n = _HEX_LEN[e]
                digits = self.text[self.pos + 2 : self.pos + 2 + n]
                if len(digits) != n or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                    raise self.error(f"expected {n} hex digits after \\{e}", at)
                v = int(digits, 16)
                if v > 0x10FFFF:
                    raise self.error(f"code point {v:#x} is above U+10FFFF", at)
                out.append(chr(v))
                self.pos += 2 + n
            else:
                raise self.error(f"unknown escape \\{e}" if e else "unterminated string", at)

    def regex(self) -> Node:
        start = self.pos
        self.pos += 1
        chars: list[str] = []
        while True:
            c = self.peek()
            if not c or c in "\r\n":
                raise self.error("unterminated regex", start)
            if c == "/":
                break
            if c == "\\" and self.peek(1) == "/":
                chars.append("/")
                self.pos += 2
            elif c == "\\" and self.peek(1):
                chars.append(self.text[self.pos : self.pos + 2])
                self.pos += 2
            else:
                chars.append(c)
                self.pos += 1
        body_start = start + 1
        self.pos += 1
        flags_start = self.pos
        while self.peek() and self.peek() in "imslux":
            self.pos += 1
        flags = self.text[flags_start : self.pos]
        if flags:
            raise self.error(f"regex flags /{flags} are not supported", flags_start)
        pattern = "".join(chars)
        simple = _simple_class(pattern)
        if simple is not None:
            return utf8_node(simple)
        from toolmask.grammar._regex import regex_node

        try:
            return regex_node(pattern)
        except GrammarError as e:
            pos = getattr(e, "pos", 0)
            at = body_start + pos if pos <= len(pattern) else start
            msg = e.message if isinstance(e, GrammarSyntaxError) else str(e)
            raise self.error(f"in regex: {msg}", min(at, len(self.text))) from None


_RX_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v", "0": "\0"}


def _simple_class(pattern: str) -> CharSet | None:
    """The set of a one-character regex (``x``, ``\\xHH``, ``[...]``, ``[^...]`` with literal
    characters, escapes and ranges only), or ``None`` for anything else. This is the form
    :func:`to_lark` prints, so printed grammars re-parse without the regex module.
    """
    i = 0

    def char() -> int | None:
        nonlocal i
        if i >= len(pattern):
            return None
        c = pattern[i]
        if c != "\\":
            i += 1
            return ord(c)
        e = pattern[i + 1 : i + 2]
        if e in _RX_ESCAPES:
            i += 2
            return ord(_RX_ESCAPES[e])
        m = re.compile(r"x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|u\{([0-9a-fA-F]{1,6})\}").match(
            pattern, i + 1
        )
        if m:
            i = m.end()
            v = int(next(g for g in m.groups() if g), 16)
            return v if v <= 0x10FFFF else None
        if e and not e.isalnum() and e.isascii() and e.isprintable():
            i += 2
            return ord(e)
        return None

    if not pattern:
        return None
    if pattern[0] != "[":
        if pattern[0] in ".()|*+?{}^$":
            return None
        cp = char()
        return CharSet.range(cp, cp) if cp is not None and i == len(pattern) else None
    i = 1
    negated = pattern[i : i + 1] == "^"
    i += negated
    ranges: list[tuple[int, int]] = []
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "[" or pattern.startswith(("&&", "--", "~~"), i):
            return None
        lo = char()
        if lo is None:
            return None
        hi = lo
        if pattern[i : i + 1] == "-" and pattern[i + 1 : i + 2] not in ("]", ""):
            i += 1
            top = char()
            if top is None or top < lo:
                return None
            hi = top
        ranges.append((lo, hi))
    if i != len(pattern) - 1 or not ranges:
        return None
    cs = CharSet.from_ranges(ranges)
    return cs.complement() if negated else cs


def _caseless(ch: str) -> Node:
    variants = sorted(v for v in {ch, ch.lower(), ch.upper()} if len(v) == 1)
    return choice(*(lit(v) for v in variants))


def _is_terminal(name: str) -> bool:
    stripped = name.lstrip("_")
    return bool(stripped) and stripped[0].isupper()


def parse_lark(text: str, *, start: str = "start", caches: CacheSet | None = None) -> Grammar:
    """Parse the llguidance Lark subset into a :class:`Grammar` whose start rule is ``start``.

    Rules and terminals keep their names (without ``?``/``!``). Raises
    :class:`GrammarSyntaxError` with line/column on anything outside the subset described in
    this module's docstring. Regex terminals need :mod:`toolmask.grammar._regex`. Memoises in
    ``caches`` (None: the cache set in use, see :mod:`toolmask._cache`).
    """
    with using(caches):
        p = _Parser(text)
        parsed = p.parse()
        for owner, name, pos in p.refs:
            if _is_terminal(owner) and not _is_terminal(name):
                raise p.error(f"terminal {owner} cannot refer to rule {name}", pos)
        return p.grammar(parsed, ((name, pos) for _, name, pos in p.refs), start)


# -- printer -------------------------------------------------------------------------------------


def lark_rule_name(name: str) -> str:
    """snake_case lowercase rule name (``jsonValue`` -> ``json_value``)."""
    ws = words(name)
    base = "_".join(w.lower() for w in ws) or "r"
    return base if base[0].isalpha() else "r" + base


def lark_terminal_name(name: str) -> str:
    """SCREAMING_SNAKE terminal name (``jsonString`` -> ``JSON_STRING``)."""
    ws = words(name)
    base = "_".join(w.upper() for w in ws) or "T"
    return base if base[0].isalpha() else "T" + base


def _terminals(grammar: Grammar) -> set[str]:
    """Rules printable as terminals: not the start, no special tokens, not nullable, and
    referring only to terminals (hence not recursive)."""
    nullable = nullable_rules(grammar.rules)
    candidates = {
        r.name
        for r in grammar.rules
        if r.name != grammar.start
        and r.name not in nullable
        and not any(isinstance(n, Special) for n in iter_nodes(r.body))
    }
    terms: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name in sorted(candidates - terms):
            refs = [n.name for n in iter_nodes(grammar[name].body) if isinstance(n, RuleRef)]
            if all(ref in terms for ref in refs):
                terms.add(name)
                changed = True
    return terms


def _rx_char(cp: int) -> str:
    c = chr(cp)
    esc = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "&": "\\x26", "~": "\\x7E", "/": "\\x2F"}
    if c in esc:
        return esc[c]
    if c in "\\]^-[":
        return "\\" + c
    if cp < 0x20 or cp == 0x7F or (cp >= 0x80 and not c.isprintable()):
        if cp < 0x100:
            return f"\\x{cp:02X}"
        if cp <= 0xFFFF:
            return f"\\u{cp:04X}"
        return f"\\u{{{cp:X}}}"
    return c


def _rx_class(cs: CharSet) -> str:
    negated, shown = class_forms(cs)
    if cs.is_empty():
        return "/[^\\x00-\\u{10FFFF}]/"
    if negated and not shown.ranges:
        return "/[\\x00-\\u{10FFFF}]/"
    parts: list[str] = []
    for lo, hi in shown.ranges:
        if lo == hi:
            parts.append(_rx_char(lo))
        elif hi == lo + 1:
            parts.append(_rx_char(lo) + _rx_char(hi))
        else:
            parts.append(f"{_rx_char(lo)}-{_rx_char(hi)}")
    return ("/[^" if negated else "/[") + "".join(parts) + "]/"


def _text_atoms(text: str) -> list[str]:
    """A literal as Lark atoms: printable runs as strings, other characters as regexes."""
    atoms: list[str] = []
    run: list[str] = []
    for c in text:
        if c in "\n\r\t" or c.isprintable():
            run.append({'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, c))
            continue
        if run:
            atoms.append('"' + "".join(run) + '"')
            run = []
        atoms.append("/" + _rx_char(ord(c)) + "/")
    if run or not atoms:
        atoms.append('"' + "".join(run) + '"')
    return atoms


def _render(n: CNode, names: dict[str, str], rule: str) -> str:
    if isinstance(n, Text):
        return " ".join(_text_atoms(n.text)) if n.text else ""
    if isinstance(n, Class):
        return _rx_class(n.chars)
    if isinstance(n, Ref):
        return names[n.name]
    if isinstance(n, Tok):
        return special_text(n.text, dialect="lark", rule=rule)
    if isinstance(n, CSeq):
        return " ".join(_atom(i, names, rule, in_seq=True) for i in n.items)
    if isinstance(n, CAlt):
        if not n.items:
            return _rx_class(CharSet())
        rest = [i for i in n.items if i != Text("")]
        if len(rest) < len(n.items):  # an empty alternative: print as optional
            if not rest:
                return ""
            return _render(CRep(CAlt(tuple(rest)) if len(rest) > 1 else rest[0], 0, 1), names, rule)
        return " | ".join(_render(i, names, rule) for i in n.items)
    inner = _atom(n.item, names, rule, in_seq=False)
    return postfix(inner, n.min, n.max, _count)


def _count(lo: int, hi: int) -> str:
    return f"~{lo}" if lo == hi else f"~{lo}..{hi}"


def _atom(n: CNode, names: dict[str, str], rule: str, *, in_seq: bool) -> str:
    """Render ``n`` so that it binds as one unit (in a sequence, or under a postfix operator)."""
    s = _render(n, names, rule)
    if isinstance(n, Text):
        return s if in_seq or len(_text_atoms(n.text)) == 1 else f"({s})"
    if isinstance(n, CAlt) and len(n.items) > 1:
        return f"({s})"
    if isinstance(n, CAlt) and n.items and Text("") in n.items and not in_seq:
        return f"({s})"
    if not in_seq and isinstance(n, (CSeq, CRep)):
        return f"({s})"
    return s


def to_lark(grammar: Grammar) -> str:
    """Print ``grammar`` as llguidance Lark: ``start`` first, one definition per line.

    Rules that are regular, non-nullable and free of special tokens become UPPERCASE terminals
    (one lexeme each); the others become lowercase rules. Code-point classes print as ``/[...]/``
    regexes. Raises :class:`GrammarError` for byte-level constructs that are not whole UTF-8
    characters and for special tokens not written ``<...>``.
    """
    order = [grammar.start] + [r.name for r in grammar.rules if r.name != grammar.start]
    terms = _terminals(grammar)

    def convert(name: str) -> str:
        return lark_terminal_name(name) if name in terms else lark_rule_name(name)

    names = unique_names(order, convert, reserved={grammar.start: "start"}, sep="_")
    lines = []
    for name in order:
        body = to_code_points(grammar[name].body, dialect="lark", rule=name)
        text = _render(body, names, name)
        lines.append(f"{names[name]}: {text}".rstrip())
    return "\n".join(lines) + "\n"


register_frontend("lark", parse_lark)
register_printer("lark", to_lark)
