"""Readers for vocabulary files: quicktok's binary tables, HF ``tokenizer.json``, GGUF metadata.

Each returns plain data (token bytes per id, special id -> text, EOS ids, BOS id) for
:class:`toolmask.vocab.Vocabulary`, which validates it. Token strings become bytes here, once:

* byte-level BPE (GPT-2, Llama 3, Qwen, SmolLM): every character of a token string stands for one
  byte through GPT-2's printable map (:func:`byte_decoder`; ``Ġ`` = space);
* SentencePiece: ``▁`` (U+2581) is a space and ``<0xNN>`` byte-fallback tokens are the byte ``NN``.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from toolmask.errors import ToolmaskError, VocabError
from toolmask.vocab._gguf import BYTE, CONTROL, NORMAL, UNKNOWN, UNUSED, USER_DEFINED, GgufFile
from toolmask.vocab._tokens import EOS_NAMES, byte_decoder

__all__ = ["read_gguf", "read_quicktok", "read_tokenizer_json"]

Tokens = list[bytes]
Special = dict[int, str]

_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_BYTE_DECODER = byte_decoder()
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_SPECIAL_ENTRY = struct.Struct("<IH")


# -- token string -> bytes ------------------------------------------------------------------------
def _metaspace_bytes(piece: str, where: str) -> bytes:
    return piece.replace("▁", " ").encode("utf-8")


def _sentencepiece_bytes(piece: str, where: str) -> bytes:
    m = _BYTE_TOKEN.fullmatch(piece)
    if m:
        return bytes([int(m.group(1), 16)])
    return _metaspace_bytes(piece, where)


def _byte_level_bytes(piece: str, where: str) -> bytes:
    try:
        return bytes(_BYTE_DECODER[c] for c in piece)
    except KeyError as e:
        raise VocabError(f"{where}: token {piece!r} has a character outside the byte map") from e


#: how token strings spell bytes -> the decoder of one token string
PIECE_DECODERS: dict[str, Callable[[str, str], bytes]] = {
    "byte_level": _byte_level_bytes,
    "sentencepiece": _sentencepiece_bytes,
}


# -- quicktok -------------------------------------------------------------------------------------
def read_quicktok(name: str) -> tuple[Tokens, Special]:
    """``quicktok/data/{name}.vocab`` (u32 count, then ``[u16 len][bytes][u32 id]`` per token,
    little-endian) and ``{name}.special`` (u32 count, then ``[u32 id][u16 len][utf-8 text]``).
    Ids in neither file (gaps) get ``b""``. O(file size)."""
    try:
        data = resources.files("quicktok") / "data"
    except ImportError as e:
        raise VocabError(
            "quicktok vocabularies need the quicktok-v1 wheel: pip install quicktok-v1"
        ) from e
    vocab_file = data / f"{name}.vocab"
    if not re.fullmatch(r"[A-Za-z0-9_]+", name) or not vocab_file.is_file():
        known = sorted(
            p.name.removesuffix(".vocab") for p in data.iterdir() if p.name.endswith(".vocab")
        )
        raise VocabError(f"quicktok has no vocabulary {name!r} (known: {', '.join(known)})")
    where = f"quicktok {name}.vocab"
    raw = vocab_file.read_bytes()
    by_id: dict[int, bytes] = {}
    try:
        (count,) = _U32.unpack_from(raw, 0)
        off = 4
        for _ in range(count):
            (length,) = _U16.unpack_from(raw, off)
            off += 2
            tok = raw[off : off + length]
            off += length
            (tid,) = _U32.unpack_from(raw, off)
            off += 4
            if tid in by_id:
                raise VocabError(f"{where}: id {tid} appears twice")
            by_id[tid] = tok
        if off != len(raw):
            raise VocabError(f"{where}: {len(raw) - off} trailing bytes after {count} tokens")
        special: Special = {}
        special_file = data / f"{name}.special"
        if special_file.is_file():
            where = f"quicktok {name}.special"
            sraw = special_file.read_bytes()
            (scount,) = _U32.unpack_from(sraw, 0)
            off = 4
            for _ in range(scount):
                tid, length = _SPECIAL_ENTRY.unpack_from(sraw, off)
                off += _SPECIAL_ENTRY.size
                special[tid] = sraw[off : off + length].decode("utf-8")
                off += length
            if off != len(sraw):
                raise VocabError(f"{where}: {len(sraw) - off} trailing bytes")
    except (struct.error, UnicodeDecodeError) as e:
        raise VocabError(f"{where}: truncated or malformed ({e})") from e
    n = max([*by_id, *special], default=-1) + 1
    return [by_id.get(i, b"") for i in range(n)], special


# -- Hugging Face tokenizer.json ------------------------------------------------------------------
def _node_types(node: Any) -> list[str]:
    """The ``type`` of a decoder / pre-tokenizer / normalizer and of its nested parts."""
    if not isinstance(node, dict):
        return []
    out = [str(node.get("type", ""))]
    for key in ("decoders", "pretokenizers", "normalizers"):
        for sub in node.get(key) or []:
            out.extend(_node_types(sub))
    return out


def _spelling(tj: dict[str, Any]) -> str:
    """``"byte_level"`` or ``"sentencepiece"``: how this tokenizer's vocabulary spells bytes."""
    found = (
        _node_types(tj.get("decoder"))
        + _node_types(tj.get("pre_tokenizer"))
        + _node_types(tj.get("normalizer"))
    )
    if "ByteLevel" in found:
        return "byte_level"
    model = tj.get("model") or {}
    if model.get("byte_fallback") or any(k in ("Metaspace", "ByteFallback") for k in found):
        return "sentencepiece"
    # no section says: GPT-2-mapped vocabularies spell the space "Ġ", SentencePiece "▁"
    vocab = model.get("vocab") or {}
    pieces = list(vocab)[:5000] if isinstance(vocab, dict) else [p[0] for p in vocab[:5000]]
    ghat = sum("Ġ" in str(p) for p in pieces)
    metaspace = sum("▁" in str(p) for p in pieces)
    return "byte_level" if ghat > metaspace else "sentencepiece"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise VocabError(f"{path}: cannot read ({e})") from e


