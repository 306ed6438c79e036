"""``functiongemma``: FunctionGemma (Gemma 3 270M tuned for calls): Gemma 4's ``call:NAME{...}``
object notation with ``<escape>`` as the string delimiter, between ``<start_function_call>`` and
``<end_function_call>`` (all three special tokens of its vocabulary)::

    <start_function_call>call:get_weather{city:<escape>Paris<escape>,days:3}<end_function_call>

Numbers, booleans and ``null`` are bare, as in JSON; keys are bare. Calls follow each other; the
turn ends after the last one. The reader and the grammar are :mod:`.gemma4`'s with the other
delimiter (the ``functiongemma`` value notation of :mod:`toolmask.schema._notation`).
"""

from __future__ import annotations

from typing import ClassVar

from toolmask.schema import FUNCTIONGEMMA_QUOTE
from toolmask.tools.formats._base import register_format
from toolmask.tools.formats.gemma4 import Gemma4

__all__ = ["FunctionGemma"]


@register_format("functiongemma")
class FunctionGemma(Gemma4):
    open = "<start_function_call>"
    close = "<end_function_call>"
    prose_after_calls = False
    reasoning_start = ""
    reasoning_end = ""
    quote = FUNCTIONGEMMA_QUOTE
    notation = "functiongemma"
    template_markers: ClassVar[tuple[str, ...]] = (
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
    )
