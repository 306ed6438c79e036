"""``minicpm5``: MiniCPM 5: no block markers, the ``<function name="`` opener is the trigger;
calls on their own lines, ``<think>`` reasoning::

    <function name="get_weather"><param name="city">Paris</param></function>

Non-string values are written with Jinja's ``string`` filter (Python's ``str``: ``True``,
``['a']``; JSON admitted too), and a string holding ``<``, ``&`` or a newline is wrapped in
``<![CDATA[...]]>``; see :mod:`._xml`.
"""

from __future__ import annotations

from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Prompt, Reasoning
from toolmask.tools.formats._xml import InvokeParams

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "minicpm5",
    InvokeParams(invoke="function", param="param", nl="", python=True, cdata=True),
    BlockMarkers('<function name="', "</function>"),
    reasoning=Reasoning("<think>", "</think>"),
    template_markers=(
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "<think>",
        "</think>",
        "<tool_response>",
        "</tool_response>",
        "<tool_sep>",
        '<function name="',
        "</function>",
        "<param name=",
        "</param>",
    ),
    prompt=Prompt(example_name="function-name", example_args=(("k", "v"),)),
)
