"""Vocabulary: token id -> exact bytes for every logit index.

Text tokens carry their bytes; special (control) tokens carry their text out of band and have
no bytes here, so text grammars can never match them; ids past the tokenizer up to
``vocab_size`` (padding of the logits) and unknown/unused ids have neither and are never allowed.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from toolmask.errors import VocabError
from toolmask.vocab._loaders import read_gguf, read_quicktok, read_tokenizer_json
from toolmask.vocab._tokens import EOS_NAMES, QUICKTOK_BOS, QUICKTOK_EOS, byte_decoder

__all__ = ["EOS_NAMES", "VocabError", "Vocabulary", "byte_decoder"]


def _check_id(tid: object, size: int, what: str) -> int:
    if isinstance(tid, bool) or not isinstance(tid, int):
        raise VocabError(f"{what} {tid!r} is not an int")
    if not 0 <= tid < size:
        raise VocabError(f"{what} {tid} is out of range [0, {size})")
    return tid


class Vocabulary:
    """Immutable map from every logit index to its bytes, with special tokens out of band.

    Invariants: ``len(token_bytes) == vocab_size``; ``token_bytes[i] == b""`` for every special,
    unknown, unused and padding id; ``special`` and ``eos_ids`` hold ids in ``[0, vocab_size)``;
    ids from ``n_tokens`` (the tokenizer's length) up to ``vocab_size`` are padding of the
    logits. ``fingerprint`` is a sha256 hex over all of these (stable across runs and
    processes); equality and hashing go by it. Build with a ``from_*`` constructor; the
    attributes cannot be reassigned (``special`` is a plain dict: do not mutate it).

    Cost: construction is O(total token bytes) (copy + hash); nothing else is precomputed.
    """

    __slots__ = (
        "_encoder",
        "bos_id",
        "eos_ids",
        "fingerprint",
        "n_tokens",
        "special",
        "token_bytes",
        "vocab_size",
    )

    vocab_size: int
    token_bytes: tuple[bytes, ...]
    special: dict[int, str]
    eos_ids: frozenset[int]
    bos_id: int | None
    fingerprint: str
    n_tokens: int
    _encoder: tuple[dict[bytes, int], dict[bytes, int]] | None

    def __init__(
        self,
        token_bytes: Sequence[bytes],
        *,
        special: Mapping[int, str] | None = None,
        eos_ids: Iterable[int] = (),
        bos_id: int | None = None,
        vocab_size: int | None = None,
    ) -> None:
        """Low level: ``token_bytes`` per tokenizer id (``b""`` for none); the bytes of
        ``special`` ids are dropped. Raises VocabError for ids out of range, a ``vocab_size``
        below ``len(token_bytes)`` or tokens that are not bytes."""
        n = len(token_bytes)
        if vocab_size is None:
            size = n
        elif isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise VocabError(f"vocab_size {vocab_size!r} is not an int")
        else:
            size = vocab_size
        if size < n:
            raise VocabError(f"vocab_size {size} is smaller than the tokenizer's {n} ids")
        spec: dict[int, str] = {}
        for tid, text in (special or {}).items():
            _check_id(tid, size, "special token id")
            if not isinstance(text, str):
                raise VocabError(f"special token id {tid}: text {text!r} is not a str")
            spec[tid] = text
        eos = frozenset(_check_id(t, size, "EOS id") for t in eos_ids)
        if bos_id is not None:
            _check_id(bos_id, size, "BOS id")
        tb: list[bytes] = []
        for i, t in enumerate(token_bytes):
            if i in spec or not t:
                tb.append(b"")
            elif isinstance(t, bytes | bytearray | memoryview):
                tb.append(bytes(t))
            else:
                raise VocabError(f"token {i}: {t!r} is not bytes")
        tb.extend([b""] * (size - n))
        h = hashlib.sha256(b"toolmask.Vocabulary/1\0")
        h.update(struct.pack("<QQ", size, n))
        for t in tb:
            h.update(struct.pack("<I", len(t)))
            h.update(t)
        h.update(json.dumps(sorted(spec.items()), ensure_ascii=True).encode())
        h.update(json.dumps([sorted(eos), bos_id]).encode())
        init = object.__setattr__
        init(self, "token_bytes", tuple(tb))
        init(self, "special", spec)
        init(self, "eos_ids", eos)
        init(self, "bos_id", bos_id)
        init(self, "vocab_size", size)
        init(self, "n_tokens", n)
        init(self, "fingerprint", h.hexdigest())
        init(self, "_encoder", None)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"Vocabulary is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"Vocabulary is immutable (cannot delete {name!r})")

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if k != "_encoder"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_encoder", None)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __len__(self) -> int:
        """``vocab_size``, the logits width."""
        return self.vocab_size

    def __repr__(self) -> str:
        pad = self.vocab_size - self.n_tokens
        padding = f" padding={pad}" if pad else ""
        return (
            f"<Vocabulary size={self.vocab_size}{padding} special={len(self.special)} "
            f"eos={sorted(self.eos_ids)} {self.fingerprint[:12]}>"
        )

    # -- queries ----------------------------------------------------------------------------------
    def is_text(self, tid: int) -> bool:
        """True iff ``tid`` is a normal token with non-empty bytes: False for special, unknown,
        unused, padding and out-of-range ids. O(1)."""
        return 0 <= tid < self.vocab_size and bool(self.token_bytes[tid])

    def special_id(self, text: str) -> int | None:
        """The id of the special token spelled ``text`` (the lowest if several), or None.
        O(#special)."""
        ids = [i for i, t in self.special.items() if t == text]
        return min(ids) if ids else None

    def encode_greedy(self, data: bytes) -> list[int]:
        """Longest-match tokenisation of ``data`` over text tokens (tests, forced text).

        ``b"".join(token_bytes[i] for i in result) == data`` and every id is text; the lowest id
        wins among tokens with equal bytes. Not the model's BPE: a canonical tokeniser may split
        differently. Raises VocabError naming the offset when a byte starts no token.

        Cost: the lookup tables (bytes -> id, and the longest token per two-byte prefix) are
        built on the first call, O(total token bytes), and kept on the instance (about 50 ms
        for 151k tokens). Then O(len(data) x longest token sharing the next two bytes) dict
        lookups.
        """
        enc = self._encoder
        if enc is None:
            table: dict[bytes, int] = {}
            longest: dict[bytes, int] = {}
            for i, t in enumerate(self.token_bytes):
                if t and t not in table:
                    table[t] = i
                    if len(t) > 1:
                        key = t[:2]
                        if longest.get(key, 0) < len(t):
                            longest[key] = len(t)
            enc = (table, longest)
            object.__setattr__(self, "_encoder", enc)
        table, longest = enc
        out: list[int] = []
        i, n = 0, len(data)
        while i < n:
            for size in range(min(longest.get(data[i : i + 2], 1), n - i), 0, -1):
                tid = table.get(data[i : i + size])
                if tid is not None:
                    out.append(tid)
                    i += size
                    break
            else:
                raise VocabError(f"byte {data[i]:#04x} at offset {i} starts no text token")
        return out

    # -- constructors ------------------------------------------------------------------------------
    @classmethod
    def from_token_bytes(
        cls,
        tokens: Sequence[bytes | None],
        *,
        eos_ids: Iterable[int] = (),
        special_ids: Iterable[int] = (),
        special_texts: Mapping[int, str] | None = None,
        bos_id: int | None = None,
        vocab_size: int | None = None,
    ) -> Vocabulary:
        """From the bytes of each token id; ``None`` marks an unused id (no bytes, never text).

        ``special_ids`` become special tokens whose text is their bytes decoded as UTF-8, unless
        ``special_texts`` gives it (its ids are special too). ``eos_ids`` are taken as given:
        normally special ids, but a text id may be EOS if the tokenizer says so. ``vocab_size``
        (default ``len(tokens)``) pads the logits width. Raises VocabError naming the id for ids
        out of range, a special id with neither bytes nor text, or a too small ``vocab_size``.
        O(total bytes).
        """
        texts = dict(special_texts or {})
        special: dict[int, str] = {}
        for tid in special_ids:
            _check_id(tid, len(tokens), "special token id")
            if tid in texts:
                continue
            raw = tokens[tid]
            if not raw:
                raise VocabError(f"special token id {tid} has no bytes and no special_texts entry")
            special[tid] = bytes(raw).decode("utf-8", "replace")
        special.update(texts)
        return cls(
            [t or b"" for t in tokens],
            special=special,
            eos_ids=eos_ids,
            bos_id=bos_id,
            vocab_size=vocab_size,
        )

    @classmethod
    def from_quicktok(cls, name: str, *, vocab_size: int | None = None) -> Vocabulary:
        """A vocabulary shipped by the ``quicktok-v1`` wheel: ``qwen3``, ``llama3``, ``o200k``,
        ``cl100k`` (``quicktok/data/{name}.vocab`` + ``{name}.special``).

        Every token listed in ``{name}.special`` is special (for qwen3 that includes
        ``<tool_call>``, ``<think>`` and the FIM markers). EOS: qwen3 ``<|im_end|>``,
        ``<|endoftext|>``; llama3 ``<|eot_id|>``, ``<|end_of_text|>``, ``<|eom_id|>``; o200k and
        cl100k ``<|endoftext|>`` (those that exist). Raises VocabError when the wheel is not
        installed or has no such vocabulary. Cost: about 0.2-0.4 s (parsing 100k-200k tokens).
        """
        tokens, special = read_quicktok(name)
        eos_names = QUICKTOK_EOS.get(name, EOS_NAMES)
        eos = [i for i, t in special.items() if t in eos_names]
        bos_name = QUICKTOK_BOS.get(name)
        bos = next((i for i, t in sorted(special.items()) if t == bos_name), None)
        return cls(tokens, special=special, eos_ids=eos, bos_id=bos, vocab_size=vocab_size)

    @classmethod
    def from_tokenizer_json(cls, path: str | Path, *, vocab_size: int | None = None) -> Vocabulary:
        """A Hugging Face ``tokenizer.json``: byte-level BPE (GPT-2 byte map) or SentencePiece
        style (``▁`` = space, ``<0xNN>`` = that byte), told apart by its model / decoder /
        pre-tokenizer sections. ``added_tokens`` with ``special: true`` are special, the others
        text (their content's UTF-8). EOS: ``eos_token`` of a sibling ``tokenizer_config.json``
        plus ``eos_token_id`` of a sibling ``generation_config.json``; without either, the
        special tokens named in :data:`EOS_NAMES`. An EOS token that the tokenizer lists as
        text is made special (the backend stops on it, so it must never pass as text).
        Raises VocabError for unreadable files and WordPiece (not byte-exact) models.
        O(file size).
        """
        tokens, special, eos, bos = read_tokenizer_json(Path(path))
        return cls(tokens, special=special, eos_ids=eos, bos_id=bos, vocab_size=vocab_size)

    @classmethod
    def from_gguf(cls, path: str | Path, *, vocab_size: int | None = None) -> Vocabulary:
        """The tokenizer in a GGUF file's ``tokenizer.ggml.*`` metadata (no dependency).

        ``tokenizer.ggml.model`` ``gpt2`` uses the GPT-2 byte map, ``llama`` / ``t5`` the
        SentencePiece rules (type-6 byte tokens ``<0xNN>``); other models raise VocabError.
        Token types: 3 (control) special; 2 (unknown) and 5 (unused) no bytes; 4
        (user-defined) its raw UTF-8 text. EOS: ``eos_token_id``, ``eot_token_id`` and
        ``eom_token_id``, made special if typed otherwise. Only the metadata is read (the
        file is memory-mapped, tensors untouched).
        """
        tokens, special, eos, bos = read_gguf(Path(path))
        return cls(tokens, special=special, eos_ids=eos, bos_id=bos, vocab_size=vocab_size)
