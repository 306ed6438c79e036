"""What token spellings mean, shared by the vocabulary and its loaders: GPT-2's byte-level
alphabet (:func:`byte_decoder`) and the texts of end-of-generation tokens (:data:`EOS_NAMES`,
per quicktok vocabulary :data:`QUICKTOK_EOS` / :data:`QUICKTOK_BOS`)."""

from __future__ import annotations

__all__ = ["EOS_NAMES", "QUICKTOK_BOS", "QUICKTOK_EOS", "byte_decoder"]

#: texts that mark the end of generation when a tokenizer does not say which token does
#: (only ever matched against special tokens)
EOS_NAMES = (
    "<|endoftext|>",
    "</s>",
    "<|eot_id|>",
    "<|im_end|>",
    "<|end_of_text|>",
    "<|eom_id|>",
    "<|end|>",
    "<end_of_turn>",
)

#: quicktok vocabulary name -> the texts of its EOS tokens (those that exist are used)
QUICKTOK_EOS: dict[str, tuple[str, ...]] = {
    "qwen3": ("<|im_end|>", "<|endoftext|>"),
    "llama3": ("<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"),
    "o200k": ("<|endoftext|>",),
    "cl100k": ("<|endoftext|>",),
}

#: quicktok vocabulary name -> the text of its BOS token
QUICKTOK_BOS: dict[str, str] = {"llama3": "<|begin_of_text|>"}


def byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level map, reversed: printable stand-in character -> byte (256 entries).

    Byte-level BPE vocabularies (GPT-2, Llama 3, Qwen, SmolLM) spell every byte as one
    character: printable Latin-1 bytes as themselves, the other 68 (space, control bytes, ...)
    as ``chr(256 + k)`` in byte order, so ``"Ġ"`` (U+0120) is the space and ``"Ã©"`` is
    ``b"\\xc3\\xa9"``.
    """
    bs = list(range(ord("!"), ord("~") + 1))
    bs += list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}
