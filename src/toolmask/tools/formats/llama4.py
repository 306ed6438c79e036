"""``llama4``: Llama 4 with its own chat template (Meta's, which transformers ships as Llama 4's
default): the assistant's ``<|python_start|>``…``<|python_end|>`` pair holds the message's text
(empty for a call-only reply), then the calls follow as JSON objects with ``"parameters"``, one
after another::

    <|python_start|><|python_end|>{"name": "get_weather", "parameters": {"city": "Paris"}}{...}

The empty pair is the block's opener; the block ends with its last call (the turn's
``<|eot|>`` follows). vLLM's template writes the calls bare or inside the pair instead
(``llama4_json``).
"""

from __future__ import annotations

from toolmask.tools.formats._chat import LLAMA4
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "llama4",
    JsonCalls(call_keys=(("name", "name"), ("parameters", "args"))),
    BlockMarkers("<|python_start|><|python_end|>"),
    # the calls back to back, as the template writes them (`}{`, nothing between)
    Layout(list_calls=True, separator_text="", max_inner_ws=0),
    template_markers=LLAMA4,
)
