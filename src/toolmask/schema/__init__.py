"""JSON Schema -> grammar IR.

:func:`compile_json_schema` resolves references, normalises the schema into closed per-type shapes
(see :mod:`toolmask.schema._terms`) and lowers them to rules. What each keyword compiles to is in
:data:`KEYWORDS`; what the grammar cannot enforce is attached to the grammar as a
:class:`~toolmask.grammar.PostCheck` that ``CompiledGrammar.validate`` runs after decoding
(:func:`make_validator`). Importing this package registers ``compile_json_schema`` as the
``json_schema`` frontend of ``Grammar.from_json_schema`` / ``Grammar.json``.

Also public, for the tool layer and the CLI: the JSON text pieces wire formats reuse
(:func:`json_ws`, :data:`GEMMA_QUOTE`) and the ``toolmask check`` report
(:func:`check_schema`, :func:`format_report`, :func:`load_schema`).
"""

from __future__ import annotations

from toolmask.grammar import register_frontend
from toolmask.schema._entry import compile_json_schema
from toolmask.schema._json_text import json_ws
from toolmask.schema._keywords import KEYWORDS, KeywordInfo
from toolmask.schema._notation import (
    FUNCTIONGEMMA_QUOTE,
    GEMMA_QUOTE,
    MINIMAX_NS,
    NOTATIONS,
    Notation,
)
from toolmask.schema._report import (
    KeywordReport,
    SchemaReport,
    check_schema,
    format_report,
    load_schema,
)
from toolmask.schema._validate import make_validator, schema_validator

__all__ = [
    "FUNCTIONGEMMA_QUOTE",
    "GEMMA_QUOTE",
    "KEYWORDS",
    "MINIMAX_NS",
    "NOTATIONS",
    "KeywordInfo",
    "KeywordReport",
    "Notation",
    "SchemaReport",
    "check_schema",
    "compile_json_schema",
    "format_report",
    "json_ws",
    "load_schema",
    "make_validator",
    "schema_validator",
]

register_frontend("json_schema", compile_json_schema)
