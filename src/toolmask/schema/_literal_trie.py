"""Literal sets (``enum``, ``const``, literal alternatives of a union) as one byte trie.

A literal set is lowered to a single IR node: the trie of its spellings' bytes, shared
prefixes merged, each edge a literal run (the trie is path-compressed), each branch point a
:func:`~toolmask.grammar.choice`. An enum of n values costs O(total bytes) nodes and no rule,
where one alternative per value (or, for numbers, one automaton per value) cost a rule chain
each; the automaton then reads the trie one byte at a time with one live item per trie node,
instead of every value's first position at once.

A spelling is ``(text, tail)``: the bytes of one way of writing the value and what may follow
them before the value ends. Numbers are written without an exponent in every spelling
:func:`toolmask.schema._langs.number_literal_dfa` accepts (``1``, ``1.0``, ``1.00`` ...: the
tail ``(\\.0+)?`` after an integer, ``0*`` after a fraction); other values in the text the
caller renders. Depth: a trie as deep as its longest value would nest Seq / Choice nodes as
deep, and every reader of the IR recurses on them; below :data:`MAX_TRIE_DEPTH` branch points
the remaining suffixes are a flat choice (the same language, the prefix still shared).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from decimal import Decimal
from typing import Literal

from toolmask.grammar import EMPTY, Bytes, Node, Seq, choice, lit, opt, plus, seq, star
from toolmask.grammar.passes import LITERAL_TRIE_DEPTH

__all__ = ["MAX_TRIE_DEPTH", "Tail", "number_spellings", "trie_node"]

#: what may follow a spelling's text: nothing, ``(\.0+)?`` (an integer's fraction of zeros) or
#: ``0*`` (more trailing zeros of a fraction)
Tail = Literal["", "int", "frac"]

#: branch points nested at most this deep in the IR (see the module docstring): the bound the
#: automaton builders' own tries of literal choices keep (``grammar.passes.literal_trie``)
MAX_TRIE_DEPTH = LITERAL_TRIE_DEPTH

_TAILS: dict[str, Node] = {
    "": EMPTY,
    "int": opt(seq(lit("."), plus(lit("0")))),
    "frac": star(lit("0")),
}


def number_spellings(value: Decimal) -> list[tuple[bytes, Tail]]:
    """The spellings of a number: the language of ``number_literal_dfa(value)`` (every
    exponent-free text of the value) as texts with tails."""
    if value == 0:
        return [(b"0", "int"), (b"-0", "int")]
    text = format(value, "f")
    sign = ""
    if text.startswith("-"):
        sign, text = "-", text[1:]
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0")
    whole = whole.lstrip("0") or "0"
    if frac:
        return [(f"{sign}{whole}.{frac}".encode(), "frac")]
    return [(f"{sign}{whole}".encode(), "int")]


def trie_node(spellings: Iterable[tuple[bytes, Tail]]) -> Node:
    """One node accepting exactly the spellings (text then tail), prefixes shared. Built over
    the sorted spellings (a range of them that shares a prefix is a subtree; its groups by the
    next byte are found by bisection), without recursion. O(n log n) comparisons plus
    O(branch points + n) nodes; no rule."""
    items = sorted(set(spellings))
    if not items:
        return choice()
    texts = [t for t, _ in items]
    tails = [_TAILS[tail] for _, tail in items]
    built: dict[tuple[int, int], Node] = {}
    # frames (lo, hi, pos, depth, children): the spellings texts[lo:hi] all share
    # texts[lo][:pos]; a frame is assembled on its second visit, when its children are built
    stack: list[tuple[int, int, int, int, list[tuple[int, int]] | None]] = [
        (0, len(items), 0, 0, None)
    ]
    while stack:
        lo, hi, pos, depth, kids = stack.pop()
        first = texts[lo]
        if kids is not None:
            end = pos + _common(first, texts[hi - 1], pos)
            alts: list[Node] = []
            i = lo
            while i < hi and len(texts[i]) == end:
                alts.append(tails[i])
                i += 1
            alts.extend(built.pop(k) for k in kids)
            built[(lo, hi)] = seq(lit(first[pos:end]), choice(*alts))
            continue
        if hi - lo == 1:
            built[(lo, hi)] = _leaf(first[pos:], tails[lo])
            continue
        if depth >= MAX_TRIE_DEPTH:
            built[(lo, hi)] = choice(*(_leaf(texts[i][pos:], tails[i]) for i in range(lo, hi)))
            continue
        end = pos + _common(first, texts[hi - 1], pos)
        i = lo
        while i < hi and len(texts[i]) == end:
            i += 1
        kids = []
        while i < hi:
            b = texts[i][end]
            j = hi if b == 255 else bisect_left(texts, texts[i][:end] + bytes((b + 1,)), i, hi)
            kids.append((i, j))
            i = j
        stack.append((lo, hi, pos, depth, kids))
        stack.extend((k_lo, k_hi, end, depth + 1, None) for k_lo, k_hi in kids)
    return built[(0, len(items))]


def _leaf(text: bytes, tail: Node) -> Node:
    """``seq(lit(text), tail)`` without its checks (a literal, then EMPTY or a Repeat)."""
    if not text:
        return tail
    if tail is EMPTY:
        return Bytes(text)
    return Seq((Bytes(text), tail))


#: the bytes of a common prefix _common compares one by one before its halving blocks
_BYTEWISE = 8


def _common(a: bytes, b: bytes, pos: int) -> int:
    """Length of the common prefix of ``a[pos:]`` and ``b[pos:]``."""
    n = min(len(a), len(b)) - pos
    k = 0
    # byte by byte first: most pairs differ within a few bytes (enum values after the quote)
    while k < n and a[pos + k] == b[pos + k]:
        k += 1
        if k == _BYTEWISE:
            break
    else:
        return k
    # then in halving blocks: long shared prefixes are the point of a trie
    step = max(n, 1)
    while step:
        while k + step <= n and a[pos + k : pos + k + step] == b[pos + k : pos + k + step]:
            k += step
        step //= 2
    return k
