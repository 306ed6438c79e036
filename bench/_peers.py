"""One small interface over toolmask and its peers, for bench/masks.py.

``Engine(vocab)`` builds the engine's tokenizer from the same token bytes, special tokens and EOS
ids (no Hugging Face hub); ``compile(schema)`` returns a handle for compact JSON (separators
``(",", ":")``, no free whitespace, keys in schema order); per sequence, ``start(handle)``, then
``fill(bitmask)`` before each token and ``accept(token) -> bool`` after it. ``bitmask`` is what
``alloc_bitmask`` returned for that engine (the native object); its int32 numpy view is checked by
the harness. Every peer is imported lazily: one that is missing or fails to build is reported, not
fatal.
"""

from __future__ import annotations

import json
import os
from importlib.metadata import version
from typing import Any

import numpy as np

import toolmask as tm
from toolmask.vocab import Vocabulary


def _token_list(vocab: Vocabulary) -> list[bytes]:
    """Raw bytes per id; special tokens as their text (each peer marks them special itself)."""
    return [
        vocab.token_bytes[i] or vocab.special.get(i, "").encode() for i in range(vocab.vocab_size)
    ]


#: the schema every engine compiles once during setup (not in either measured set): the shapes
#: tool schemas are made of (object, bounded string, integer range, number, enum, array, boolean)
WARM_UP: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "minLength": 1, "maxLength": 12},
        "count": {"type": "integer", "minimum": 0, "maximum": 99},
        "ratio": {"type": "number"},
        "mode": {"type": "string", "enum": ["on", "off"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "flag": {"type": "boolean"},
    },
    "required": ["label"],
    "additionalProperties": False,
}


class Engine:
    """Base: one engine on one vocabulary, one sequence at a time."""

    name = "?"
    package = ""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.words = (vocab.vocab_size + 31) // 32

    def alloc_bitmask(self) -> tuple[Any, np.ndarray]:
        """(what ``fill`` takes, its int32 view of ``words`` words)."""
        arr = np.zeros(self.words, dtype=np.int32)
        return arr, arr

    def compile(self, schema: dict[str, Any]) -> Any:
        raise NotImplementedError

    def start(self, handle: Any) -> None:
        raise NotImplementedError

    def fill(self, bitmask: Any) -> None:
        raise NotImplementedError

    def accept(self, token: int) -> bool:
        raise NotImplementedError

    def version(self) -> str:
        return version(self.package)

    def warm_up(self) -> None:
        """Compile :data:`WARM_UP` and fill one mask: once per worker, as part of setup, so that
        each engine's once-per-process initialisation (tables built on first use, lazy imports)
        is not charged to the first measured schemas."""
        native, view = self.alloc_bitmask()  # the view owns the memory a pointer may name
        self.start(self.compile(WARM_UP))
        self.fill(native)
        assert view.any(), "the warm-up mask allows nothing"


# -- toolmask --------------------------------------------------------------------------------------
class Toolmask(Engine):
    name = "toolmask"

    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(vocab)
        self.m: Any = None

    def compile(self, schema: dict[str, Any]) -> Any:
        return tm.compile(tm.Grammar.from_json_schema(schema), self.vocab)

    def start(self, handle: Any) -> None:
        self.m = handle.matcher()

    def fill(self, bitmask: Any) -> None:
        self.m.fill_bitmask(bitmask)

    def accept(self, token: int) -> bool:
        return bool(self.m.accept_token(token))

    def version(self) -> str:
        return tm.__version__


