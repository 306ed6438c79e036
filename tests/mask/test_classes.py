"""The kernel's run tables made from class bitmaps and the exit index, against the pure-Python
reference, state by state.

Every first mask over a large token class (a free-form string, a counted string, a format, a
pattern's class, a number, a key that may be undeclared) is computed on a vocabulary index of
its own with nothing prewarmed, so that each table is combined from the vocabulary's class
bitmaps and exit index when the walk first meets its class (``docs/masks.md``, "Class
bitmaps"). The kernel's mask must equal the reference's on every byte prefix of each text and
on seeded token walks (Qwen3, Llama-3, o200k). The last test checks that these paths are the
ones taken: tables built from the bitmaps, narrowed, bounded, exits from the index and from a
candidate scan.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import toolmask as tm
from toolmask.automaton import build_native_automaton
from toolmask.mask import NativeMaskCache, NativeVocabIndex, backend
from toolmask.vocab import Vocabulary

pytestmark = pytest.mark.skipif(
    backend() != "native", reason="the compiled kernel is not built or TOOLMASK_BACKEND=python"
)

PYTHON = tm.GrammarCompiler(backend="python")

OPEN_KEYS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "note": {"type": "string"},
        "base": {"type": "number"},
        "height": {"type": "number"},
        "length": {"type": "number"},
        "radius": {"type": "number"},
        "width": {"type": "number"},
    },
}

#: declared names whose tokens leave the string while still on the name ("name":", "type":",
#: "id":"), names that are prefixes of others, a non-ASCII name (its prefix states take a
#: character into a declared state: no shortcut), undeclared values narrower than declared
#: ones, and a nested object whose keys may be undeclared too
KEY_EXCEPTIONS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "integer"},
        "type": {"enum": ["a", "b"]},
        "id": {"type": "string", "maxLength": 3},
        "return": {"type": "boolean"},
        "return_date": {"type": "string"},
        "naïve": {"type": "number"},
        "nested": {
            "type": "object",
            "properties": {"url": {"type": "null"}, "value": {"type": "array"}},
        },
    },
    "additionalProperties": {"type": "integer"},
}

#: after its opening quote, a string whose first "a" may not be followed by "b": the state
#: after "a" refuses a run character, so "a" cannot join the run as an exception (tokens such
#: as "about" are dead), and the run's other first characters narrow the string's table
REFUSING = tm.Grammar.from_gbnf(
    'root ::= "\\"" ([^\\x00-\\x1F"\\\\a] rest | "a" ([^\\x00-\\x1F"\\\\b] rest | "") | "") "\\""\n'
    'rest ::= ([^\\x00-\\x1F"\\\\] | "\\\\" ["\\\\bfnrt])*'
)

#: (name, grammar, texts): each text is forced byte by byte, then walked by tokens
CASES: list[tuple[str, tm.Grammar, list[str]]] = [
    (
        "free-form string",
        tm.Grammar.from_json_schema({"type": "string"}),
        ['"naïve café \\"q\\" \\\\ \\n 東京 🌧️ ' + "-" * 40 + '"'],
    ),
    (
        "counted string with escapes",
        tm.Grammar.from_json_schema({"type": "string", "minLength": 2, "maxLength": 40}),
        ['"a\\"b\\\\c\\n\\u0001 é ok"', '"' + "=" * 39 + '"'],
    ),
    (
        "formats",
        tm.Grammar.from_json_schema(
            {
                "type": "array",
                "prefixItems": [
                    {"type": "string", "format": "date-time"},
                    {"type": "string", "format": "email"},
                    {"type": "string", "format": "uuid"},
                    {"type": "string", "format": "date"},
                ],
                "items": False,
            }
        ),
        [
            '["2026-01-02T03:04:05.6+09:00","ana.b-c@mail-1.example.org",'
            '"123e4567-e89b-12d3-a456-426614174000","2027-12-31"]'
        ],
    ),
    (
        "pattern classes",
        tm.Grammar.from_json_schema(
            {
                "type": "array",
                "prefixItems": [
                    {"type": "string", "pattern": "^[A-Za-z0-9_./-]+$"},
                    {"type": "string", "pattern": "^[a-f0-9]{8}$"},
                    {"type": "string", "pattern": "^\\+?[0-9 ]{6,20}$"},
                    {"type": "string", "pattern": "^[a-z]+[0-9]+$"},
                ],
                "items": False,
            }
        ),
        ['["notes/todo.md","0a1b2c3d","+33 1 23 45 67","abc123"]'],
    ),
    (
        "numbers",
        tm.Grammar.from_json_schema(
            {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "integer"}]}}
        ),
        ["[-12.5e+3,-0.25,7,1E-9,-0]"],
    ),
    # undeclared keys follow the declared ones (in schema order), some sharing their prefixes
    (
        "keys that may be undeclared",
        tm.Grammar.from_json_schema(OPEN_KEYS),
        ['{"note":"x","base":1,"height":2,"width":4,"lengthy":3,"rad":[],"zz":null}'],
    ),
    # a loop that ends with a newline: the long tokens that leave it late (spaces, then a
    # newline) are walked from the loop state
    ("late exits", tm.Grammar.from_regex("[ -~]*\n"), [" " * 40 + "x\n"]),
    # counted strings longer than the chain: the long tokens (runs of spaces, dashes, equals
    # signs, up to 128 characters) decided by count near both ends of the bound; a minLength
    # past the chain and a counted run left through a byte its copies take are walked instead
    (
        "counted strings, long tokens by count",
        tm.Grammar.from_json_schema(
            {
                "type": "array",
                "prefixItems": [
                    {"type": "string", "minLength": 3, "maxLength": 80},
                    {"type": "string", "maxLength": 33},
                    {"type": "string", "minLength": 20, "maxLength": 48},
                ],
                "items": False,
            }
        ),
        ['["' + " " * 30 + "-" * 48 + '","' + "=" * 33 + '","' + "x" * 5 + " " * 40 + '"]'],
    ),
    (
        "counted run left through a live byte",
        tm.Grammar.from_regex("[ -~]{2,60}\n"),
        [" " * 50 + "\n"],
    ),
    # a run's exceptions: the first letters of declared names join the run of any string
    # character, their prefixes walked (docs/masks.md, "Keys that may be undeclared")
    (
        "keys: declared names leaving the string",
        tm.Grammar.from_json_schema(KEY_EXCEPTIONS),
        [
            '{"name":1,"type":"a","id":"x","return":true,"return_date":"d","naïve":2.5,'
            '"nested":{"url":null,"value":[],"urls":"s","":{}},"names":3,"typo":4,"":5,'
            '"retur":6,"na\\u0001ve":7,"i\\"d":8}'
        ],
    ),
    ("a prefix state refusing a run character", REFUSING, ['"a"', '"axe"', '"ac\\n"', '"xab"']),
    # counted repetitions of a class walked by count: an email's domain labels up to their 63
    # characters, a repetition with a mandatory part left through its last character, one
    # repeated inside a loop (docs/masks.md, "Counted repetitions walked by count")
    (
        "counted classes walked by count",
        tm.Grammar.from_json_schema(
            {
                "type": "array",
                "prefixItems": [
                    {"type": "string", "format": "email"},
                    {"type": "string", "pattern": "^[a-z-]{2,70}x$"},
                    {"type": "string", "pattern": "^([0-9a-f]{0,30}:)*$"},
                ],
                "items": False,
            }
        ),
        [
            '["ab@'
            + "x" * 60
            + "-y."
            + "q" * 63
            + '.io","'
            + "-" * 50
            + 'x","0f:'
            + "a" * 30
            + ':"]',
            '["a@b-' + "-" * 58 + 'c","ab-x","::"]',
        ],
    ),
]


@pytest.fixture(scope="module", params=["qwen3", "llama3", "o200k"])
def vocab(request: pytest.FixtureRequest) -> Vocabulary:
    return Vocabulary.from_quicktok(request.param)


def _check(
    native: NativeMaskCache, state: Any, p: tm.Matcher, vocab: Vocabulary, where: Any
) -> Any:
    got, want = native.get(state), p.mask()
    if not np.array_equal(got, want):
        diff = np.flatnonzero(np.unpackbits((got ^ want).view(np.uint8), bitorder="little"))
        extra = [vocab.token_bytes[t] for t in diff if (int(got[t >> 5]) >> (t & 31)) & 1]
        missing = [vocab.token_bytes[t] for t in diff if not (int(got[t >> 5]) >> (t & 31)) & 1]
        pytest.fail(f"{where}: kernel allows {extra[:10]} more, misses {missing[:10]}")
    return got


def _run(g: tm.Grammar, texts: list[str], vocab: Vocabulary, index: NativeVocabIndex) -> int:
    """Compare every state of the texts and of token walks from them; returns how many groups
    of first characters joined a run as its exceptions."""
    rng = random.Random(3)
    merged = 0
    compiled = PYTHON.compile(g, vocab)
    for text in texts:
        data = text.encode()
        a = build_native_automaton(g)
        native = NativeMaskCache(a, index, 1 << 26)
        p = compiled.matcher()
        s = a.initial
        for i in range(len(data) + 1):
            _check(native, s, p, vocab, (text[:40], data[:i]))
            if i < len(data):
                s = a.advance(s, data[i])
                assert s is not None and p.accept_bytes(data[i : i + 1])
        # token walks from every tenth prefix: long tokens, escapes, exits
        for start in range(0, len(data), 10):
            p = compiled.matcher()
            assert p.accept_bytes(data[:start])
            s = a.initial
            for b in data[:start]:
                s = a.advance(s, b)
            for k in range(8):
                mask = _check(native, s, p, vocab, (text[:40], start, k))
                ids = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little"))
                ids = ids[(ids < vocab.vocab_size) & [bool(vocab.token_bytes[t]) for t in ids]]
                if not ids.size:
                    break
                tid = int(ids[-1]) if rng.random() < 0.5 else int(rng.choice(ids.tolist()))
                s = native.advance_token(s, tid)
                assert s is not None and p.accept_token(tid), (text[:40], start, k, tid)
        merged += native.stats()["exception_groups"]
    return merged


@pytest.mark.parametrize("which", range(len(CASES)), ids=[c[0] for c in CASES])
def test_first_masks_from_class_bitmaps(vocab: Vocabulary, which: int) -> None:
    _, g, texts = CASES[which]
    _run(g, texts, vocab, NativeVocabIndex(vocab))


def _with_tokens(name: str, extra: list[bytes]) -> Vocabulary:
    """A quicktok vocabulary with more text tokens after its own."""
    base = Vocabulary.from_quicktok(name)
    tokens: list[bytes | None] = [
        None if tid in base.special else base.token_bytes[tid] for tid in range(base.vocab_size)
    ]
    return Vocabulary.from_token_bytes(
        [*tokens, *extra], eos_ids=base.eos_ids, special_texts=dict(base.special)
    )


#: tokens that leave a key's string while still on a declared name (or a prefix of one), whose
#: fate is not an undeclared key's: the quicktok vocabularies split such tokens at the quote
LEAVING = [
    b'name":"',
    b'name":1',
    b'name"',
    b'name":',
    b'names":"',
    b'nam":[',
    b'n"',
    b'na\\"',
    b'id":"',
    b'id":1',
    b'id"',
    b'i\\"d"',
    b'ty":"',
    b'type":"a',
    b'type":1',
    b'type"}',
    b'url":null',
    b'url":"',
    b'urls":"',
    b"url\\n",
    b"u\\u0001",
    b'name\xc3\xa9":',
    # a declared name's multi-byte character: its prefix states are no exceptions
    b'na\xc3\xafve":"',
    b'na\xc3\xafve":1',
    b'na\xc3\xafv":"',
    # ... and reach the end of the document
    b'name":"x"}',
    b'name":1}',
    b'url":"a"}',
    b'url":null}',
    b'id":[]}',
    # ... and go on in the frame that called the object's (a recursive schema's node)
    b'name":"x"}]',
    b'name":"x"},{"',
    b'name":1}]',
    b'name":"x"}]}',
]


@pytest.mark.parametrize("name", ["qwen3", "llama3"])
def test_declared_names_leaving_the_string(name: str) -> None:
    """A key's first letters join the string's run as exceptions; the tokens that leave the
    string on a declared prefix are walked from where they leave and left out of the run's
    exit walk (an undeclared key would take "name":" here, the declared integer does not)."""
    vocab = _with_tokens(name, LEAVING)
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "integer"},
            "id": {"type": "string"},
            "type": {"enum": ["a", "b"]},
            "url": {"type": "null"},
            "naïve": {"type": "number"},
        },
    }
    g = tm.Grammar.from_json_schema(schema)
    text = '{"name":1,"id":"x","type":"a","url":null,"naïve":2,"names":"y","n":2,"id\\"":[]}'
    index = NativeVocabIndex(vocab)
    tree = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "integer"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
            }
        },
        "$ref": "#/$defs/node",
    }
    nodes = '{"name":1,"kids":[{"name":2,"kids":[]},{"nam":3,"x":"y"},{"name":4}]}'
    assert _run(tm.Grammar.from_json_schema(tree), [nodes], vocab, index) > 0
    a = build_native_automaton(g)
    native = NativeMaskCache(a, index, 1 << 26)
    s = a.advance_bytes(a.initial, b'{"')
    assert s is not None
    native.get(s)
    stats = native.stats()
    # i, t, u ("n" is no exception: "naïve" takes a multi-byte character on its prefix)
    assert stats["exception_groups"] == 3 and stats["exception_tokens"] >= 8
    assert _run(g, [text], vocab, index) > 0


