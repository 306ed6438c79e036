"""``ling``: inclusionAI Ling / Ring 3.0: GLM 4.5's call layout (the name and each key on its own
line) in a chat template of its own, with a ``<think>`` channel that the template opens::

    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Paris</arg_value>
    </tool_call>

The calls are :mod:`.glm`'s (same reader and grammar); what differs is the template's markers
(``<role>``, ``<|role_end|>``), which the sanitizer must break in tool output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from toolmask.tools.formats._base import register_format, tool_json_lines
from toolmask.tools.formats._blocks import tools_prompt
from toolmask.tools.formats.glm import Glm

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool

__all__ = ["Ling"]


@register_format("ling")
class Ling(Glm):
    #: ``NAME\n``, ``</arg_key>\n``, values followed directly by the next key, ``\n`` before
    #: ``</tool_call>`` (two newlines after the name of a call without arguments)
    layout = ("\n", "\n", "", "\n")
    template_markers: ClassVar[tuple[str, ...]] = (
        "<role>",
        "</role>",
        "<|role_end|>",
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "<tool_response>",
        "</tool_response>",
        "<tools>",
        "</tools>",
    )

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        """As the template writes them: a newline after the name and after each key, one
        before the close, calls on their own lines."""
        out = []
        for name, arguments in calls:
            pairs = "".join(
                f"<arg_key>{k}</arg_key>\n<arg_value>"
                f"{v if isinstance(v, str) else self.dump_arguments(v)}</arg_value>"
                for k, v in (arguments if isinstance(arguments, dict) else {}).items()
            )
            out.append(f"{self.open}{name}\n{pairs}\n{self.close}")
        return "\n".join(out)

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(
            tool_json_lines(tools),
            "<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n"
            "<arg_value>{arg-value-1}</arg_value>...\n</tool_call>",
        )
