"""``mistral``: Mistral 7B v0.3, Mistral Nemo, Mistral Small (v3 tokenizers).

All calls of a turn in one JSON array behind ``[TOOL_CALLS]``::

    [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]

``[TOOL_CALLS]``, ``[AVAILABLE_TOOLS]``, ``[INST]`` ... are special tokens in v3 vocabularies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from toolmask.tools.formats._base import WireFormat, register_format

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool

__all__ = ["Mistral"]


@register_format("mistral")
class Mistral(WireFormat):
    open = "[TOOL_CALLS]"
    #: the v3 template writes ``[TOOL_CALLS] [``; the space is optional
    after_open = " "
    list_open = "["
    list_close = "]"
    separator = ","
    separator_text = ", "
    template_markers = (
        "<s>",
        "</s>",
        "[INST]",
        "[/INST]",
        "[TOOL_CALLS]",
        "[AVAILABLE_TOOLS]",
        "[/AVAILABLE_TOOLS]",
        "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]",
        "[SYSTEM_PROMPT]",
        "[/SYSTEM_PROMPT]",
    )

    def render_tools(self, tools: Sequence[Tool]) -> str:
        """The ``[AVAILABLE_TOOLS]`` section the Mistral template puts before the last user turn."""
        body = json.dumps([t.to_openai() for t in tools], ensure_ascii=False)
        return "[AVAILABLE_TOOLS]" + body + "[/AVAILABLE_TOOLS]"
