"""``gemma4``: Gemma 4: ``call:NAME{...}`` in Gemma's object notation (:mod:`._objects`) between
``<|tool_call>`` and ``<tool_call|>``; strings are quoted with ``<|"|>``, keys are bare;
reasoning in the thought channel ``<|channel>thought ... <channel|>``::

    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>

The arguments are compact, as the template renders them, or with ``", "`` between members as
some models write; calls follow each other without a separator, and text may follow the last
call (the template renders a message's content after its calls).
"""

from __future__ import annotations

from toolmask.tools.formats._objects import ObjectNotation, Q
from toolmask.tools.formats._spec import (
    BlockMarkers,
    FormatSpec,
    Layout,
    Prompt,
    Reasoning,
    Values,
)

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "gemma4",
    ObjectNotation(Q, "gemma"),
    BlockMarkers("<|tool_call>", "<tool_call|>"),
    Layout(block_sep="", prose_after_calls=True),
    Reasoning("<|channel>thought", "<channel|>"),
    Values(whitespace="compact", extra_layouts=("spaced",)),
    template_markers=(
        "<bos>",
        "<eos>",
        "<|turn>",
        "<turn|>",
        "<|tool_call>",
        "<tool_call|>",
        "<|tool_response>",
        "<tool_response|>",
        "<|tool>",
        "<tool|>",
        Q,
        "<|channel>",
        "<channel|>",
        "<|think|>",
    ),
    prompt=Prompt(example_name="NAME", example_args=(("key", "value"),)),
)
