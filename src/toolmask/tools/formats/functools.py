"""``functools``: a prompt-injected format for models without a native one.

All calls in one JSON array right after the word ``functools``::

    functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]

The trigger is ``functools[`` (so prose may still say "functools"); :meth:`render_tools` is the
whole system-prompt text that teaches the format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolmask.tools.formats._base import WireFormat, register_format, tool_json_lines

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool

__all__ = ["Functools"]


@register_format("functools")
class Functools(WireFormat):
    open = "functools"
    trigger = "functools["
    list_open = "["
    list_close = "]"
    separator = ","
    separator_text = ", "
    template_markers = (
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "functools[",
    )

    def render_tools(self, tools: Sequence[Tool]) -> str:
        """System-prompt text: the tool list and how to call them."""
        return (
            "You have access to the following functions:\n\n"
            + tool_json_lines(tools)
            + "\n\nTo call functions, write functools followed by a JSON list of calls, each "
            'with "name" and "arguments", for example:\n'
            'functools[{"name": "function_name", "arguments": {"arg": "value"}}]\n'
            "Call functions only when they help; otherwise answer in plain text."
        )
