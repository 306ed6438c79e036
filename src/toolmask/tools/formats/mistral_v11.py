"""``mistral_v11``: Mistral tokenizers v11 and later (Mistral Small 3.2, Magistral, Ministral 3,
Devstral 2): the name, then the arguments, each call behind ``[TOOL_CALLS]``; reasoning models
think inside ``[THINK]...[/THINK]``::

    [THINK]...[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}

History renders add ``[CALL_ID]<id>`` before ``[ARGS]``; the parser accepts it. A v3-style
JSON list after ``[TOOL_CALLS]`` is read too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from toolmask.grammar import Node, lit, opt, seq
from toolmask.tools.formats._base import WireFormat, register_format
from toolmask.tools.formats._blocks import Block, done, json_object_end, loads, skip_ws

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["MistralV11"]

_NAME = re.compile(r"([^\[\]{}\s]+)\s*(?:\[CALL_ID\]\s*([^\[\s]*)\s*)?\[ARGS\]", re.S)


@register_format("mistral_v11")
class MistralV11(WireFormat):
    open = "[TOOL_CALLS]"
    block_sep = ""
    reasoning_start = "[THINK]"
    reasoning_end = "[/THINK]"
    argument_options: ClassVar[Mapping[str, Any]] = {
        "whitespace": "compact",
        "property_order": "any",
        "additional_properties_default": False,
    }
    #: Mistral's own renderer writes ``json.dumps`` spacing, llama.cpp's tests compact JSON
    extra_layouts = ("spaced",)
    template_markers = (
        "<s>",
        "</s>",
        "[INST]",
        "[/INST]",
        "[TOOL_CALLS]",
        "[ARGS]",
        "[CALL_ID]",
        "[THINK]",
        "[/THINK]",
        "[AVAILABLE_TOOLS]",
        "[/AVAILABLE_TOOLS]",
        "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]",
        "[SYSTEM_PROMPT]",
        "[/SYSTEM_PROMPT]",
    )

    def read_block(
        self,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool = False,
        schemas: Mapping[str, Any] | None = None,
    ) -> Block | None:
        i = skip_ws(text, k + len(self.open))
        if i >= len(text):
            return Block("pending") if not final else _cut(text)
        if text[i] in "[{" and not text.startswith("[ARGS]", i):
            return _json_list(text, i, final)
        m = _NAME.match(text, i)
        if m is None:
            rest = text[i:]
            tail = rest[rest.rfind("[") :]
            if not final and (
                "[" not in rest or any(t.startswith(tail) for t in ("[ARGS]", "[CALL_ID]"))
            ):
                return Block("pending")
            if not final and re.fullmatch(r"[^\[\]{}\s]+\s*\[CALL_ID\][^\[]*", rest):
                return Block("pending")
            return (
                _cut(text)
                if final and "[" not in rest
                else Block(
                    "bad", len(text) if final else _line_end(text, i), reason="expected NAME[ARGS]"
                )
            )
        j = skip_ws(text, m.end())
        if j >= len(text):
            return Block("pending") if not final else _cut(text)
        if text[j] != "{":
            return Block("bad", j, reason="expected the arguments object after [ARGS]")
        end = json_object_end(text, j)
        if end is None:
            return Block("pending") if not final else _cut(text)
        args, err = loads(text[j:end])
        if err is not None or not isinstance(args, dict):
            return Block("bad", end, reason=err or "the arguments must be a JSON object")
        return Block("ok", end, [done(m.group(1), args)])

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``NAME[ARGS]{...}``, with the optional ``[CALL_ID]id`` some models write."""
        call_id = opt(seq(kit.marker("[CALL_ID]"), kit.chars("[]{} \t\r\n")))
        args = kit.json(tool.parameters, f"a{index}_")
        return seq(lit(tool.name), call_id, kit.marker("[ARGS]"), args)

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        return "".join(f"[TOOL_CALLS]{n}[ARGS]{self.dump_arguments(a)}" for n, a in calls)

    def render_tools(self, tools: Sequence[Tool]) -> str:
        body = json.dumps([t.to_openai() for t in tools], ensure_ascii=False)
        return "[AVAILABLE_TOOLS]" + body + "[/AVAILABLE_TOOLS]"


def _cut(text: str) -> Block:
    return Block("bad", len(text), reason="truncated: the reply ends inside the call")


def _line_end(text: str, i: int) -> int:
    return len(text)


def _json_list(text: str, i: int, final: bool) -> Block:
    end = json_object_end(text, i)
    if end is None:
        return Block("pending") if not final else _cut(text)
    value, err = loads(text[i:end])
    if err is not None:
        return Block("bad", end, reason=err)
    items = value if isinstance(value, list) else [value]
    calls = []
    for obj in items:
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return Block("bad", end, reason="a call must be an object with a string 'name'")
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):
            args, err = loads(args)
        if not isinstance(args, dict):
            return Block("bad", end, reason="the arguments must be a JSON object")
        calls.append(done(obj["name"], args))
    return Block("ok", end, calls)
