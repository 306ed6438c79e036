"""Vocabularies: token id -> exact bytes for every logit index; special tokens out of band.

Loaders: :meth:`Vocabulary.from_tokenizer_json`, :meth:`Vocabulary.from_gguf`,
:meth:`Vocabulary.from_quicktok`, :meth:`Vocabulary.from_token_bytes`. See ``docs/vocab.md``.
"""

from __future__ import annotations

from toolmask.vocab._gguf import CONTROL, GgufFile
from toolmask.vocab._vocab import EOS_NAMES, VocabError, Vocabulary, byte_decoder

__all__ = [
    "CONTROL",
    "EOS_NAMES",
    "GgufFile",
    "VocabError",
    "Vocabulary",
    "byte_decoder",
]
