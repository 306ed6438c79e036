"""``apriel``: ServiceNow Apriel 1.5 / 1.6 (Thinker): every call of a turn in one JSON list::

    Here are my reasoning steps:
    The user wants the weather.
    [BEGIN FINAL RESPONSE]

    <tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>

The reasoning is plain text that the prompt opens (Apriel 1.6's generation prompt ends with
``Here are my reasoning steps:``, the channel's ``prefill``) and that ``[BEGIN FINAL
RESPONSE]`` closes. ``<tool_call>`` inside the system prompt's instructions is not the
trigger: ``<tool_calls>`` is.
"""

from __future__ import annotations

from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "apriel",
    JsonCalls(json_list=True),
    BlockMarkers("<tool_calls>", "</tool_calls>"),
    Layout(list_open="[", list_close="]", separator=","),
    Reasoning(end="[BEGIN FINAL RESPONSE]", prefill="Here are my reasoning steps:"),
    template_markers=(
        "<|system|>",
        "<|user|>",
        "<|assistant|>",
        "<|begin_system|>",
        "<|begin_user|>",
        "<|begin_assistant|>",
        "<|begin_tool_result|>",
        "<|tool_result|>",
        "<|end|>",
        "<available_tools>",
        "</available_tools>",
        "<tool_calls>",
        "</tool_calls>",
        "[BEGIN FINAL RESPONSE]",
        "[END FINAL RESPONSE]",
    ),
)
