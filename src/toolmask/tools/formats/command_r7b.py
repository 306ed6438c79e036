"""``command_r7b``: Cohere Command R7B: it plans in ``<|START_THINKING|>...<|END_THINKING|>``,
then writes either a response or an action: all calls of the turn in one JSON list, each with
the id the template counts (``"0"``, ``"1"``, ... over the conversation), one call per line::

    <|START_THINKING|>I will look up the weather.<|END_THINKING|><|START_ACTION|>[
        {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}
    ]<|END_ACTION|>

Its prose is a message too, ``<|START_RESPONSE|>...<|END_RESPONSE|>``; the parser gives its
text without the markers.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import COHERE_ACTION, COHERE_TURN
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._messages import ProseMessages
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "command_r7b",
    ProseMessages(
        JsonCalls(
            call_keys=(("tool_call_id", "id"), ("tool_name", "name"), ("parameters", "args")),
            id_shape="digits",
            json_list=True,
        ),
        "<|START_RESPONSE|>",
        "<|END_RESPONSE|>",
    ),
    BlockMarkers("<|START_ACTION|>", "<|END_ACTION|>"),
    Layout(list_open="[\n    ", list_close="\n]", separator=",", separator_text=",\n    "),
    Reasoning("<|START_THINKING|>", "<|END_THINKING|>"),
    template_markers=(*COHERE_TURN, *COHERE_ACTION, "<|START_RESPONSE|>", "<|END_RESPONSE|>"),
)
