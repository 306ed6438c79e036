"""``solar_open``: Upstage Solar Open: a turn is messages. The reasoning message, then either a
content message or a tool-calls message, each call with its id, its name and its arguments::

    <|think|>The user wants the weather.<|end|><|begin|>assistant<|tool_calls|>
    <|tool_call:begin|>call_0<|tool_call:name|>get_weather<|tool_call:args|>{"city": "Paris"}
    <|tool_call:end|><|calls|>

(without the line breaks). The generation prompt ends with ``<|begin|>assistant``. Prose is
``<|content|>...<|end|>``; the parser gives its text without the markers. ``<|calls|>`` and
``<|end|>`` end the turn: an engine that cuts its end-of-turn token from the reply leaves the
calls message without ``<|calls|>``, which the parser accepts at the end of a reply.
"""

from __future__ import annotations

import re

from toolmask.tools.formats._json import ID_SHAPES
from toolmask.tools.formats._marked import ARGS, NAME, HeadTail, Mark, MarkedJson, Shape
from toolmask.tools.formats._messages import ProseMessages
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

_BEGIN, _NAME, _ARGS, _END = (
    "<|tool_call:begin|>",
    "<|tool_call:name|>",
    "<|tool_call:args|>",
    "<|tool_call:end|>",
)
_HEAD = re.compile(
    re.escape(_BEGIN) + r"\s*(?P<id>[^<\s]*)\s*" + re.escape(_NAME) + r"\s*(?P<name>[^<\s]+)\s*"
    + re.escape(_ARGS)
)  # fmt: skip

#: a call: its id (an OpenAI-style token), its name, its arguments, between markers
_PARTS = (
    Mark(_BEGIN),
    Shape(*ID_SHAPES["token"]),
    Mark(_NAME),
    NAME,
    Mark(_ARGS),
    ARGS,
    Mark(_END),
)

SPEC = FormatSpec(
    "solar_open",
    ProseMessages(
        MarkedJson(
            _PARTS,
            HeadTail(_HEAD, need=_ARGS, tail=_END, first=_BEGIN, many=True),
        ),
        "<|content|>",
        "<|end|>",
    ),
    BlockMarkers("<|tool_calls|>", "<|calls|>"),
    Layout(list_calls=True, separator_text="", close_at_end=True),
    Reasoning("<|think|>", "<|end|><|begin|>assistant"),
    template_markers=(
        "<|begin|>",
        "<|end|>",
        "<|content|>",
        "<|think|>",
        "<|tool_calls|>",
        "<|calls|>",
        _BEGIN,
        _NAME,
        _ARGS,
        _END,
        "<|tool_response|>",
        "<|tool_response:begin|>",
        "<|tool_response:name|>",
        "<|tool_response:result|>",
        "<|tool_response:end|>",
    ),
)
