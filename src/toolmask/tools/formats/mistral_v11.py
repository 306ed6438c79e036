"""``mistral_v11``: Mistral tokenizers v11 and later (Mistral Small 3.2, Magistral, Ministral 3,
Devstral 2): the name, then the arguments, each call behind ``[TOOL_CALLS]``; reasoning models
think inside ``[THINK]...[/THINK]``::

    [THINK]...[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}

History renders add ``[CALL_ID]<id>`` before ``[ARGS]``; the parser accepts it. A v3-style
JSON list after ``[TOOL_CALLS]`` is read too. Mistral's own renderer writes ``json.dumps``
spacing, llama.cpp's tests compact JSON: the grammar takes both.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import MISTRAL_V11, available_tools
from toolmask.tools.formats._marked import MistralCalls
from toolmask.tools.formats._spec import (
    BlockMarkers,
    FormatSpec,
    Layout,
    Prompt,
    Reasoning,
    Values,
)

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "mistral_v11",
    MistralCalls(),
    BlockMarkers("[TOOL_CALLS]"),
    Layout(block_sep=""),
    Reasoning("[THINK]", "[/THINK]"),
    Values(whitespace="compact", extra_layouts=("spaced",)),
    template_markers=MISTRAL_V11,
    prompt=Prompt(section=available_tools),
)
