"""``minimax_m2``: MiniMax-M2 / M2.1: every call of the turn in one block, the function and each
parameter named in an attribute, ``<think>`` reasoning::

    <minimax:tool_call>
    <invoke name="get_weather">
    <parameter name="city">Paris</parameter>
    <parameter name="days">3</parameter>
    </invoke>
    </minimax:tool_call>

A string is written raw, any other value as JSON (``tojson``); see :mod:`._xml`.
"""

from __future__ import annotations

from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, Reasoning
from toolmask.tools.formats._xml import InvokeParams

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "minimax_m2",
    InvokeParams(),
    BlockMarkers("<minimax:tool_call>", "</minimax:tool_call>", after_open="\n"),
    Layout(list_calls=True),
    Reasoning("<think>", "</think>"),
    template_markers=(
        "]~!b[",
        "]~b]",
        "[e~[",
        "<minimax:tool_call>",
        "</minimax:tool_call>",
        "<think>",
        "</think>",
        "<invoke name=",
        "</invoke>",
        "<parameter name=",
        "</parameter>",
        "<response>",
        "</response>",
    ),
    prompt=Prompt(example_name="tool-name", example_args=(("key", "v"),)),
)
