"""String and number languages as code-point DFAs, built once and cached.

Numbers are languages over their JSON text. A DFA for a set of numbers always contains every
exponent-free spelling of each value it holds (``1``, ``1.0``, ``-0``), so complements and
intersections are exact in value terms; exponent spellings appear only in the unconstrained
number rule. Strings are languages over the *decoded* value; the lowering adds the canonical
JSON escapes.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal

from toolmask._cache import memo
from toolmask.grammar import (
    ANY_CHAR,
    CharSet,
    Dfa,
    Node,
    RCat,
    anchored_chain,
    byte_class,
    choice,
    dfa_bytes,
    lit,
    node_bytes,
    parse_full_match,
    regex_ast_node,
    regex_backreferences,
    regex_dfa,
    repeat,
    seq,
)
from toolmask.limits import DEFAULT_LIMITS, Limits
from toolmask.schema._json_text import json_string_char, multiple_of_dfa
from toolmask.schema._numbers import integer_regex, length_bands, number_regex

__all__ = [
    "RangeLang",
    "any_string",
    "dfa_and",
    "int_plain",
    "int_value",
    "lcm",
    "multiples_dfa",
    "num_noexp",
    "number_literal_dfa",
    "number_range_dfa",
    "pattern_dfa",
    "pattern_node",
    "range_lang",
    "string_literals_dfa",
]

_INT = r"-?(?:0|[1-9][0-9]*)"


@functools.cache
def num_noexp() -> Dfa:
    return regex_dfa(_INT + r"(?:\.[0-9]+)?", search=False)


@functools.cache
def int_value() -> Dfa:
    """Integral values, every exponent-free spelling (``3``, ``3.0``, ``-0.00``)."""
    return regex_dfa(_INT + r"(?:\.0+)?", search=False)


@functools.cache
def int_plain() -> Dfa:
    """Integral values written without a fraction, as tools expect them."""
    return regex_dfa(_INT, search=False)


@functools.cache
def any_string() -> Dfa:
    return Dfa.any_string(ANY_CHAR)


def number_literal_dfa(value: Decimal) -> Dfa:
    """Every exponent-free spelling of one numeric value."""
    return regex_dfa(_number_literal_regex(value), search=False)


def _number_literal_regex(value: Decimal) -> str:
    if value == 0:
        return r"-?0(?:\.0+)?"
    text = format(value, "f")
    sign = ""
    if text.startswith("-"):
        sign, text = "-", text[1:]
    if "." in text:
        whole, frac = text.split(".", 1)
        frac = frac.rstrip("0")
    else:
        whole, frac = text, ""
    whole = whole.lstrip("0") or "0"
    if frac:
        return re.escape(sign) + whole + r"\." + frac + "0*"
    return re.escape(sign) + whole + r"(?:\.0+)?"


def number_range_dfa(
    *,
    integer: bool,
    lo: Decimal | None,
    lo_excl: bool,
    hi: Decimal | None,
    hi_excl: bool,
    multiple_of: tuple[Decimal, ...],
    limits: Limits = DEFAULT_LIMITS,
) -> Dfa:
    """Exponent-free spellings of the numbers in a range that are multiples of every ``k``."""
    if integer:
        ilo = None if lo is None else _int_ceil(lo, lo_excl)
        ihi = None if hi is None else _int_floor(hi, hi_excl)
        rx = integer_regex(ilo, ihi)
    else:
        rx = number_regex(lo, lo_excl, hi, hi_excl) if (lo is not None or hi is not None) else None
        if rx is None and lo is None and hi is None:
            rx = _INT + r"(?:\.[0-9]+)?"
    if rx is None:
        return Dfa.empty()
    d = regex_dfa(rx, search=False, limits=limits)
    if lo is None and hi is None and not integer:
        d = d.intersect(num_noexp(), limits=limits)
    for k in multiple_of:
        d = d.intersect(multiple_of_dfa(k, integer_only=integer), limits=limits)
    return d


def lcm(a: Decimal, b: Decimal) -> Decimal:
    """The least common multiple of two positive decimals: a number is a multiple of both iff
    it is a multiple of this one. With ``s`` the larger count of fraction digits, both are
    integers times ``10**-s``, and so is their least common multiple."""
    s = max(-int(x.normalize().as_tuple().exponent) for x in (a, b))
    s = max(s, 0)
    scale = Decimal(10) ** s
    ia, ib = int(a * scale), int(b * scale)
    return (Decimal(ia * ib // math.gcd(ia, ib)) / scale).normalize()


def multiples_dfa(k: Decimal, *, integer: bool, limits: Limits = DEFAULT_LIMITS) -> Dfa:
    """The exponent-free spellings of the multiples of ``k`` (integers only with ``integer``):
    what ``{"multipleOf": k}`` alone compiles to."""
    return number_range_dfa(
        integer=integer,
        lo=None,
        lo_excl=False,
        hi=None,
        hi_excl=False,
        multiple_of=(k,),
        limits=limits,
    )


@dataclass(frozen=True, slots=True)
class RangeLang:
    """A number range's language kept as regexes, its DFA built only when an intersection,
    union or complement needs it (``regex_dfa(rx)``, what :func:`number_range_dfa` builds
    for the same range without ``multipleOf``)."""

    #: every exponent-free spelling of the values in range (integers: with ``.0+`` too)
    rx: str
    #: integers: the spellings a grammar writes (no fraction); None for a number range
    plain: str | None
    #: the grammar's node: ``plain``'s language for integers, else ``rx``'s (built from the
    #: regex's syntax tree; derived from ``rx``, so not part of equality)
    node: Node = field(compare=False)


#: what :func:`~toolmask.schema._numbers.integer_regex` appends for the ``.0+`` spellings
_FRACTION = r"(?:\.0+)?"


def range_lang(
    *,
    integer: bool,
    lo: Decimal | None,
    lo_excl: bool,
    hi: Decimal | None,
    hi_excl: bool,
    limits: Limits = DEFAULT_LIMITS,
) -> RangeLang | None:
    r"""The range (at least one bound) as a :class:`RangeLang`, None when it is empty. Raises
    what ``number_range_dfa`` raises before it determinises (the regex's syntax limits and
    NFA bound), so both routes refuse the same schemas. One parse: an integer range's ``plain``
    is ``rx`` without its last item (``(?:\.0+)?``), a subtree of ``rx``'s, so it passes the
    checks ``rx`` passes. Memoised in the cache set in use."""
    return _range_lang(integer, lo, lo_excl, hi, hi_excl, limits)[0]


def _range_bytes(v: tuple[RangeLang | None]) -> int:
    r = v[0]
    return 64 if r is None else 200 + 2 * len(r.rx) + node_bytes(r.node)


@memo("schema.number_ranges", limit="max_memo_entries", entry_bytes=_range_bytes)
def _range_lang(
    integer: bool,
    lo: Decimal | None,
    lo_excl: bool,
    hi: Decimal | None,
    hi_excl: bool,
    limits: Limits,
) -> tuple[RangeLang | None]:
    assert lo is not None or hi is not None
    plain: str | None = None
    if integer:
        ilo = None if lo is None else _int_ceil(lo, lo_excl)
        ihi = None if hi is None else _int_floor(hi, hi_excl)
        rx = integer_regex(ilo, ihi)
    else:
        rx = number_regex(lo, lo_excl, hi, hi_excl)
    if rx is None:
        return (None,)
    cap = max(8 * limits.max_dfa_states, 1_000)
    if integer:
        direct = _int_range_node(ilo, ihi, cap, limits.max_regex_nesting)
    else:
        direct = _range_node(rx, integer, cap, limits.max_regex_nesting)
    if direct is not None:
        return (RangeLang(rx, rx[: -len(_FRACTION)] if integer else None, direct),)
    ast = parse_full_match(rx, limits=limits)
    if integer:
        assert rx.endswith(_FRACTION) and isinstance(ast, RCat), rx
        plain = rx[: -len(_FRACTION)]
        rest = ast.items[:-1]
        ast = rest[0] if len(rest) == 1 else RCat(rest)
    node = regex_ast_node(ast)
    assert node is not None  # generated regexes have no assertions
    return (RangeLang(rx, plain, node),)


#: the characters of the generated range regexes that :func:`_range_node` reads as literals
_RANGE_LITS = frozenset("0123456789-")


def _range_node(rx: str, integer: bool, cap: int, max_nesting: int) -> Node | None:
    r"""``regex_ast_node`` of ``parse_full_match(rx)`` (less the ``(?:\.0+)?`` tail for an
    integer range) read straight from a generated range regex, without its syntax tree: the
    same smart constructors on the same items in the same order give the same node. Only the
    generators' syntax is read (digits, ``-``, ``\.``, ``[a-b]``, ``(?:...)``, ``|``, ``?``,
    ``*``, ``+``, ``{n}``, ``{n,}``); anything else, an NFA bound past ``cap`` or groups
    nested deeper than ``max_nesting`` (the checks ``parse_full_match`` makes, computed as it
    does) gives None and the caller parses, which raises. One pass, O(len(rx))."""
    n, pos, depth = len(rx), 0, 0
    # the items of the last top-level alternative read, and where its last item starts
    top_items: list[Node] = []
    last_start = -1

    def disjunction() -> tuple[list[Node], int] | None:
        # the alternatives (each a node and its NFA bound) and, for more than one, RAlt's bound
        nonlocal pos
        alts: list[Node] = []
        total = 2
        while True:
            got = alternative()
            if got is None:
                return None
            node, size = got
            alts.append(node)
            total += size
            if pos < n and rx[pos] == "|":
                pos += 1
                continue
            break
        return alts, (size if len(alts) == 1 else total)

    def alternative() -> tuple[Node, int] | None:
        nonlocal pos, top_items, last_start
        items: list[Node] = []
        total = 2
        last = 0
        start = pos
        while pos < n and rx[pos] not in "|)":
            start = pos
            got = term()
            if got is None:
                return None
            items.append(got[0])
            last = got[1]
            total += last
        if not items:
            return None
        if depth == 0:
            top_items, last_start = items, start
        return seq(*items), (last if len(items) == 1 else total)

    def term() -> tuple[Node, int] | None:
        nonlocal pos, depth
        c = rx[pos]
        if c in _RANGE_LITS:
            pos += 1
            node, size = lit(c), 2
        elif c == "\\" and rx.startswith("\\.", pos):
            pos += 2
            node, size = lit("."), 2
        elif c == "[" and pos + 4 < n and rx[pos + 2] == "-" and rx[pos + 4] == "]":
            a, b = rx[pos + 1], rx[pos + 3]
            if not ("0" <= a < b <= "9"):
                return None
            pos += 5
            node, size = byte_class((ord(a), ord(b))), 2
        elif c == "(" and rx.startswith("(?:", pos):
            pos += 3
            depth += 1
            if depth > max_nesting:
                return None
            got = disjunction()
            depth -= 1
            if got is None or pos >= n or rx[pos] != ")":
                return None
            pos += 1
            node, size = choice(*got[0]), got[1]
        else:
            return None
        if pos >= n:
            return node, size
        q = rx[pos]
        if q == "?":
            lo, hi, end = 0, 1, pos + 1
        elif q == "*":
            lo, hi, end = 0, None, pos + 1
        elif q == "+":
            lo, hi, end = 1, None, pos + 1
        elif q == "{":
            close = rx.find("}", pos)
            body = rx[pos + 1 : close] if close > 0 else ""
            num = body[:-1] if body.endswith(",") else body
            if not num.isdigit() or not num.isascii():
                return None
            lo = int(num)
            hi = None if body.endswith(",") else lo
            end = close + 1
        else:
            return node, size
        if end < n and rx[end] in "?*+{":
            return None  # a lazy or doubled quantifier: not generated, let the parser judge
        pos = end
        copies = hi if hi is not None else max(lo, 1)
        return repeat(node, lo, hi), min(size * copies, cap + 1) + 2

    got = disjunction()
    if got is None or pos != n or got[1] > cap:
        return None
    alts, _ = got
    if len(alts) != 1:
        return choice(*alts) if not integer else None
    if not integer:
        return alts[0]
    # an integer range ends in the (?:\.0+)? tail: the node is the items before it (what
    # reading rx less the tail gives: the same terms, within a bound no larger than rx's)
    if not rx.endswith(_FRACTION):
        return None
    if len(top_items) > 1 and last_start == n - len(_FRACTION):
        return seq(*top_items[:-1])
    return _range_node(rx[: -len(_FRACTION)], False, cap, max_nesting)


# -- an integer range's node from its digits ---------------------------------------------------
#
# What _range_node reads from integer_regex(lo, hi) (less its fraction tail), built from the
# range's digits by the construction integer_regex writes (_numbers: _same_length,
# _nonneg_int_alts, integer_regex), so that no regex is read: each regex item is written as the
# node _range_node makes of it (a digit lit(d), a class byte_class, a repetition repeat, a
# group choice of its alternatives' seq), in the same order, and carries what _range_node
# counts (the NFA bound of the item, the groups nested in it) so that the same ranges fall back
# (bound past the cap, groups too deep). An item is (node, bound, depth); an alternative a list
# of items; a regex with top-level ``|`` a list of alternatives.

_Item = tuple[Node, int, int]
_Alt = list[_Item]

_DIGIT_CLASS = byte_class((0x30, 0x39))


def _alt_bound(items: _Alt) -> int:
    """``alternative()``'s bound: the item's for one item, else 2 plus the items'."""
    if len(items) == 1:
        return items[0][1]
    total = 2
    for _, b, _ in items:
        total += b
    return total


