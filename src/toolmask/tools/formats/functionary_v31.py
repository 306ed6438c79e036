"""``functionary_v31``: MeetKai Functionary v3.1 (Llama 3.1 base): each call is
``<function=NAME>`` and its JSON arguments, calls back to back::

    <function=get_weather>{"city": "Paris"}</function><function=get_time>{"zone": "UTC"}</function>

The template's prompt asks for one call at a time but renders a turn's calls back to back;
the grammar admits them so (``parallel_tool_calls``). Its ``<|python_tag|>`` code calls (the
built-in ``python`` tool) are not function calls and stay prose.
"""

from __future__ import annotations

import re

from toolmask.tools.formats._marked import ARGS, NAME, HeadTail, MarkedJson
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "functionary_v31",
    MarkedJson((NAME, ">", ARGS), HeadTail(re.compile(r"(?P<name>[^>\s]+)>"), need=">")),
    BlockMarkers("<function=", "</function>"),
    Layout(block_sep=""),
    template_markers=(
        "<|begin_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<|python_tag|>",
        "<function=",
        "</function>",
    ),
)
