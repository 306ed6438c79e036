"""``spark``: iFlytek Spark 2.5: GLM 4.7's compact call layout in a DeepSeek-style chat template
(``<｜start▁of▁sentence｜><|Bot|>``), with a ``<think>`` channel that the template opens::

    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>

The calls are :mod:`.glm`'s (same reader and grammar); what differs is the template's markers,
which the sanitizer must break in tool output.
"""

from __future__ import annotations

from typing import ClassVar

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats.glm import Glm

__all__ = ["Spark"]


@register_format("spark")
class Spark(Glm):
    template_markers: ClassVar[tuple[str, ...]] = (
        "<｜start▁of▁sentence｜>",
        "<｜end▁of▁sentence｜>",
        "<|System|>",
        "<|User|>",
        "<|Bot|>",
        "<|Tool|>",
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
    )
