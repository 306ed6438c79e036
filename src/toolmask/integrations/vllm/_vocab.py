"""The model's vocabulary, read from vLLM's tokenizer (a Hugging Face fast tokenizer)."""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolmask.errors import ToolmaskError
from toolmask.tools import resolve_format
from toolmask.vocab import EOS_NAMES, Vocabulary

__all__ = ["model_format", "vocabulary_from_tokenizer"]


def vocabulary_from_tokenizer(
    tokenizer: Any, vocab_size: int, eos_ids: Iterable[int] = ()
) -> Vocabulary:
    """A :class:`Vocabulary` ``vocab_size`` wide (the logits width) of a fast HF tokenizer
    (or vLLM's wrapper of one): its ``tokenizer.json`` through
    :meth:`Vocabulary.from_tokenizer_json`; EOS = the tokenizer's, ``eos_ids`` (vLLM's stop
    ids from the generation config) and the special tokens named in ``EOS_NAMES``. Raises
    ToolmaskError for a tokenizer without a ``tokenizers`` backend (Mistral's tekken)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        inner = getattr(tokenizer, "tokenizer", None)  # vLLM wrappers keep the HF one here
        backend = getattr(inner, "backend_tokenizer", None)
        tokenizer = inner if backend is not None else tokenizer
    if backend is None:
        raise ToolmaskError(
            f"toolmask needs a fast (tokenizers) tokenizer, not {type(tokenizer).__name__}"
        )
    eos: set[int] = {int(t) for t in eos_ids if 0 <= int(t) < vocab_size}
    tid = getattr(tokenizer, "eos_token_id", None)
    if isinstance(tid, int) and 0 <= tid < vocab_size:
        eos.add(tid)
    for t, added in getattr(tokenizer, "added_tokens_decoder", {}).items():
        if added.special and added.content in EOS_NAMES and t < vocab_size:
            eos.add(int(t))
    with tempfile.TemporaryDirectory(prefix="toolmask-vocab-") as d:
        path = Path(d) / "tokenizer.json"
        path.write_text(backend.to_str(), encoding="utf-8")
        cfg = {"bos_token": tokenizer.bos_token, "eos_token": tokenizer.eos_token}
        (Path(d) / "tokenizer_config.json").write_text(json.dumps(cfg), encoding="utf-8")
        gen = {"eos_token_id": sorted(eos)}
        (Path(d) / "generation_config.json").write_text(json.dumps(gen), encoding="utf-8")
        vocab = Vocabulary.from_tokenizer_json(path)
    if vocab.vocab_size > vocab_size:
        raise ToolmaskError(
            f"the tokenizer has {vocab.vocab_size} ids but the model's logits {vocab_size}"
        )
    if vocab.vocab_size == vocab_size:
        return vocab
    return Vocabulary(
        vocab.token_bytes,
        special=vocab.special,
        eos_ids=vocab.eos_ids,
        bos_id=vocab.bos_id,
        vocab_size=vocab_size,
    )


def _special_texts(tokenizer: Any) -> list[str]:
    out = [str(t) for t in getattr(tokenizer, "all_special_tokens", None) or ()]
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    out += [str(getattr(t, "content", t)) for t in added.values()]
    return out


def model_format(tokenizer: Any) -> str:
    """The wire format of the model behind a vLLM (Hugging Face) tokenizer: its chat template's
    markers, else its special tokens (:func:`toolmask.tools.resolve_format` with ``"auto"``;
    ``hermes`` with a warning when nothing names one). O(template length x rules)."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, Mapping):  # several named templates: the tool-use one first
        template = template.get("tool_use") or template.get("default")
    return _detect(
        template if isinstance(template, str) else None, tuple(_special_texts(tokenizer))
    )


@functools.lru_cache(maxsize=16)
def _detect(template: str | None, specials: tuple[str, ...]) -> str:
    return resolve_format("auto", template, specials)
