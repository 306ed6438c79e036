"""UTF-8 class reconstruction: find the code-point sets hidden in byte-level IR.

The IR is byte-level: a text class such as ``[α-ω]`` arrives as :func:`utf8_node`'s output, a
:class:`Choice` of :class:`Seq` s of :class:`ByteClass` es (each alternative one *product*: a
fixed-length tuple of byte sets, whose language is their Cartesian product). Printers for
code-point dialects (GBNF, Lark) need the set back. This module

* enumerates a finite node's language as a union of products (:func:`products`),
* decodes one product into the :class:`CharSet` whose UTF-8 encodings it is *exactly*
  (:func:`decode_product`; ``None`` when the product contains an overlong form, a surrogate, a
  code point above U+10FFFF, or bytes that are not one whole UTF-8 character),
* combines both (:func:`charset_of`): a node is a *code-point class* iff every product decodes.

Because UTF-8 decoding is injective on valid sequences, ``charset_of(n) == cs`` implies that
``n`` and ``utf8_node(cs)`` have the same language. The pass :func:`utf8_classes` uses this to
replace, in every :class:`Choice`, the alternatives that are code-point classes by one canonical
``utf8_node`` of their union (language preserved).
"""

from __future__ import annotations

from toolmask.grammar._charset import UTF8_CONTINUATION, UTF8_LENGTHS, CharSet, utf8_node
from toolmask.grammar._ir import (
    ByteClass,
    Bytes,
    Choice,
    Grammar,
    Node,
    Repeat,
    Rule,
    Seq,
    choice,
)
from toolmask.grammar.passes._walk import rebuild
from toolmask.limits import DEFAULT_LIMITS, Limits

__all__ = [
    "Product",
    "charset_of",
    "decode_product",
    "lead_length",
    "products",
    "utf8_classes",
]

Product = tuple[int, ...]
"""A set of fixed-length byte strings: position ``i`` holds any byte of the mask ``p[i]``."""


def _byte_mask(lo: int, hi: int) -> int:
    return ((1 << (hi - lo + 1)) - 1) << lo


_CONT = _byte_mask(*UTF8_CONTINUATION)  # 0x80..0xBF
# lead-byte masks per encoded length, and the value bits the lead byte carries (0x7F for ASCII;
# 0x1F, 0x0F, 0x07 after the 110 / 1110 / 11110 prefixes), from the one UTF-8 table
_LEADS = {
    n: (_byte_mask(lo, hi), 0x7F if n == 1 else 0xFF >> (n + 1))
    for n, (_, _, lo, hi) in UTF8_LENGTHS.items()
}
_MIN_CP = {n: first for n, (first, _, _, _) in UTF8_LENGTHS.items()}
_SURROGATES = CharSet.range(0xD800, 0xDFFF)


def lead_length(mask: int) -> int | None:
    """The UTF-8 length (1-4) every byte of ``mask`` starts, or ``None`` if mixed or invalid."""
    if mask == 0:
        return None
    for n, (lead, _) in _LEADS.items():
        if mask & ~lead == 0:
            return n
    return None


def products(node: Node, limit: int = 512) -> list[Product] | None:
    """The language of ``node`` as a union of products, or ``None``.

    ``None`` when the node is not finite and flat (rule references, specials, unbounded or
    ranged repetition) or would need more than ``limit`` products. Cost: O(result size).
    """
    if isinstance(node, ByteClass):
        return [(node.mask,)]
    if isinstance(node, Bytes):
        return [tuple(1 << b for b in node.value)]
    if isinstance(node, Choice):
        out: list[Product] = []
        for item in node.items:
            sub = products(item, limit)
            if sub is None or len(out) + len(sub) > limit:
                return None
            out.extend(sub)
        return out
    if isinstance(node, Seq):
        acc: list[Product] = [()]
        for item in node.items:
            sub = products(item, limit)
            if sub is None or len(acc) * len(sub) > limit:
                return None
            acc = [a + b for a in acc for b in sub]
        return acc
    if isinstance(node, Repeat) and node.max == node.min and node.min <= 4:
        return products(Seq((node.item,) * node.min), limit)
    return None


