"""``functiongemma``: FunctionGemma (Gemma 3 270M tuned for calls): Gemma 4's ``call:NAME{...}``
object notation with ``<escape>`` as the string delimiter, between ``<start_function_call>`` and
``<end_function_call>`` (all three special tokens of its vocabulary)::

    <start_function_call>call:get_weather{city:<escape>Paris<escape>,days:3}<end_function_call>

Numbers, booleans and ``null`` are bare, as in JSON; keys are bare. Calls follow each other; the
turn ends after the last one. Reader and grammar are Gemma's object notation (:mod:`._objects`)
with the other delimiter (the ``functiongemma`` value notation of :mod:`toolmask.schema`).
"""

from __future__ import annotations

from toolmask.schema import FUNCTIONGEMMA_QUOTE
from toolmask.tools.formats._objects import ObjectNotation
from toolmask.tools.formats._spec import BlockMarkers, FormatSpec, Layout, Prompt, Values

__all__ = ["SPEC"]

SPEC = FormatSpec(
    "functiongemma",
    ObjectNotation(FUNCTIONGEMMA_QUOTE, "functiongemma"),
    BlockMarkers("<start_function_call>", "<end_function_call>"),
    Layout(block_sep=""),
    values=Values(whitespace="compact", extra_layouts=("spaced",)),
    template_markers=(
        "<bos>",
        "<eos>",
        "<start_of_turn>",
        "<end_of_turn>",
        "<start_function_declaration>",
        "<end_function_declaration>",
        "<start_function_call>",
        "<end_function_call>",
        "<start_function_response>",
        "<end_function_response>",
        FUNCTIONGEMMA_QUOTE,
    ),
    prompt=Prompt(example_name="NAME", example_args=(("key", "value"),)),
)
