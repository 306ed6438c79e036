"""``gemma3_pythonic``: Gemma 3 prompted for function calls: a Python list of calls
(:mod:`._pythonic`), the bare list as the whole reply, or in the ```` ```tool_code ```` fence of
Google's function-calling guide (the fence closes after the newline, or a little whitespace,
that ends the code).

Strings are Python literals (either quote); Gemma 3's template, which drops the ``, `` between
arguments and writes JSON ``true``, is buggy (see docs/tools.md).
"""

from __future__ import annotations

from toolmask.grammar import Special, choice, lit, seq
from toolmask.schema import json_ws
from toolmask.tools.formats._pythonic import HOW, PythonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, Values

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "gemma3_pythonic",
    PythonCalls(),
    BlockMarkers("```tool_code", "```", after_open="\n", bare_start="["),
    Layout(
        list_open="[",
        list_close="]",
        separator=",",
        block_sep="",
        separator_admits=choice(lit(", "), lit(",")),
        close_admits=seq(json_ws(4), Special("```")),
    ),
    values=Values(extra_layouts=("compact",)),
    template_markers=("<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"),
    prompt=Prompt(how=HOW),
)
