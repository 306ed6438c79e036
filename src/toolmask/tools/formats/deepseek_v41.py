"""``deepseek_v41``: DeepSeek V4.1: ``<｜DSML｜ calls>``, a space after ``｜DSML｜`` in every
tag, with ``<think>`` reasoning; calls in DeepSeek's DSML markup (:mod:`._dsml`)::

    <｜DSML｜ calls>
    <｜DSML｜ invoke name="get_weather">
    <｜DSML｜ parameter name="city" string="true">Tokyo</｜DSML｜ parameter>
    </｜DSML｜ invoke>
    </｜DSML｜ calls>

The reader takes every DSML block tag (V3.2's, V4's and V4.1's).
"""

from __future__ import annotations

from toolmask.tools.formats._chat import DEEPSEEK
from toolmask.tools.formats._dsml import DSML, Dsml
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Reasoning

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "deepseek_v41",
    Dsml(DSML, "calls", " "),
    BlockMarkers(
        "<｜DSML｜ calls>",
        "</｜DSML｜ calls>",
        after_open="\n",
        extra_triggers=("<｜DSML｜",),
    ),
    Layout(block_sep="", list_calls=True, separator_text=""),
    Reasoning("<think>", "</think>"),
    template_markers=(*DEEPSEEK, "<｜DSML｜", "</｜DSML｜"),
)
