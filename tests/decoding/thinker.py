"""A scripted model that would think forever: the decode loop's reasoning budget is what ends
its reasoning.

:class:`Thinker` is a :class:`DecodingBackend` over a byte vocabulary (ids 0..255 are the
bytes) plus special tokens. Its logits prefer, at every step, the next token of the reply it
wants: the channel opener (unless the prompt opened it), then ``thought`` repeated without
end; once the close marker is in its output (written by the budget, or by itself after
``stop_after`` thought tokens), the rest of ``after``. The masked loop, the matcher, the
budget and jump-forward are toolmask's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import toolmask as tm
from toolmask.backends import DecodingBackend

EOS = 256


def vocabulary(specials: Sequence[str]) -> tm.Vocabulary:
    tokens: list[bytes | None] = [bytes([b]) for b in range(256)] + [None] * (1 + len(specials))
    texts = {EOS: "<|im_end|>", **{EOS + 1 + i: s for i, s in enumerate(specials)}}
    return tm.Vocabulary.from_token_bytes(tokens, eos_ids=[EOS], special_texts=texts)


class Thinker(DecodingBackend):
    def __init__(
        self,
        *,
        opener: str,
        close: str,
        after: str,
        specials: Sequence[str] = (),
        thought: str = "hm ",
        stop_after: int | None = None,
        chat_template: str | None = None,
    ) -> None:
        self.vocab = vocabulary(specials)
        self.n_ctx = 4096
        self.opener, self.close, self.after = opener, close, after
        self.thought = thought
        self.stop_after = stop_after
        self.chat_template = chat_template
        self.metadata: dict[str, Any] = {}
        self.ids = {t: i for i, t in self.vocab.special.items()}
        self.context: list[int] = []
        self.start = 0
        self.open_in_prompt = False

    # text of ids, special tokens as their text
    def text(self, ids: Sequence[int]) -> str:
        sp = self.vocab.special
        return "".join(sp[t] if t in sp else bytes([t]).decode("latin-1") for t in ids)

    def tokenize(self, text: str) -> list[int]:
        self.open_in_prompt = bool(self.opener) and text.rstrip().endswith(self.opener.rstrip())
        return self.encode(text)

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        i = 0
        while i < len(text):
            hit = next(
                (s for s in sorted(self.ids, key=len, reverse=True) if text.startswith(s, i)), None
            )
            if hit is not None:
                out.append(self.ids[hit])
                i += len(hit)
            else:
                out += list(text[i].encode())
                i += 1
        return out

    def sync_prompt(self, prompt: list[int]) -> int:
        self.context = list(prompt)
        self.start = len(prompt)
        return 0

    def feed(self, tokens: list[int]) -> None:
        self.context.extend(tokens)

    def _wanted(self) -> str:
        done = self.text(self.context[self.start :])
        if self.close in done:
            tail = done.split(self.close, 1)[1]
            return self.after[len(tail) :] if self.after.startswith(tail) else ""
        head = "" if self.open_in_prompt else self.opener
        n = self.stop_after
        body = self.thought * (10_000 if n is None else n)
        script = head + body + ("" if n is None else self.close)
        return script[len(done) :] if script.startswith(done) else ""

    def logits(self) -> Any:
        row = np.full(self.vocab.vocab_size, -10.0, dtype=np.float32)
        want = self._wanted()
        if not want:
            row[EOS] = 5.0
            return row
        hit = next((s for s in self.ids if want.startswith(s)), None)
        row[self.ids[hit] if hit is not None else want.encode()[0]] = 5.0
        return row
