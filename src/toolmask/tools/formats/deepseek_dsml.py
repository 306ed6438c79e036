"""``deepseek_dsml``: DeepSeek V3.2: ``<｜DSML｜function_calls>``, with ``<think>``
reasoning; calls in DeepSeek's DSML markup (:mod:`._dsml`)::

    <｜DSML｜function_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Tokyo</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

The reader takes every DSML block tag (V3.2's, V4's and V4.1's).
"""

from __future__ import annotations

from toolmask.tools.formats._chat import DEEPSEEK
from toolmask.tools.formats._dsml import DSML, Dsml
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "deepseek_dsml",
    Dsml(DSML, "function_calls", ""),
    BlockMarkers(
        "<｜DSML｜function_calls>",
        "</｜DSML｜function_calls>",
        after_open="\n",
        extra_triggers=("<｜DSML｜",),
    ),
    Layout(block_sep="", list_calls=True, separator_text=""),
    Reasoning("<think>", "</think>"),
    template_markers=(*DEEPSEEK, "<｜DSML｜", "</｜DSML｜"),
)
