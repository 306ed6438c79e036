"""Shared machinery of the code-point printers (:func:`to_gbnf`, :func:`to_lark`).

GBNF and Lark describe *code points*; the IR describes *bytes*. :func:`to_code_points` lifts an
IR node into a small code-point tree (:class:`Text`, :class:`Class`, :class:`CSeq`,
:class:`CAlt`, :class:`CRep`, :class:`Ref`, :class:`Tok`) that both printers render:

* a ``Bytes`` literal becomes :class:`Text` (it must be valid UTF-8);
* a node whose language is the UTF-8 encoding of a code-point set (as :func:`utf8_node` emits,
  possibly fused/flattened into a surrounding ``Seq``) becomes one :class:`Class`;
* in a ``Seq``, literal bytes and byte classes are cut at character boundaries (lead byte +
  continuation bytes) and each character position decoded;
* anything else byte-level (a lone continuation byte, an overlong form, a byte class mixing
  lead bytes of different lengths, ...) raises :class:`GrammarError` naming the rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeAlias

from toolmask.errors import GrammarError
from toolmask.grammar._charset import MAX_CP, CharSet
from toolmask.grammar._ir import (
    ByteClass,
    Bytes,
    Choice,
    Node,
    Repeat,
    RuleRef,
    Seq,
    Special,
    seq,
)
from toolmask.grammar.passes.utf8_classes import charset_of, decode_product, lead_length

__all__ = [
    "SURROGATES",
    "CAlt",
    "CNode",
    "CRep",
    "CSeq",
    "Class",
    "Ref",
    "Text",
    "Tok",
    "class_forms",
    "postfix",
    "special_text",
    "to_code_points",
    "unique_names",
    "words",
]

SURROGATES = CharSet.range(0xD800, 0xDFFF)


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Class:
    chars: CharSet


@dataclass(frozen=True, slots=True)
class CSeq:
    items: tuple[CNode, ...]


@dataclass(frozen=True, slots=True)
class CAlt:
    items: tuple[CNode, ...]


@dataclass(frozen=True, slots=True)
class CRep:
    item: CNode
    min: int
    max: int | None


@dataclass(frozen=True, slots=True)
class Ref:
    name: str


@dataclass(frozen=True, slots=True)
class Tok:
    text: str


CNode: TypeAlias = Text | Class | CSeq | CAlt | CRep | Ref | Tok


def _not_expressible(node: Node, dialect: str, rule: str) -> GrammarError:
    return GrammarError(
        f"{dialect}: rule {rule!r}: the byte-level construct {node} does not encode whole UTF-8 "
        f"characters; {dialect} works on Unicode code points and cannot express it"
    )


def _class_or_text(cs: CharSet) -> CNode:
    if len(cs) == 1:
        return Text(chr(cs.ranges[0][0]))
    return Class(cs)


def to_code_points(node: Node, *, dialect: str, rule: str) -> CNode:
    """Lift ``node`` to a code-point tree with the same language; GrammarError if impossible."""
    if isinstance(node, Bytes):
        try:
            return Text(node.value.decode("utf-8"))
        except UnicodeDecodeError:
            raise _not_expressible(node, dialect, rule) from None
    if isinstance(node, ByteClass):
        cs = decode_product((node.mask,))
        if cs is None:
            raise _not_expressible(node, dialect, rule)
        return _class_or_text(cs)
    if isinstance(node, RuleRef):
        return Ref(node.name)
    if isinstance(node, Special):
        return Tok(node.text)
    if isinstance(node, Repeat):
        return CRep(to_code_points(node.item, dialect=dialect, rule=rule), node.min, node.max)
    if isinstance(node, Choice):
        return _choice(node, dialect, rule)
    return _seq(node, dialect, rule)


def _choice(node: Choice, dialect: str, rule: str) -> CNode:
    whole = charset_of(node)
    if whole is not None and node.items:
        return _class_or_text(whole)
    out: list[CNode] = []
    union: CharSet | None = None
    at = -1
    for item in node.items:
        cs = charset_of(item)
        if cs is None:
            out.append(to_code_points(item, dialect=dialect, rule=rule))
            continue
        if union is None:
            union, at = cs, len(out)
        else:
            union = union | cs
    if union is not None:
        out.insert(at, _class_or_text(union))
    return CAlt(tuple(out))


def _seq(node: Seq, dialect: str, rule: str) -> CNode:
    units: list[int | Node] = []
    for it in node.items:
        if isinstance(it, Bytes):
            units.extend(1 << b for b in it.value)
        elif isinstance(it, ByteClass):
            units.append(it.mask)
        else:
            units.append(it)
    out: list[CNode] = []
    i = 0
    while i < len(units):
        u = units[i]
        if not isinstance(u, int):
            out.append(to_code_points(u, dialect=dialect, rule=rule))
            i += 1
            continue
        n = lead_length(u)
        cs: CharSet | None = None
        if n is not None and i + n <= len(units):
            chunk = units[i : i + n]
            masks = [x for x in chunk if isinstance(x, int)]
            if len(masks) == n:
                cs = decode_product(tuple(masks))
                if cs is not None:
                    i += n
        if cs is None:
            # a character split across nodes (e.g. a shared lead byte factored out of a Choice)
            for j in range(i + 1, min(len(units), i + 4) + 1):
                part = seq(*(ByteClass(x) if isinstance(x, int) else x for x in units[i:j]))
                cs = charset_of(part)
                if cs is not None:
                    i = j
                    break
            else:
                raise _not_expressible(node, dialect, rule)
        out.append(_class_or_text(cs))
    merged: list[CNode] = []
    for c in out:
        if isinstance(c, Text) and merged and isinstance(merged[-1], Text):
            merged[-1] = Text(merged[-1].text + c.text)
        else:
            merged.append(c)
    if len(merged) == 1:
        return merged[0]
    return CSeq(tuple(merged))


def class_forms(cs: CharSet) -> tuple[bool, CharSet]:
    """How to print ``cs`` as a bracket class: ``(negated, ranges_to_print)``.

    Surrogates are never in a decoded set and never encodable, so either form may include or
    exclude them freely; the shorter form wins (on a tie, negated iff ``cs`` reaches U+10FFFF).
    ``[^...]`` of the printed set, minus surrogates, equals ``cs``. An empty set comes back as
    ``(True, everything)``: the negation of everything.
    """
    if cs.is_empty():
        return True, CharSet.range(0, MAX_CP)
    positive = cs | SURROGATES if (0xD7FF in cs and 0xE000 in cs) else cs
    negative = cs.complement() - SURROGATES
    if 0xD7FF in negative and 0xE000 in negative:
        negative = negative | SURROGATES
    n_neg, n_pos = len(negative.ranges), len(positive.ranges)
    if n_neg < n_pos or (n_neg == n_pos and MAX_CP in cs):
        return True, negative
    return False, positive


_WORD = re.compile(r"[A-Za-z0-9]+")


def words(name: str) -> list[str]:
    """Alphanumeric runs of ``name``, camelCase humps split (``jsonValue_2`` -> json Value 2)."""
    out: list[str] = []
    for run in _WORD.findall(name):
        out.extend(re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", run) or [run])
    return out


def unique_names(
    names: Iterable[str],
    convert: Callable[[str], str],
    *,
    reserved: dict[str, str],
    sep: str,
) -> dict[str, str]:
    """Map each IR name to ``convert(name)``, made unique with ``{sep}2``, ``{sep}3``... suffixes.

    ``reserved`` pins IR names to fixed printed names (the start rule); no other name may take
    a reserved printed name. Deterministic: names are processed in the given order.
    """
    taken = set(reserved.values())
    out = dict(reserved)
    for name in names:
        if name in out:
            continue
        base = convert(name)
        cand, k = base, 2
        while cand in taken:
            cand, k = f"{base}{sep}{k}", k + 1
        taken.add(cand)
        out[name] = cand
    return out


def special_text(text: str, *, dialect: str, rule: str) -> str:
    """A special token as GBNF and Lark write it: ``<text>``, with nothing that would read as
    a token id (``<[...]>``), a closing ``>`` inside, or a line break. Raises
    :class:`GrammarError` naming ``dialect`` and ``rule`` otherwise."""
    if not (len(text) > 2 and text[0] == "<" and text[-1] == ">" and ">" not in text[1:-1]):
        raise GrammarError(
            f"{dialect}: rule {rule!r}: special token {text!r} cannot be written in {dialect}, "
            "which names special tokens only as <text>"
        )
    if text.startswith("<[") or "\n" in text:
        raise GrammarError(f"{dialect}: rule {rule!r}: special token {text!r} cannot be written")
    return text


def postfix(inner: str, lo: int, hi: int | None, counted: Callable[[int, int], str]) -> str:
    """``inner`` under a repetition: ``*``, ``+``, ``?``, ``{lo,}``, else ``counted(lo, hi)``
    (the dialect's own form of a bounded count, ``{n}`` / ``~n`` ...)."""
    if (lo, hi) == (0, None):
        return inner + "*"
    if (lo, hi) == (1, None):
        return inner + "+"
    if (lo, hi) == (0, 1):
        return inner + "?"
    if hi is None:
        return f"{inner}{{{lo},}}"
    return inner + counted(lo, hi)
