"""``deepseek_v31``: DeepSeek V3.1, with ``<think>`` reasoning: every call of the turn in one
section, each its name and its JSON arguments::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>...

The reader takes V3's calls too (``deepseek_v3``); the whitespace around the markers is V3's.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import DEEPSEEK, DEEPSEEK_CALL
from toolmask.tools.formats._marked import ARGS, DEEPSEEK_CALLS, NAME, Inner, Mark, MarkedJson
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning, Values

__all__ = ["SPEC"]

CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP = DEEPSEEK_CALL

SPEC = FormatSpec(
    "deepseek_v31",
    MarkedJson((Mark(CALL_BEGIN), NAME, Mark(SEP), ARGS, Mark(CALL_END)), Inner(DEEPSEEK_CALLS)),
    BlockMarkers(CALLS_BEGIN, CALLS_END, before_close="\n"),
    Layout(block_sep="", list_calls=True, max_inner_ws=24),
    Reasoning("<think>", "</think>"),
    Values(extra_layouts=("compact",)),
    template_markers=DEEPSEEK,
)
