"""``glm``: GLM 4.5 / 4.6 / 4.7 / 5.x: the name, then XML key/value pairs, with ``<think>``.

    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>

GLM 4.5/4.6 put newlines between the name, keys and values; 4.7 and 5.x write them compact.
String values are raw text (no escaping), other types are JSON, so the parser types values with
the tool's schema (:mod:`._keyvalue`). GLM 4.7+ templates prefill ``<think>``.
"""

from __future__ import annotations

from toolmask.tools.formats._keyvalue import GLM_HOW, KeyValue
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "glm",
    KeyValue(),
    BlockMarkers("<tool_call>", "</tool_call>"),
    Layout(block_sep=""),
    Reasoning("<think>", "</think>"),
    template_markers=(
        "[gMASK]",
        "<sop>",
        "<|system|>",
        "<|user|>",
        "<|assistant|>",
        "<|observation|>",
        "<|endoftext|>",
        "<tool_call>",
        "</tool_call>",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "<tool_response>",
        "</tool_response>",
        "<think>",
        "</think>",
    ),
    prompt=Prompt(how=GLM_HOW),
)
