"""JSON text in the grammar: how a string's code points and a number's multiples are written.

JSON-specific languages that the code-point automata of ``toolmask.grammar`` know nothing about:

* :func:`json_string_char` / :func:`json_string_node`: one code point of a class as
  ``json.dumps(s, ensure_ascii=False)`` writes it inside a string (the canonical escapes), the
  encoder the lowerer passes to :func:`~toolmask.grammar._fsm.dfa_to_rules`;
* :func:`multiple_of_dfa`: the exponent-free JSON number texts whose value is a multiple of
  ``k`` (``multipleOf``).
"""

from __future__ import annotations

import json
from decimal import Decimal

from toolmask._cache import memo
from toolmask.errors import LimitError
from toolmask.grammar import (
    ANY_CHAR,
    NOTHING,
    CharSet,
    Dfa,
    Node,
    byte_class,
    choice,
    lit,
    node_bytes,
    repeat,
    seq,
    utf8_node,
)
from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = [
    "JSON_WS",
    "any_json_string_char",
    "json_string_char",
    "json_string_node",
    "json_ws",
    "multiple_of_dfa",
]

#: the four whitespace bytes JSON allows between tokens (RFC 8259: space, tab, LF, CR)
JSON_WS = byte_class(0x20, 0x09, 0x0A, 0x0D)


def json_ws(hi: int | None, lo: int = 0) -> Node:
    """``lo`` to ``hi`` bytes of JSON whitespace (``hi=None``: unbounded)."""
    return repeat(JSON_WS, lo, hi)


# -- strings -----------------------------------------------------------------------------------

