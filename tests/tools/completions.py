"""Rendering completions the way each wire format writes them, and feeding them to a matcher.

A completion is a list of pieces: ``str`` (bytes of text) or :class:`Special` (one special
token). Markers whose text is in ``special_tokens`` become Special pieces, as a tokenizer with
those tokens would produce them.
"""

from __future__ import annotations

import re
from typing import Any

from toolmask._compile import Matcher
from toolmask.grammar import Special
from toolmask.tools import FormatSpec
from toolmask.tools.formats import builds_own_turn

Piece = str | Special
Call = tuple[str, dict[str, Any]]


def split_special(text: str, special_tokens: frozenset[str]) -> list[Piece]:
    """``text`` with every occurrence of a special-token text as a :class:`Special` piece."""
    if not special_tokens:
        return [text] if text else []
    pat = re.compile("|".join(re.escape(m) for m in sorted(special_tokens, key=len, reverse=True)))
    out: list[Piece] = []
    pos = 0
    for m in pat.finditer(text):
        if m.start() > pos:
            out.append(text[pos : m.start()])
        out.append(Special(m.group()))
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def custom_turn(fmt: FormatSpec) -> bool:
    """Whether the format writes its turn as messages or sections (Harmony, Kimi K3's XTML)
    rather than prose + blocks."""
    return builds_own_turn(fmt)


def prose_markers(fmt: FormatSpec) -> tuple[str, str]:
    """The markers around a prose message of the formats that write one (Command R7B's
    ``<|START_RESPONSE|>``, Solar Open's ``<|content|>``), else ``("", "")``."""
    return getattr(fmt.codec, "prose_open", ""), getattr(fmt.codec, "prose_close", "")


def prose_text(fmt: FormatSpec, prose: str, *, before_calls: bool) -> str:
    """Prose as the format writes it: plain text, a Harmony message (final, or a commentary
    preamble before calls), Kimi K3's response section or a prose message between markers."""
    if fmt.name == "kimi_k3":
        return f"<|open|>response<|sep|>{prose}<|close|>response<|sep|>"
    start, end = prose_markers(fmt)
    if start:  # then the next message's header where calls follow (HyperCLOVA X SEED)
        return start + prose + end + (getattr(fmt.codec, "then", "") if before_calls else "")
    if fmt.name == "minimax_m3":  # its own turn grammar, plain prose
        return prose
    if fmt.name == "functionary_v32":  # a message to ``all``
        return f">>>all\n{prose}"
    if fmt.name == "functionary_v2":
        return f"<|from|>assistant\n<|recipient|>all\n<|content|>{prose}"
    if fmt.name == "muse_glimmer":  # an answer, or a preamble addressed to the user
        if before_calls:
            return f" to=user<|message|>{prose}<|eom|><|start|>assistant"
        return f" to=user<|message|>{prose}"
    if not custom_turn(fmt):
        return prose
    if before_calls:
        return f"<|channel|>commentary<|message|>{prose}<|end|><|start|>assistant"
    return f"<|channel|>final<|message|>{prose}"


def reasoning_text(fmt: FormatSpec, thought: str, *, opened: bool = False) -> str:
    """A reasoning channel as the format writes it at the start of a reply (``opened``: the
    prompt already opened it)."""
    if fmt.name == "kimi_k3":
        start = "" if opened else fmt.reasoning_start
        return f"{start}{thought}{fmt.reasoning_end}"
    if fmt.name == "muse_glimmer":
        return f" to=self<|message|>{thought}<|eom|><|start|>assistant"
    if fmt.name in ("minimax_m3", "hyperclovax_seed"):  # the next message follows at once
        start = "" if opened else fmt.reasoning_start
        return f"{start}{thought}{fmt.reasoning_end}"
    if custom_turn(fmt) and not prose_markers(fmt)[0]:
        return f"<|channel|>analysis<|message|>{thought}<|end|><|start|>assistant"
    start = "" if opened else fmt.reasoning_start
    return f"{start}{thought}{fmt.reasoning_end}\n\n"


def render(
    fmt: FormatSpec,
    calls: list[Call],
    *,
    prose: str = "",
    special_tokens: frozenset[str] = frozenset(),
    bare: bool = False,
    reasoning: str = "",
) -> list[Piece]:
    """``reasoning`` (already written in the format's channel), ``prose`` then the calls in
    ``fmt``'s wire format (``bare``: without the opener, and for formats whose blocks hold one
    call, without the first block's closer); markers in ``special_tokens`` become
    :class:`Special` pieces."""
    text = reasoning
    if prose or fmt.name == "kimi_k3":  # a K3 turn always has its response section
        text += prose_text(fmt, prose, before_calls=bool(calls))
    if calls:
        body = fmt.render_calls(calls)
        if fmt.name == "muse_glimmer":  # the reply starts inside the first header
            pass
        elif not body.startswith(fmt.block.open):  # a format that renders its calls bare
            body = body if bare else fmt.block.open + body + fmt.block.close
        elif bare:
            body = body[len(fmt.block.open) :]
            b = fmt.block
            if not fmt.layout.one_block:  # a bare one-call block is the call alone (hermes)
                end = body.index(b.before_close + b.close)
                rest = body[end + len(b.before_close + b.close) :]
                body = body[len(b.after_open) : end] + rest
        text += body
    return split_special(text, special_tokens)


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
