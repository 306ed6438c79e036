"""The lowering of scalars and strings: constant values (one, or a set of them as a byte trie of
their spellings), numbers, strings, declared keys and the colon after them, in the layout and
the notation of the lowerer that asks.

Free functions of a :class:`Lowering`: the part of the :class:`~toolmask.schema._lower.Lowerer`
that the lowering of one JSON type uses (its options, the rules defined so far, and its
bookkeeping: ``define`` a rule, a ``fresh`` name, the ``shared`` rules, a DFA's node, ``ref`` to
a term's rule). The arrays' and objects' lowering (:mod:`._lower_containers`) takes the same; a
protocol, so that neither module imports the lowerer that imports them.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterable
from typing import Any, Literal, Protocol

from toolmask.errors import LimitError
from toolmask.grammar import (
    ANY_CHAR,
    Dfa,
    Node,
    RuleRef,
    choice,
    lit,
    regex_direct_node,
    repeat,
    seq,
)
from toolmask.limits import Limits
from toolmask.schema import _langs
from toolmask.schema._algebra import to_decimal
from toolmask.schema._json_text import any_json_string_char, json_string_char
from toolmask.schema._layout import Layout
from toolmask.schema._literal_trie import Tail, number_spellings, trie_node
from toolmask.schema._notation import Notation, gemma_key_dfa, gemma_quote, gemma_string_dfa
from toolmask.schema._terms import NumAlt, StrAlt, Term, canonical

__all__ = [
    "DfaEncoding",
    "Lowering",
    "colon",
    "declared_key",
    "literal",
    "literal_set",
    "number",
    "spelled",
    "string",
    "text_string",
]

DfaEncoding = Literal["raw", "json_string", "python'", 'python"']


class Lowering(Protocol):
    """What the lowering of one JSON type uses of the lowerer that drives it."""

    layout: Layout
    notation: Notation
    special_tokens: frozenset[str]
    limits: Limits
    #: what a missing ``additionalProperties`` means
    addl_default: bool
    #: an object's declared keys in any order
    any_order: bool
    #: the rules defined so far, by name
    rules: dict[str, Node]
    #: the keywords left to the post-decode check, as ``(pointer, keyword)``
    over: set[tuple[str, str]]
    #: the node of each string in a notation other than JSON (None: any string)
    strings: dict[Dfa | None, Node]

    def define(self, name: str, body: Node) -> None: ...
    def fresh(self, kind: str) -> str: ...
    def ref(self, term: Term, depth: int) -> Node: ...
    def is_bottom(self, term: Term) -> bool: ...
    def shared(self, name: str) -> Node: ...
    def dfa_node(self, dfa: Dfa, encoding: DfaEncoding) -> Node: ...


def literal(lw: Lowering, value: Any, depth: int) -> Node:
    """One constant value (see :func:`literal_set`)."""
    return literal_set(lw, (canonical(value),), depth)


def literal_set(lw: Lowering, texts: Iterable[str], depth: int) -> Node:
    """A set of constant values (their canonical JSON texts, :func:`canonical`) as one byte
    trie of their spellings (see :mod:`._literal_trie`): numbers in every exponent-free
    spelling, objects of 2 to 4 members in any member order, other values as the layout
    renders them. Values in a notation other than JSON, other than numbers, are spelled
    node by node beside the trie (their strings have several quotings). O(total bytes of
    the spellings); no rule. The values are taken in sorted order (a set has none; the terms
    that meet to make it may come in any), so the grammar's text is the same in every run."""
    spellings: list[tuple[bytes, Tail]] = []
    others: list[Node] = []
    json_text = lw.notation.name == "json"
    render = lw.layout.render
    for text in sorted(set(texts)):
        first = text[0]
        if first == '"' and json_text:  # a string is written the same in every layout
            spellings.append((text.encode(), ""))
            continue
        if first in _INT_START and text != "0" and text.lstrip("-").isdigit():
            # a canonical integer other than 0 (which is also written -0): no leading zero
            spellings.append((text.encode(), "int"))
            continue
        value = json.loads(text)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            spellings.extend(number_spellings(to_decimal(value, "", "const")))
        elif not json_text:
            others.append(spelled(lw, value, depth))
        elif isinstance(value, dict) and 2 <= len(value) <= 4:
            for order in itertools.permutations(value.items()):
                spellings.append((render(dict(order), depth).encode(), ""))
        else:
            spellings.append((render(value, depth).encode(), ""))
    size = sum(len(text) for text, _ in spellings)
    if size > lw.limits.max_literal_bytes:
        raise LimitError(
            f"the literal values take {size} bytes spelled out", limit="max_literal_bytes"
        )
    return choice(trie_node(spellings), *others)


