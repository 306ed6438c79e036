"""``qwen25_coder``: Qwen2.5-Coder as vLLM's tool template writes it
(``examples/tool_chat_template_qwen2_5_coder.jinja``): one call object per block, in ``<tools>``
tags rather than Qwen's ``<tool_call>``, every block followed by a newline::

    <tools>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tools>
    <tools>
    {"name": "get_time", "arguments": {"zone": "Europe/Paris"}}
    </tools>

The reader and the call object are ``hermes``'; only the tags differ. ``<tools>`` is plain text
in Qwen's vocabulary (Qwen's own template uses it around the tool list).
"""

from __future__ import annotations

from toolmask.tools.formats._chat import CHATML_TOOLS
from toolmask.tools.formats._json import JsonEnvelope
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "qwen25_coder",
    JsonEnvelope(),
    BlockMarkers("<tools>", "</tools>", after_open="\n", before_close="\n"),
    template_markers=CHATML_TOOLS,
)
