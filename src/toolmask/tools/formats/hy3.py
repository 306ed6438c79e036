"""``hy3``: Tencent Hunyuan Hy3: GLM-style key/value markers with an ``:opensource`` suffix, every
call of the turn in one ``<tool_calls:opensource>`` block, reasoning in
``<think:opensource>``::

    <tool_calls:opensource>
    <tool_call:opensource>get_weather<tool_sep:opensource>
    <arg_key:opensource>city</arg_key:opensource>
    <arg_value:opensource>Paris</arg_value:opensource>
    </tool_call:opensource>
    </tool_calls:opensource>

String values are raw text, other types JSON (``tojson``), as in GLM's key/value markers
(:mod:`._keyvalue`); the newlines are the template's, always written. The system prompt asks
the model to end the block with the reasoning-mode marker
(``</tool_calls:opensource><｜reasoning_mode:opensource｜>reasoning_effort:no_think``), which the
history render leaves out: the grammar admits both, the reader takes the marker as part of the
block. The template's prompt ends with ``<think:opensource>`` (reasoning ``low`` / ``high``) or
with an empty channel (``no_think``, its default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolmask.grammar import Special, choice, lit, opt, seq
from toolmask.tools.formats._keyvalue import KeyValue
from toolmask.tools.formats._read import Block, Call, bad_block, skip_ws
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, Reasoning

__all__ = ["SPEC"]

_T = ":opensource"
#: what the system prompt asks the model to print after the block
REASONING_MODE = f"<｜reasoning_mode{_T}｜>"
_EFFORTS = ("no_think", "low", "high")
_MODE = re.compile(re.escape(REASONING_MODE) + r"reasoning_effort:(?:no_think|low|high)")


@dataclass(frozen=True, slots=True)
class _Hy3Calls(KeyValue):
    """The key/value calls of a block, then the optional reasoning-mode marker after it."""

    def read_block(
        self,
        spec: FormatSpec,
        text: str,
        k: int,
        *,
        final: bool,
        bare: bool,
        schemas: Mapping[str, Any] | None,
    ) -> Block:
        """The block's open, then calls (each read by :meth:`KeyValue.read_call`) up to its
        close and the optional reasoning-mode marker after it."""
        b = spec.block
        n = len(text)
        pos = k + len(b.open)
        calls: list[Call] = []
        while True:
            j = skip_ws(text, pos)
            rest = text[j:]
            if rest.startswith(b.close):
                end = j + len(b.close)
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
                    after=(self.call_open, b.close), block_close=b.close, final=final,
                    schemas=schemas,
                )  # fmt: skip
                if got.status != "ok":
                    return got
                calls.extend(got.calls)
                pos = got.end
                continue
            if j >= n or any(w.startswith(rest) for w in (b.close, self.call_open)):
                if final:
                    return Block("bad", n, reason="truncated: the reply ends inside the block")
                return Block("pending")
            return bad_block(text, j, b.close, f"expected {self.call_open}", final)


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


_CLOSE = f"</tool_calls{_T}>"
_MODE_NODE = seq(
    Special(REASONING_MODE), lit("reasoning_effort:"), choice(*(lit(e) for e in _EFFORTS))
)

SPEC = FormatSpec(
    "hy3",
    _Hy3Calls(
        key_open=f"<arg_key{_T}>",
        key_close=f"</arg_key{_T}>",
        value_open=f"<arg_value{_T}>",
        value_close=f"</arg_value{_T}>",
        name_sep=f"<tool_sep{_T}>",
        layout=("\n", "\n", "\n", ""),
        call_open=f"<tool_call{_T}>",
        call_close=f"</tool_call{_T}>",
    ),
    BlockMarkers(f"<tool_calls{_T}>", _CLOSE, after_open="\n"),
    Layout(
        block_sep="",
        list_calls=True,
        # the block's close, then optionally the reasoning-mode marker and effort
        close_admits=seq(Special(_CLOSE), opt(_MODE_NODE)),
    ),
    Reasoning(f"<think{_T}>", f"</think{_T}>"),
    template_markers=(
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
    ),
    prompt=Prompt(example_args=(("{key}", "..."),)),
)
