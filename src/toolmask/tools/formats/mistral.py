"""``mistral``: Mistral 7B v0.3, Mistral Nemo, Mistral Small (v3 tokenizers).

All calls of a turn in one JSON array behind ``[TOOL_CALLS]``, each with the call id the model
writes after its arguments (nine alphanumeric characters; Nemo's template refuses any other)::

    [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1B2c3D4e"}]

The grammar takes the id (optional: older fine-tunes leave it out); the parser returns it as
the call's id. ``[TOOL_CALLS]``, ``[AVAILABLE_TOOLS]``, ``[INST]`` ... are special tokens in
v3 vocabularies.
"""

from __future__ import annotations

from toolmask.tools.formats._chat import available_tools
from toolmask.tools.formats._json import JsonEnvelope
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "mistral",
    JsonEnvelope(id_key="id", id_shape="alnum9"),
    #: the v3 template writes ``[TOOL_CALLS] [``; the space is optional
    BlockMarkers("[TOOL_CALLS]", after_open=" "),
    Layout(list_open="[", list_close="]", separator=","),
    template_markers=(
        "<s>",
        "</s>",
        "[INST]",
        "[/INST]",
        "[TOOL_CALLS]",
        "[AVAILABLE_TOOLS]",
        "[/AVAILABLE_TOOLS]",
        "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]",
        "[SYSTEM_PROMPT]",
        "[/SYSTEM_PROMPT]",
    ),
    prompt=Prompt(section=available_tools),
)
