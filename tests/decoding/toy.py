"""A toy language model for the decoding-mode tests: a small vocabulary (single bytes and a few
multi-byte tokens, so strings have several tokenisations), greedy longest-match tokenisation as
its canonical one, and logits that are a fixed pseudo-random function of the whole token
sequence. Everything the decoders do with it is the library's real code; only the network is
replaced, so exact distributions can be enumerated in milliseconds."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from typing import Any

import numpy as np

import toolmask as tm
from toolmask.backends import DecodingBackend
from toolmask.sampling import bitmask_to_bool

PIECES = [b'"P', b"aris", b'"L', b"ondon", b"Lon", b"ima", b"true", b"fal", b"se", b'",']
TOKENS: list[bytes | None] = [None] + [bytes([c]) for c in range(32, 127)] + PIECES
EOS = 0
VOCAB = tm.Vocabulary.from_token_bytes(TOKENS, eos_ids=[EOS], special_texts={EOS: "<eos>"})


class Toy(DecodingBackend):
    """Logits drawn from N(0, ``scale``) seeded by the token sequence (prompt included)."""

    def __init__(self, scale: float = 2.0, seed: int = 0) -> None:
        self.vocab = VOCAB
        self.n_ctx = 256
        self.scale = scale
        self.seed = seed
        self.context: list[int] = []
        self.calls = 0

    def sync_prompt(self, prompt: list[int]) -> int:
        common = 0
        for a, b in zip(self.context, prompt, strict=False):
            if a != b:
                break
            common += 1
        self.context = list(prompt)
        self.calls += 1
        return min(common, len(prompt) - 1)

    def feed(self, tokens: list[int]) -> None:
        self.context.extend(tokens)
        self.calls += 1

    def row(self, seq: tuple[int, ...]) -> np.ndarray:
        h = hashlib.sha256(repr((self.seed, seq)).encode()).digest()
        rng = np.random.default_rng(int.from_bytes(h[:8], "little"))
        return (rng.standard_normal(len(TOKENS)) * self.scale).astype(np.float32)

    def logits(self) -> Any:
        return self.row(tuple(self.context))

    def encode(self, text: str) -> list[int]:
        data = text.encode()
        ids = {b: i for i, b in enumerate(TOKENS) if b}
        out: list[int] = []
        i = 0
        while i < len(data):
            n = max(k for k in range(1, 6) if data[i : i + k] in ids)
            out.append(ids[data[i : i + n]])
            i += n
        return out

    def tokenize(self, text: str) -> list[int]:
        return self.encode(text)


def exact_distribution(
    model: Toy, prompt: list[int], compiled: tm.CompiledGrammar, *, canonical: bool = False
) -> dict[bytes, float]:
    """The model's distribution over the grammar's strings (every tokenisation the masks
    allow, or only the canonical one), ending as ``end_on_exit`` decodes; normalised."""
    V = VOCAB.vocab_size
    buf = np.zeros((V + 31) // 32, dtype=np.int32)
    out: Counter[bytes] = Counter()

    def go(toks: tuple[int, ...], logp: float, m: tm.Matcher) -> None:
        text = b"".join(TOKENS[t] or b"" for t in toks)
        if m.is_finished():
            if not canonical or list(toks) == model.encode(text.decode()):
                out[text] += math.exp(logp)
            return
        row = model.row(tuple(prompt) + toks).astype(np.float64)
        ls = row - (row.max() + np.log(np.exp(row - row.max()).sum()))
        m.fill_bitmask(buf)
        allowed = bitmask_to_bool(buf, V)
        allowed[EOS] = False
        if m.is_accepting():
            kept = float(np.exp(ls[allowed]).sum())
            if not canonical or list(toks) == model.encode(text.decode()):
                out[text] += math.exp(logp) * (1 - kept)
        for t in np.flatnonzero(allowed).tolist():
            m.accept_token(t)
            go((*toks, t), logp + float(ls[t]), m)
            m.rollback(1)

    go((), 0.0, compiled.matcher())
    z = sum(out.values())
    return {k: v / z for k, v in out.items()}


def tv(p: dict[bytes, float], q: dict[bytes, float]) -> float:
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def empirical(texts: list[bytes]) -> dict[bytes, float]:
    return {k: v / len(texts) for k, v in Counter(texts).items()}


def best_sequence(model: Toy, prompt: list[int], compiled: tm.CompiledGrammar) -> bytes:
    """The text of the single most probable token sequence the grammar allows (the mode a
    beam over tokens looks for), ending as ``end_on_exit`` decodes."""
    V = VOCAB.vocab_size
    buf = np.zeros((V + 31) // 32, dtype=np.int32)
    best: list[tuple[float, bytes]] = [(-math.inf, b"")]

    def go(toks: tuple[int, ...], logp: float, m: tm.Matcher) -> None:
        if logp <= best[0][0]:
            return
        text = b"".join(TOKENS[t] or b"" for t in toks)
        if m.is_finished():
            best[0] = (logp, text)
            return
        row = model.row(tuple(prompt) + toks).astype(np.float64)
        ls = row - (row.max() + np.log(np.exp(row - row.max()).sum()))
        m.fill_bitmask(buf)
        allowed = bitmask_to_bool(buf, V)
        allowed[EOS] = False
        if m.is_accepting():
            end = logp + math.log(max(1e-300, 1 - float(np.exp(ls[allowed]).sum())))
            if end > best[0][0]:
                best[0] = (end, text)
        for t in np.flatnonzero(allowed).tolist():
            m.accept_token(t)
            go((*toks, t), logp + float(ls[t]), m)
            m.rollback(1)

    go((), 0.0, compiled.matcher())
    return best[0][1]
