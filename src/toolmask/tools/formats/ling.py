"""``ling``: inclusionAI Ling / Ring 3.0: GLM 4.5's call layout (the name and each key on its own
line) in a chat template of its own, with a ``<think>`` channel that the template opens::

    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Paris</arg_value>
    </tool_call>

The calls are GLM's key/value markers (:mod:`._keyvalue`), laid out as the template writes
them: ``NAME\\n``, ``</arg_key>\\n``, values followed directly by the next key, ``\\n`` before
``</tool_call>`` (two newlines after the name of a call without arguments), calls on their own
lines. What else differs from ``glm`` is the template's markers (``<role>``, ``<|role_end|>``),
which the sanitizer must break in tool output.
"""

from __future__ import annotations

from toolmask.tools.formats._keyvalue import KeyValue
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Prompt, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "ling",
    KeyValue(layout=("\n", "\n", "", "\n")),
    BlockMarkers("<tool_call>", "</tool_call>"),
    reasoning=Reasoning("<think>", "</think>"),
    template_markers=(
        "<role>",
        "</role>",
        "<|role_end|>",
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
    prompt=Prompt(
        how="<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n"
        "<arg_value>{arg-value-1}</arg_value>...\n</tool_call>"
    ),
)
