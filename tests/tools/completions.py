"""Rendering completions the way each wire format writes them, and feeding them to a matcher.

A completion is a list of pieces: ``str`` (bytes of text) or :class:`Special` (one special
token). Markers whose text is in ``special_tokens`` become Special pieces, as a tokenizer with
those tokens would produce them.
"""

from __future__ import annotations

import json
from typing import Any

from toolmask._compile import Matcher
from toolmask.grammar import Special
from toolmask.tools import WireFormat

Piece = str | Special
Call = tuple[str, dict[str, Any]]


def call_json(fmt: WireFormat, name: str, args: dict[str, Any]) -> str:
    """The call object as the grammar writes it (json.dumps envelope and arguments)."""
    body = fmt.dump_arguments(args)
    return "{" + f'"{fmt.name_key}": {json.dumps(name)}, "{fmt.args_key}": {body}' + "}"


def _marker(text: str, special_tokens: frozenset[str]) -> list[Piece]:
    if not text:
        return []
    return [Special(text)] if text in special_tokens else [text]


def render(
    fmt: WireFormat,
    calls: list[Call],
    *,
    prose: str = "",
    special_tokens: frozenset[str] = frozenset(),
    bare: bool = False,
) -> list[Piece]:
    """``prose`` then the calls in ``fmt``'s wire format (``bare``: without the opener)."""
    out: list[Piece] = [prose] if prose else []
    if not calls:
        return out
    opener = [] if bare else _marker(fmt.open, special_tokens)

    def block(objs: list[str], first: bool) -> list[Piece]:
        head = opener if first else _marker(fmt.open, special_tokens)
        body = fmt.after_open + fmt.list_open + fmt.separator_text.join(objs) + fmt.list_close
        return [*head, body + fmt.before_close, *_marker(fmt.close, special_tokens)]

    objs = [call_json(fmt, n, a) for n, a in calls]
    if fmt.separator:
        out.extend(block(objs, True))
    else:
        for i, o in enumerate(objs):
            if i:
                out.append(fmt.block_sep)
            out.extend(block([o], i == 0))
    return [p for p in out if p != ""]


def text_of(pieces: list[Piece]) -> str:
    return "".join(p.text if isinstance(p, Special) else p for p in pieces)


def accepts(matcher: Matcher, pieces: list[Piece]) -> bool:
    """Feed ``pieces`` one byte / special token at a time; True iff all accepted and complete."""
    for p in pieces:
        if isinstance(p, Special):
            if not matcher.accept_special(p.text):
                return False
        else:
            for b in p.encode("utf-8"):
                if not matcher.accept_bytes(bytes([b])):
                    return False
    return matcher.is_accepting()
