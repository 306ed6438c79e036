"""A choice of many literals is read as its trie by both automaton builders: the same language
as the choice (checked against the set of literals itself, byte by byte), and the same
positions in the compiled kernel and the reference."""

from __future__ import annotations

import random

import pytest

from tests.automaton.ir_grammars import single
from toolmask._kernel import backend
from toolmask.automaton import Automaton, build_automaton
from toolmask.automaton._build import build_automaton as build_reference
from toolmask.automaton._native import build_native_automaton
from toolmask.grammar._ir import (
    ByteClass,
    Bytes,
    Choice,
    Grammar,
    Node,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    lit,
    seq,
)
from toolmask.grammar.passes import (
    LITERAL_TRIE_DEPTH,
    LITERAL_TRIE_GROUP,
    LITERAL_TRIE_MIN,
    literal_trie,
    literal_tries,
)


def _words(n: int, seed: int) -> list[bytes]:
    """``n`` words with shared prefixes, prefixes of each other, an empty one, non-ASCII and
    0xff bytes: what a trie must split right."""
    rng = random.Random(seed)
    stems = [b"get_", b"get_x", b"list", b"list_", b"\xc3\xa9t\xc3\xa9", b"\xff\xfe", b""]
    out = {b"", b"get_", b"g", b"\xff"}
    while len(out) < n:
        out.add(rng.choice(stems) + bytes(rng.choice(b"ab_\xff") for _ in range(rng.randint(0, 3))))
    return sorted(out)


def _next_bytes(words: list[bytes], prefix: bytes) -> set[int]:
    return {w[len(prefix)] for w in words if len(w) > len(prefix) and w.startswith(prefix)}


def _check_language(a: Automaton, words: list[bytes], before: bytes = b"") -> None:
    """Every prefix of every word (and one byte past it): the bytes the automaton allows are
    the words' next bytes, and it accepts exactly the words."""
    state = a.advance_bytes(a.initial, before)
    assert state is not None
    texts = {w[:i] for w in words for i in range(len(w) + 1)}
    texts |= {t + b"a" for t in texts} | {t + b"\xff" for t in texts}
    for text in sorted(texts):
        s = a.advance_bytes(state, text)
        alive = any(w.startswith(text) for w in words)
        assert (s is not None) == alive, text
        if s is None:
            continue
        allowed = {b for b in range(256) if a.advance(s, b) is not None}
        assert allowed == _next_bytes(words, text), text
        assert a.is_accepting(s) == (text in words), text


@pytest.mark.parametrize("n", [LITERAL_TRIE_MIN - 1, LITERAL_TRIE_MIN, 40, 300])
def test_a_choice_of_literals_accepts_exactly_its_literals(n: int) -> None:
    words = _words(n, seed=n)
    assert len(words) == n
    # shuffled, with a duplicate: the trie sorts and drops it
    items = [Bytes(w) for w in random.Random(n).sample(words, n)] + [Bytes(words[3])]
    a = build_automaton(single(seq(lit("<"), Choice(tuple(items)))))
    _check_language(a, words, before=b"<")


def test_the_trie_of_literals_has_the_same_language_as_their_choice() -> None:
    words = _words(120, seed=7)
    trie = literal_trie(reversed(words))
    # the trie is made of literals, choices and sequences only, smaller groups as choices
    assert isinstance(trie, Choice)
    assert len(trie.items) < len(words)
    a = build_automaton(single(trie))
    _check_language(a, words)
    assert literal_trie([]) == Choice(())
    assert literal_trie([b"one", b"one"]) == Bytes(b"one")


def test_small_groups_stay_choices_of_their_rests() -> None:
    words = [b"calc_" + bytes([c]) for c in b"abcd"] + [b"z%d" % i for i in range(8)]
    trie = literal_trie(words)
    assert isinstance(trie, Choice)
    calc = trie.items[0]
    assert calc == Seq((Bytes(b"calc_"), Choice(tuple(Bytes(bytes([c])) for c in b"abcd"))))
    assert LITERAL_TRIE_GROUP == 4


def test_the_pass_rewrites_only_choices_of_many_literals() -> None:
    words = _words(30, seed=3)
    many = Choice(tuple(Bytes(w) for w in words))
    few = Choice(tuple(Bytes(w) for w in words[: LITERAL_TRIE_MIN - 1]))
    mixed = Choice((*many.items, ByteClass(1 << 65)))  # not literals only: kept
    g = Grammar(
        (
            Rule("root", seq(RuleRef("a"), Repeat(many, 0, 3), few, mixed)),
            Rule("a", Seq((lit("x"), many))),
        )
    )
    out = literal_tries(g)
    assert out is not g and out.start == g.start
    assert out["root"].body.items[1].item == literal_trie(words)  # type: ignore[union-attr]
    assert out["root"].body.items[2] is few  # type: ignore[union-attr]
    assert out["root"].body.items[3] is mixed  # type: ignore[union-attr]
    assert out["a"].body.items[1] == literal_trie(words)  # type: ignore[union-attr]
    plain = Grammar((Rule("root", seq(lit("x"), few, mixed)),))
    assert literal_tries(plain) is plain


def _explore(a: Automaton, data: list[bytes]) -> int:
    for d in data:
        a.advance_bytes(a.initial, d)
    return a.n_positions


@pytest.mark.skipif(backend() != "native", reason="needs the compiled kernel")
def test_both_builders_make_the_same_positions() -> None:
    words = _words(200, seed=11)
    inner: Node = Choice(tuple(Bytes(w) for w in words))
    # a choice whose alternatives are tries of identical literals: literals after the rewrite
    same = Choice(tuple(Choice(tuple(Bytes(b"k%d" % i) for _ in range(8))) for i in range(9)))
    g = single(seq(lit('{"name": "'), inner, lit('"'), Repeat(same, 1, 2)))
    texts = [b'{"name": "' + w + b'"k3k7' for w in words]
    ref, nat = build_reference(g), build_native_automaton(g)
    assert _explore(ref, texts) == _explore(nat, texts)
    # the same NFA: the kernel reads the choice as the trie the reference's pass writes
    assert nat.nfa_states == len(ref._dfa.nfa)  # type: ignore[attr-defined]
    for t in texts:
        r, n = ref.advance_bytes(ref.initial, t), nat.advance_bytes(nat.initial, t)
        assert (r is None) == (n is None) and r is not None and n is not None
        assert ref.is_accepting(r) == nat.is_accepting(n)


def test_a_chain_of_prefixes_nests_no_deeper_than_the_cap() -> None:
    # each literal a prefix of the next: one branch point per literal, past the cap a choice
    words = [b"x" * i for i in range(1, 3 * LITERAL_TRIE_DEPTH)]
    trie = literal_trie(words)
    depth, node = 0, trie
    while isinstance(node, (Seq, Choice)):
        depth += 1
        node = node.items[-1]
    assert depth <= 2 * LITERAL_TRIE_DEPTH + 2
    a = build_automaton(single(seq(Choice(tuple(map(Bytes, words))), lit("!"))))
    for i in range(3 * LITERAL_TRIE_DEPTH + 2):
        s = a.advance_bytes(a.initial, b"x" * i + b"!")
        assert (s is not None and a.is_accepting(s)) == (1 <= i < 3 * LITERAL_TRIE_DEPTH), i
