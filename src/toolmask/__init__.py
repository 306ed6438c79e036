"""toolmask: valid-by-construction tool calls for local LLMs."""

from __future__ import annotations

from toolmask.errors import (
    GrammarError,
    GrammarSyntaxError,
    LimitError,
    SchemaError,
    ToolmaskError,
)
from toolmask.grammar import Grammar
from toolmask.limits import DEFAULT_LIMITS, SERVER_LIMITS, Limits

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_LIMITS",
    "SERVER_LIMITS",
    "Grammar",
    "GrammarError",
    "GrammarSyntaxError",
    "LimitError",
    "Limits",
    "SchemaError",
    "ToolmaskError",
    "__version__",
]