def _mask_ranges(mask: int) -> list[tuple[int, int]]:
    return ByteClass(mask).ranges()


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, merged ranges (unlike CharSet.from_ranges, values above U+10FFFF are kept)."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


def decode_product(product: Product, *, limits: Limits = DEFAULT_LIMITS) -> CharSet | None:
    """The code points whose UTF-8 encodings are exactly ``product``, or ``None``.

    ``None`` unless the product is one whole character: a lead-byte set of one length ``n``
    followed by ``n - 1`` continuation sets, with no overlong form, surrogate or code point above
    U+10FFFF in the product. An empty byte set decodes to the empty CharSet. A product whose set
    would have more than ``limits.max_class_ranges`` ranges (continuation sets with holes
    multiply them) is ``None`` too: the caller keeps the bytes as they are.
    """
    max_ranges = limits.max_class_ranges
    if not product or len(product) > 4:
        return None
    n = len(product)
    if any(m == 0 for m in product):
        return CharSet()
    lead_mask, value_bits = _LEADS[n]
    if product[0] & ~lead_mask:
        return None
    if any(m & ~_CONT for m in product[1:]):
        return None
    values = [(lo & value_bits, hi & value_bits) for lo, hi in _mask_ranges(product[0])]
    for m in product[1:]:
        conts = [(lo - 0x80, hi - 0x80) for lo, hi in _mask_ranges(m)]
        nxt: list[tuple[int, int]] = []
        if conts == [(0, 0x3F)]:
            nxt = [(lo << 6, (hi << 6) | 0x3F) for lo, hi in values]
        else:
            if sum(hi - lo + 1 for lo, hi in values) * len(conts) > max_ranges:
                return None
            for lo, hi in values:
                for v in range(lo, hi + 1):
                    nxt.extend(((v << 6) | a, (v << 6) | b) for a, b in conts)
        values = _merge(nxt)
        if len(values) > max_ranges:
            return None
    if values[0][0] < _MIN_CP[n] or values[-1][1] > 0x10FFFF:
        return None
    cs = CharSet(tuple(values))
    if not (cs & _SURROGATES).is_empty():
        return None
    return cs


def charset_of(node: Node, *, limits: Limits = DEFAULT_LIMITS) -> CharSet | None:
    """The CharSet ``cs`` with ``L(node) == L(utf8_node(cs))``, or ``None`` if there is none.

    A node is a code-point class when its language is finite, flat (see :func:`products`) and
    every product decodes to whole characters. ``Bytes`` of one character is a class of one.
    """
    prods = products(node)
    if prods is None or not prods:
        return None if prods is None else CharSet()
    out = CharSet()
    for p in prods:
        cs = decode_product(p, limits=limits)
        if cs is None:
            return None
        out = out | cs
    return out


def _canonical_choice(node: Node) -> Node:
    if not isinstance(node, Choice):
        return node
    classes: list[CharSet] = []
    first = -1
    rest: list[Node] = []
    for item in node.items:
        cs = charset_of(item)
        if cs is None:
            rest.append(item)
            continue
        if first < 0:
            first = len(rest)
        classes.append(cs)
    if len(classes) < 2:
        return node
    union = CharSet()
    for cs in classes:
        union = union | cs
    merged = utf8_node(union)
    return choice(*rest[:first], merged, *rest[first:])


def _canonical(node: Node) -> Node:
    if isinstance(node, Seq):
        return Seq(tuple(_canonical(i) for i in node.items))
    if isinstance(node, Choice):
        return _canonical_choice(Choice(tuple(_canonical(i) for i in node.items)))
    if isinstance(node, Repeat):
        return Repeat(_canonical(node.item), node.min, node.max)
    return node


def utf8_classes(grammar: Grammar) -> Grammar:
    """Merge, in every Choice with two or more alternatives that are code-point classes (one-
    character literals included), those alternatives into one canonical :func:`utf8_node` of
    their union, placed where the first of them was. Language-preserving.
    """
    rules = tuple(Rule(r.name, rebuild(_canonical(r.body))) for r in grammar.rules)
    return Grammar(rules, grammar.start, grammar.checks)