#: runs of one character of a counted class, some leaving it by a byte the class also holds
RUNS = [b"-" * n + b"x" for n in (1, 2, 3, 5, 8, 13, 26, 29, 30, 31)]
RUNS += [b"-" * n + b'x"' for n in (2, 3, 4, 9, 26, 27, 28, 29)] + [b"a" * 60 + b"-", b"a-" * 20]
RUNS += [b"-" * 59 + b"a", b"-" * 60 + b"a", b"a" * 62 + b".a", b"x" * 30, b"x" * 31]
RUNS += [b"a" + b"-" * n + b'b"' for n in range(1, 9)] + [b"a" + b"-" * n for n in range(2, 9)]


@pytest.mark.parametrize("name", ["qwen3", "llama3"])
def test_counted_classes_by_count(name: str) -> None:
    """The long tokens of a counted class's runs (dashes, up to 96 in these vocabularies, and
    runs added near the bounds) stand for states at high copies by states at low ones: past a
    mandatory part (4), before the last copy, in a repetition holding the byte after it, in a
    label whose copies start after a mandatory part, and in an email's domain labels of
    1 + {0,61} + 1 characters; every state against the reference."""
    vocab = _with_tokens(name, RUNS)
    index = NativeVocabIndex(vocab)
    email = {
        "type": "array",
        "prefixItems": [{"type": "string", "format": "email"}, {"type": "string"}],
        "items": False,
    }
    cases = [
        (tm.Grammar.from_regex('"[a-z-]{4,30}x"'), ['"a---x"', '"' + "-" * 29 + 'xx"']),
        # a label with a mandatory part: dashes leave the letters' run into the copies
        (tm.Grammar.from_regex('"[a-z]([a-z-]{4,30}[a-z])?"'), ['"a----b"', '"a"', '"abcdefgh"']),
        (
            tm.Grammar.from_json_schema(email),
            ['["a@' + "a" * 20 + "-" * 30 + 'a.a","x"]', '["a@b' + "-" * 60 + 'a","-"]'],
        ),
    ]
    for g, texts in cases:
        _run(g, texts, vocab, index)
        a = build_native_automaton(g)
        native = NativeMaskCache(a, index, 1 << 26)
        s = a.advance_bytes(a.initial, texts[0][:6].encode())
        assert s is not None
        native.get(s)
        assert native.stats()["counted_moves"] > 0, texts[0][:6]


