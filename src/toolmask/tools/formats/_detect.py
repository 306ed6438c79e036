"""``fmt="auto"``: the wire format of a model, read from its chat template and special tokens.

A model's chat template renders earlier tool calls the way the model writes them, so the
template's markers name the family; the vocabulary's special tokens are the fallback when the
template says nothing (a GGUF without ``tokenizer.chat_template``). :data:`RULES` is the one
table: the first rule whose every clue is found wins, the template text first, then the special
tokens. An unknown model gets ``hermes`` with a warning on the ``toolmask.tools`` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["AUTO", "RULES", "FormatGuess", "detect_format", "resolve_format"]

log = logging.getLogger("toolmask.tools")

#: the format name that asks for detection
AUTO = "auto"

#: (format, clues): every clue (a text, or a tuple of alternative texts) must appear; the
#: specific families come before the ones whose markers they share (GLM and Qwen3-Coder also
#: write ``<tool_call>``; Kimi K3's vocabulary may keep K2's tokens)
RULES: tuple[tuple[str, tuple[str | tuple[str, ...], ...]], ...] = (
    ("gpt_oss", ("<|channel|>", "<|message|>")),
    ("kimi_k3", ("<|open|>", "<|sep|>")),
    ("kimi_k2", ("<|tool_calls_section_begin|>",)),
    ("deepseek_v41", ("｜DSML｜ calls",)),
    ("deepseek_v4", ("｜DSML｜tool_calls",)),
    ("deepseek_dsml", ("｜DSML｜",)),
    ("deepseek_v3", ("<｜tool▁calls▁begin｜>", "```json")),
    ("deepseek_v31", ("<｜tool▁calls▁begin｜>",)),
    ("glm", ("<arg_key>",)),
    ("gemma4", ("<|tool_call>",)),
    ("qwen3_xml", ("<function=", "<parameter=")),
    ("magistral", ("[TOOL_CALLS]", "<think>")),  # reasoning as text: 2506-2507
    ("mistral_v11", ("[TOOL_CALLS]", ("[ARGS]", "[CALL_ID]"))),
    ("mistral", ("[TOOL_CALLS]",)),
    ("llama4_pythonic", (("<|header_start|>", "<|python_start|>"),)),
    ("llama3_json", (("<|start_header_id|>", "<|python_tag|>"),)),
    ("phi4_mini", ("<|tool_call|>",)),
    ("functools", ("functools[",)),
    ("qwen3", ("<tool_call>", "<think>")),
    ("hermes", ("<tool_call>",)),
    ("hermes", ("<|im_start|>",)),  # ChatML without tool markers: Hermes is its tool format
)


@dataclass(frozen=True, slots=True)
class FormatGuess:
    """The detected format ``name`` and why: ``source`` ``"template"``, ``"special tokens"`` or
    ``"fallback"`` (nothing matched), ``clues`` the texts found."""

    name: str
    source: str
    clues: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.source == "fallback":
            return f"{self.name} (nothing in the chat template or special tokens names a format)"
        return f"{self.name} (the {self.source} hold {', '.join(map(repr, self.clues))})"


def _match(text: str) -> tuple[str, tuple[str, ...]] | None:
    for name, clues in RULES:
        found: list[str] = []
        for clue in clues:
            alts = (clue,) if isinstance(clue, str) else clue
            hit = next((a for a in alts if a in text), None)
            if hit is None:
                break
            found.append(hit)
        else:
            return name, tuple(found)
    return None


def detect_format(
    chat_template: str | None = None, special_tokens: Iterable[str] = ()
) -> FormatGuess:
    """The wire format of a model from its Jinja chat template text and its special-token texts
    (see :data:`RULES`); ``hermes`` with a warning when neither names one. O(rules x text)."""
    if chat_template:
        got = _match(chat_template)
        if got is not None:
            return FormatGuess(got[0], "template", got[1])
    specials = "\n".join(sorted(set(special_tokens)))
    if specials:
        got = _match(specials)
        if got is not None:
            return FormatGuess(got[0], "special tokens", got[1])
    log.warning(
        "format auto: neither the chat template nor the special tokens name a tool-call format; "
        "using hermes (<tool_call>); pass the format by name if the model writes another"
    )
    return FormatGuess("hermes", "fallback")


def resolve_format(
    fmt: str, chat_template: str | None = None, special_tokens: Iterable[str] = ()
) -> str:
    """``fmt`` itself, or for ``"auto"`` the detected format's name (logged at INFO)."""
    if fmt != AUTO:
        return fmt
    guess = detect_format(chat_template, special_tokens)
    if guess.source != "fallback":
        log.info("format auto: %s", guess)
    return guess.name