def _group_item(alts: list[_Alt]) -> _Item:
    """``(?:A|B|...)``: a choice of the alternatives (``disjunction()``'s bound)."""
    nodes: list[Node] = []
    total, depth = 2, 0
    for a in alts:
        nodes.append(seq(*[n for n, _, _ in a]))
        total += _alt_bound(a)
        for _, _, d in a:
            depth = max(depth, d)
    bound = _alt_bound(alts[0]) if len(alts) == 1 else total
    return choice(*nodes), bound, 1 + depth


def _grouped(alts: list[_Alt]) -> _Alt:
    """``_numbers._group``: the items themselves for one alternative, else one group."""
    return alts[0] if len(alts) == 1 else [_group_item(alts)]


def _digit_items(text: str) -> _Alt:
    return [(lit(ch), 2, 0) for ch in text]


def _repeated(item: _Item, lo: int, hi: int | None, cap: int) -> _Item:
    """A quantifier on ``item`` (``term()``'s bound: copies of the item, at most cap + 1)."""
    node, bound, depth = item
    copies = hi if hi is not None else max(lo, 1)
    return repeat(node, lo, hi), min(bound * copies, cap + 1) + 2, depth


def _class_item(a: int, b: int) -> _Item:
    """``_numbers._digits_class``: a digit, or a class of digits ``[a-b]``."""
    if a == b:
        return lit(str(a)), 2, 0
    return byte_class((0x30 + a, 0x30 + b)), 2, 0


