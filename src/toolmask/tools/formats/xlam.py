"""``xlam``: Salesforce xLAM (Llama and Qwen bases): the reply is the JSON list of calls::

    [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", ...}]

(vLLM's ``tool_chat_template_xlam_llama`` / ``_xlam_qwen``.) The list has no marker, so a
block is recognised only at the very start of the reply (after whitespace), as for Llama 3's
JSON calls; elsewhere a list is recognised inside a ```` ```json ```` fence, the other shape
vLLM's xLAM parser reads.
"""

from __future__ import annotations

from toolmask.grammar import Node, lit, opt, seq
from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls

__all__ = ["XLam"]


@register_format("xlam")
class XLam(JsonCalls):
    open = "```json"
    after_open = "\n"
    close = "```"
    bare_at_start = True
    bare_start = "["
    list_open = "["
    list_close = "]"
    separator = ","
    separator_text = ", "
    json_list = True
    template_markers = (
        "<|begin_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|im_start|>",
        "<|im_end|>",
    )

    def close_node(self, special_tokens: frozenset[str]) -> Node:
        """The fence closes after the list: an optional newline, then the backticks."""
        return seq(opt(lit("\n")), self.marker_node(self.close, special_tokens))
