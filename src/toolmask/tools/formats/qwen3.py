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

from toolmask.tools.formats._chat import CHATML_TOOLS, qwen_tools
from toolmask.tools.formats._json import JsonEnvelope
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Prompt, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "qwen3",
    JsonEnvelope(),
    BlockMarkers("<tool_call>", "</tool_call>", after_open="\n", before_close="\n"),
    reasoning=Reasoning("<think>", "</think>"),
    template_markers=CHATML_TOOLS,
    prompt=Prompt(section=qwen_tools),
    # Qwen2.5-Coder's habits (hermes' ```json fence and bare call object) are hermes' alone: no
    # Qwen3 model was seen writing them
)