def _any_digit_items(k: int, cap: int) -> _Alt:
    """``_numbers._any_digits``: ``[0-9]{k}``."""
    if k == 0:
        return []
    item: _Item = (_DIGIT_CLASS, 2, 0)
    return [item] if k == 1 else [_repeated(item, k, k, cap)]


def _same_length_alts(lo: str, hi: str, cap: int) -> list[_Alt]:
    """``_numbers._same_length`` (see there), as alternatives."""
    if lo == hi:
        return [_digit_items(lo)]
    k = len(lo) - 1
    a, b = int(lo[0]), int(hi[0])
    if a == b:
        return [[*_digit_items(lo[0]), *_grouped(_same_length_alts(lo[1:], hi[1:], cap))]]
    parts: list[_Alt] = []
    start, end = a, b
    if lo[1:] != "0" * k:
        parts.append([*_digit_items(lo[0]), *_grouped(_same_length_alts(lo[1:], "9" * k, cap))])
        start = a + 1
    if hi[1:] != "9" * k:
        end = b - 1
    if start <= end:
        parts.append([_class_item(start, end), *_any_digit_items(k, cap)])
    if hi[1:] != "9" * k:
        parts.append([*_digit_items(hi[0]), *_grouped(_same_length_alts("0" * k, hi[1:], cap))])
    return parts