def _case(name: str) -> tuple[str, tm.Grammar, list[str]]:
    return next(c for c in CASES if c[0] == name)


def test_the_class_paths_are_taken() -> None:
    """On one index: a string body's tables are combined from the bitmaps and its exits read
    from the index, a counted string's tables are bounded from it, a class leaving through
    digits scans its candidates, the first letters of declared keys join the string's run as
    exceptions (its table as it is, not narrowed), and a first character whose state refuses a
    run character stays out of it (the run's table narrowed)."""
    vocab = Vocabulary.from_quicktok("qwen3")
    index = NativeVocabIndex(vocab)
    merged = {}
    for name in (
        "free-form string",
        "counted string with escapes",
        "pattern classes",
        "keys that may be undeclared",
    ):
        _, g, texts = _case(name)
        merged[name] = _run(g, texts[:1], vocab, index)
    assert merged["free-form string"] == 0 and merged["pattern classes"] == 0
    assert merged["keys that may be undeclared"] >= 5  # b, h, l, r, w after '{"' at least
    _, g, texts = _case("counted classes walked by count")
    a = build_native_automaton(g)
    native = NativeMaskCache(a, index, 1 << 26)
    s = a.advance_bytes(a.initial, b'["ana@example')
    assert s is not None
    native.get(s)
    assert native.stats()["counted_moves"] > 0
    assert index.native.info()["bases_narrowed"] == 0
    _, g, texts = _case("a prefix state refusing a run character")
    assert _run(g, texts, vocab, index) == 0
    info = index.native.info()
    assert info["exit_records"] > 1000 and info["long_records"] > 100
    assert info["bases_built"] >= 1 and info["bases_narrowed"] >= 1 and info["bases_bounded"] >= 1
    assert info["exits_indexed"] >= 1 and info["exits_scanned"] >= 1
    assert info["bases_passed"] == 0


