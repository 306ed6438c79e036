"""One small interface over toolmask and its peers, for bench/masks.py.

``Engine(vocab)`` builds the engine's tokenizer from the same token bytes and EOS ids;
``compile(schema)`` returns a handle (compact JSON, keys in schema order where the engine lets us
choose); ``start(handle)`` returns a sequence with ``fill(bitmask)`` (int32, ceil(V/32) words)
and ``accept(token) -> bool``. Every engine is imported lazily: a missing peer is reported, not
fatal.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

import toolmask as tm
from toolmask.vocab import Vocabulary


class Sequence:
    def fill(self, bitmask: np.ndarray) -> None:
        raise NotImplementedError

    def accept(self, token: int) -> bool:
        raise NotImplementedError


class Engine:
    name = "?"

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab

    def compile(self, schema: dict[str, Any]) -> Any:
        raise NotImplementedError

    def start(self, handle: Any) -> Sequence:
        raise NotImplementedError

    def version(self) -> str:
        return "?"


# -- toolmask --
class _TmSeq(Sequence):
    def __init__(self, m: tm.Matcher) -> None:
        self.m = m

    def fill(self, bitmask: np.ndarray) -> None:
        self.m.fill_bitmask(bitmask)

    def accept(self, token: int) -> bool:
        return self.m.accept_token(token)


class Toolmask(Engine):
    name = "toolmask"

    def compile(self, schema: dict[str, Any]) -> Any:
        return tm.compile(tm.Grammar.from_json_schema(schema), self.vocab)

    def start(self, handle: Any) -> Sequence:
        return _TmSeq(handle.matcher())

    def version(self) -> str:
        return tm.__version__


# -- llguidance --
class _LlgSeq(Sequence):
    def __init__(self, m: Any) -> None:
        self.m = m

    def fill(self, bitmask: np.ndarray) -> None:
        self.m.unsafe_compute_mask_ptr(bitmask.ctypes.data, bitmask.nbytes)

    def accept(self, token: int) -> bool:
        return bool(self.m.consume_token(token)) and not self.m.is_error()


class _RawTok:
    """What llguidance.TokenizerWrapper wants: token bytes, EOS, and an encode function."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.tokens = [
            vocab.token_bytes[i] or vocab.special.get(i, "").encode()
            for i in range(vocab.vocab_size)
        ]
        self.eos_token_id = min(vocab.eos_ids)
        self.bos_token_id = vocab.bos_id
        self.special_token_ids = sorted(vocab.special)
        self._vocab = vocab

    def __call__(self, data: bytes) -> list[int]:
        return self._vocab.encode_greedy(data)


class Llguidance(Engine):
    name = "llguidance"

    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(vocab)
        import llguidance

        self.llg = llguidance
        self.tok = llguidance.LLTokenizer(
            llguidance.TokenizerWrapper(_RawTok(vocab)), eos_token=sorted(vocab.eos_ids)
        )

    def compile(self, schema: dict[str, Any]) -> Any:
        grammar = self.llg.LLMatcher.grammar_from_json_schema(
            json.dumps(schema), defaults={"whitespace_flexible": False}
        )
        m = self.llg.LLMatcher(self.tok, grammar, log_level=0)
        if m.is_error():
            raise ValueError(m.get_error())
        return grammar

    def start(self, handle: Any) -> Sequence:
        return _LlgSeq(self.llg.LLMatcher(self.tok, handle, log_level=0))

    def version(self) -> str:
        from importlib.metadata import version

        return version("llguidance")


# -- xgrammar --
class _XgrSeq(Sequence):
    def __init__(self, m: Any, torch: Any) -> None:
        self.m = m
        self.torch = torch
        self.buf: Any = None

    def fill(self, bitmask: np.ndarray) -> None:
        if self.buf is None:
            self.buf = self.torch.from_numpy(bitmask)  # shares memory with ``bitmask``
        self.m.fill_next_token_bitmask(self.buf)

    def accept(self, token: int) -> bool:
        return bool(self.m.accept_token(token))


class Xgrammar(Engine):
    name = "xgrammar"

    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(vocab)
        import torch
        import xgrammar

        self.xgr = xgrammar
        self.torch = torch
        tokens = [
            vocab.token_bytes[i] or vocab.special.get(i, "").encode()
            for i in range(vocab.vocab_size)
        ]
        info = xgrammar.TokenizerInfo(
            tokens,
            xgrammar.VocabType.RAW,
            vocab_size=vocab.vocab_size,
            stop_token_ids=sorted(vocab.eos_ids),
        )
        self.compiler = xgrammar.GrammarCompiler(info, max_threads=1)

    def compile(self, schema: dict[str, Any]) -> Any:
        return self.compiler.compile_json_schema(
            json.dumps(schema), any_whitespace=False, separators=(",", ":")
        )

    def start(self, handle: Any) -> Sequence:
        return _XgrSeq(self.xgr.GrammarMatcher(handle), self.torch)

    def version(self) -> str:
        from importlib.metadata import version

        return version("xgrammar")


# -- outlines-core --
class _OcSeq(Sequence):
    def __init__(self, g: Any) -> None:
        self.g = g

    def fill(self, bitmask: np.ndarray) -> None:
        self.g.write_mask_into(bitmask.ctypes.data, bitmask.size, 4)

    def accept(self, token: int) -> bool:
        try:
            self.g.advance(token)
        except (ValueError, RuntimeError):
            return False
        return True


class OutlinesCore(Engine):
    name = "outlines-core"
    #: regexes longer than this are not indexed (the DFA build can take minutes and GBs)
    MAX_REGEX = 20_000

    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(vocab)
        import outlines_core

        self.oc = outlines_core
        eos = min(vocab.eos_ids)
        by_bytes: dict[bytes, list[int]] = {}
        for i, t in enumerate(vocab.token_bytes):
            if t and i != eos:
                by_bytes.setdefault(t, []).append(i)
        self.ocv = outlines_core.Vocabulary(eos, by_bytes)

    def compile(self, schema: dict[str, Any]) -> Any:
        from outlines_core.json_schema import build_regex_from_schema

        regex = build_regex_from_schema(json.dumps(schema), whitespace_pattern="")
        if len(regex) > self.MAX_REGEX:
            raise ValueError(f"regex of {len(regex)} characters: not indexed")
        return self.oc.Index(regex, self.ocv)

    def start(self, handle: Any) -> Sequence:
        return _OcSeq(self.oc.Guide(handle))

    def version(self) -> str:
        from importlib.metadata import version

        return version("outlines-core")


ENGINES: dict[str, type[Engine]] = {
    e.name: e for e in (Toolmask, Llguidance, Xgrammar, OutlinesCore)
}
