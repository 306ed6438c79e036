"""GigaChat 3 (``gigachat3``) and GigaChat 3.1 (``gigachat31``): one call per assistant turn,
after the assistant's text.

GigaChat 3 ends the assistant's message and opens a ``function call`` message::

    I will check.<|message_sep|>

    function call<|role_sep|>
    {"name": "get_weather", "arguments": {"city": "Paris"}}

GigaChat 3.1 writes the call inside the assistant's message, behind ``<|function_call|>``::

    I will check.<|function_call|>{"name": "get_weather", "arguments": {"city": "Paris"}}

Both templates render only the first call of a turn (``tool_calls[0]``), so the grammar admits
one call per turn whatever ``parallel_tool_calls`` says (:attr:`WireFormat.parallel_calls`).
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls

__all__ = ["GigaChat3", "GigaChat31"]

_MARKERS = ("<|message_sep|>", "<|role_sep|>", "<|function_call|>")


@register_format("gigachat3")
class GigaChat3(JsonCalls):
    open = "<|message_sep|>\n\nfunction call<|role_sep|>"
    after_open = "\n"
    #: a decoder that drops ``<|message_sep|>`` leaves the role header alone: read it too
    extra_triggers = ("function call<|role_sep|>",)
    parallel_calls = False
    template_markers = _MARKERS


@register_format("gigachat31")
class GigaChat31(JsonCalls):
    open = "<|function_call|>"
    parallel_calls = False
    template_markers = _MARKERS