# -- llguidance ------------------------------------------------------------------------------------
class _RawTok:
    """What ``llguidance.TokenizerWrapper`` wants: token bytes, special ids, EOS and an encoder
    (greedy longest match; llguidance only uses it to tokenise grammar literals it may force)."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.tokens = _token_list(vocab)
        self.eos_token_id = min(vocab.eos_ids)
        self.bos_token_id = vocab.bos_id
        self.special_token_ids = sorted(vocab.special)
        self._vocab = vocab

    def __call__(self, data: bytes) -> list[int]:
        return self._vocab.encode_greedy(data)


class Llguidance(Engine):
    """A new ``LLMatcher`` per sequence from the grammar string (what vLLM and SGLang do); the
    tokenizer (with its token trie and slices) is built once per vocabulary."""

    name = "llguidance"
    package = "llguidance"

    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(vocab)
        import llguidance

        self.llg = llguidance
        self.tok = llguidance.LLTokenizer(
            llguidance.TokenizerWrapper(_RawTok(vocab)),
            n_vocab=vocab.vocab_size,
            eos_token=sorted(vocab.eos_ids),
        )
        self.m: Any = None

    def alloc_bitmask(self) -> tuple[Any, np.ndarray]:
        arr = np.zeros(self.words, dtype=np.int32)
        return (arr.ctypes.data, arr.nbytes), arr

    def compile(self, schema: dict[str, Any]) -> Any:
        grammar = self.llg.LLMatcher.grammar_from_json_schema(
            json.dumps(schema),
            defaults={"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"},
        )
        m = self.llg.LLMatcher(self.tok, grammar, log_level=0)
        if m.is_error():
            raise ValueError(m.get_error())
        return grammar

    def start(self, handle: Any) -> None:
        self.m = self.llg.LLMatcher(self.tok, handle, log_level=0)

    def fill(self, bitmask: Any) -> None:
        self.m.unsafe_compute_mask_ptr(*bitmask)

    def accept(self, token: int) -> bool:
        return bool(self.m.consume_token(token)) and not self.m.is_error()


# -- xgrammar --------------------------------------------------------------------------------------
class Xgrammar(Engine):
    """``VocabType.RAW`` token bytes; compile precomputes the adaptive token mask cache."""

    name = "xgrammar"
    package = "xgrammar"

    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(vocab)
        import torch
        import xgrammar

        self.xgr = xgrammar
        self.torch = torch
        info = xgrammar.TokenizerInfo(
            _token_list(vocab),
            xgrammar.VocabType.RAW,
            vocab_size=vocab.vocab_size,
            stop_token_ids=sorted(vocab.eos_ids),
        )
        self.compiler = xgrammar.GrammarCompiler(
            info, max_threads=os.cpu_count() or 1, cache_enabled=False
        )
        self.m: Any = None

    def alloc_bitmask(self) -> tuple[Any, np.ndarray]:
        arr = np.zeros((1, self.words), dtype=np.int32)
        return self.torch.from_numpy(arr), arr[0]  # shares memory

    def compile(self, schema: dict[str, Any]) -> Any:
        return self.compiler.compile_json_schema(
            json.dumps(schema), any_whitespace=False, separators=(",", ":")
        )

    def start(self, handle: Any) -> None:
        self.m = self.xgr.GrammarMatcher(handle)

    def fill(self, bitmask: Any) -> None:
        self.m.fill_next_token_bitmask(bitmask)

    def accept(self, token: int) -> bool:
        return bool(self.m.accept_token(token))


# -- outlines-core ---------------------------------------------------------------------------------
class OutlinesCore(Engine):
    """Regex from the schema (no free whitespace), then the full token index (a DFA state x token
    table) at compile. Its vocabulary takes one EOS id: the lowest of ours, the one we force. In a
    final state the index allows EOS but the guide has no transition for it: ``accept(EOS)`` is
    "the guide is finished"."""

    name = "outlines-core"
    package = "outlines-core"
    #: regexes longer than this are not indexed (the DFA build can take minutes and GBs)
    MAX_REGEX = 20_000

    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(vocab)
        import outlines_core

        self.oc = outlines_core
        self.eos = min(vocab.eos_ids)
        by_bytes: dict[bytes, list[int]] = {}
        for i, t in enumerate(vocab.token_bytes):
            if t and i != self.eos:
                by_bytes.setdefault(t, []).append(i)
        self.ocv = outlines_core.Vocabulary(self.eos, by_bytes)
        self.g: Any = None

    def alloc_bitmask(self) -> tuple[Any, np.ndarray]:
        arr = np.zeros(self.words, dtype=np.int32)
        return (arr.ctypes.data, arr.size, 4), arr

    def compile(self, schema: dict[str, Any]) -> Any:
        from outlines_core.json_schema import build_regex_from_schema

        regex = build_regex_from_schema(json.dumps(schema), whitespace_pattern="")
        if len(regex) > self.MAX_REGEX:
            raise ValueError(f"regex of {len(regex)} characters: not indexed")
        return self.oc.Index(regex, self.ocv)

    def start(self, handle: Any) -> None:
        self.g = self.oc.Guide(handle)

    def fill(self, bitmask: Any) -> None:
        self.g.write_mask_into(*bitmask)

    def accept(self, token: int) -> bool:
        if token == self.eos:
            return bool(self.g.is_finished())
        try:
            self.g.advance(token, False)
        except (ValueError, RuntimeError):
            return False
        return True


ENGINES: dict[str, type[Engine]] = {
    e.name: e for e in (Toolmask, Llguidance, Xgrammar, OutlinesCore)
}
