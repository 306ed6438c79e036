"""``qwen3``: Qwen3 (hybrid, Thinking-2507, Instruct-2507): hermes calls and a ``<think>``
reasoning channel.

    <think>
    The user wants the weather.
    </think>

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

Thinking-2507 templates prefill ``<think>\\n``; the reply then starts inside the channel
(``parse_turn(..., reasoning_open=fmt.prompt_opens_reasoning(prompt))``).
"""

from __future__ import annotations

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats.hermes import Hermes

__all__ = ["Qwen3"]


@register_format("qwen3")
class Qwen3(Hermes):
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    # Qwen2.5-Coder's habits (the ```json fence, the bare call object) are hermes' alone: no
    # Qwen3 model was seen writing them
    habits = ()
    bare_at_start = False
