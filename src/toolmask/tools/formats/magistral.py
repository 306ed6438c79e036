"""``magistral``: Magistral Small / Medium 2506-2507: Mistral v11 calls (``[TOOL_CALLS]name
[ARGS]{...}``) after reasoning written as plain ``<think>`` text (the system prompt asks for
it; the 2509+ models reason in ``[THINK]`` tokens, see ``mistral_v11``)::

    <think>The user wants the weather.</think>[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}
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
    "magistral",
    MistralCalls(),
    BlockMarkers("[TOOL_CALLS]"),
    Layout(block_sep=""),
    Reasoning("<think>", "</think>"),
    Values(whitespace="compact", extra_layouts=("spaced",)),
    template_markers=MISTRAL_V11,
    prompt=Prompt(section=available_tools),
)
