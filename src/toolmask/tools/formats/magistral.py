"""``magistral``: Magistral Small / Medium 2506-2507: Mistral v11 calls (``[TOOL_CALLS]name
[ARGS]{...}``) after reasoning written as plain ``<think>`` text (the system prompt asks for
it; the 2509+ models reason in ``[THINK]`` tokens, see ``mistral_v11``)::

    <think>The user wants the weather.</think>[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats.mistral_v11 import MistralV11

__all__ = ["Magistral"]


@register_format("magistral")
class Magistral(MistralV11):
    reasoning_start = "<think>"
    reasoning_end = "</think>"
