"""``hermes``: Qwen 2.5 / Qwen 3, Hermes 2 Pro / 3, SmolLM2/3 (ChatML templates).

One call per block, blocks joined by a newline::

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

In Qwen vocabularies ``<tool_call>`` and ``</tool_call>`` are single special tokens.

Qwen2.5-Coder, asked by this template for ``<tool_call>`` tags, writes its call as a fenced JSON
block, the object pretty-printed (two-space indent, short arrays on one line)::

    ```json
    {
      "name": "calculate_density",
      "arguments": {
        "mass": 45,
        "volume": 15
      }
    }
    ```

That is a :class:`Habit` of the family: the grammar admits the fence wherever a block may start
(with whitespace between JSON tokens, as a pretty-printer writes it), and the parser reads it
as a call. The 0.5B also writes the call object bare, as the first thing in its reply; a reply
may start with a bare block (no marker), and prose may not start with ``{"name"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from toolmask.tools.formats._base import Habit, WireFormat, register_format, tool_json_lines

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool

__all__ = ["Hermes"]


@register_format("hermes")
class Hermes(WireFormat):
    open = "<tool_call>"
    close = "</tool_call>"
    after_open = "\n"
    before_close = "\n"
    block_sep = "\n"
    # Qwen2.5-Coder-0.5B also starts a reply with the call object itself, no marker around it
    # ({"name": "get_weather", "arguments": {...}}; toolmask serve, auto, greedy: see
    # tests/server/test_default_model.py): a bare block at the start of the reply
    bare_at_start = True
    bare_start = '{"name"'
    habits: ClassVar[tuple[Habit, ...]] = (
        Habit(
            "```json",
            "```",
            after_open="\n",
            before_close="\n",
            # a pretty-printer's layout: up to 12 whitespace bytes between JSON tokens covers
            # the envelope and four levels of indented arguments
            argument_options={"whitespace": "flexible", "max_whitespace": 12},
            evidence="Qwen2.5-Coder-0.5B and -1.5B-Instruct under tool_choice auto, unconstrained, "
            "on BFCL dev (bench/quality.py, toolmask-free): every call it wrote (2026-11-29)",
        ),
    )
    template_markers = (
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "<tool_call>",
        "</tool_call>",
        "<tool_response>",
        "</tool_response>",
        "<tools>",
        "</tools>",
        "<think>",
        "</think>",
    )

    def render_tools(self, tools: Sequence[Tool]) -> str:
        """The ``# Tools`` system-prompt section of the Qwen 2.5 / Qwen 3 chat template."""
        return (
            "# Tools\n\n"
            "You may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n"
            "<tools>\n" + tool_json_lines(tools) + "\n</tools>\n\n"
            "For each function call, return a json object with function name and arguments "
            "within <tool_call></tool_call> XML tags:\n"
            "<tool_call>\n"
            '{"name": <function-name>, "arguments": <args-json-object>}\n'
            "</tool_call>"
        )
