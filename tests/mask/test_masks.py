"""Token masks on real vocabularies (quicktok's Qwen3 / Llama-3 / o200k, and a hand-made one).

* Forcing the tokens of valid instances is accepted step by step, each token is in the mask
  before it is accepted, and EOS is allowed exactly at the end.
* Every token a mask allows really keeps the automaton alive, and a sample of rejected tokens
  really kill it (checked with ``accept_bytes`` on a fresh matcher at the same state).
* Multi-byte UTF-8 split across tokens works; special tokens are out of band.

The public API runs on both backends (``compiler`` fixture); the tests of the reference's
internals (``compute_mask``, the loop shortcut, the run tables) use the python backend, and
``test_native.py`` compares the two state by state.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest

import toolmask as tm
from toolmask.mask import TokenTrie, backend, compute_mask, loop_set
from toolmask.vocab import Vocabulary

S: dict[str, Any] = {"type": "string"}
SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": 40},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
            "score": {"type": "number"},
            "strict": {"type": "boolean"},
        },
        "required": ["query", "tags"],
    },
]
INSTANCES: list[tuple[int, Any]] = [
    (0, {"city": "Paris"}),
    (0, {"city": "東京 🌧️ «Tōkyō»", "unit": "celsius", "days": 14}),
    (1, {"query": 'naïve café\nnew line "quoted" \\ back', "tags": ["a", "bc"], "score": -1.5}),
    (1, {"query": "", "tags": [], "strict": True}),
]


BACKENDS = ["python", "native"] if backend() == "native" else ["python"]
PYTHON = tm.GrammarCompiler(backend="python")


@pytest.fixture(scope="module", params=["qwen3", "llama3", "o200k"])
def vocab(request: pytest.FixtureRequest) -> Vocabulary:
    return Vocabulary.from_quicktok(request.param)


@pytest.fixture(scope="module", params=BACKENDS)
def compiler(request: pytest.FixtureRequest) -> tm.GrammarCompiler:
    return PYTHON if request.param == "python" else tm.GrammarCompiler(backend="native")


def _compiled(
    schema: dict[str, Any], vocab: Vocabulary, compiler: tm.GrammarCompiler = PYTHON
) -> tm.CompiledGrammar:
    return compiler.compile(tm.Grammar.from_json_schema(schema), vocab)


def _allowed(m: tm.Matcher) -> set[int]:
    return set(m.allowed_token_ids().tolist())


def _bytes_alive(c: tm.CompiledGrammar, prefix: bytes, token: bytes) -> bool:
    m = c.matcher()
    assert m.accept_bytes(prefix)
    return m.accept_bytes(token)


@pytest.mark.parametrize("which", range(len(INSTANCES)))
def test_forced_instances_are_accepted(
    vocab: Vocabulary, compiler: tm.GrammarCompiler, which: int
) -> None:
    si, value = INSTANCES[which]
    c = _compiled(SCHEMAS[si], vocab, compiler)
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    ids = vocab.encode_greedy(text)
    m = c.matcher()
    rng = random.Random(which)
    done = b""
    for tid in ids:
        allowed = _allowed(m)
        assert tid in allowed, f"token {vocab.token_bytes[tid]!r} not allowed after {done!r}"
        assert not (set(vocab.eos_ids) & allowed), f"EOS allowed after {done!r}"
        # every allowed text token keeps the automaton alive; sampled rejected ones do not
        texts = [t for t in allowed if vocab.is_text(t)]
        for t in rng.sample(texts, min(20, len(texts))):
            assert _bytes_alive(c, done, vocab.token_bytes[t]), vocab.token_bytes[t]
        pool = [t for t in rng.sample(range(vocab.vocab_size), 200) if vocab.is_text(t)]
        for t in pool:
            if t not in allowed:
                assert not _bytes_alive(c, done, vocab.token_bytes[t]), vocab.token_bytes[t]
        assert m.accept_token(tid)
        done += vocab.token_bytes[tid]
    assert done == text
    final = _allowed(m)
    assert set(vocab.eos_ids) <= final
    eos = min(vocab.eos_ids)
    assert m.accept_token(eos)
    assert m.stopped and m.is_finished()
    assert m.allowed_token_ids().size == 0
    assert not m.accept_token(eos)
    m.rollback(1)
    assert not m.stopped
    assert m.accept_token(eos)


def test_mask_equals_brute_force_on_every_step(compiler: tm.GrammarCompiler) -> None:
    """A small vocabulary: the mask is exactly the set of tokens that accept_bytes takes."""
    words = [b"{", b"}", b'"', b'"c', b"ity", b'":', b'":"', b"P", b"ar", b"is", b'"}', b",", b" "]
    words += [bytes([b]) for b in range(32, 127) if bytes([b]) not in words]
    words += ["é".encode()[:1], "é".encode()[1:], "é".encode(), "東".encode()]
    vocab = Vocabulary.from_token_bytes(
        [*words, b"<eos>"], eos_ids=[len(words)], special_ids=[len(words)]
    )
    c = _compiled(SCHEMAS[0], vocab, compiler)
    text = '{"city":"Pé東is"}'.encode()
    m = c.matcher()
    for i in range(len(text) + 1):
        want = {t for t, w in enumerate(words) if _bytes_alive(c, text[:i], w)}
        if m.is_accepting():
            want.add(len(words))
        assert _allowed(m) == want, text[:i]
        if i < len(text):
            assert m.accept_bytes(text[i : i + 1])


def test_utf8_split_across_tokens(compiler: tm.GrammarCompiler) -> None:
    e = "é".encode()
    vocab = Vocabulary.from_token_bytes(
        [b'"', e[:1], e[1:], b"a", b"\xff"], eos_ids=[], vocab_size=8
    )
    c = _compiled({"type": "string"}, vocab, compiler)
    m = c.matcher()
    assert m.accept_token(0)
    assert _allowed(m) == {0, 1, 3}  # the lone continuation byte and 0xff are not UTF-8 here
    assert m.accept_token(1)
    assert _allowed(m) == {2}  # only the continuation may follow the lead byte
    assert m.accept_token(2)
    assert m.accept_token(0)
    assert m.is_accepting()
    assert not m.accept_token(6)  # padding id


def test_loop_shortcut_matches_plain_walk(vocab: Vocabulary) -> None:
    """Inside a string the shortcut is used, and gives the same mask as the plain trie walk."""
    c = _compiled({"type": "string"}, vocab)
    m = c.matcher()
    assert m.accept_bytes(b'"ab')
    a, s = c.automaton, m.state
    loop, utf8 = loop_set(a, s, a.allowed_bytes(s))
    assert bin(loop).count("1") > 90 and utf8
    idx = PYTHON.vocab_index(vocab)
    fast = compute_mask(a, s, idx)
    plain: list[int] = []
    from toolmask.mask._compute import _walk

    _walk(a, s, idx.trie, a.allowed_bytes(s), plain)
    want = np.zeros(idx.words * 32, dtype=np.bool_)
    want[plain] = True
    assert np.array_equal(np.packbits(want, bitorder="little").view(np.int32), fast)


def test_special_tokens_are_out_of_band(compiler: tm.GrammarCompiler) -> None:
    vocab = Vocabulary.from_quicktok("qwen3")
    im_end = vocab.special_id("<|im_end|>")
    assert im_end is not None
    c = _compiled({"type": "string"}, vocab, compiler)
    m = c.matcher()
    assert m.accept_bytes(b'"')
    assert im_end not in _allowed(m)  # its text is never matched as bytes
    assert not m.accept_token(im_end)


def test_fill_bitmask_layout(vocab: Vocabulary, compiler: tm.GrammarCompiler) -> None:
    c = _compiled(SCHEMAS[0], vocab, compiler)
    m = c.matcher()
    out = np.zeros((2, (vocab.vocab_size + 31) // 32), dtype=np.int32)
    m.fill_bitmask(out, 1)
    assert not out[0].any()
    ids = np.flatnonzero(np.unpackbits(out[1].view(np.uint8), bitorder="little"))
    assert ids.tolist() == m.allowed_token_ids().tolist()
    assert ids.tolist() == [t for t in ids.tolist() if vocab.token_bytes[t].startswith(b"{")]
    with pytest.raises(ValueError, match="shape"):
        m.fill_bitmask(np.zeros(3, dtype=np.int32))


def test_compile_cache_shares_masks(vocab: Vocabulary, compiler: tm.GrammarCompiler) -> None:
    g = tm.Grammar.from_json_schema(SCHEMAS[1])
    c1 = compiler.compile(g, vocab)
    c2 = compiler.compile(tm.Grammar.from_json_schema(SCHEMAS[1]), vocab)
    assert c1 is c2
    assert compiler.compile(g).automaton is c1.automaton
    m = c1.matcher()
    m.mask()
    assert c1.masks is not None
    misses = c1.masks.misses
    c2.matcher().mask()
    assert c1.masks.misses == misses
    assert c1.backend == compiler.backend


def test_token_methods_need_a_vocabulary(compiler: tm.GrammarCompiler) -> None:
    m = compiler.compile(tm.Grammar.from_json_schema({"type": "null"})).matcher()
    with pytest.raises(ValueError, match="vocabulary"):
        m.accept_token(0)
    with pytest.raises(ValueError, match="vocabulary"):
        m.allowed_token_ids()


def test_trie_layout() -> None:
    trie = TokenTrie([(b"ab", 0), (b"a", 1), (b"b", 2), (b"abc", 3), (b"ab", 4)])
    assert trie.byte == [ord("a"), ord("b"), ord("c"), ord("b")]
    assert trie.depth == [1, 2, 3, 1]
    assert trie.skip == [3, 3, 3, 4]
    assert [trie.tokens[e] if e >= 0 else () for e in trie.ends] == [(1,), (0, 4), (3,), (2,)]
    assert trie.bucket[ord("a")] == (0, 3)
    assert trie.bucket[ord("b")] == (3, 4)


RUN_SCHEMAS: list[tuple[dict[str, Any], list[str]]] = [
    ({"type": "string", "maxLength": 5}, ['"abcde"', '"東京"', '""']),
    ({"type": "string", "minLength": 3}, ['"abc"', '"naïve café, long enough"']),
    ({"type": "string", "minLength": 2, "maxLength": 40}, ['"Crash on start 🌧️"']),
    ({"type": "string", "pattern": "^[A-Za-z0-9_./-]+$"}, ['"notes/todo.md"']),
    ({"type": "string", "format": "email"}, ['"ana.b@example.com"']),
    ({"type": "string", "format": "date-time"}, ['"2026-11-23T10:00:00Z"']),
    ({"anyOf": [{"type": "string", "maxLength": 8}, {"type": "null"}]}, ['"x y"', "null"]),
    (
        {"type": "object", "properties": {"date": S, "reason": S}, "required": ["date"]},
        ['{"date":"today","reason":"why \\"not\\"","other":"key"}'],
    ),
]


@pytest.mark.parametrize("which", range(len(RUN_SCHEMAS)))
def test_run_tables_match_plain_walk(which: int) -> None:
    """On every state of a few instances: the run tables give exactly the plain trie walk."""
    from toolmask.mask._compute import _walk

    full = Vocabulary.from_quicktok("qwen3")
    rng = random.Random(7)
    keep = sorted(
        set(rng.sample(range(full.vocab_size), 20000)) | set(full.encode_greedy(bytes(range(256))))
    )
    vocab = Vocabulary.from_token_bytes(
        [full.token_bytes[i] for i in keep] + [b"<eos>"],
        eos_ids=[len(keep)],
        special_ids=[len(keep)],
    )
    idx = PYTHON.vocab_index(vocab)
    schema, texts = RUN_SCHEMAS[which]
    c = _compiled(schema, vocab)
    a = c.automaton
    for text in texts:
        data = text.encode()
        s = a.initial
        for i in range(len(data) + 1):
            plain: list[int] = []
            _walk(a, s, idx.trie, a.allowed_bytes(s), plain)
            want = np.zeros(idx.words * 32, dtype=np.bool_)
            want[plain] = True
            if s.accepting:
                want[len(keep)] = True
            got = compute_mask(a, s, idx, {})
            expected = np.packbits(want, bitorder="little").view(np.int32)
            assert np.array_equal(got, expected), (text, data[:i])
            if i < len(data):
                nxt = a.advance(s, data[i])
                assert nxt is not None
                s = nxt