_SHORT_ESCAPES = {0x22: '"', 0x5C: "\\", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
_JSON_SPECIAL = CharSet.of([(0, 0x1F), 0x22, 0x5C])


def json_string_node(cs: CharSet) -> Node:
    """IR for one code point of ``cs`` written as ``json.dumps(ensure_ascii=False)`` writes it.

    ``"`` and ``\\`` and U+0000..U+001F are escaped (``\\b \\f \\n \\r \\t`` where they exist,
    else ``\\u00xx`` in lowercase hex); every other code point is raw UTF-8 (surrogates dropped).
    """
    ranges = cs.ranges
    if ranges and ranges[0][0] > 0x1F and ranges[-1][1] < 0x80:
        for lo, hi in ranges:
            if lo <= 0x22 <= hi or lo <= 0x5C <= hi:
                break
        else:  # printable ASCII, nothing to escape: the bytes themselves (utf8_node's class)
            return byte_class(*ranges)
    special = cs & _JSON_SPECIAL
    alts: list[Node] = []
    plain = cs - _JSON_SPECIAL
    if plain:
        alts.append(utf8_node(plain))
    short = [
        ord(_SHORT_ESCAPES[cp])
        for lo, hi in special.ranges
        for cp in range(lo, hi + 1)
        if cp in _SHORT_ESCAPES
    ]
    if short:
        alts.append(seq(lit("\\"), byte_class(*short)))
    hexes: dict[str, list[int]] = {}
    for lo, hi in special.ranges:
        for cp in range(lo, hi + 1):
            if cp not in _SHORT_ESCAPES:
                h = f"{cp:02x}"
                hexes.setdefault(h[0], []).append(ord(h[1]))
    if hexes:
        alts.append(
            seq(lit("\\u00"), choice(*(seq(lit(hi), byte_class(*lo)) for hi, lo in hexes.items())))
        )
    return choice(*alts) if alts else NOTHING


@memo("schema.json_string_chars", limit="max_memo_entries", entry_bytes=node_bytes)
def json_string_char(cs: CharSet) -> Node:
    """:func:`json_string_node`, with a single code point as one literal (its escape).
    Memoised in the cache set in use."""
    if len(cs.ranges) == 1 and cs.ranges[0][0] == cs.ranges[0][1]:
        cp = cs.ranges[0][0]
        if not 0xD800 <= cp <= 0xDFFF:
            return lit(json.dumps(chr(cp), ensure_ascii=False)[1:-1])
    return json_string_node(cs)


# -- multipleOf --------------------------------------------------------------------------------


def multiple_of_dfa(k: Decimal, *, integer_only: bool, limits: Limits = DEFAULT_LIMITS) -> Dfa:
    """JSON number text without exponent whose value is a multiple of ``k`` (> 0).

    Language: ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?``; with ``integer_only`` the fraction, if present,
    must be all zeros (``1.0`` is an integer in JSON Schema). Writing ``k = m * 10**-s`` with
    ``m`` a positive integer, ``x`` is a multiple of ``k`` iff ``x * 10**s`` is an integer
    divisible by ``m``: states track the remainder of the digits read so far modulo ``m`` and how
    many fraction digits (up to ``s``) were read; fraction digits past the ``s``-th must be ``0``.
    About ``m * (s + 3)`` states before minimisation; more than ``max_dfa_states`` is a
    :class:`LimitError`.
    """
    k = Decimal(k)
    if not k.is_finite() or k <= 0:
        raise ValueError(f"multipleOf must be a positive finite number, not {k}")
    _sign, digits, exp = k.normalize().as_tuple()
    assert isinstance(exp, int)
    m = int("".join(map(str, digits)))
    if exp >= 0:
        if exp > len(str(limits.max_dfa_states)):
            # the remainders modulo m * 10**exp alone pass max_dfa_states
            raise LimitError(
                f"multipleOf {k} needs more than {limits.max_dfa_states} states",
                limit="max_dfa_states",
            )
        m *= 10**exp
        s = 0
    else:
        s = -exp

    # states: ("start",), ("neg",), ("zero",), ("int", r), ("dot", r), ("frac", r, j)
    index: dict[tuple[object, ...], int] = {}
    order: list[tuple[object, ...]] = []
    edges: list[list[tuple[int, int]]] = []  # (code point, target): merged into sets at the end
    finals: set[int] = set()
    cap = limits.max_dfa_states
    frac_digits = range(0x30, 0x31) if integer_only else range(0x30, 0x3A)

    def sid(key: tuple[object, ...]) -> int:
        j = index.get(key)
        if j is None:
            j = len(order)
            if j >= cap:
                raise LimitError(
                    f"multipleOf {k} needs more than {cap} states", limit="max_dfa_states"
                )
            index[key] = j
            order.append(key)
            edges.append([])
        return j

    def divisible(r: int, pending: int) -> bool:
        return r * pow(10, pending, m) % m == 0

    def digit_edges(src: int, digits: range, kind: str, r: int, j: int = 0) -> None:
        for cp in digits:
            nr = (r * 10 + cp - 0x30) % m
            key = ("int", nr) if kind == "int" else ("frac", nr, j + 1)
            edges[src].append((cp, sid(key)))

    sid(("start",))
    i = 0
    while i < len(order):
        key = order[i]
        kind = key[0]
        if kind in ("start", "neg"):
            if kind == "start":
                edges[i].append((ord("-"), sid(("neg",))))
            edges[i].append((ord("0"), sid(("zero",))))
            digit_edges(i, range(0x31, 0x3A), "int", 0)
        elif kind == "zero":  # a leading 0 takes no more integer digits
            finals.add(i)
            edges[i].append((ord("."), sid(("dot", 0))))
        elif kind == "int":
            r = key[1]
            assert isinstance(r, int)
            if divisible(r, s):
                finals.add(i)
            edges[i].append((ord("."), sid(("dot", r))))
            digit_edges(i, range(0x30, 0x3A), "int", r)
        else:  # "dot" (no fraction digit yet) or "frac"
            r = key[1]
            j = 0 if kind == "dot" else key[2]
            assert isinstance(r, int) and isinstance(j, int)
            if kind == "frac" and divisible(r, s - j):
                finals.add(i)
            if j < s:
                digit_edges(i, frac_digits, "frac", r, j)
            else:  # past the s-th fraction digit only zeros keep x * 10**s an integer
                edges[i].append((ord("0"), sid(("frac", r, s))))
        i += 1
    sets: dict[tuple[int, ...], CharSet] = {}
    merged = tuple(tuple(_merge_edges(es, sets)) for es in edges)
    return Dfa(merged, frozenset(finals)).minimize()


def _merge_edges(
    es: list[tuple[int, int]], sets: dict[tuple[int, ...], CharSet]
) -> list[tuple[CharSet, int]]:
    """The edges of one state, one set of code points per target; ``sets`` keeps the set of
    each group of code points (the same digit groups recur in every state)."""
    by_t: dict[int, list[int]] = {}
    for cp, t in es:
        by_t.setdefault(t, []).append(cp)
    out: list[tuple[CharSet, int]] = []
    for t, cps in by_t.items():
        key = tuple(cps)
        cs = sets.get(key)
        if cs is None:
            cs = sets[key] = CharSet.from_ranges((c, c) for c in cps)
        out.append((cs, t))
    return out


def any_json_string_char() -> Node:
    """One code point in canonical JSON string form (what json.dumps(ensure_ascii=False) writes)."""
    return json_string_char(ANY_CHAR)
