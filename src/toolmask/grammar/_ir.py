"""The grammar IR: plain, frozen, hashable data.

A :class:`Grammar` is a set of named :class:`Rule` s whose bodies are trees of nodes:

* :class:`Bytes`      a literal byte string (``b""`` is the empty string, epsilon)
* :class:`ByteClass`  one byte out of a set, a 256-bit integer mask (bit ``b`` = byte ``b``)
* :class:`Seq`        concatenation
* :class:`Choice`     alternation (an empty choice matches nothing)
* :class:`Repeat`     ``item{min,max}``; ``max=None`` is unbounded
* :class:`RuleRef`    a reference to another rule by name
* :class:`Special`    one special (control) token of the vocabulary, by its text (never bytes)

Everything below the IR works on bytes: text is UTF-8 encoded by the frontends, once.
Nodes have value equality, so grammars can be compared, hashed, cached and diffed; ``str(node)``
prints EBNF.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from toolmask._frozen import fast_init
from toolmask.errors import GrammarError

__all__ = [
    "ALL_BYTES",
    "EMPTY",
    "NOTHING",
    "ByteClass",
    "Bytes",
    "Choice",
    "Frontend",
    "Grammar",
    "Node",
    "PostCheck",
    "Printer",
    "Repeat",
    "Rule",
    "RuleRef",
    "Seq",
    "Special",
    "byte_class",
    "byte_range",
    "choice",
    "frontend",
    "iter_nodes",
    "lit",
    "node_bytes",
    "node_count",
    "opt",
    "plus",
    "printer",
    "register_frontend",
    "register_printer",
    "repeat",
    "seq",
    "star",
    "trusted_grammar",
]

_FULL_MASK = (1 << 256) - 1


@fast_init
@dataclass(frozen=True, slots=True)
class Bytes:
    """A literal byte string; ``Bytes(b"")`` matches the empty string."""

    value: bytes

    def __str__(self) -> str:
        return _quote_bytes(self.value)


@fast_init
@dataclass(frozen=True, slots=True)
class ByteClass:
    """One byte from a set. ``mask`` is a 256-bit int: bit ``b`` set means byte ``b`` is allowed."""

    mask: int

    def __post_init__(self) -> None:
        if not 0 <= self.mask <= _FULL_MASK:
            raise ValueError("ByteClass mask must be a 256-bit non-negative integer")

    def __contains__(self, byte: int) -> bool:
        return bool((self.mask >> byte) & 1)

    def ranges(self) -> list[tuple[int, int]]:
        """Inclusive ``(lo, hi)`` runs of set bits, ascending."""
        out: list[tuple[int, int]] = []
        m = self.mask
        b = 0
        while m:
            if m & 1:
                lo = b
                while m & 1:
                    m >>= 1
                    b += 1
                out.append((lo, b - 1))
            else:
                # skip a run of zeros quickly
                tz = (m & -m).bit_length() - 1
                m >>= tz
                b += tz
        return out

    def bytes(self) -> list[int]:
        return [b for lo, hi in self.ranges() for b in range(lo, hi + 1)]

    def is_empty(self) -> bool:
        return self.mask == 0

    def negate(self) -> ByteClass:
        return ByteClass(_FULL_MASK ^ self.mask)

    def __str__(self) -> str:
        if self.mask == _FULL_MASK:
            return "[\\x00-\\xff]"
        parts = []
        for lo, hi in self.ranges():
            if lo == hi:
                parts.append(_class_char(lo))
            elif hi == lo + 1:
                parts.append(_class_char(lo) + _class_char(hi))
            else:
                parts.append(f"{_class_char(lo)}-{_class_char(hi)}")
        return "[" + "".join(parts) + "]"


@fast_init
@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple[Node, ...]
    _hash: int = field(default=-1, init=False, repr=False, compare=False)
    #: made by :func:`seq`: its items are flattened, no literal is empty or next to another
    #: and none matches nothing, so a sequence it is spliced into takes them as they are
    _normal: bool = field(default=False, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = hash((Seq, self.items))
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self) -> tuple[type, tuple[tuple[Node, ...]]]:
        return (Seq, (self.items,))

    def __str__(self) -> str:
        if not self.items:
            return '""'
        return " ".join(_wrap(i, Seq) for i in self.items)


@fast_init
@dataclass(frozen=True, slots=True)
class Choice:
    items: tuple[Node, ...]
    _hash: int = field(default=-1, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = hash((Choice, self.items))
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self) -> tuple[type, tuple[tuple[Node, ...]]]:
        return (Choice, (self.items,))

    def __str__(self) -> str:
        if not self.items:
            return "[]"  # the empty byte class: matches nothing
        return " | ".join(_wrap(i, Choice) for i in self.items)


@fast_init
@dataclass(frozen=True, slots=True)
class Repeat:
    item: Node
    min: int = 0
    max: int | None = None
    _hash: int = field(default=-1, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.min < 0 or (self.max is not None and self.max < self.min):
            raise ValueError(f"bad repetition bounds {{{self.min},{self.max}}}")

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = hash((Repeat, self.item, self.min, self.max))
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self) -> tuple[type, tuple[Node, int, int | None]]:
        return (Repeat, (self.item, self.min, self.max))

    def __str__(self) -> str:
        inner = _wrap(self.item, Repeat)
        if (self.min, self.max) == (0, None):
            return inner + "*"
        if (self.min, self.max) == (1, None):
            return inner + "+"
        if (self.min, self.max) == (0, 1):
            return inner + "?"
        if self.max is None:
            return f"{inner}{{{self.min},}}"
        if self.min == self.max:
            return f"{inner}{{{self.min}}}"
        return f"{inner}{{{self.min},{self.max}}}"


@fast_init
@dataclass(frozen=True, slots=True)
class RuleRef:
    name: str

    def __str__(self) -> str:
        return self.name


@fast_init
@dataclass(frozen=True, slots=True)
class Special:
    """A special token of the vocabulary, named by its text (e.g. ``"<tool_call>"``)."""

    text: str

    def __str__(self) -> str:
        return f"<{self.text!r}>"


Node: TypeAlias = Bytes | ByteClass | Seq | Choice | Repeat | RuleRef | Special

EMPTY: Node = Bytes(b"")
NOTHING: Node = Choice(())
ALL_BYTES = ByteClass(_FULL_MASK)


@fast_init
@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    body: Node

    def __str__(self) -> str:
        return f"{self.name} ::= {self.body}"


@fast_init
@dataclass(frozen=True, slots=True)
class PostCheck:
    """A check run on the finished document after decoding (what a grammar cannot say).

    ``schema_json`` is the JSON text of the full schema the document must satisfy;
    ``keywords`` lists ``(json_pointer, keyword)`` pairs left, wholly or partly, to this check;
    ``resources_json`` is a JSON object mapping URIs to documents that ``$ref`` may name.
    """

    schema_json: str
    keywords: tuple[tuple[str, str], ...] = ()
    resources_json: str = ""


@dataclass(frozen=True, slots=True)
class Grammar:
    """A set of rules with a start rule, plus the post-decode checks.

    Invariants (checked on construction): rule names are unique, ``start`` is defined and every
    :class:`RuleRef` names a defined rule. ``hint``: what to do instead when the grammar is too
    large to compile (a tool turn's names :meth:`ToolTurn.compile`); not part of its identity.
    """

    rules: tuple[Rule, ...]
    start: str = "root"
    checks: tuple[PostCheck, ...] = ()
    _by_name: Mapping[str, Rule] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    hint: str = field(default="", repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        by_name: dict[str, Rule] = {}
        for r in self.rules:
            if r.name in by_name:
                raise GrammarError(f"rule {r.name!r} is defined twice")
            by_name[r.name] = r
        if self.start not in by_name:
            raise GrammarError(f"start rule {self.start!r} is not defined")
        # every node object once: subtrees are shared (a character class in every rule of a
        # string's DFA, a key tree), so this is O(distinct node objects), not O(tree size)
        seen: set[int] = set()
        for r in self.rules:
            _check_refs(r, by_name, seen)
        object.__setattr__(self, "_by_name", by_name)

    def with_rule(self, name: str, body: Node, *, refs: bool = True) -> Grammar:
        """This grammar with the body of its rule ``name`` replaced by ``body``: the same
        invariants, checked on ``body`` alone (the other rules were checked when this grammar
        was made), so the cost is O(rules) to copy the tuple plus O(nodes of ``body``): a
        tool turn's name filter changes its choice of names this way (``NameSlots``).
        ``refs=False``: the caller made ``body`` without rule references (a choice of names),
        so it is not walked for them (the kernel still refuses an undefined rule when the
        grammar is compiled)."""
        if name not in self._by_name:
            raise GrammarError(f"rule {name!r} is not defined")
        rule = Rule(name, body)
        if refs:
            _check_refs(rule, self._by_name, set())
        g = object.__new__(Grammar)
        object.__setattr__(g, "rules", tuple(rule if r.name == name else r for r in self.rules))
        object.__setattr__(g, "start", self.start)
        object.__setattr__(g, "checks", self.checks)
        object.__setattr__(g, "hint", self.hint)
        object.__setattr__(g, "_by_name", {**self._by_name, name: rule})
        return g

    # -- access -------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Rule:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def rule_names(self) -> list[str]:
        return [r.name for r in self.rules]

    def fingerprint(self) -> str:
        """A stable hex digest of the rules, start and checks (cache key across processes)."""
        h = hashlib.sha256()
        h.update(self.start.encode())
        for r in self.rules:
            h.update(b"\x00" + repr(r).encode("utf-8", "surrogatepass"))
        for c in self.checks:
            h.update(b"\x01" + repr(c).encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def with_checks(self, checks: Iterable[PostCheck]) -> Grammar:
        return Grammar(self.rules, self.start, tuple(checks))

    def __str__(self) -> str:
        """EBNF: one ``name ::= body`` line per rule, start rule first."""
        ordered = [self[self.start]] + [r for r in self.rules if r.name != self.start]
        return "\n".join(str(r) for r in ordered) + "\n"

    # -- constructors and printers (registered by the frontends) --------------------------------
    @classmethod
    def from_gbnf(cls, text: str, *, start: str = "root") -> Grammar:
        """Parse llama.cpp's GBNF dialect (see :func:`toolmask.grammar.parse_gbnf`)."""
        return frontend("gbnf")(text, start=start)

    @classmethod
    def from_lark(cls, text: str, *, start: str = "start") -> Grammar:
        """Parse the Lark subset llguidance accepts (see :func:`toolmask.grammar.parse_lark`)."""
        return frontend("lark")(text, start=start)

    @classmethod
    def from_regex(cls, pattern: str) -> Grammar:
        """A grammar whose language is the set of strings the ECMA-262 ``pattern`` fully matches."""
        return frontend("regex")(pattern)

    @classmethod
    def from_json_schema(cls, schema: object, **options: Any) -> Grammar:
        """Compile a JSON Schema (see :func:`toolmask.schema.compile_json_schema`)."""
        return frontend("json_schema")(schema, **options)

    @classmethod
    def json(cls, **options: Any) -> Grammar:
        """Any JSON value (same options as :meth:`from_json_schema`)."""
        return frontend("json_schema")(True, **options)

    def to_gbnf(self) -> str:
        """GBNF text (see :func:`toolmask.grammar.to_gbnf`)."""
        return printer("gbnf")(self)

    def to_lark(self) -> str:
        """Lark text (see :func:`toolmask.grammar.to_lark`)."""
        return printer("lark")(self)


# -- frontends and printers ---------------------------------------------------------------------
#
# The IR knows no frontend: each one registers itself here when its module is imported (the
# grammar package's own, GBNF, Lark and regex, by ``toolmask.grammar``; JSON Schema by
# ``toolmask.schema``, a later stage), so the ``Grammar.from_*`` constructors work without this
# module importing any of them. ``import toolmask`` imports both packages.

Frontend = Callable[..., Grammar]
Printer = Callable[[Grammar], str]

_FRONTENDS: dict[str, Frontend] = {}
_PRINTERS: dict[str, Printer] = {}


def register_frontend(name: str, parse: Frontend) -> None:
    """Make ``parse`` the frontend ``Grammar.from_<name>`` calls (a later one replaces it)."""
    _FRONTENDS[name] = parse


def register_printer(name: str, render: Printer) -> None:
    """Make ``render`` the printer ``Grammar.to_<name>`` calls."""
    _PRINTERS[name] = render


def frontend(name: str) -> Frontend:
    """The frontend registered as ``name``; LookupError naming the package to import when none
    is (``json_schema`` comes with ``toolmask.schema``)."""
    parse = _FRONTENDS.get(name)
    if parse is None:
        raise LookupError(f"no {name} frontend is registered: import {_PROVIDERS[name]}")
    return parse


def printer(name: str) -> Printer:
    """The printer registered as ``name`` (LookupError when none is)."""
    render = _PRINTERS.get(name)
    if render is None:
        raise LookupError(f"no {name} printer is registered: import {_PROVIDERS[name]}")
    return render


#: which package registers each frontend and printer
_PROVIDERS = {
    "gbnf": "toolmask.grammar",
    "lark": "toolmask.grammar",
    "regex": "toolmask.grammar",
    "json_schema": "toolmask.schema",
}


def trusted_grammar(
    rules: tuple[Rule, ...], start: str, checks: tuple[PostCheck, ...] = ()
) -> Grammar:
    """A :class:`Grammar` from a generator that defines every rule it refers to (the schema
    lowering): the names are indexed, but the walk over every node that checks each
    :class:`RuleRef` (O(distinct nodes), 10-100 µs on a tool schema's grammar) is skipped. The
    kernel's ``Flat`` still refuses an undefined rule when the grammar is compiled. Rule names
    must be unique and ``start`` defined (checked)."""
    by_name = {r.name: r for r in rules}
    if len(by_name) != len(rules) or start not in by_name:
        return Grammar(rules, start, checks)  # the checked constructor names the fault
    g = object.__new__(Grammar)
    object.__setattr__(g, "rules", rules)
    object.__setattr__(g, "start", start)
    object.__setattr__(g, "checks", checks)
    object.__setattr__(g, "_by_name", by_name)
    return g


def _check_refs(rule: Rule, by_name: Mapping[str, Rule], seen: set[int]) -> None:
    """Raise when a :class:`RuleRef` in ``rule`` names no rule of ``by_name``; node objects in
    ``seen`` were checked already (and those checked here are added)."""
    stack: list[Node] = [rule.body]
    while stack:
        n = stack.pop()
        if type(n) is Seq or type(n) is Choice:
            for it in n.items:
                if type(it) is Bytes or type(it) is ByteClass:
                    continue
                if type(it) is RuleRef:
                    if it.name not in by_name:
                        raise _undefined(rule.name, it.name)
                elif id(it) not in seen:
                    seen.add(id(it))
                    stack.append(it)
        elif type(n) is Repeat:
            if id(n.item) not in seen:
                seen.add(id(n.item))
                stack.append(n.item)
        elif type(n) is RuleRef and n.name not in by_name:
            raise _undefined(rule.name, n.name)


def _undefined(rule: str, ref: str) -> GrammarError:
    return GrammarError(f"rule {rule!r} refers to undefined rule {ref!r}")


# -- smart constructors -------------------------------------------------------------------------


def lit(value: bytes | str) -> Node:
    """A literal; ``str`` is UTF-8 encoded."""
    return Bytes(value.encode("utf-8") if isinstance(value, str) else value)


def byte_class(*items: int | tuple[int, int]) -> ByteClass:
    """``byte_class(0x41, (0x61, 0x7A))``: single bytes or inclusive ranges."""
    mask = 0
    for it in items:
        if isinstance(it, tuple):
            lo, hi = it
            if not 0 <= lo <= hi <= 255:
                raise ValueError(f"bad byte range {lo}-{hi}")
            mask |= ((1 << (hi - lo + 1)) - 1) << lo
        else:
            if not 0 <= it <= 255:
                raise ValueError(f"bad byte {it}")
            mask |= 1 << it
    return ByteClass(mask)


def byte_range(lo: int, hi: int) -> ByteClass:
    return byte_class((lo, hi))


def seq(*items: Node) -> Node:
    """Concatenation, flattened; adjacent literals fused; a NOTHING item makes it NOTHING."""
    flat: list[Node] = []
    for it in items:
        tp = type(it)
        # an item that is not a sequence is read in place (no one-item tuple, no inner loop):
        # most items are a rule reference, a literal or a class
        if tp is Seq:
            parts = it.items  # type: ignore[union-attr]
            if it._normal:  # type: ignore[union-attr]
                # what the loop below does to such items: only the first may fuse
                first = parts[0]
                if type(first) is Bytes and flat and type(flat[-1]) is Bytes:
                    flat[-1] = Bytes(flat[-1].value + first.value)
                    flat.extend(parts[1:])
                else:
                    flat.extend(parts)
                continue
            for p in parts:
                tp = type(p)
                if tp is Bytes:
                    value = p.value  # type: ignore[union-attr]
                    if not value:
                        continue
                    if flat and type(flat[-1]) is Bytes:
                        flat[-1] = Bytes(flat[-1].value + value)
                        continue
                elif tp is ByteClass:
                    if p.mask == 0:  # type: ignore[union-attr]
                        return NOTHING
                elif tp is Choice and not p.items:  # type: ignore[union-attr]
                    return NOTHING
                flat.append(p)
            continue
        if tp is Bytes:
            value = it.value  # type: ignore[union-attr]
            if not value:
                continue
            if flat and type(flat[-1]) is Bytes:
                flat[-1] = Bytes(flat[-1].value + value)
                continue
        elif tp is ByteClass:
            if it.mask == 0:  # type: ignore[union-attr]
                return NOTHING
        elif tp is Choice and not it.items:  # type: ignore[union-attr]
            return NOTHING
        flat.append(it)
    if not flat:
        return EMPTY
    if len(flat) == 1:
        return flat[0]
    node = _new(Seq)
    _seq_items(node, tuple(flat))
    _seq_hash(node, -1)
    _seq_normal(node, True)
    return node


_new = object.__new__
#: the slots of a Seq, set by seq() without the constructor's call
_seq_items = Seq.__dict__["items"].__set__
_seq_hash = Seq.__dict__["_hash"].__set__
_seq_normal = Seq.__dict__["_normal"].__set__


def choice(*items: Node) -> Node:
    """Alternation, flattened and de-duplicated (order kept); NOTHING branches dropped."""
    if len(items) == 1:
        # one alternative that is not a choice: itself, unless it is the empty class (what
        # the loop below gives, without hashing the alternative's tree)
        one = items[0]
        tp = type(one)
        if tp is not Choice and (tp is not ByteClass or one.mask != 0):  # type: ignore[union-attr]
            return one
    elif len(items) == 2:
        # two alternatives, neither a choice nor one byte (most calls: a member or the rest of
        # an object, a value's types): what the loop below gives, without its bookkeeping
        a, b = items
        ta, tb = type(a), type(b)
        if (
            ta is not Choice
            and tb is not Choice
            and ta is not ByteClass
            and tb is not ByteClass
            and (ta is not Bytes or len(a.value) != 1)  # type: ignore[union-attr]
            and (tb is not Bytes or len(b.value) != 1)  # type: ignore[union-attr]
        ):
            if a is b or (ta is tb and a == b):
                return a
            node = _new(Choice)
            _choice_items(node, items)
            _choice_hash(node, -1)
            return node
    flat: list[Node] = []
    # the alternatives kept so far, once there are _SCANNED of them (before: a scan of flat by
    # equality, which does not hash the alternatives' trees, most of them new)
    seen: set[Node] | None = None
    singles = 0  # alternatives of one byte (a class or a one-byte literal)
    # the alternatives in order, a choice's own spliced in (most calls have none: the items)
    parts: tuple[Node, ...] | list[Node] = items
    for it in items:
        if type(it) is Choice:
            parts = [p for it in items for p in (it.items if type(it) is Choice else (it,))]
            break
    for p in parts:
        tp = type(p)
        if tp is ByteClass:
            if p.mask == 0:  # type: ignore[union-attr]
                continue
            single = True
        else:
            single = tp is Bytes and len(p.value) == 1  # type: ignore[union-attr]
        if seen is None:
            for q in flat:
                if q is p or (type(q) is tp and q == p):
                    break
            else:
                flat.append(p)
                singles += single
                if len(flat) == _SCANNED:
                    seen = set(flat)
        elif p not in seen:
            seen.add(p)
            flat.append(p)
            singles += single
    # merge single-byte alternatives into one class
    if singles > 1:
        mask = 0
        first = -1
        rest: list[Node] = []
        for p in flat:
            m = _single_byte_mask(p)
            if m is None:
                rest.append(p)
            else:
                if first < 0:
                    first = len(rest)
                mask |= m
        flat = [*rest[:first], ByteClass(mask), *rest[first:]]
    if not flat:
        return NOTHING
    if len(flat) == 1:
        return flat[0]
    node = _new(Choice)
    _choice_items(node, tuple(flat))
    _choice_hash(node, -1)
    return node


#: the slots of a Choice, set by choice() without the constructor's call
_choice_items = Choice.__dict__["items"].__set__
_choice_hash = Choice.__dict__["_hash"].__set__


#: alternatives up to which choice() looks for a repeated one by a scan rather than a set
_SCANNED = 8


def repeat(item: Node, lo: int = 0, hi: int | None = None) -> Node:
    if hi == 0 or item == EMPTY:
        return EMPTY
    if item == NOTHING:
        return EMPTY if lo == 0 else NOTHING
    if lo == 1 and hi == 1:
        return item
    return Repeat(item, lo, hi)


def opt(item: Node) -> Node:
    return repeat(item, 0, 1)


def star(item: Node) -> Node:
    return repeat(item, 0, None)


def plus(item: Node) -> Node:
    return repeat(item, 1, None)


def iter_nodes(node: Node) -> Iterator[Node]:
    """Pre-order walk of a node tree (iterative; safe for deep trees)."""
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (Seq, Choice)):
            stack.extend(reversed(n.items))
        elif isinstance(n, Repeat):
            stack.append(n.item)


