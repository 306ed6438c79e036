"""Vocabularies: token id -> exact bytes for every logit index; special tokens out of band.

Loaders: :meth:`Vocabulary.from_tokenizer_json`, :meth:`Vocabulary.from_gguf`,
:meth:`Vocabulary.from_quicktok`, :meth:`Vocabulary.from_token_bytes`. See ``docs/vocab.md``.
Also public, for the backends and integrations that read a model's own files: the GGUF reader
(:class:`GgufFile` and llama.cpp's token types), GPT-2's byte alphabet (:func:`byte_decoder`)
and the end-of-generation token texts (:data:`EOS_NAMES`).
"""

from __future__ import annotations

from toolmask.vocab._gguf import (
    BYTE,
    CONTROL,
    NORMAL,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    GgufFile,
    gguf_metadata,
)
from toolmask.vocab._tokens import EOS_NAMES, byte_decoder
from toolmask.vocab._vocab import VocabError, Vocabulary

__all__ = [
    "BYTE",
    "CONTROL",
    "EOS_NAMES",
    "NORMAL",
    "UNKNOWN",
    "UNUSED",
    "USER_DEFINED",
    "GgufFile",
    "VocabError",
    "Vocabulary",
    "byte_decoder",
    "gguf_metadata",
]
