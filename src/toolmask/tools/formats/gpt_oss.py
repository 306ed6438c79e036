"""``gpt_oss``: gpt-oss (the Harmony response format). A reply is a sequence of messages; the
analysis channel is reasoning, a message addressed ``to=functions.NAME`` is a call whose body is
the arguments JSON, the final (or a recipient-less commentary) channel is content::

    <|channel|>analysis<|message|>Need the weather.<|end|>
    <|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json
    <|message|>{"city": "Paris"}

The recipient may sit in the role header or after the channel. Generation stops at ``<|call|>``
or ``<|return|>`` (cut from the reply).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolmask.tools.formats._base import WireFormat, register_format, tool_json_lines
from toolmask.tools.formats._blocks import Block, done, loads, tools_prompt

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool

__all__ = ["GptOss"]

MESSAGE = "<|message|>"
_END = re.compile(r"<\|end\|>|<\|call\|>|<\|return\|>|(?=<\|start\|>)|(?=<\|channel\|>)")
_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")
_RECIPIENT = re.compile(r"to=functions\.([^\s<]+)")


@register_format("gpt_oss")
class GptOss(WireFormat):
    open = "<|channel|>"
    extra_triggers = ("<|start|>",)
    block_sep = ""
    reasoning_end = "<|end|>"
    template_markers = (
        "<|start|>",
        "<|end|>",
        "<|message|>",
        "<|channel|>",
        "<|constrain|>",
        "<|call|>",
        "<|return|>",
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
        m = text.find(MESSAGE, k)
        if m < 0:
            if final:
                return Block("bad", len(text), reason="truncated: a header without <|message|>")
            return Block("pending")
        header = text[k:m]
        body_start = m + len(MESSAGE)
        e = _END.search(text, body_start)
        if e is None:
            if not final:
                return Block("pending")
            body, end, complete = text[body_start:], len(text), False
        else:
            body, end, complete = text[body_start : e.start()], e.end(), True
        channels = _CHANNEL.findall(header)
        channel = channels[-1] if channels else ""
        to = _RECIPIENT.search(header)
        if to is not None:
            args, err = loads(body)
            if err is not None or not isinstance(args, dict):
                reason = "truncated: the arguments never close" if not complete else err
                return Block("bad", end, reason=reason or "the arguments must be an object")
            return Block("ok", end, [done(to.group(1), args)])
        if channel == "analysis":
            return Block("ok", end, text_kind="reasoning", text=body.strip())
        return Block("ok", end, text_kind="prose", text=body)

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        return "<|call|><|start|>assistant".join(
            f"<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>"
            f"{json.dumps(a, ensure_ascii=False)}"
            for n, a in calls
        )

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), self.render_call("NAME", {"key": "value"}))
