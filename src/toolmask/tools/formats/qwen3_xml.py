"""``qwen3_xml``: Qwen3-Coder, Qwen3.5 / 3.6 / 3.8: XML parameters inside ``<tool_call>``, with a
``<think>`` channel (prefilled by the 3.5+ templates)::

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

Values are raw text; the parser types them with the tool's schema (strings stay text, other types
are JSON). The reader is structural (:mod:`._xml`): a tag ends a value only where the next tag
follows it, so ``</parameter>`` or ``</tool_call>`` inside a value stays text. A
``<function=...>`` written without ``<tool_call>`` and a missing ``</parameter>`` are read too
(both seen in the wild).
"""

from __future__ import annotations

from toolmask.tools.formats._chat import CHATML_TOOLS
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Prompt, Reasoning
from toolmask.tools.formats._xml import FunctionParams

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "qwen3_xml",
    FunctionParams(),
    BlockMarkers(
        "<tool_call>",
        "</tool_call>",
        after_open="\n",
        before_close="\n",
        extra_triggers=("<function=",),
    ),
    reasoning=Reasoning("<think>", "</think>"),
    template_markers=(*CHATML_TOOLS, "<function=", "</function>", "<parameter=", "</parameter>"),
    prompt=Prompt(
        how="<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\n"
        "value_1\n</parameter>\n</function>\n</tool_call>"
    ),
)