@pytest.mark.parametrize(
    ("grammar", "prefix", "by_count"),
    [
        (
            tm.Grammar.from_json_schema({"type": "string", "minLength": 3, "maxLength": 80}),
            b'"',
            True,
        ),
        (tm.Grammar.from_json_schema({"type": "string", "maxLength": 120}), b'"', True),
        # copy 17 < minLength: the copies after the chain do not all end the string alike
        (
            tm.Grammar.from_json_schema({"type": "string", "minLength": 20, "maxLength": 48}),
            b'"',
            False,
        ),
        # a loop: its base table holds the long tokens
        (tm.Grammar.from_json_schema({"type": "string"}), b'"', False),
        # long tokens of spaces then a newline leave the run through a byte the copies take
        (tm.Grammar.from_regex("[ -~]{2,60}\n"), b"", False),
    ],
    ids=["3..80", "..120", "20..48", "loop", "live exit"],
)
def test_counted_runs_decide_long_tokens_by_count(
    grammar: tm.Grammar, prefix: bytes, by_count: bool
) -> None:
    """A counted string's first mask decides the tokens longer than the chain by count, without
    building a position per character copy up to the longest token (Qwen3's reach 128
    characters: 132 and 172 positions for the first two when walked, 72 by count, the chain and
    its exits' whatever the bound), and equals the reference's; the cases it does not decide
    are walked, and equal it too."""
    vocab = Vocabulary.from_quicktok("qwen3")
    a = build_native_automaton(grammar)
    native = NativeMaskCache(a, NativeVocabIndex(vocab), 1 << 26)
    p = PYTHON.compile(grammar, vocab).matcher()
    s = a.advance_bytes(a.initial, prefix)
    assert s is not None and p.accept_bytes(prefix)
    _check(native, s, p, vocab, (grammar, prefix))
    assert (native.stats()["counted_runs"] > 0) == by_count
    if by_count:
        assert a.n_positions < 100, a.n_positions
