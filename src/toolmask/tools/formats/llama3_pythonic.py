"""``llama3_pythonic``: Llama 3.2 (pythonic tool calling) and ToolACE: a Python list of calls
(:mod:`._pythonic`), the bare list as the whole reply (``[get_weather(city="Paris")]``), or
after ``<|python_tag|>``.

Strings are Python literals (either quote); the templates that write them otherwise are buggy
(see docs/tools.md): Llama 3.2's and ToolACE's vLLM templates write strings unquoted
(``city=Paris``).
"""

from __future__ import annotations

from toolmask.grammar import choice, lit
from toolmask.tools.formats._chat import LLAMA3
from toolmask.tools.formats._pythonic import HOW, PythonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, Values

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "llama3_pythonic",
    PythonCalls(),
    BlockMarkers("<|python_tag|>", bare_start="["),
    Layout(
        list_open="[",
        list_close="]",
        separator=",",
        block_sep="",
        separator_admits=choice(lit(", "), lit(",")),
    ),
    values=Values(extra_layouts=("compact",)),
    template_markers=LLAMA3,
    prompt=Prompt(how=HOW),
)
