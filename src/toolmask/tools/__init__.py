"""Tool calls: specs, wire formats, turn grammars, parsing, validation, untrusted output.

``ToolTurn(tools, fmt="hermes", tool_choice="auto", parallel_tool_calls=True)`` ties it together:
``.prompt()`` advertises the tools, ``.grammar()`` constrains the reply, ``.parse(text)`` /
``.stream_parser()`` read it back, ``.validate(call)`` checks each call, ``.sanitize(out)``
prepares a tool result for the prompt, ``.compile(vocab)`` compiles the turn (a subset of the
tools as a name filter over the turn every subset shares). What the turn depends on besides its
tools, format and choice is one frozen :class:`TurnOptions`; a wire format is a frozen
:class:`FormatSpec` (:mod:`toolmask.tools.formats`). See ``docs/tools.md``.
"""

from __future__ import annotations

from toolmask.errors import ToolError
from toolmask.tools._choice import ToolChoice
from toolmask.tools._detect import (
    CaseEvidence,
    FormatEvidence,
    FormatGuess,
    detect_format,
    detection_report,
    evidence_table,
    prove_format,
    resolve_format,
)
from toolmask.tools._grammar import build_call_grammar, build_name_filter, build_turn_grammar
from toolmask.tools._lazy import LazyTurnGrammar, LazyTurnMatcher
from toolmask.tools._options import TurnOptions
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
from toolmask.tools._probe import Probe, ProbeCase, probe_template
from toolmask.tools._sanitize import sanitize_tool_output
from toolmask.tools._sites import SITES, distortion_sites, site_at, sites_of
from toolmask.tools._spec import Tool, check_tool_name, type_schema
from toolmask.tools._template import TemplateRenderer, TemplateSource, load_chat_template
from toolmask.tools._turn import LAZY_MIN_TOOLS, ToolTurn
from toolmask.tools._validate import CallError, render_errors, validate_call
from toolmask.tools.formats import (
    FORMATS,
    FormatSpec,
    get_format,
    prefix_rules,
    register_format,
    unregister_format,
)

__all__ = [
    "FORMATS",
    "LAZY_MIN_TOOLS",
    "SITES",
    "CallError",
    "CaseEvidence",
    "FormatEvidence",
    "FormatGuess",
    "FormatSpec",
    "LazyTurnGrammar",
    "LazyTurnMatcher",
    "MalformedBlock",
    "ParsedTurn",
    "Probe",
    "ProbeCase",
    "ReasoningSplitter",
    "StreamDelta",
    "StreamParser",
    "TemplateRenderer",
    "TemplateSource",
    "Tool",
    "ToolCall",
    "ToolChoice",
    "ToolError",
    "ToolTurn",
    "TurnOptions",
    "build_call_grammar",
    "build_name_filter",
    "build_turn_grammar",
    "check_tool_name",
    "detect_format",
    "detection_report",
    "distortion_sites",
    "evidence_table",
    "get_format",
    "load_chat_template",
    "parse_turn",
    "prefix_rules",
    "probe_template",
    "prove_format",
    "random_call_id",
    "register_format",
    "render_errors",
    "resolve_format",
    "sanitize_tool_output",
    "sequential_call_id",
    "site_at",
    "sites_of",
    "type_schema",
    "unregister_format",
    "validate_call",
]