def number(lw: Lowering, n: NumAlt) -> Node:
    if n.rng is not None:
        assert n.integer == (n.rng.plain is not None)
        return n.rng.node
    if n.is_any:
        return lw.shared("integer" if n.integer else "number")
    d = n.lang(lw.limits)
    assert d is not None
    if n.integer:
        d = _langs.dfa_and(d, _langs.int_plain(), lw.limits)
    return lw.dfa_node(d, "raw")


def string(lw: Lowering, s: StrAlt) -> Node:
    if lw.notation.name != "json":  # a format's or a pattern's DFA is built for it
        return text_string(lw, s.lang(lw.limits))
    if s.fmt is not None:
        node = _format_node(s.fmt)
        if node is None:
            node = lw.dfa_node(_langs.format_dfa(s.fmt), "json_string")
        return seq(lit('"'), node, lit('"'))
    if s.pat is not None:
        node = _langs.pattern_node(s.pat, lw.limits)
        assert node is not None
        return seq(lit('"'), node, lit('"'))
    if s.dfa is None:
        return lw.shared("string")
    bounds = _length_only(s.dfa)
    if bounds is not None:
        # minLength / maxLength alone: a repetition of one character, not a rule per length
        lo, hi = bounds
        return seq(lit('"'), repeat(any_json_string_char(), lo, hi), lit('"'))
    return seq(lit('"'), lw.dfa_node(s.dfa, "json_string"), lit('"'))


# notations other than JSON
def text_string(lw: Lowering, dfa: Dfa | None) -> Node:
    """A string whose contents are in ``dfa`` (any text when None), in the notation."""
    got = lw.strings.get(dfa)
    if got is not None:
        return got
    if lw.notation.name == "gemma":
        quote = lw.notation.quote
        node = lw.dfa_node(gemma_string_dfa(dfa, quote), "raw")
        if lw.notation.delimited:
            q = gemma_quote(lw.special_tokens, quote)
            node = seq(q, node, q)
    else:  # python: either quote
        d = Dfa.any_string() if dfa is None else dfa
        node = choice(
            seq(lit("'"), lw.dfa_node(d, "python'"), lit("'")),
            seq(lit('"'), lw.dfa_node(d, 'python"'), lit('"')),
        )
    if dfa is None:  # one rule for the free string, as JSON's ``string``
        lw.define("string", node)
        node = RuleRef("string")
    lw.strings[dfa] = node
    return node


#: ``json.dumps(..., ensure_ascii=False)``'s encoder, made once
_UTF8_JSON = json.JSONEncoder(ensure_ascii=False)


def declared_key(lw: Lowering, name: str) -> Node:
    """A declared key, in the notation."""
    if lw.notation.name == "json":
        return lit(_UTF8_JSON.encode(name))  # json.dumps(name, ensure_ascii=False)
    if lw.notation.name == "gemma":  # bare, else quoted (the reader takes both)
        if gemma_key_dfa(None).accepts(name):
            return lit(name)
        return text_string(lw, Dfa.literal(name))
    return text_string(lw, Dfa.literal(name))