def _token_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _find(text: str, tokens: Tokens, special: Special) -> int | None:
    """The special id spelled ``text``, else the lowest text id whose bytes are its UTF-8."""
    ids = [i for i, t in special.items() if t == text]
    if ids:
        return min(ids)
    raw = text.encode("utf-8")
    return next((i for i, t in enumerate(tokens) if t == raw and i not in special), None)


def read_tokenizer_json(path: Path) -> tuple[Tokens, Special, list[int], int | None]:
    """A Hugging Face ``tokenizer.json`` (BPE or Unigram ``model.vocab``), with the EOS / BOS of
    sibling ``tokenizer_config.json`` and ``generation_config.json`` when present."""
    tj = _read_json(path)
    if not isinstance(tj, dict):
        raise VocabError(f"{path}: not a tokenizer.json object")
    model = tj.get("model") or {}
    kind = model.get("type")
    if kind in ("WordPiece", "WordLevel"):
        raise VocabError(f"{path}: {kind} models are not byte-exact; unsupported")
    vocab = model.get("vocab")
    pairs: list[tuple[str, int]]
    try:
        if isinstance(vocab, dict):
            pairs = [(str(k), int(v)) for k, v in vocab.items()]
        elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
            pairs = [(str(item[0]), i) for i, item in enumerate(vocab)]
        else:
            raise VocabError(f"{path}: model.vocab is missing or not a map / list")
        added = [
            (int(a["id"]), str(a["content"]), bool(a.get("special")))
            for a in tj.get("added_tokens") or []
        ]
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise VocabError(f"{path}: malformed vocabulary ({e!r})") from e
    decode = PIECE_DECODERS[_spelling(tj)]
    where = str(path)
    by_id = {tid: decode(piece, where) for piece, tid in pairs}
    unknown: set[int] = set()
    unk = model.get("unk_token")
    if isinstance(unk, str) and unk in (vocab or {}) and isinstance(vocab, dict):
        unknown.add(int(vocab[unk]))
    if isinstance(model.get("unk_id"), int):
        unknown.add(int(model["unk_id"]))
    special: Special = {}
    for tid, content, is_special in added:
        if is_special:
            special[tid] = content
        else:
            by_id[tid] = content.encode("utf-8")
            unknown.discard(tid)
    if min([*by_id, *special], default=0) < 0:
        raise VocabError(f"{path}: negative token id")
    n = max([*by_id, *special], default=-1) + 1
    tokens = [b"" if i in unknown else by_id.get(i, b"") for i in range(n)]

    eos: set[int] = set()
    bos: int | None = None
    config = path.with_name("tokenizer_config.json")
    if config.is_file():
        cfg = _read_json(config)
        if isinstance(cfg, dict):
            eos_text = _token_text(cfg.get("eos_token"))
            found = _find(eos_text, tokens, special) if eos_text else None
            if found is not None:
                eos.add(found)
            bos_text = _token_text(cfg.get("bos_token"))
            bos = _find(bos_text, tokens, special) if bos_text else None
    generation = path.with_name("generation_config.json")
    if generation.is_file():
        gen = _read_json(generation)
        ids = gen.get("eos_token_id") if isinstance(gen, dict) else None
        for gid in ids if isinstance(ids, list) else [ids]:
            if isinstance(gid, int) and not isinstance(gid, bool):
                eos.add(gid)
    if not eos:
        eos = {i for i, t in special.items() if t in EOS_NAMES}
    _make_special(eos, tokens, special)
    return tokens, special, sorted(eos), bos


