"""The compiled kernel against the pure-Python reference, state by state.

Each check computes the mask of the same automaton state with both backends and requires equal
bitmasks (and equal acceptance of the next token): on every state of the forced instances and
run-table schemas of ``test_masks.py`` (Qwen3, Llama-3, o200k), on the states of valid instances
and of seeded random walks over a sample of the JSONSchemaBench dev corpus (``data/``) and over
a strided sample of every vendored split (``tests/data``), on the
any-JSON grammar, whose nested values sit on stacks with bases (the escapes of position-local
masks are resolved per stack), and on grammars where the stack caps make the kernel fall back to
its exact walk. ``test_backend.py`` fails when the kernel is not what ``tm.compile`` uses.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import toolmask as tm
from tests.mask.test_masks import INSTANCES, RUN_SCHEMAS, SCHEMAS
from tests.vendored import BENCH_SPLITS, bench_records
from toolmask.grammar._ir import Grammar, Repeat, Rule, RuleRef, byte_class, choice, lit, seq
from toolmask.mask import backend
from toolmask.vocab import Vocabulary

pytestmark = pytest.mark.skipif(
    backend() != "native", reason="the compiled kernel is not built or TOOLMASK_BACKEND=python"
)

DATA = json.loads((Path(__file__).parent / "data" / "jsonschemabench_sample.json").read_text())
PYTHON = tm.GrammarCompiler(backend="python")


@pytest.fixture(scope="module")
def native() -> tm.GrammarCompiler:
    return tm.GrammarCompiler(backend="native")


@pytest.fixture(scope="module", params=["qwen3", "llama3", "o200k"])
def vocab(request: pytest.FixtureRequest) -> Vocabulary:
    return Vocabulary.from_quicktok(request.param)


def _pair(
    g: Grammar, vocab: Vocabulary, native: tm.GrammarCompiler, limits: tm.Limits | None = None
) -> tuple[tm.Matcher, tm.Matcher]:
    lim = limits or tm.DEFAULT_LIMITS
    n = native.compile(g, vocab, limits=lim)
    p = PYTHON.compile(g, vocab, limits=lim)
    assert n.backend == "native" and p.backend == "python"
    return n.matcher(), p.matcher()


def _same(n: tm.Matcher, p: tm.Matcher, vocab: Vocabulary, where: object) -> np.ndarray:
    got, want = n.mask(), p.mask()
    if not np.array_equal(got, want):
        diff = np.flatnonzero(np.unpackbits((got ^ want).view(np.uint8), bitorder="little"))
        extra = [vocab.token_bytes[t] for t in diff if (int(got[t >> 5]) >> (t & 31)) & 1]
        missing = [vocab.token_bytes[t] for t in diff if not (int(got[t >> 5]) >> (t & 31)) & 1]
        pytest.fail(f"{where}: kernel allows {extra[:10]} more, misses {missing[:10]}")
    return got


def _force(n: tm.Matcher, p: tm.Matcher, vocab: Vocabulary, data: bytes, where: str) -> None:
    """Walk both matchers byte by byte through ``data``, comparing every state's mask."""
    for i in range(len(data) + 1):
        _same(n, p, vocab, (where, data[:i]))
        if i < len(data):
            assert n.accept_bytes(data[i : i + 1]) == p.accept_bytes(data[i : i + 1]) is True


def _random_walk(
    n: tm.Matcher, p: tm.Matcher, vocab: Vocabulary, rng: random.Random, steps: int, where: str
) -> None:
    """Seeded walk by tokens: pick an allowed token (a third of the time the last allowed id,
    often a long token), accept it on both sides, compare every state."""
    for k in range(steps):
        mask = _same(n, p, vocab, (where, k))
        ids = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little"))
        ids = ids[ids < vocab.vocab_size]
        if not ids.size or n.is_finished():
            return
        tid = int(ids[-1]) if rng.random() < 1 / 3 else int(rng.choice(ids.tolist()))
        assert n.accept_token(tid) == p.accept_token(tid) is True, (where, k, tid)


@pytest.mark.parametrize("which", range(len(INSTANCES)))
def test_forced_instances(vocab: Vocabulary, native: tm.GrammarCompiler, which: int) -> None:
    si, value = INSTANCES[which]
    n, p = _pair(tm.Grammar.from_json_schema(SCHEMAS[si]), vocab, native)
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    _force(n, p, vocab, text, f"instance {which}")
    eos = min(vocab.eos_ids)
    assert n.accept_token(eos) and p.accept_token(eos)


