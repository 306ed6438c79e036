"""The clue table: which format a text names by its markers (``fmt="auto"``'s hints).

Detection proves a format on the calls a chat template renders (:mod:`toolmask.tools._detect`);
this table only orders formats that prove equally specific, and names a format from a
vocabulary's special tokens when a model carries no template (or one that renders no calls).
:data:`RULES`: the first rule whose every clue is found wins.
"""

from __future__ import annotations

__all__ = ["AUTO", "RULES", "match_clues"]

#: the format name that asks for detection
AUTO = "auto"

#: (format, clues): every clue (a text, or a tuple of alternative texts) must appear; the
#: specific families come before the ones whose markers they share (GLM and Qwen3-Coder also
#: write ``<tool_call>``; Kimi K3's vocabulary may keep K2's tokens)
RULES: tuple[tuple[str, tuple[str | tuple[str, ...], ...]], ...] = (
    ("gpt_oss", ("<|channel|>", "<|message|>")),
    ("kimi_k3", ("<|open|>", "<|sep|>")),
    ("kimi_k2", ("<|tool_calls_section_begin|>",)),
    ("gigachat35", ("｜GCML｜",)),
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


def match_clues(
    text: str, rules: tuple[tuple[str, tuple[str | tuple[str, ...], ...]], ...] = RULES
) -> tuple[str, tuple[str, ...]] | None:
    """The first rule of ``rules`` whose every clue ``text`` contains: ``(format, clues
    found)``, else None. O(rules x len(text))."""
    for name, clues in rules:
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