def _nonneg_alts(p: int, q: int | None, cap: int) -> list[list[_Alt]]:
    """``_numbers._nonneg_int_alts`` (see there): each of its regexes as alternatives."""
    if q is not None and p > q:
        return []
    lp = len(str(p))
    out = [_same_length_alts(lo, hi, cap) for lo, hi in length_bands(p, q)]
    if q is None:
        first = _class_item(1, 9)
        if lp > 1 and p == 10 ** (lp - 1):  # [1-9][0-9]{lp-1,}
            out.pop()
            out.append([[first, _repeated((_DIGIT_CLASS, 2, 0), lp - 1, None, cap)]])
        elif p <= 1:  # 0 and [1-9][0-9]*
            out = [[_digit_items("0")]] if p == 0 else []
            out.append([[first, _repeated((_DIGIT_CLASS, 2, 0), 0, None, cap)]])
        else:  # [1-9][0-9]{lp,}
            out.append([[first, _repeated((_DIGIT_CLASS, 2, 0), lp, None, cap)]])
    return out


#: ``(?:\.0+)?``, the tail integer_regex writes: the item _range_node reads (bound, depth)
_FRACTION_BOUND, _FRACTION_DEPTH = 10, 1


def _int_range_node(lo: int | None, hi: int | None, cap: int, max_nesting: int) -> Node | None:
    r"""``_range_node(integer_regex(lo, hi), True, cap, max_nesting)`` without the regex (see
    above): None where that is None (an empty range included). O(digits of the bounds)."""
    if lo is not None and hi is not None and lo > hi:
        return None
    regexes: list[list[_Alt]] = []
    if lo is None or lo < 0:  # -(...): |v| in [max(1, -hi), -lo]
        nlo = 1 if hi is None or hi >= 0 else -hi
        nhi = None if lo is None else -lo
        neg = [alt for rx in _nonneg_alts(nlo, nhi, cap) for alt in rx]
        if neg:
            regexes.append([[*_digit_items("-"), *_grouped(neg)]])
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):  # -?0
        regexes.append([[_repeated((lit("-"), 2, 0), 0, 1, cap), (lit("0"), 2, 0)]])
    if hi is None or hi > 0:
        regexes.extend(_nonneg_alts(1 if lo is None or lo <= 0 else lo, hi, cap))
    if not regexes:
        return None
    # _numbers._join: one regex as _group writes it, several in one group
    if len(regexes) == 1:
        items = _grouped(regexes[0])
    else:
        items = [_group_item([alt for rx in regexes for alt in rx])]
    # the top-level alternative, with the fraction tail after the items
    bound, depth = 2 + _FRACTION_BOUND, _FRACTION_DEPTH
    for _, b, d in items:
        bound += b
        depth = max(depth, d)
    if bound > cap or depth > max_nesting:
        return None
    return seq(*[n for n, _, _ in items])


