"""``hyperclovax_seed``: NAVER HyperCLOVA X SEED Think (vLLM's
``examples/tool_chat_template_hyperclovax_seed_think_14b.jinja``): a turn is messages, each
naming its kind after ``<|im_start|>assistant``: the reasoning (``/think``), the text, then the
calls (`` -> tool/function_call``) as a JSON list of call objects::

    /think
    The user wants the weather.<|im_end|>
    <|im_start|>assistant
    Let me check.<|im_end|>
    <|im_start|>assistant -> tool/function_call
    [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", ...}]<|im_end|>

The generation prompt ends with ``<|im_start|>assistant``, so the reply starts with the first
message's kind (``/think\\n``, ``\\n`` or `` -> tool/function_call\\n``); ``<|stop|>`` (after
calls) and ``<|endofturn|>`` (after text) end the turn. The text message is prose between ``\\n``
and ``<|im_end|>``; the header of the calls message after it is read as its end. A generation
prompt with ``skip_reasoning`` (``<|im_start|>assistant\\n``) opens the text message itself: a
reply to it is not this format's.
"""

from __future__ import annotations

from toolmask.tools.formats._json import JsonEnvelope
from toolmask.tools.formats._messages import ProseMessages
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

_END = "<|im_end|>"
_NEXT = "\n<|im_start|>assistant"

SPEC = FormatSpec(
    "hyperclovax_seed",
    ProseMessages(JsonEnvelope(), "\n", _END, then=_NEXT),
    BlockMarkers(" -> tool/function_call\n", _END),
    Layout(list_open="[", list_close="]", separator=",", close_at_end=True),
    Reasoning("/think\n", _END + _NEXT),
    template_markers=("<|im_start|>", _END, "<|stop|>", "<|endofturn|>"),
)
