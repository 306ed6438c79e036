"""The reference recogniser and sampler for grammar IR, shared by the grammar and automaton tests.

Deliberately simple and independent of the automaton (which these tests check): it computes,
for a node and a start position, the set of positions where a match of the node can end, and
grows the table of rule matches to a fixpoint by whole passes, so left recursion terminates (a
rule met again while in progress reads its current, partial entry). Input is bytes or a list of
symbols (a byte, or the text of a special token that a :class:`Special` node matches).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from toolmask.grammar import (
    ByteClass,
    Bytes,
    Choice,
    Grammar,
    Node,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    Special,
)

__all__ = ["derives", "ir_fullmatch", "matches", "same_language", "sample"]

Symbol = int | str  # a byte, or the text of a special token


def derives(rules: Mapping[str, Node], node: Node, symbols: bytes | Sequence[Symbol]) -> bool:
    """Whether ``node`` (its rule references looked up in ``rules``) derives exactly
    ``symbols``."""
    syms: tuple[Symbol, ...] = tuple(symbols)
    n = len(syms)
    table: dict[tuple[str, int], frozenset[int]] = {}
    visited: set[tuple[str, int]] = set()
    memo: dict[tuple[int, int], frozenset[int]] = {}  # per pass: the table only grows
    changed = False

    def rule_ends(name: str, i: int) -> frozenset[int]:
        nonlocal changed
        key = (name, i)
        if key in visited:
            return table.get(key, frozenset())
        visited.add(key)
        while True:
            old = table.get(key, frozenset())
            new = old | ev(rules[name], i)
            if new == old:
                return old
            table[key] = new
            changed = True

    def ev(node: Node, i: int) -> frozenset[int]:
        key = (id(node), i)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = _ev(node, i)
        return hit

    def _ev(node: Node, i: int) -> frozenset[int]:
        if isinstance(node, Bytes):
            j = i + len(node.value)
            return frozenset((j,)) if syms[i:j] == tuple(node.value) else frozenset()
        if isinstance(node, ByteClass):
            s = syms[i] if i < n else None
            return frozenset((i + 1,)) if isinstance(s, int) and s in node else frozenset()
        if isinstance(node, Special):
            return frozenset((i + 1,)) if i < n and syms[i] == node.text else frozenset()
        if isinstance(node, RuleRef):
            return rule_ends(node.name, i)
        if isinstance(node, Seq):
            cur = frozenset((i,))
            for it in node.items:
                cur = frozenset(k for j in cur for k in ev(it, j))
                if not cur:
                    break
            return cur
        if isinstance(node, Choice):
            return frozenset(k for it in node.items for k in ev(it, i))
        assert isinstance(node, Repeat)
        out = {i} if node.min == 0 else set()
        layer, k = frozenset((i,)), 0
        limit = node.max if node.max is not None else node.min + n + 1
        while layer and k < limit:
            layer = frozenset(e for j in layer for e in ev(node.item, j))
            k += 1
            if k >= node.min:
                out |= layer
        return frozenset(out)

    while True:
        changed = False
        visited.clear()
        memo.clear()
        ends = ev(node, 0)
        if not changed:
            return n in ends


def matches(g: Grammar, data: bytes | Sequence[Symbol]) -> bool:
    """Whether ``g`` derives ``data`` (bytes, or bytes and special-token texts)."""
    return derives({r.name: r.body for r in g.rules}, RuleRef(g.start), data)


def ir_fullmatch(node: Node, rules: tuple[Rule, ...], data: bytes) -> bool:
    """Whether ``node``, with the rules ``rules``, derives exactly ``data``."""
    return derives({r.name: r.body for r in rules}, node, data)


class _TooDeep(Exception):
    pass


def sample(g: Grammar, rng: random.Random, depth: int = 12) -> bytes | None:
    """A random string of ``g`` (``None`` when the derivation gets too deep)."""

    def gen(node: Node, d: int) -> bytes:
        if d > depth:
            raise _TooDeep
        if isinstance(node, Bytes):
            return node.value
        if isinstance(node, ByteClass):
            return bytes([rng.choice(node.bytes())])
        if isinstance(node, RuleRef):
            return gen(g[node.name].body, d + 1)
        if isinstance(node, Seq):
            return b"".join(gen(i, d) for i in node.items)
        if isinstance(node, Choice):
            return gen(rng.choice(node.items), d)
        if isinstance(node, Repeat):
            hi = node.min + 2 if node.max is None else min(node.max, node.min + 2)
            return b"".join(gen(node.item, d + 1) for _ in range(rng.randint(node.min, hi)))
        raise _TooDeep  # Special: not a byte string

    for _ in range(20):
        try:
            return gen(RuleRef(g.start), 0)
        except _TooDeep:
            continue
    return None


def same_language(a: Grammar, b: Grammar, seed: int = 0, n: int = 25) -> None:
    """Assert ``a`` and ``b`` agree on samples of both and on mutations of those samples."""
    rng = random.Random(seed)
    corpus: set[bytes] = {b""}
    for g in (a, b):
        for _ in range(n):
            s = sample(g, rng)
            if s is None:
                continue
            corpus.add(s)
            if s:
                k = rng.randrange(len(s))
                corpus.add(s[:k] + s[k + 1 :])
                corpus.add(s[:k] + bytes([rng.randrange(256)]) + s[k:])
    for s in sorted(corpus):
        assert matches(a, s) == matches(b, s), s