def _make_special(eos: set[int], tokens: Tokens, special: Special) -> None:
    """Give EOS ids that are text tokens a special text and no bytes: a backend stops on them,
    so a grammar must never let them through as text."""
    for tid in eos:
        if 0 <= tid < len(tokens) and tid not in special:
            special[tid] = tokens[tid].decode("utf-8", "replace")
            tokens[tid] = b""


# -- GGUF -----------------------------------------------------------------------------------------
# llama.cpp's llama_token_type

#: tokenizer.ggml.model -> the bytes of one of its normal (type 1) tokens; byte tokens (type 6)
#: are told by their type, not their spelling, as llama.cpp does
GGUF_MODELS: dict[str, Callable[[str, str], bytes]] = {
    "gpt2": _byte_level_bytes,
    "llama": _metaspace_bytes,
    "t5": _metaspace_bytes,
}


def read_gguf(path: Path) -> tuple[Tokens, Special, list[int], int | None]:
    """The ``tokenizer.ggml.*`` metadata of a GGUF file, following llama.cpp's
    ``token_to_piece``: control -> special; unknown / unused -> no bytes; user-defined -> raw
    UTF-8; byte (type 6) -> the byte of ``<0xNN>``; normal -> the model's spelling."""
    if not path.is_file():
        raise VocabError(f"{path}: cannot read GGUF (no such file)")
    try:
        g = GgufFile(path, frozenset({"tokenizer.ggml.tokens"}))
    except (ToolmaskError, ValueError, OSError) as e:  # malformed, truncated, empty, unreadable
        raise VocabError(f"{path}: cannot read GGUF ({type(e).__name__}: {e})") from e
    g.close()
    meta = g.meta

    def strings(name: str) -> list[str] | None:
        v = meta.get(name)
        return None if v is None else (v if isinstance(v, list) else [v])

    def ints(name: str) -> list[int] | None:
        v = meta.get(name)
        return None if v is None else [int(x) for x in (v if isinstance(v, list) else [v])]

    pieces = strings("tokenizer.ggml.tokens")
    if pieces is None:
        raise VocabError(f"{path}: no tokenizer.ggml.tokens in the GGUF metadata")
    model = (strings("tokenizer.ggml.model") or [""])[0]
    if model not in GGUF_MODELS:
        raise VocabError(
            f"{path}: tokenizer.ggml.model {model!r} is not supported "
            f"(supported: {', '.join(sorted(GGUF_MODELS))})"
        )
    decode = GGUF_MODELS[model]
    types = ints("tokenizer.ggml.token_type") or [NORMAL] * len(pieces)
    if len(types) != len(pieces):
        raise VocabError(f"{path}: {len(pieces)} tokens but {len(types)} token types")
    where = str(path)
    tokens: Tokens = []
    special: Special = {}
    for i, (piece, kind) in enumerate(zip(pieces, types, strict=True)):
        if kind == CONTROL:
            special[i] = piece
            tokens.append(b"")
        elif kind in (UNKNOWN, UNUSED):
            tokens.append(b"")
        elif kind == USER_DEFINED:
            tokens.append(piece.encode("utf-8"))
        elif kind == BYTE:
            m = _BYTE_TOKEN.fullmatch(piece)
            if m is None:
                raise VocabError(f"{where}: byte token {i} is {piece!r}, not <0xNN>")
            tokens.append(bytes([int(m.group(1), 16)]))
        else:
            tokens.append(decode(piece, where))

    def scalar(name: str) -> int | None:
        values = ints(name)
        return values[0] if values else None

    eos = {
        v
        for v in (
            scalar("tokenizer.ggml.eos_token_id"),
            scalar("tokenizer.ggml.eot_token_id"),
            scalar("tokenizer.ggml.eom_token_id"),
        )
        if v is not None
    }
    _make_special(eos, tokens, special)
    return tokens, special, sorted(eos), scalar("tokenizer.ggml.bos_token_id")
