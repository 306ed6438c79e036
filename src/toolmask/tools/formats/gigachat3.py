"""``gigachat3``: GigaChat 3: one call per assistant turn, after the assistant's text; the
template ends the assistant's message and opens a ``function call`` message::

    I will check.<|message_sep|>

    function call<|role_sep|>
    {"name": "get_weather", "arguments": {"city": "Paris"}}

The template renders only the first call of a turn (``tool_calls[0]``), so the grammar admits
one call per turn whatever ``parallel_tool_calls`` says (``parallel_calls``). A decoder that
drops ``<|message_sep|>`` leaves the role header alone: it is read too.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import GIGACHAT3
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "gigachat3",
    JsonCalls(),
    BlockMarkers(
        "<|message_sep|>\n\nfunction call<|role_sep|>",
        after_open="\n",
        extra_triggers=("function call<|role_sep|>",),
    ),
    Layout(parallel_calls=False),
    template_markers=GIGACHAT3,
)
