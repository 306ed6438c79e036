"""Vocabulary invariants: construction, validation, padding, fingerprints, greedy encoding."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmask.errors import ToolmaskError
from toolmask.vocab import VocabError, Vocabulary, byte_decoder

BYTES = [bytes([b]) for b in range(256)]


def test_from_token_bytes_special_and_padding() -> None:
    v = Vocabulary.from_token_bytes(
        [b"a", b"b", None, b"<e>", b"ab"], eos_ids=[3], special_ids=[3], vocab_size=8
    )
    assert len(v) == v.vocab_size == 8 and len(v.token_bytes) == 8 and v.n_tokens == 5
    assert v.token_bytes == (b"a", b"b", b"", b"", b"ab", b"", b"", b"")
    assert v.special == {3: "<e>"} and v.eos_ids == frozenset({3}) and v.bos_id is None
    assert [v.is_text(i) for i in range(-1, 9)] == [False, True, True] + [False] * 2 + [True] + [
        False
    ] * 4
    assert v.special_id("<e>") == 3 and v.special_id("<x>") is None and v.special_id("a") is None


def test_special_texts_and_text_eos() -> None:
    v = Vocabulary.from_token_bytes(
        [b"a", None, b"\n"], special_ids=[0], special_texts={1: "<|end|>"}, eos_ids=[1, 2]
    )
    assert v.special == {0: "a", 1: "<|end|>"} and v.token_bytes == (b"", b"", b"\n")
    # a text token may be EOS when the caller says so; it stays text
    assert v.eos_ids == frozenset({1, 2}) and v.is_text(2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"vocab_size": 1}, "vocab_size 1 is smaller than the tokenizer's 2 ids"),
        ({"eos_ids": [7]}, r"EOS id 7 is out of range \[0, 2\)"),
        ({"eos_ids": [-1]}, "EOS id -1 is out of range"),
        ({"special_ids": [3]}, "special token id 3 is out of range"),
        ({"special_texts": {5: "<x>"}}, "special token id 5 is out of range"),
        ({"special_texts": {1: 5}}, "special token id 1: text 5 is not a str"),
        ({"bos_id": 2}, "BOS id 2 is out of range"),
        ({"vocab_size": "9"}, "vocab_size '9' is not an int"),
    ],
)
def test_from_token_bytes_validation(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(VocabError, match=match):
        Vocabulary.from_token_bytes([b"a", b"b"], **kwargs)  # type: ignore[arg-type]


def test_validation_of_tokens() -> None:
    with pytest.raises(VocabError, match="special token id 1 has no bytes"):
        Vocabulary.from_token_bytes([b"a", None], special_ids=[1])
    with pytest.raises(VocabError, match="token 1: 'b' is not bytes"):
        Vocabulary.from_token_bytes([b"a", "b"])  # type: ignore[list-item]
    assert issubclass(VocabError, ToolmaskError)
    # ids past the tokenizer are padding, and special/EOS ids may live there
    v = Vocabulary.from_token_bytes([b"a"], special_texts={3: "<eos>"}, eos_ids=[3], vocab_size=4)
    assert v.special_id("<eos>") == 3 and not v.is_text(3)


def test_immutable_and_value_equality() -> None:
    v = Vocabulary.from_token_bytes([b"a", b"b"])
    with pytest.raises(AttributeError, match="immutable"):
        v.vocab_size = 3
    with pytest.raises(AttributeError, match="immutable"):
        del v.bos_id
    w = Vocabulary.from_token_bytes([bytearray(b"a"), memoryview(b"b")])  # type: ignore[list-item]
    assert v == w and hash(v) == hash(w) and len({v, w}) == 1
    assert v != Vocabulary.from_token_bytes([b"a", b"c"]) and v != "a"
    assert pickle.loads(pickle.dumps(v)) == v


def test_fingerprint_stable_and_discriminating() -> None:
    base = Vocabulary.from_token_bytes([b"a", b"b", b"<e>"], special_ids=[2], eos_ids=[2])
    # pinned: a fingerprint change invalidates every cache keyed by it, so make it on purpose
    assert base.fingerprint == PINNED_FINGERPRINT
    assert len(base.fingerprint) == 64 and int(base.fingerprint, 16) >= 0
    variants = [
        Vocabulary.from_token_bytes([b"a", b"c", b"<e>"], special_ids=[2], eos_ids=[2]),
        Vocabulary.from_token_bytes([b"a", b"b", b"<e>"], special_ids=[2]),
        Vocabulary.from_token_bytes([b"a", b"b", b"<e>"], special_ids=[2], eos_ids=[2], bos_id=0),
        Vocabulary.from_token_bytes(
            [b"a", b"b", b"<e>"], special_ids=[2], eos_ids=[2], vocab_size=4
        ),
        Vocabulary.from_token_bytes(
            [b"a", b"b", b"<e>"], special_texts={2: "<E>"}, special_ids=[2], eos_ids=[2]
        ),
        Vocabulary.from_token_bytes([b"ab", b"", b"<e>"], special_ids=[2], eos_ids=[2]),
        Vocabulary.from_token_bytes([b"a", b"b", b"<e>"], eos_ids=[2]),
    ]
    prints = {base.fingerprint} | {v.fingerprint for v in variants}
    assert len(prints) == len(variants) + 1


PINNED_FINGERPRINT = "f918693d4b9989cb55ed0a5a065b16cb9d4ac7d45cdb5684ac163e8eed7a9e73"


def test_repr() -> None:
    v = Vocabulary.from_token_bytes([b"a", b"<e>"], special_ids=[1], eos_ids=[1], vocab_size=4)
    r = repr(v)
    assert r.startswith("<Vocabulary size=4 padding=2 special=1 eos=[1] ") and len(r) < 80


def test_encode_greedy_longest_match() -> None:
    v = Vocabulary.from_token_bytes(
        [*BYTES, b"ab", b"abc", b"bcd", b"<s>"], special_ids=[259], vocab_size=300
    )
    assert v.encode_greedy(b"abcd") == [257, ord("d")]  # "abc" + "d"
    assert v.encode_greedy(b"") == []
    # special tokens are never produced from text
    assert v.encode_greedy(b"<s>") == [ord("<"), ord("s"), ord(">")]
    # the lowest id wins among equal bytes
    dup = Vocabulary.from_token_bytes([b"x", b"xy", b"xy"])
    assert dup.encode_greedy(b"xyx") == [1, 0]


def test_encode_greedy_uncoverable() -> None:
    v = Vocabulary.from_token_bytes([b"a", b"bc", b"<b>"], special_ids=[2])
    with pytest.raises(VocabError, match="byte 0x62 at offset 1 starts no text token"):
        v.encode_greedy(b"abd")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_encode_greedy_round_trips_bytes(data: bytes) -> None:
    v = _small_byte_vocab()
    ids = v.encode_greedy(data)
    assert b"".join(v.token_bytes[i] for i in ids) == data
    assert all(v.is_text(i) for i in ids)


_SMALL: list[Vocabulary] = []


def _small_byte_vocab() -> Vocabulary:
    if not _SMALL:
        extra = [b"\x00\x00", b"ab", b"abab", b"\xff\xfe\xfd", b"b"]
        _SMALL.append(Vocabulary.from_token_bytes([*BYTES, *extra]))
    return _SMALL[0]


def test_byte_decoder_is_gpt2_map() -> None:
    dec = byte_decoder()
    assert sorted(dec.values()) == list(range(256))
    assert dec["Ġ"] == 0x20 and dec["Ċ"] == 0x0A and dec["!"] == 0x21 and dec["ā"] == 0x01
    assert bytes(dec[c] for c in "Ã©") == "é".encode()
