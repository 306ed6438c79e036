"""``spark``: iFlytek Spark 2.5: GLM 4.7's compact call layout in a DeepSeek-style chat template
(``<｜start▁of▁sentence｜><|Bot|>``), with a ``<think>`` channel that the template opens::

    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>

The calls are GLM's key/value markers (:mod:`._keyvalue`); what differs is the template's
markers, which the sanitizer must break in tool output.
"""

from __future__ import annotations

from toolmask.tools.formats._keyvalue import GLM_HOW, KeyValue
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "spark",
    KeyValue(),
    BlockMarkers("<tool_call>", "</tool_call>"),
    Layout(block_sep=""),
    Reasoning("<think>", "</think>"),
    template_markers=(
        "<｜start▁of▁sentence｜>",
        "<｜end▁of▁sentence｜>",
        "<|System|>",
        "<|User|>",
        "<|Bot|>",
        "<|Tool|>",
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "<tool_response>",
        "</tool_response>",
        "<tools>",
        "</tools>",
    ),
    prompt=Prompt(how=GLM_HOW),
)
