"""``apriel``: ServiceNow Apriel 1.5 / 1.6 (Thinker): every call of a turn in one JSON list::

    Here are my reasoning steps:
    The user wants the weather.
    [BEGIN FINAL RESPONSE]

    <tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>

The reasoning is plain text that the prompt opens (Apriel 1.6's generation prompt ends with
``Here are my reasoning steps:``; see :meth:`Apriel.prompt_opens_reasoning`) and that
``[BEGIN FINAL RESPONSE]`` closes. ``<tool_call>`` inside the system prompt's instructions is
not the trigger: ``<tool_calls>`` is.
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls

__all__ = ["Apriel"]

#: the text Apriel 1.6's generation prompt ends with: the reply continues its reasoning
REASONING_PREFILL = "Here are my reasoning steps:"


@register_format("apriel")
class Apriel(JsonCalls):
    open = "<tool_calls>"
    close = "</tool_calls>"
    list_open = "["
    list_close = "]"
    separator = ","
    separator_text = ", "
    json_list = True
    reasoning_end = "[BEGIN FINAL RESPONSE]"
    template_markers = (
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
    )

    def prompt_opens_reasoning(self, prompt: str) -> bool:
        """Apriel 1.6's generation prompt opens the reasoning as text (no marker)."""
        return prompt.rstrip(" \t\r\n").endswith(REASONING_PREFILL)
