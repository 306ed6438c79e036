"""``deepseek_v3``: DeepSeek V3 / R1, with ``<think>`` reasoning: every call of the turn in one
section, each a ``function`` call whose arguments sit in a JSON fence::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
    ```json
    {"city": "Tokyo"}
    ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>

The reader takes V3.1's calls too (``deepseek_v31``). Whitespace templates write around the
markers: a newline between calls (R1's template) and before the calls' end; vLLM's DeepSeek
templates (no whitespace control) indent them: up to 20 spaces before the block, 17 bytes
between calls, 8 before its end.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import DEEPSEEK, DEEPSEEK_CALL
from toolmask.tools.formats._marked import ARGS, DEEPSEEK_CALLS, NAME, Inner, Mark, MarkedJson
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning, Values

__all__ = ["SPEC"]

CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP = DEEPSEEK_CALL

#: ``function<sep>NAME``, then the arguments in a JSON fence
_PARTS = (Mark(CALL_BEGIN), "function", Mark(SEP), NAME, "\n```json\n", ARGS, "\n```")

SPEC = FormatSpec(
    "deepseek_v3",
    MarkedJson((*_PARTS, Mark(CALL_END)), Inner(DEEPSEEK_CALLS)),
    BlockMarkers(CALLS_BEGIN, CALLS_END, before_close="\n"),
    Layout(block_sep="", list_calls=True, max_inner_ws=24),
    Reasoning("<think>", "</think>"),
    Values(extra_layouts=("compact",)),
    template_markers=DEEPSEEK,
)
