"""``hy3``: Tencent Hunyuan Hy3: GLM-style key/value markers with an ``:opensource`` suffix, every
call of the turn in one ``<tool_calls:opensource>`` block, reasoning in
``<think:opensource>``::

    <tool_calls:opensource>
    <tool_call:opensource>get_weather<tool_sep:opensource>
    <arg_key:opensource>city</arg_key:opensource>
    <arg_value:opensource>Paris</arg_value:opensource>
    </tool_call:opensource>
    </tool_calls:opensource>

String values are raw text, other types JSON (``tojson``), as in :mod:`.glm`, whose reader and
grammar this format reuses with its own markers; the newlines are the template's, always
written. The system prompt asks the model to end the block with the reasoning-mode marker
(``</tool_calls:opensource><｜reasoning_mode:opensource｜>reasoning_effort:no_think``), which the
history render leaves out: the grammar admits both, the reader takes the marker as part of the
block. The template's prompt ends with ``<think:opensource>`` (reasoning ``low`` / ``high``) or
with an empty channel (``no_think``, its default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from toolmask.grammar import Node, choice, lit, opt, seq
from toolmask.tools.formats._base import register_format, tool_json_lines
from toolmask.tools.formats._blocks import Block, Call, bad_block, skip_ws, tools_prompt
from toolmask.tools.formats.glm import Glm

if TYPE_CHECKING:
    from toolmask.tools._spec import Tool
    from toolmask.tools.formats._gen import Kit

__all__ = ["Hy3"]

_T = ":opensource"
#: what the system prompt asks the model to print after the block
REASONING_MODE = f"<｜reasoning_mode{_T}｜>"
_EFFORTS = ("no_think", "low", "high")
_MODE = re.compile(re.escape(REASONING_MODE) + r"reasoning_effort:(?:no_think|low|high)")


@register_format("hy3")
class Hy3(Glm):
    open = f"<tool_calls{_T}>"
    close = f"</tool_calls{_T}>"
    after_open = "\n"
    list_calls = True
    #: the markers around one call inside the block
    call_open: ClassVar[str] = f"<tool_call{_T}>"
    call_close: ClassVar[str] = f"</tool_call{_T}>"
    key_open = f"<arg_key{_T}>"
    key_close = f"</arg_key{_T}>"
    value_open = f"<arg_value{_T}>"
    value_close = f"</arg_value{_T}>"
    name_sep = f"<tool_sep{_T}>"
    layout = ("\n", "\n", "\n", "")
    reasoning_start = f"<think{_T}>"
    reasoning_end = f"</think{_T}>"
    template_markers: ClassVar[tuple[str, ...]] = (
        f"<｜hy_begin_of_sentence{_T}｜>",
        f"<｜hy_eos{_T}｜>",
        f"<｜hy_pad{_T}｜>",
        f"<｜hy_User{_T}｜>",
        f"<｜hy_Assistant{_T}｜>",
        f"<think{_T}>",
        f"</think{_T}>",
        f"<tool_calls{_T}>",
        f"</tool_calls{_T}>",
        f"<tool_call{_T}>",
        f"</tool_call{_T}>",
        f"<tool_sep{_T}>",
        f"<arg_key{_T}>",
        f"</arg_key{_T}>",
        f"<arg_value{_T}>",
        f"</arg_value{_T}>",
        f"<tool_responses{_T}>",
        f"</tool_responses{_T}>",
        f"<tool_response{_T}>",
        f"</tool_response{_T}>",
        REASONING_MODE,
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
        """``<tool_calls:opensource>``, then calls (each read by :meth:`Glm.read_call`) up to
        ``</tool_calls:opensource>`` and the optional reasoning-mode marker after it."""
        n = len(text)
        pos = k + len(self.open)
        calls: list[Call] = []
        while True:
            j = skip_ws(text, pos)
            rest = text[j:]
            if rest.startswith(self.close):
                end = j + len(self.close)
                tail = text[end : end + len(REASONING_MODE) + 30]
                m = _MODE.match(text, end)
                if m is not None:
                    end = m.end()
                elif not final and _mode_prefix(tail):
                    return Block("pending")
                if not calls:
                    return Block("bad", end, reason="an empty block of calls")
                return Block("ok", end, calls)
            if rest.startswith(self.call_open):
                got = self.read_call(
                    text, j + len(self.call_open), close=self.call_close,
                    after=(self.call_open, self.close), block_close=self.close, final=final,
                    schemas=schemas,
                )  # fmt: skip
                if got.status != "ok":
                    return got
                calls.extend(got.calls)
                pos = got.end
                continue
            if j >= n or any(w.startswith(rest) for w in (self.close, self.call_open)):
                if final:
                    return Block("bad", n, reason="truncated: the reply ends inside the block")
                return Block("pending")
            return bad_block(text, j, self.close, f"expected {self.call_open}", final)

    def value_stops(self) -> tuple[tuple[str, str], ...]:
        return ((self.call_close, self.call_open), (self.call_close, self.close))

    def call_grammar(self, tool: Tool, index: int, kit: Kit) -> Node:
        """``<tool_call:opensource>NAME<tool_sep:opensource>\\n`` then the key/value pairs
        (:meth:`Glm.call_grammar`), each marker followed by a newline, then
        ``</tool_call:opensource>\\n``."""
        body = super().call_grammar(tool, index, kit)
        return seq(kit.marker(self.call_open), body, kit.marker(self.call_close), lit("\n"))

    def close_node(self, special_tokens: frozenset[str]) -> Node:
        """The block's close marker, then optionally the reasoning-mode marker and effort."""
        mode = seq(
            self.marker_node(REASONING_MODE, special_tokens),
            lit("reasoning_effort:"),
            choice(*(lit(e) for e in _EFFORTS)),
        )
        return seq(super().close_node(special_tokens), opt(mode))

    def render_calls(self, calls: Sequence[tuple[str, object]]) -> str:
        out = [self.open, "\n"]
        for name, arguments in calls:
            out.append(f"{self.call_open}{name}{self.name_sep}\n")
            for k, v in (arguments if isinstance(arguments, dict) else {}).items():
                value = v if isinstance(v, str) else self.dump_arguments(v)
                out.append(f"{self.key_open}{k}{self.key_close}\n")
                out.append(f"{self.value_open}{value}{self.value_close}\n")
            out.append(f"{self.call_close}\n")
        return "".join(out) + self.close

    def render_tools(self, tools: Sequence[Tool]) -> str:
        return tools_prompt(tool_json_lines(tools), self.render_call("{name}", {"{key}": "..."}))


def _mode_prefix(tail: str) -> bool:
    """``tail`` (what follows the block's close) may still become the reasoning-mode marker."""
    if not tail:
        return True
    full = REASONING_MODE + "reasoning_effort:"
    if len(tail) <= len(full):
        return full.startswith(tail)
    if not tail.startswith(full):
        return False
    word = tail[len(full) :]
    return any(e.startswith(word) and e != word for e in _EFFORTS)
