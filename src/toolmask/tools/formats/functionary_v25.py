"""``functionary_v25``: MeetKai Functionary v2.5 (Llama 3 base, the ``v2.llama3`` prompt
template): each call is a reserved Llama 3 special token, the function's name, a newline and
its JSON arguments, calls back to back, any text before them::

    <|reserved_special_token_249|>get_weather\n{"city": "Paris"}
    <|reserved_special_token_249|>get_time\n{"zone": "UTC"}

(without the line break between the calls). No marker closes a call: the JSON object ends it,
the next call's token or the end of the turn (``<|eot_id|>``) follows. Reader and grammar are
Functionary v3.1's (:class:`MarkedJson` read head to tail, string-aware) with the other head.
"""

from __future__ import annotations

import re

from toolmask.tools.formats._chat import LLAMA3
from toolmask.tools.formats._marked import ARGS, NAME, HeadTail, MarkedJson
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout

__all__ = ["SPEC"]

#: the token before each call (a reserved Llama 3 token the model was tuned to write)
CALL = "<|reserved_special_token_249|>"

SPEC = FormatSpec(
    "functionary_v25",
    MarkedJson((NAME, "\n", ARGS), HeadTail(re.compile(r"(?P<name>[^\s<]+)\n"), need="\n")),
    BlockMarkers(CALL),
    Layout(block_sep=""),
    template_markers=(*LLAMA3, CALL),
)
