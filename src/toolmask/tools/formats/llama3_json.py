"""``llama3_json``: Llama 3.1 / 3.2 / 3.3 JSON tool calling.

The reply is the call itself, optionally behind ``<|python_tag|>``; parallel calls are joined by
``; `` (the convention vLLM's ``llama3_json`` parser reads)::

    {"name": "get_weather", "parameters": {"city": "Paris"}}
    <|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "parameters": {}}

Without the tag a block is recognised only at the very start of the reply (a reply that starts
with ``{``); ``<|python_tag|>`` is a special token in Llama 3 vocabularies. The template asks for
``"parameters"``; Llama 3 models also write ``"arguments"`` (vLLM's and SGLang's parsers read
both), and so does the grammar.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolmask.tools.formats._chat import LLAMA3
from toolmask.tools.formats._json import JsonEnvelope
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, ToolLike

__all__ = ["SPEC"]


def _prompt(tools: Sequence[ToolLike]) -> str:
    """The JSON tool-calling instructions of the Llama 3.1 chat template (user turn)."""
    defs = "\n\n".join(json.dumps(t.to_openai(), indent=4, ensure_ascii=False) for t in tools)
    return (
        "Given the following functions, please respond with a JSON for a function call "
        "with its proper arguments that best answers the given prompt.\n\n"
        'Respond in the format {"name": function name, "parameters": dictionary of '
        "argument name and its value}. Do not use variables.\n\n" + defs + "\n\n"
    )


SPEC = FormatSpec(
    "llama3_json",
    JsonEnvelope(args_key="parameters", args_keys=("parameters", "arguments")),
    BlockMarkers("<|python_tag|>", bare_start="{"),
    Layout(separator=";", separator_text="; "),
    template_markers=LLAMA3,
    prompt=Prompt(section=_prompt),
)
