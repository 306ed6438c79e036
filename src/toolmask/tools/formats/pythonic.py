"""Python-call formats beside :mod:`.llama4_pythonic`, whose reader and grammar they reuse (a
Python list of calls, keyword arguments only, values as Python literals): they differ in a small
table of markers.

* ``lfm2``: Liquid LFM2 / LFM2.5: the list between ``<|tool_call_start|>`` and
  ``<|tool_call_end|>`` (special tokens), reasoning in ``<think>``::

      <|tool_call_start|>[get_weather(city="Paris", days=3)]<|tool_call_end|>

* ``llama3_pythonic``: Llama 3.2 (pythonic tool calling) and ToolACE: the bare list as the whole
  reply (``[get_weather(city="Paris")]``), or after ``<|python_tag|>``.
* ``gemma3_pythonic``: Gemma 3 prompted for function calls: the bare list as the whole reply, or
  in the ```` ```tool_code ```` fence of Google's function-calling guide.

Strings are Python literals (either quote); the templates that write them otherwise are buggy
(see docs/tools.md): Llama 3.2's and ToolACE's vLLM templates write strings unquoted
(``city=Paris``), Gemma 3's drops the ``, `` between arguments and writes JSON ``true``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from toolmask.grammar import Node, seq
from toolmask.schema import json_ws
from toolmask.tools.formats._base import register_format, tool_json_lines
from toolmask.tools.formats._blocks import tools_prompt
from toolmask.tools.formats.llama3_json import Llama3Json
from toolmask.tools.formats.llama4_pythonic import Llama4Pythonic

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool

__all__ = ["Gemma3Pythonic", "Lfm2", "Llama3Pythonic"]

_HOW = "[func_name1(param1=value1, param2=value2), func_name2()]"


@register_format("lfm2")
class Lfm2(Llama4Pythonic):
    open = "<|tool_call_start|>"
    close = "<|tool_call_end|>"
    bare_at_start = False
    reasoning_start = "<think>"
    reasoning_end = "</think>"
    template_markers: ClassVar[tuple[str, ...]] = (
        "<|startoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "<|tool_list_start|>",
        "<|tool_list_end|>",
        "<|tool_call_start|>",
        "<|tool_call_end|>",
        "<|tool_response_start|>",
        "<|tool_response_end|>",
        "<think>",
        "</think>",
    )

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        return self.open + super().render_calls(calls) + self.close

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), f"{self.open}{_HOW}{self.close}")


@register_format("llama3_pythonic")
class Llama3Pythonic(Llama4Pythonic):
    open = "<|python_tag|>"
    close = ""
    template_markers: ClassVar[tuple[str, ...]] = Llama3Json.template_markers

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), _HOW)


@register_format("gemma3_pythonic")
class Gemma3Pythonic(Llama4Pythonic):
    open = "```tool_code"
    close = "```"
    after_open = "\n"
    template_markers: ClassVar[tuple[str, ...]] = (
        "<bos>",
        "<eos>",
        "<start_of_turn>",
        "<end_of_turn>",
    )

    def close_node(self, special_tokens: frozenset[str]) -> Node:
        """The fence's close, after the newline (or a little whitespace) that ends the code;
        a bare list ends with its ``]``."""
        return seq(json_ws(self.max_trailing_ws), self.marker_node(self.close, special_tokens))

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), _HOW)