@pytest.mark.parametrize("which", range(len(RUN_SCHEMAS)))
def test_run_schemas(vocab: Vocabulary, native: tm.GrammarCompiler, which: int) -> None:
    schema, texts = RUN_SCHEMAS[which]
    g = tm.Grammar.from_json_schema(schema)
    for text in texts:
        n, p = _pair(g, vocab, native)
        _force(n, p, vocab, text.encode(), text)


@pytest.mark.parametrize("entry", DATA, ids=[e["name"] for e in DATA])
def test_corpus_sample(native: tm.GrammarCompiler, entry: dict[str, Any]) -> None:
    vocab = _qwen3()
    g = tm.Grammar.from_json_schema(entry["schema"])
    for doc in entry["instances"]:
        n, p = _pair(g, vocab, native)
        for tid in vocab.encode_greedy(doc.encode()):
            _same(n, p, vocab, (entry["name"], n.n_accepted))
            assert n.accept_token(tid) and p.accept_token(tid)
        _same(n, p, vocab, (entry["name"], "end"))
    rng = random.Random(entry["name"])
    for walk in range(2):
        n, p = _pair(g, vocab, native)
        _random_walk(n, p, vocab, rng, 40, f"{entry['name']} walk {walk}")


#: random walks over the whole vendored JSONSchemaBench dev corpus (tests/data): every
#: WALK_STRIDE-th record of each split, in name order
WALK_STRIDE = 60


@pytest.mark.parametrize("split", BENCH_SPLITS)
def test_corpus_random_walks(native: tm.GrammarCompiler, split: str) -> None:
    """Seeded random walks (Llama-3 vocabulary) on a strided sample of each vendored split:
    the two backends agree on every state a walk visits. Schemas that do not compile (on both
    backends alike) are counted, not walked."""
    vocab = _llama3()
    records = bench_records(split)[::WALK_STRIDE]
    walked = 0
    for rec in records:
        try:
            g = tm.Grammar.from_json_schema(rec.schema)
            n, p = _pair(g, vocab, native)
        except tm.ToolmaskError:
            continue
        rng = random.Random(rec.name)
        _random_walk(n, p, vocab, rng, 30, rec.name)
        walked += 1
    assert walked >= len(records) // 2, (split, walked, len(records))


def test_any_json_nested(vocab: Vocabulary, native: tm.GrammarCompiler) -> None:
    """Nested values are calls of the generic value rule: states have stacks with bases, so
    the masks use the per-position local results with escapes resolved per base."""
    g = tm.Grammar.json()
    docs = [json.dumps(e["schema"], separators=(",", ":")) for e in DATA[:6]]
    docs += ['{"a":[1,[2,[3,{"b":[-0.5e+3,true,null,"x\\"y\\n é"]}]]],"c":{}}', "[[[[[[]]]]]]"]
    for doc in docs:
        n, p = _pair(g, vocab, native)
        _force(n, p, vocab, doc.encode(), doc[:40])
    rng = random.Random(7)
    for walk in range(3):
        n, p = _pair(g, vocab, native)
        _random_walk(n, p, vocab, rng, 60, f"any-json walk {walk}")


FREE_KEYS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "num_adults": {"type": "integer"},
        "num_children": {"type": "integer"},
        "location": {"type": "string"},
    },
    "required": ["location"],
}

#: the kernel's cold-path shortcuts (docs/masks.md, "The cold path") and look-alikes where they
#: must not apply; every byte prefix of every text is compared, mid-character states included
SHORTCUTS: list[tuple[str, Grammar, list[str | bytes]]] = [
    # the UTF-8 choice recognised once per node, a chain of character copies, long tokens
    (
        "maxLength 120",
        tm.Grammar.from_json_schema({"type": "string", "maxLength": 120}),
        ['"Hi 東京 «ok»"', '"' + "é" * 3 + " " * 20 + '"'],
    ),
    (
        "minLength 3, maxLength 80",
        tm.Grammar.from_json_schema({"type": "string", "minLength": 3, "maxLength": 80}),
        ['"Crash on start"', '"ab\u00e9"'],
    ),
    # keys that may be undeclared (after the declared ones, in schema order), after prefixes
    # shared by declared names: loops walked in bulk
    (
        "free keys",
        tm.Grammar.from_json_schema(FREE_KEYS),
        ['{"num_adults":2,"location":"x","numbér":1,"nu":[]}'],
    ),
    # a pattern's class: tables of a new run class; formats built at the index's setup
    (
        "pattern class",
        tm.Grammar.from_json_schema({"type": "string", "pattern": "^[A-Za-z0-9_./-]+$"}),
        ['"notes/todo.md"'],
    ),
    (
        "formats",
        tm.Grammar.from_json_schema(
            {
                "type": "array",
                "prefixItems": [
                    {"type": "string", "format": "email"},
                    {"type": "string", "format": "date-time"},
                ],
                "items": False,
            }
        ),
        ['["ana.b@mail-1.example.org","2026-01-02T03:04:05.6+09:00"]'],
    ),
    # look-alikes: a choice with one multi-byte literal, two-byte characters only, raw bytes
    ("é or a-z", tm.Grammar.from_regex('"(é|[a-z])*"'), ['"aéb"']),
    ("U+0080-U+00FF", tm.Grammar.from_regex("[\x80-\xff]*"), ["éÿ"]),
    (
        "any byte, accepting loop",
        Grammar((Rule("root", Repeat(byte_class((0, 255)), 0, None)),)),
        [b"ab \xc3\xa9 \xe6\x9d\xb1 \xff\x80\x00"],
    ),
    ("accepting ASCII loop", tm.Grammar.from_regex("[a-z ]*"), ["ab cd"]),
]


