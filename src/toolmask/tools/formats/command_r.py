"""Cohere: Command R7B (``command_r7b``), the Cohere2 MoE models (``cohere2``) and Command R+
(``command_r_plus``).

Command R7B and Cohere2 plan in ``<|START_THINKING|>...<|END_THINKING|>``, then write either a
response or an action: all calls of the turn in one JSON list, each with the id the template
counts (``"0"``, ``"1"``, ... over the conversation), one call per line::

    <|START_THINKING|>I will look up the weather.<|END_THINKING|><|START_ACTION|>[
        {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}
    ]<|END_ACTION|>

Their prose is a message too: ``<|START_RESPONSE|>...<|END_RESPONSE|>`` (R7B) or
``<|START_TEXT|>...<|END_TEXT|>`` (Cohere2); the parser gives its text without the markers.

Command R+ (the ``tool_use`` template) writes ``Action:`` and a fenced, indented JSON list::

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

from toolmask.tools.formats._base import register_format
from toolmask.tools.formats._jsoncalls import JsonCalls, ProseMessages

__all__ = ["Cohere2", "CommandR7B", "CommandRPlus"]

_TURN_MARKERS = (
    "<BOS_TOKEN>",
    "<|START_OF_TURN_TOKEN|>",
    "<|END_OF_TURN_TOKEN|>",
    "<|SYSTEM_TOKEN|>",
    "<|USER_TOKEN|>",
    "<|CHATBOT_TOKEN|>",
)
_ACTION_MARKERS = (
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<|START_ACTION|>",
    "<|END_ACTION|>",
    "<|START_TOOL_RESULT|>",
    "<|END_TOOL_RESULT|>",
)


class _Action(ProseMessages):
    open = "<|START_ACTION|>"
    close = "<|END_ACTION|>"
    list_open = "[\n    "
    list_close = "\n]"
    separator = ","
    separator_text = ",\n    "
    json_list = True
    call_keys = (("tool_call_id", "id"), ("tool_name", "name"), ("parameters", "args"))
    id_shape = "digits"
    reasoning_start = "<|START_THINKING|>"
    reasoning_end = "<|END_THINKING|>"


@register_format("command_r7b")
class CommandR7B(_Action):
    prose_open = "<|START_RESPONSE|>"
    prose_close = "<|END_RESPONSE|>"
    template_markers = (*_TURN_MARKERS, *_ACTION_MARKERS, "<|START_RESPONSE|>", "<|END_RESPONSE|>")


@register_format("cohere2")
class Cohere2(_Action):
    prose_open = "<|START_TEXT|>"
    prose_close = "<|END_TEXT|>"
    template_markers = (*_TURN_MARKERS, *_ACTION_MARKERS, "<|START_TEXT|>", "<|END_TEXT|>")


@register_format("command_r_plus")
class CommandRPlus(JsonCalls):
    open = "Action:\n```json\n"
    close = "```"
    list_open = "[\n    "
    list_close = "\n]"
    separator = ","
    separator_text = ",\n    "
    json_list = True
    call_keys = (("tool_name", "name"), ("parameters", "args"))
    call_indent = 4
    call_depth = 1
    template_markers = _TURN_MARKERS
