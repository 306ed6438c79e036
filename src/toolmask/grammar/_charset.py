"""Sets of Unicode code points and their expansion into UTF-8 byte-class sequences.

A :class:`CharSet` is an immutable, sorted tuple of disjoint, non-adjacent inclusive ranges of
code points in ``[0, 0x10FFFF]``. Surrogates (U+D800..U+DFFF) are never encodable in UTF-8 and are
dropped by :func:`utf8_node`.

:func:`utf8_node` is the one place where text classes become bytes: it splits a code-point set
into ranges of equal UTF-8 length and emits, per range, sequences of byte classes (the classic
"UTF-8 range split" used by RE2 and Rust's regex-syntax). Cost: O(ranges * 4^depth) in the worst
case, in practice a handful of sequences per range.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from toolmask._cache import memo
from toolmask.grammar._ir import NOTHING, Node, byte_class, choice, node_bytes, seq

__all__ = [
    "ANY_CHAR",
    "MAX_CP",
    "UTF8_CONTINUATION",
    "UTF8_LEAD_LENGTH",
    "UTF8_LENGTHS",
    "CharSet",
    "utf8_node",
    "utf8_sequences",
]

MAX_CP = 0x10FFFF
_SURR_LO, _SURR_HI = 0xD800, 0xDFFF


@dataclass(frozen=True, slots=True)
class CharSet:
    ranges: tuple[tuple[int, int], ...] = ()

    # -- construction ---------------------------------------------------------------------------
    @staticmethod
    def of(items: Iterable[int | str | tuple[int, int]]) -> CharSet:
        rs: list[tuple[int, int]] = []
        for it in items:
            if isinstance(it, str):
                rs.extend((ord(c), ord(c)) for c in it)
            elif isinstance(it, tuple):
                rs.append(it)
            else:
                rs.append((it, it))
        return CharSet.from_ranges(rs)

    @staticmethod
    def from_ranges(ranges: Iterable[tuple[int, int]]) -> CharSet:
        rs = sorted((max(0, lo), min(MAX_CP, hi)) for lo, hi in ranges if lo <= hi)
        out: list[tuple[int, int]] = []
        for lo, hi in rs:
            if lo > hi:
                continue
            if out and lo <= out[-1][1] + 1:
                if hi > out[-1][1]:
                    out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        return CharSet(tuple(out))

    @staticmethod
    def range(lo: int, hi: int) -> CharSet:
        return CharSet.from_ranges([(lo, hi)])

    # -- algebra --------------------------------------------------------------------------------
    def __or__(self, other: CharSet) -> CharSet:
        return CharSet.from_ranges(self.ranges + other.ranges)

    def __and__(self, other: CharSet) -> CharSet:
        out: list[tuple[int, int]] = []
        i = j = 0
        a, b = self.ranges, other.ranges
        while i < len(a) and j < len(b):
            lo = max(a[i][0], b[j][0])
            hi = min(a[i][1], b[j][1])
            if lo <= hi:
                out.append((lo, hi))
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return CharSet(tuple(out))

    def __sub__(self, other: CharSet) -> CharSet:
        return self & other.complement()

    def complement(self) -> CharSet:
        out: list[tuple[int, int]] = []
        prev = 0
        for lo, hi in self.ranges:
            if lo > prev:
                out.append((prev, lo - 1))
            prev = hi + 1
        if prev <= MAX_CP:
            out.append((prev, MAX_CP))
        return CharSet(tuple(out))

    def __contains__(self, cp: object) -> bool:
        if isinstance(cp, str):
            cp = ord(cp)
        if not isinstance(cp, int):
            return False
        lo_i, hi_i = 0, len(self.ranges)
        while lo_i < hi_i:
            mid = (lo_i + hi_i) // 2
            lo, hi = self.ranges[mid]
            if cp < lo:
                hi_i = mid
            elif cp > hi:
                lo_i = mid + 1
            else:
                return True
        return False

    def is_empty(self) -> bool:
        return not self.ranges

    def __len__(self) -> int:
        return sum(hi - lo + 1 for lo, hi in self.ranges)

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def ascii_only(self) -> bool:
        return not self.ranges or self.ranges[-1][1] < 0x80

    def __repr__(self) -> str:
        inner = ",".join(f"{lo:X}" if lo == hi else f"{lo:X}-{hi:X}" for lo, hi in self.ranges)
        return f"CharSet[{inner}]"


ANY_CHAR = CharSet(((0, MAX_CP),))

#: UTF-8 (RFC 3629) by encoded length ``n``: (first code point, last code point, lowest lead
#: byte, highest lead byte); every later byte is a continuation byte in :data:`UTF8_CONTINUATION`
#: (narrower after the leads E0, ED, F0 and F4, which exclude overlong forms, surrogates and code
#: points past U+10FFFF). The one table of UTF-8's shape; the byte-class passes derive theirs.
UTF8_LENGTHS: dict[int, tuple[int, int, int, int]] = {
    1: (0, 0x7F, 0x00, 0x7F),
    2: (0x80, 0x7FF, 0xC2, 0xDF),
    3: (0x800, 0xFFFF, 0xE0, 0xEF),
    4: (0x10000, MAX_CP, 0xF0, 0xF4),
}
UTF8_CONTINUATION = (0x80, 0xBF)

_LEN_BOUNDS = tuple((first, last) for first, last, _, _ in UTF8_LENGTHS.values())
#: ``UTF8_LEAD_LENGTH[b]``: the length of the UTF-8 sequence the byte ``b`` starts (1-4), 0 for
#: a byte that starts none (continuation bytes, C0, C1, F5-FF); from :data:`UTF8_LENGTHS`
UTF8_LEAD_LENGTH = bytes(
    next((n for n, (_, _, lo, hi) in UTF8_LENGTHS.items() if lo <= b <= hi), 0) for b in range(256)
)


def _encode(cp: int, n: int) -> list[int]:
    if n == 1:
        return [cp]
    out = []
    for _ in range(n - 1):
        out.append(0x80 | (cp & 0x3F))
        cp >>= 6
    lead = {2: 0xC0, 3: 0xE0, 4: 0xF0}[n]
    out.append(lead | cp)
    return out[::-1]


def _split_same_len(lo: int, hi: int, n: int) -> list[list[tuple[int, int]]]:
    """Sequences of byte ranges covering exactly the n-byte encodings of [lo, hi]."""
    if n == 1:
        return [[(lo, hi)]]
    # split so that every continuation byte position below the top varies over its full range
    for i in range(1, n):
        m = (1 << (6 * i)) - 1
        if lo & ~m != hi & ~m:
            if lo & m != 0:
                return _split_same_len(lo, lo | m, n) + _split_same_len((lo | m) + 1, hi, n)
            if hi & m != m:
                return _split_same_len(lo, (hi & ~m) - 1, n) + _split_same_len(hi & ~m, hi, n)
    a, b = _encode(lo, n), _encode(hi, n)
    return [[(a[k], b[k]) for k in range(n)]]


@memo("grammar.utf8_nodes", limit="max_memo_entries", entry_bytes=node_bytes)
def utf8_node(cs: CharSet) -> Node:
    """IR matching exactly the UTF-8 encodings of the code points in ``cs`` (surrogates dropped).
    Memoised in the cache set in use (:func:`toolmask._cache.memo`)."""
    if cs.ranges and cs.ranges[-1][1] < 0x80:  # ASCII: one byte class
        return byte_class(*cs.ranges)
    alts = [seq(*(byte_class(r) for r in ranges)) for ranges in utf8_sequences(cs)]
    if not alts:
        return NOTHING
    return _factor(alts)


def utf8_sequences(cs: CharSet) -> list[list[tuple[int, int]]]:
    """The UTF-8 encodings of the code points in ``cs`` (surrogates dropped) as sequences of
    byte ranges, shortest encodings first: each sequence is the product of its ranges, and
    the sequences are disjoint. ``utf8_sequences(ANY_CHAR)`` is RFC 3629's table of
    well-formed sequences. O(ranges of ``cs``) sequences, a handful per range."""
    cs = cs - CharSet.range(_SURR_LO, _SURR_HI)
    out: list[list[tuple[int, int]]] = []
    for lo, hi in cs.ranges:
        for n, (blo, bhi) in enumerate(_LEN_BOUNDS, start=1):
            a, b = max(lo, blo), min(hi, bhi)
            if a <= b:
                out.extend(_split_same_len(a, b, n))
    return out


def _factor(alts: list[Node]) -> Node:
    """Merge alternatives that share their first byte class (keeps the tree small)."""
    return choice(*alts)
