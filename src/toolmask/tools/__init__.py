"""Tool calls: specs, wire formats, turn grammars, parsing, validation, untrusted output.

``ToolTurn(tools, fmt="hermes", tool_choice="auto", parallel_tool_calls=True)`` ties it together:
``.prompt()`` advertises the tools, ``.grammar()`` constrains the reply, ``.parse(text)`` /
``.stream_parser()`` read it back, ``.validate(call)`` checks each call, ``.sanitize(out)``
prepares a tool result for the prompt. See ``docs/tools.md``.
"""

from __future__ import annotations

from toolmask.errors import ToolError
from toolmask.tools._choice import ToolChoice
from toolmask.tools._grammar import build_call_grammar, build_turn_grammar
from toolmask.tools._parser import (
    MalformedBlock,
    ParsedTurn,
    ReasoningSplitter,
    StreamDelta,
    StreamParser,
    ToolCall,
    parse_turn,
    random_call_id,
    sequential_call_id,
)
from toolmask.tools._rename import prefix_rules
from toolmask.tools._sanitize import sanitize_tool_output
from toolmask.tools._sites import SITES, distortion_sites, site_at, sites_of
from toolmask.tools._spec import Tool, check_tool_name, type_schema
from toolmask.tools._turn import ToolTurn
from toolmask.tools._validate import CallError, render_errors, validate_call
from toolmask.tools.formats import (
    FORMATS,
    FormatGuess,
    WireFormat,
    detect_format,
    get_format,
    register_format,
    resolve_format,
)

__all__ = [
    "FORMATS",
    "SITES",
    "CallError",
    "FormatGuess",
    "MalformedBlock",
    "ParsedTurn",
    "ReasoningSplitter",
    "StreamDelta",
    "StreamParser",
    "Tool",
    "ToolCall",
    "ToolChoice",
    "ToolError",
    "ToolTurn",
    "WireFormat",
    "build_call_grammar",
    "build_turn_grammar",
    "check_tool_name",
    "detect_format",
    "distortion_sites",
    "get_format",
    "parse_turn",
    "prefix_rules",
    "random_call_id",
    "register_format",
    "render_errors",
    "resolve_format",
    "sanitize_tool_output",
    "sequential_call_id",
    "site_at",
    "sites_of",
    "type_schema",
    "validate_call",
]
