"""``functools``: a prompt-injected format for models without a native one.

All calls in one JSON array right after the word ``functools``::

    functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]

The trigger is ``functools[`` (so prose may still say "functools"); the tool prompt is the
whole system-prompt text that teaches the format.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolmask.tools.formats._chat import tool_json_lines
from toolmask.tools.formats._json import JsonEnvelope
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, ToolLike

__all__ = ["SPEC"]


def _prompt(tools: Sequence[ToolLike]) -> str:
    """System-prompt text: the tool list and how to call them."""
    return (
        "You have access to the following functions:\n\n"
        + tool_json_lines(tools)
        + "\n\nTo call functions, write functools followed by a JSON list of calls, each "
        'with "name" and "arguments", for example:\n'
        'functools[{"name": "function_name", "arguments": {"arg": "value"}}]\n'
        "Call functions only when they help; otherwise answer in plain text."
    )


SPEC = FormatSpec(
    "functools",
    JsonEnvelope(),
    BlockMarkers("functools", trigger="functools["),
    Layout(list_open="[", list_close="]", separator=","),
    template_markers=("<|im_start|>", "<|im_end|>", "<|endoftext|>", "functools["),
    prompt=Prompt(section=_prompt),
)