def _int_ceil(x: Decimal, excl: bool) -> int:
    i = int(x.to_integral_value(rounding="ROUND_CEILING"))
    if excl and Decimal(i) == x:
        i += 1
    return i


def _int_floor(x: Decimal, excl: bool) -> int:
    i = int(x.to_integral_value(rounding="ROUND_FLOOR"))
    if excl and Decimal(i) == x:
        i -= 1
    return i


def pattern_dfa(pattern: str, limits: Limits = DEFAULT_LIMITS, *, backrefs: bool = False) -> Dfa:
    """The strings that contain a match of ``pattern``; with ``backrefs``, each backreference
    read as its group's language (a superset: see ``regex_dfa``)."""
    return regex_dfa(pattern, search=True, limits=limits, backrefs=backrefs)


#: a cheap test before parsing for backreferences: ``\\1`` .. ``\\9`` or ``\\k``
_BACKREF_HINT = re.compile(r"\\[1-9k]")


def has_backreference(pattern: str, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Whether ``pattern`` has a backreference (``\\1``, ``\\k<name>``). Raises what
    parsing raises for other syntax toolmask refuses."""
    return bool(_BACKREF_HINT.search(pattern)) and regex_backreferences(pattern, limits=limits) > 0


#: the largest count a pattern's repetition may have to be written as a repetition (beyond it,
#: the DFA route: the automaton unrolls counts, bounded by ``Limits.max_repeat_unroll``)
_MAX_CHAIN_COUNT = 128


def pattern_node(pattern: str, limits: Limits = DEFAULT_LIMITS) -> Node | None:
    """The JSON string body of the strings matching ``pattern``, written from the regex's syntax
    tree without its DFA, when that is exact and as cheap to match: the pattern is anchored
    at both ends and is a chain of character classes, each repeated (``^[A-Z]{3}$``,
    ``^[a-z0-9_]+$``), every class non-empty, no count above 128, and no variable repetition
    whose class meets the class of what may follow it (the chain is then deterministic: one
    automaton state per position, at most ``max_dfa_states`` of them, so the DFA route would
    not refuse it either). None otherwise (the caller takes :func:`pattern_dfa`). Raises what
    ``pattern_dfa`` raises for a malformed pattern. Memoised in the cache set in use."""
    return _pattern_node(pattern, limits)[0]


def _pattern_bytes(v: tuple[Node | None]) -> int:
    return 64 if v[0] is None else node_bytes(v[0])


@memo("schema.pattern_nodes", limit="max_memo_entries", entry_bytes=_pattern_bytes)
def _pattern_node(pattern: str, limits: Limits) -> tuple[Node | None]:
    chain = _chain(pattern, limits)
    if chain is None:
        return (None,)
    positions = 1
    for i, (cs, lo, hi) in enumerate(chain):
        if not cs or max(lo, hi or 0) > _MAX_CHAIN_COUNT:
            return (None,)
        positions += hi if hi is not None else lo + 1
        if hi is None or hi > lo:
            for cs2, lo2, _ in chain[i + 1 :]:
                if cs & cs2:
                    return (None,)
                if lo2 > 0:
                    break
    if positions + 2 > limits.max_dfa_states:
        return (None,)
    return (seq(*(repeat(json_string_char(cs), lo, hi) for cs, lo, hi in chain)),)


#: a pattern as a chain of classes: ``(class, min, max)`` each (see ``anchored_chain``)
Chain = list[tuple[CharSet, int, int | None]]


def _chain_bytes(v: Chain | None) -> int:
    return 64 + (0 if v is None else sum(64 + 16 * len(cs.ranges) for cs, _, _ in v))


@memo("schema.pattern_chains", limit="max_memo_entries", entry_bytes=_chain_bytes)
def _chain(pattern: str, limits: Limits) -> Chain | None:
    return anchored_chain(pattern, limits=limits)


def pattern_chain(pattern: str, limits: Limits = DEFAULT_LIMITS) -> Chain | None:
    """``pattern`` as a chain of classes (``anchored_chain``), memoised in the cache set in
    use; None when it is not one."""
    return _chain(pattern, limits)


def chain_accepts(chain: Chain, value: str) -> bool:
    """Whether ``value`` matches the chain of a pattern :func:`pattern_node` writes directly
    (``StrAlt.pat``): each class takes as many code points as it can, which is exact because
    no variable repetition's class meets what may follow it (the chain is deterministic).
    O(len(value)), without the pattern's DFA."""
    i, n = 0, len(value)
    for cs, lo, hi in chain:
        k = 0
        while i < n and (hi is None or k < hi) and ord(value[i]) in cs:
            i += 1
            k += 1
        if k < lo:
            return False
    return i == n


def chain_strings(chain: Chain, limit: int) -> list[str] | None:
    """Every string a chain of classes matches, when there are at most ``limit``; else
    None (a repetition without an upper bound, or too many). No DFA is built."""
    out = [""]
    for cs, lo, hi in chain:
        if hi is None or len(cs) ** hi > limit:
            return None
        chars = [chr(cp) for a, b in cs.ranges for cp in range(a, b + 1)]
        words = [""]
        grown: list[str] = []
        for k in range(hi + 1):
            if k >= lo:
                grown.extend(words)
            words = [w + c for w in words for c in chars]
        out = [p + w for p in out for w in grown]
        if len(out) > limit:
            return None
    return out


def string_literals_dfa(values: list[str]) -> Dfa:
    return Dfa.literals(values)


def length_dfa(lo: int, hi: int | None) -> Dfa:
    return _length_dfa(lo, hi)


def _length_dfa_bytes(d: Dfa) -> int:
    """``dfa_bytes`` of a length DFA over ANY_CHAR without walking its classes: every state
    but the last has one edge on ANY_CHAR, the last has one when unbounded."""
    if not d.edges:
        return dfa_bytes(d)
    n = len(d.edges)
    return 64 + 72 * n + (64 + 16 * len(ANY_CHAR.ranges)) * (n - 1 + len(d.edges[-1]))


@memo("schema.length_dfas", limit="max_language_memos", entry_bytes=_length_dfa_bytes)
def _length_dfa(lo: int, hi: int | None) -> Dfa:
    return Dfa.length(lo, hi, ANY_CHAR)


@functools.cache
def format_dfa(name: str) -> Dfa:
    from toolmask.schema._formats import FORMATS

    rx = FORMATS[name].regex
    assert rx is not None, f"format {name!r} has no string language"
    return regex_dfa(rx, search=False)


@memo("schema.dfa_products", limit="max_language_memos", entry_bytes=dfa_bytes)
def dfa_and(a: Dfa, b: Dfa, limits: Limits = DEFAULT_LIMITS) -> Dfa:
    """``a.intersect(b)``, memoised in the cache set in use: the same constraints meet
    in schema after schema (an integer range and the integer spelling, a format and a
    length), and a product plus minimisation costs more than hashing both automata. Raises
    what ``intersect`` raises (not memoised). Pass ``limits`` positionally (the memo's key)."""
    return a.intersect(b, limits=limits)


@memo("schema.key_complements", limit="max_language_memos", entry_bytes=dfa_bytes)
def not_names(names: frozenset[str]) -> Dfa:
    """Every string except the given names (keys outside the declared properties). Memoised
    in the cache set in use."""
    return Dfa.literals(sorted(names)).complement()
