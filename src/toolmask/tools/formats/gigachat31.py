"""``gigachat31``: GigaChat 3.1: one call per assistant turn, inside the assistant's message,
behind ``<|function_call|>``::

    I will check.<|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}

The template renders only the first call of a turn, so the grammar admits one call per turn.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import GIGACHAT3
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "gigachat31",
    JsonCalls(),
    BlockMarkers("<|function_call|>"),
    Layout(parallel_calls=False),
    template_markers=GIGACHAT3,
)
