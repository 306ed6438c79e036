"""toolmask: valid-by-construction tool calls for local LLMs."""

from __future__ import annotations

from toolmask import schema as schema  # registers Grammar.from_json_schema's frontend
from toolmask._compile import (
    CompiledGrammar,
    GrammarCompiler,
    Matcher,
    compile,
    default_compiler,
)
from toolmask.decoding import DecodingParams
from toolmask.errors import (
    ChatTemplateError,
    ContextOverflowError,
    GrammarError,
    GrammarSyntaxError,
    LimitError,
    SchemaError,
    ToolError,
    ToolmaskError,
    VocabError,
)
from toolmask.grammar import Grammar
from toolmask.limits import DEFAULT_LIMITS, SERVER_LIMITS, Limits
from toolmask.sampling import Sampler, SamplingParams, apply_bitmask
from toolmask.tools import (
    CallError,
    MalformedBlock,
    ParsedTurn,
    StreamDelta,
    Tool,
    ToolCall,
    ToolChoice,
    ToolTurn,
    sanitize_tool_output,
)
from toolmask.vocab import Vocabulary

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_LIMITS",
    "SERVER_LIMITS",
    "CallError",
    "ChatTemplateError",
    "CompiledGrammar",
    "ContextOverflowError",
    "DecodingParams",
    "Grammar",
    "GrammarCompiler",
    "GrammarError",
    "GrammarSyntaxError",
    "LimitError",
    "Limits",
    "MalformedBlock",
    "Matcher",
    "ParsedTurn",
    "Sampler",
    "SamplingParams",
    "SchemaError",
    "StreamDelta",
    "Tool",
    "ToolCall",
    "ToolChoice",
    "ToolError",
    "ToolTurn",
    "ToolmaskError",
    "VocabError",
    "Vocabulary",
    "__version__",
    "apply_bitmask",
    "compile",
    "default_compiler",
    "sanitize_tool_output",
]