def node_bytes(node: Node) -> int:
    """An estimate of the bytes an IR tree holds (a node and its slots, about 96 bytes each;
    shared subtrees are counted once per use). O(tree size)."""
    return 96 * node_count(node)


def node_count(node: Node, known: Mapping[int, int] | None = None) -> int:
    """The nodes of an IR tree, shared subtrees once per use (what :func:`node_bytes` counts);
    ``known``: counts of subtrees already counted, by ``id``, taken from there instead of
    walking them again. O(tree size)."""
    n = 0
    stack: list[Node] = [node]
    while stack:
        x = stack.pop()
        if known is not None:
            k = known.get(id(x))
            if k is not None:
                n += k
                continue
        n += 1
        t = type(x)
        if t is Seq or t is Choice:
            stack.extend(x.items)  # type: ignore[union-attr]
        elif t is Repeat:
            stack.append(x.item)  # type: ignore[union-attr]
    return n


# -- printing helpers ---------------------------------------------------------------------------


def _single_byte_mask(n: Node) -> int | None:
    if isinstance(n, ByteClass):
        return n.mask
    if isinstance(n, Bytes) and len(n.value) == 1:
        return 1 << n.value[0]
    return None


def _wrap(node: Node, parent: type) -> str:
    s = str(node)
    if isinstance(node, Choice) and node.items and parent is not Choice:
        return f"({s})"
    if isinstance(node, Seq) and parent is Repeat:
        return f"({s})"
    if isinstance(node, Repeat) and parent is Repeat:
        return f"({s})"
    return s


def _quote_bytes(b: bytes) -> str:
    try:
        text = b.decode("utf-8")
    except UnicodeDecodeError:
        return '"' + "".join(_byte_escape(x) for x in b) + '"'
    out = []
    for ch in text:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _byte_escape(b: int) -> str:
    if 0x20 <= b < 0x7F and chr(b) not in '"\\':
        return chr(b)
    return f"\\x{b:02x}"


def _class_char(b: int) -> str:
    if 0x20 <= b < 0x7F and chr(b) not in "]\\^-[":
        return chr(b)
    return f"\\x{b:02x}"


def _json_dumps(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
