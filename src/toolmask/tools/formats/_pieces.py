"""What a spec's texts become in a grammar: the block's opener and closer, the list brackets and
the separator between calls, each its text unless the spec's layout says the grammar admits more
(:attr:`~toolmask.tools.formats.Layout.list_open_admits` ...). Markers become ``Special`` nodes
where the vocabulary has them as single tokens (:func:`~toolmask.tools.formats._kit.marker_node`).
"""

from __future__ import annotations

from toolmask.grammar import Choice, Node, Repeat, Seq, Special, choice, lit, opt, repeat, seq
from toolmask.schema import json_ws
from toolmask.tools.formats._kit import marker_node
from toolmask.tools.formats._spec import FormatSpec

__all__ = ["closer", "list_close", "list_open", "opener", "resolve_markers", "separator", "spacing"]


def spacing(text: str, max_ws: int) -> Node:
    """Fixed text around a marker: when it is whitespace only, its own text or none (``max_ws``
    at most its length), else any JSON whitespace up to ``max_ws`` bytes; other text is
    literal."""
    if text and not text.strip():
        return opt(lit(text)) if max_ws <= len(text) else json_ws(max_ws)
    return lit(text)


def resolve_markers(node: Node, special_tokens: frozenset[str]) -> Node:
    """``node`` with each ``Special(text)`` made the marker ``text`` as the vocabulary reads it
    (:func:`marker_node`). O(node size)."""
    if isinstance(node, Special):
        return marker_node(node.text, special_tokens)
    if isinstance(node, Seq):
        return seq(*(resolve_markers(i, special_tokens) for i in node.items))
    if isinstance(node, Choice):
        return choice(*(resolve_markers(i, special_tokens) for i in node.items))
    if isinstance(node, Repeat):
        return repeat(resolve_markers(node.item, special_tokens), node.min, node.max)
    return node


def opener(spec: FormatSpec, special_tokens: frozenset[str], open_text: str = "") -> Node:
    """The block opener: ``open`` (or another opener, ``open_text``: an alternate), special or
    bytes, then ``after_open`` (its own text at most, when whitespace).

    A ``trigger`` longer than ``open`` (``functools[``) is ``open`` followed by the start of
    what the grammar emits next (``list_open``), so it is not emitted again here.
    """
    after = spec.block.after_open
    marker = marker_node(open_text or spec.block.open, special_tokens)
    return seq(marker, spacing(after, len(after)))


def closer(spec: FormatSpec, special_tokens: frozenset[str], close_text: str = "") -> Node:
    """``before_close`` then the ``close`` marker (or ``close_text``). Whitespace-only fixed
    text around the markers is optional (``<tool_call>{...}</tool_call>`` is seen too); before
    the closer it is any whitespace up to ``inner_ws`` bytes, as small models often write a
    blank line there. After the opener it stays at most its own length: a blank line admitted
    there led SmolLM2 off its path (the meter's removals per step rose from 19% to 26% under
    ``required``)."""
    admits = spec.layout.close_admits
    if admits is not None and not close_text:
        return resolve_markers(admits, special_tokens)
    return seq(
        spacing(spec.block.before_close, spec.layout.inner_ws),
        marker_node(close_text or spec.block.close, special_tokens),
    )


def separator(spec: FormatSpec) -> Node:
    """What the grammar admits between two calls of a list (``separator_text``)."""
    admits = spec.layout.separator_admits
    return lit(spec.layout.separator_text) if admits is None else admits


def list_open(spec: FormatSpec) -> Node:
    """What the grammar admits before the first call of a block (``list_open``)."""
    admits = spec.layout.list_open_admits
    return lit(spec.layout.list_open) if admits is None else admits


def list_close(spec: FormatSpec) -> Node:
    """What the grammar admits after the last call of a block (``list_close``)."""
    admits = spec.layout.list_close_admits
    return lit(spec.layout.list_close) if admits is None else admits
