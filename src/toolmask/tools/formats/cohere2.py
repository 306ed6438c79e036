"""``cohere2``: the Cohere2 MoE models: Command R7B's actions (see ``command_r7b``), its prose
a ``<|START_TEXT|>...<|END_TEXT|>`` message::

    <|START_THINKING|>I will look up the weather.<|END_THINKING|><|START_ACTION|>[
        {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}
    ]<|END_ACTION|>
"""

from __future__ import annotations

from toolmask.tools.formats._chat import COHERE_ACTION, COHERE_TURN
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._messages import ProseMessages
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "cohere2",
    ProseMessages(
        JsonCalls(
            call_keys=(("tool_call_id", "id"), ("tool_name", "name"), ("parameters", "args")),
            id_shape="digits",
            json_list=True,
        ),
        "<|START_TEXT|>",
        "<|END_TEXT|>",
    ),
    BlockMarkers("<|START_ACTION|>", "<|END_ACTION|>"),
    Layout(list_open="[\n    ", list_close="\n]", separator=",", separator_text=",\n    "),
    Reasoning("<|START_THINKING|>", "<|END_THINKING|>"),
    template_markers=(*COHERE_TURN, *COHERE_ACTION, "<|START_TEXT|>", "<|END_TEXT|>"),
)
