"""Untrusted tool output: break every control marker so no tokenizer reads it as a control token.

A tool result is rendered into the prompt; if it contains ``<|im_start|>`` or ``[INST]`` as
text, a tokenizer that matches special tokens in text would read a role switch. The sanitizer
inserts U+200B (zero width space) after the first character of every marker occurrence: a
human reads the same characters, the tokenizer sees no marker. Markers are the format's own
(:meth:`FormatSpec.markers`: role markers, tool-call markers), the caller's ``special_tokens``
(the vocabulary's special-token texts), and every ``<|...|>`` token shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from toolmask._compile import TurnCache, turn_cache
from toolmask.tools.formats import FormatSpec, get_format

__all__ = ["BREAK", "sanitize_tool_output"]

#: what is inserted after the first character of a marker
BREAK = "\u200b"

#: the special-token shape that most vocabularies share (``<|eot_id|>``, ``<|im_end|>``, ...)
_PIPE_TOKEN = r"<\|[^\s<>|]{0,64}\|>"


def _pattern(markers: frozenset[str]) -> re.Pattern[str]:
    alts = [re.escape(m) for m in sorted(markers, key=lambda m: (-len(m), m))]
    return re.compile("|".join([*alts, _PIPE_TOKEN]))


def sanitize_tool_output(
    text: str,
    fmt: str | FormatSpec,
    *,
    special_tokens: Iterable[str] = (),
    cache: TurnCache | None = None,
) -> str:
    """``text`` with every control marker broken (see the module docstring).

    Postcondition: no marker of ``fmt``, no text in ``special_tokens`` and no ``<|...|>``
    occurs in the result, and removing the inserted U+200B gives back ``text``. Markers of a
    single character cannot be broken and are ignored. Cost: O(len(text)) per pass; a pass is
    repeated only when markers overlap (``ab`` and ``bc`` in ``abc``). The pattern of a set of
    markers is compiled once, in ``cache``'s ``sanitizers`` (default:
    :func:`~toolmask._compile.turn_cache`).
    """
    markers = frozenset(m for m in (*get_format(fmt).markers(), *special_tokens) if len(m) > 1)
    patterns = (turn_cache() if cache is None else cache).sanitizers
    pat: re.Pattern[str] | None = patterns.get(markers)
    if pat is None:
        pat = patterns.put(markers, _pattern(markers))
    for _ in range(len(text) + 1):
        new = pat.sub(lambda m: m.group()[0] + BREAK + m.group()[1:], text)
        if new == text:
            return text
        text = new
    return text
