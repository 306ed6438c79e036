"""``command_r_plus``: Cohere Command R+ (the ``tool_use`` template): ``Action:`` and a fenced,
indented JSON list::

    Action:
    ```json
    [
        {
            "tool_name": "get_weather",
            "parameters": {
                "city": "Paris"
            }
        }
    ]```
"""

from __future__ import annotations

from toolmask.tools.formats._chat import COHERE_TURN
from toolmask.tools.formats._json import JsonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "command_r_plus",
    JsonCalls(
        call_keys=(("tool_name", "name"), ("parameters", "args")),
        indent=4,
        depth=1,
        json_list=True,
    ),
    BlockMarkers("Action:\n```json\n", "```"),
    Layout(list_open="[\n    ", list_close="\n]", separator=",", separator_text=",\n    "),
    template_markers=COHERE_TURN,
)