def colon(lw: Lowering) -> Node:
    if lw.notation.name == "gemma" and lw.layout.mode != "flexible":
        return lit(":")
    return lw.layout.colon()


def spelled(lw: Lowering, value: Any, depth: int) -> Node:
    """A constant value written in a notation other than JSON (strings in every quoting
    the notation has; objects of 2 to 4 members in any order, as for JSON)."""
    L = lw.layout
    n = lw.notation
    if value is None:
        return lit(n.null)
    if value is True:
        return lit(n.true)
    if value is False:
        return lit(n.false)
    if isinstance(value, str):
        return text_string(lw, Dfa.literal(value))
    if isinstance(value, (int, float)):
        return literal(lw, value, depth)
    if isinstance(value, list):
        if not value:
            return L.empty("[]")
        items = [spelled(lw, v, depth + 1) for v in value]
        body = [items[0]]
        for it in items[1:]:
            body += [L.sep(depth), it]
        return seq(L.open("[", depth), *body, L.close("]", depth))
    if not value:
        return L.empty("{}")
    members = list(value.items())
    orders = itertools.permutations(members) if 2 <= len(members) <= 4 else [members]
    alts = []
    for order in orders:
        body = []
        for i, (k, v) in enumerate(order):
            if i:
                body.append(L.sep(depth))
            body += [declared_key(lw, str(k)), colon(lw), spelled(lw, v, depth + 1)]
        alts.append(seq(L.open("{", depth), *body, L.close("}", depth)))
    return choice(*alts)


#: the first characters of an integer's canonical text
_INT_START = frozenset("-0123456789")


@functools.cache
def _format_node(name: str) -> Node | None:
    """A known format's string body straight from its regex's syntax tree (JSON-escaped code
    points), or None when the regex needs its DFA (inner anchors): no automaton is built at
    compile time, the matcher determinises it lazily. Known formats only: their regexes are
    vetted (a user's pattern keeps the DFA route, whose size limits are checked at compile
    time). Cached per format."""
    from toolmask.schema._formats import FORMATS

    rx = FORMATS[name].regex
    assert rx is not None
    return regex_direct_node(rx, encoding=json_string_char)


#: the longest length bound written as a repetition (beyond it, a rule per length: a repetition
#: is unrolled by the automaton and bounded by ``Limits.max_repeat_unroll``)
_MAX_LENGTH_REPEAT = 128


def _length_only(dfa: Dfa) -> tuple[int, int | None] | None:
    """``(lo, hi)`` when ``dfa`` is exactly "any ``lo`` to ``hi`` characters" (``Dfa.length``:
    a chain of states on every code point, final from ``lo`` on, the last one looping when
    unbounded) with ``hi`` at most ``_MAX_LENGTH_REPEAT``; else None. O(states)."""
    edges = dfa.edges
    n = len(edges)
    if n > _MAX_LENGTH_REPEAT + 1:
        return None
    if dfa.finals and len(edges[-1]) <= 1:
        # the usual case, minLength / maxLength alone: the length language's own DFA (the
        # memo's, what a string's keywords made), told by identity without reading its states
        lo = min(dfa.finals)
        hi = None if edges[-1] else n - 1
        if (hi is not None or lo == n - 1) and _langs.length_dfa(lo, hi) is dfa:
            return lo, hi
    for i, es in enumerate(edges[:-1]):
        if len(es) != 1:
            return None
        cs, to = es[0]
        # Dfa.length's edges share one class object: identity settles the usual case
        if to != i + 1 or (cs is not ANY_CHAR and cs != ANY_CHAR):
            return None
    last = edges[-1]
    if last and (len(last) != 1 or last[0][0] != ANY_CHAR or last[0][1] != n - 1):
        return None
    if not dfa.finals or dfa.finals != frozenset(range(min(dfa.finals), n)):
        return None
    return min(dfa.finals), (n - 1 if not last else None)