@pytest.mark.parametrize("which", range(len(SHORTCUTS)), ids=[c[0] for c in SHORTCUTS])
def test_cold_path_shortcuts(vocab: Vocabulary, native: tm.GrammarCompiler, which: int) -> None:
    name, g, texts = SHORTCUTS[which]
    for text in texts:
        data = text.encode() if isinstance(text, str) else text
        n, p = _pair(g, vocab, native)
        _force(n, p, vocab, data, name)


def test_stack_caps_fall_back_to_the_exact_walk(native: tm.GrammarCompiler) -> None:
    """Where max_stacks / max_stack_depth could act on a whole state differently from its
    stacks one by one, the kernel computes that state's mask by the exact walk: still equal."""
    words = [b"a", b"b", b"aa", b"ab", b"aab", b"abb", b"aaab", b"bb", b"aaaa"]
    vocab = Vocabulary.from_token_bytes([*words, b"<e>"], eos_ids=[len(words)], special_ids=[9])
    ambiguous = Grammar(
        (
            Rule(
                "x",
                choice(seq(lit("a"), RuleRef("x"), lit("b")), seq(lit("a"), RuleRef("x")), lit("")),
            ),
        ),
        "x",
    )
    nested = Grammar((Rule("r", choice(seq(lit("a"), RuleRef("r"), lit("b")), lit(""))),), "r")
    for g, lim in [
        (ambiguous, tm.Limits(max_stacks=8, max_stack_depth=1_000)),
        (nested, tm.Limits(max_stack_depth=6)),
    ]:
        for text in [b"a" * 12 + b"b" * 12, b"aaaaab"]:
            n, p = _pair(g, vocab, native, lim)
            for i in range(len(text) + 1):
                _same(n, p, vocab, (text[:i], lim))
                if i < len(text) and not (
                    n.accept_bytes(text[i : i + 1]) and p.accept_bytes(text[i : i + 1])
                ):
                    break
    assert any(
        c.masks is not None and c.masks.stats()["exact_walks"] for c in native._compiled.values()
    )


def _assert_every_state_brute_force(c: Any, words: list[bytes], data: bytes) -> None:
    """On every state along ``data``, the allowed tokens are exactly those (of ``words``, then
    the end-of-sequence token after them) that accept_bytes takes from there."""
    m = c.matcher()
    for i in range(len(data) + 1):
        want = set()
        for t, w in enumerate(words):
            probe = c.matcher()
            if probe.accept_bytes(data[:i]) and probe.accept_bytes(w):
                want.add(t)
        if m.is_accepting():
            want.add(len(words))
        assert set(m.allowed_token_ids().tolist()) == want, data[:i]
        if i < len(data):
            assert m.accept_bytes(data[i : i + 1])


def test_small_vocabulary_brute_force(native: tm.GrammarCompiler) -> None:
    """Every token of a small vocabulary, on every state of a document: the kernel's mask is
    exactly the set of tokens accept_bytes takes."""
    words = [b"{", b"}", b'"', b'"c', b"ity", b'":', b'":"', b"P", b"ar", b"is", b'"}', b",", b" "]
    words += [bytes([b]) for b in range(32, 127) if bytes([b]) not in words]
    words += ["é".encode()[:1], "é".encode()[1:], "é".encode(), "東".encode()]
    vocab = Vocabulary.from_token_bytes(
        [*words, b"<eos>"], eos_ids=[len(words)], special_ids=[len(words)]
    )
    c = native.compile(tm.Grammar.from_json_schema(SCHEMAS[0]), vocab)
    _assert_every_state_brute_force(c, words, '{"city":"Pé東is"}'.encode())


