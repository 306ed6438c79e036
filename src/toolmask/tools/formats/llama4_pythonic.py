"""``llama4_pythonic``: Llama 4: a Python list of calls, keyword arguments only::

    [get_weather(city='Paris', days=3), get_time()]

optionally between ``<|python_start|>`` and ``<|python_end|>``. Without them a block is
recognised only at the start of the reply. Values are Python literals derived from each
parameter's schema (:mod:`._pythonic`); Llama 4 writes both ``json.dumps`` spacing and compact
literals.
"""

from __future__ import annotations

from toolmask.grammar import choice, lit
from toolmask.tools.formats._chat import LLAMA4
from toolmask.tools.formats._pythonic import PythonCalls
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, Values

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "llama4_pythonic",
    PythonCalls(),
    BlockMarkers("<|python_start|>", "<|python_end|>", bare_start="["),
    Layout(
        list_open="[",
        list_close="]",
        separator=",",
        block_sep="",
        separator_admits=choice(lit(", "), lit(",")),
    ),
    values=Values(extra_layouts=("compact",)),
    template_markers=LLAMA4,
    prompt=Prompt(how="[func_name1(param1=value1), func_name2()]"),
)
