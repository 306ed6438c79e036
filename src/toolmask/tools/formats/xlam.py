"""``xlam``: Salesforce xLAM (Llama and Qwen bases): the reply is the JSON list of calls::

    [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", ...}]

(vLLM's ``tool_chat_template_xlam_llama`` / ``_xlam_qwen``.) The list has no marker, so a
block is recognised only at the very start of the reply (after whitespace), as for Llama 3's
JSON calls; elsewhere a list is recognised inside a ```` ```json ```` fence, the other shape
vLLM's xLAM parser reads (the fence closes after the list: an optional newline, then the
backticks).
"""

from __future__ import annotations

from toolmask.grammar import Special, lit, opt, seq
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "xlam",
    JsonCalls(json_list=True),
    BlockMarkers("```json", "```", after_open="\n", bare_start="["),
    Layout(
        list_open="[",
        list_close="]",
        separator=",",
        close_admits=seq(opt(lit("\n")), Special("```")),
    ),
    template_markers=(
        "<|begin_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|im_start|>",
        "<|im_end|>",
    ),
)