def test_partial_characters_brute_force(native: tm.GrammarCompiler) -> None:
    """Tokens that end inside a character, hold ill-formed UTF-8 (surrogates, overlong forms,
    past U+10FFFF, stray continuation bytes) or a character then more bytes, on every state of
    a document with multi-byte characters in keys and values: the kernel, which checks a
    token's multi-byte characters against the UTF-8 ranges where a state's characters lead to
    one state instead of building the positions inside them, allows exactly the tokens
    accept_bytes takes."""
    words = [b"{", b"}", b'"', b'":', b",", b"1", b"n", b"na", b"a", b"e", b"v", b"x", b'"}', b":"]
    words += [
        b"\xc3",
        b"\xa9",
        b"\xc3\xa9",
        b'\xc3\xa9"',
        b"\xc3\xaf",
        b"\xc3\xafve",
        b"\xe6\x9d",
        b"\xe6\x9d\xb1",
        b'\xe6\x9d\xb1"',
        b"\xb1",
        b"\xf0\x9f",
        b"\xf0\x9f\x8c",
        b"\xf0\x9f\x8c\xa7",
        b"\x8c\xa7",
        b"\xed\xa0\x80",
        b"\xed\x9f\xbf",
        b"\xe0\x80\x80",
        b"\xe0\xa0\x80",
        b"\xc0\xaf",
        b"\xc1",
        b"\xf4\x90\x80\x80",
        b"\xf4\x8f\xbf\xbf",
        b"\xf5",
        b"\xff",
        b"\xc3A",
        b"a\xc3",
        b"a\xc3\xa9",
        b"x\xe6\x9d",
        b"na\xc3",
        b"na\xc3\xaf",
        b'na\xc3\xafve":',
        b"\xc3\xa9\xc3",
        b"\xe6\x9d\xb1\xe6",
    ]
    vocab = Vocabulary.from_token_bytes(
        [*words, b"<eos>"], eos_ids=[len(words)], special_ids=[len(words)]
    )
    schema = {
        "type": "object",
        "properties": {"naïve": {"type": "integer"}, "v": {"type": "string", "maxLength": 4}},
    }
    c = native.compile(tm.Grammar.from_json_schema(schema), vocab)
    for text in ['{"naïve":1,"v":"é東🌧","é東":"x","na":"ïé"}', '{"ñ":"\U0010ffff\ud7ff"}']:
        _assert_every_state_brute_force(c, words, text.encode())


def test_counted_classes_brute_force(native: tm.GrammarCompiler) -> None:
    """Runs of one character in counted repetitions of a class, near both bounds, each token
    tried with accept_bytes on every state (a vocabulary this small is walked: the counted
    shortcut of run tables is checked on full vocabularies in test_classes.py)."""
    words = [b'"', b'["', b'","', b'"]', b"x", b'x"', b"a", b"ab", b"@", b".", b"-a", b"a-"]
    words += [b"-" * n for n in range(1, 40)] + [b"-" * n + b"x" for n in (1, 2, 3, 5, 8, 13, 26)]
    words += [b"-" * n + b'x"' for n in (2, 3, 4, 9, 26, 27, 28)]
    words += [b"a" * n for n in (3, 7, 20, 61, 62, 63)] + [b"a" * 60 + b"-", b"a-" * 20]
    words += [b"-" * 59 + b"a", b"-" * 60 + b"a", b"a" * 62 + b".a", b"x" * 5, b"x" * 30]
    vocab = Vocabulary.from_token_bytes(
        [*words, b"<eos>"], eos_ids=[len(words)], special_ids=[len(words)]
    )
    email = {
        "type": "array",
        "prefixItems": [{"type": "string", "format": "email"}, {"type": "string"}],
        "items": False,
    }
    cases = [
        # a mandatory part (4), the class holding the character after it
        (tm.Grammar.from_regex('"[a-z-]{4,30}x"'), ['"a---x"', '"' + "-" * 29 + 'xx"', '"xxxxxx"']),
        # an email's domain labels: 1 + {0,61} + 1 characters, in a loop
        (
            tm.Grammar.from_json_schema(email),
            ['["a@' + "a" * 20 + "-" * 30 + 'a.a","x"]', '["a@b' + "-" * 60 + 'a","-"]'],
        ),
    ]
    for g, texts in cases:
        c = native.compile(g, vocab)
        for text in texts:
            _assert_every_state_brute_force(c, words, text.encode())


_QWEN3: list[Vocabulary] = []
_LLAMA3: list[Vocabulary] = []


def _llama3() -> Vocabulary:
    if not _LLAMA3:
        _LLAMA3.append(Vocabulary.from_quicktok("llama3"))
    return _LLAMA3[0]


def _qwen3() -> Vocabulary:
    if not _QWEN3:
        _QWEN3.append(Vocabulary.from_quicktok("qwen3"))
    return _QWEN3[0]
