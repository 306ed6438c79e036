"""What a decoder needs of a model: the :class:`ModelEngine` protocol, and the defaults an engine
may use for its derived primitives (:func:`logits_by_trie`) and jump-forward
(:func:`forced_tokens`).

Every backend implements :class:`ModelEngine` (``toolmask.backends.DecodingBackend`` gives the
defaults; ``LlamaCpp`` and ``Transformers`` are such engines), so any decoding mode runs on any
backend. The engine holds one sequence, its *context*: :meth:`~ModelEngine.sync_prompt` sets it
(reusing the longest prefix its KV cache holds), :meth:`~ModelEngine.feed` extends it,
:meth:`~ModelEngine.logits` reads the row after it. :meth:`~ModelEngine.logits_many` evaluates
many continuations of one context and leaves the context as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from toolmask._compile import Matcher
    from toolmask.sampling import SamplingParams
    from toolmask.vocab import Vocabulary

__all__ = ["ModelEngine", "forced_tokens", "logits_by_trie"]


class ModelEngine(Protocol):
    """A model as the decoders use it (see the module docstring). Not thread-safe."""

    @property
    def vocab(self) -> Vocabulary:
        """The vocabulary; its ``vocab_size`` is at most the logits row's width."""
        ...

    @property
    def n_ctx(self) -> int:
        """The context window, in tokens."""
        ...

    def tokenize(self, text: str) -> list[int]:
        """The model's tokenisation of ``text``; special-token texts become their ids."""
        ...

    def encode(self, text: str) -> list[int]:
        """The model's tokenisation of ``text`` as plain text (no BOS, no special ids)."""
        ...

    def sync_prompt(self, prompt: list[int]) -> int:
        """Make ``prompt`` the context, evaluating what the KV cache does not hold; return how
        many leading tokens were reused (at least one token is evaluated, for fresh logits)."""
        ...

    def feed(self, tokens: list[int]) -> None:
        """Evaluate ``tokens`` after the context (one batch)."""
        ...

    def logits(self) -> Any:
        """The logits row after the context (1-D, width >= the vocabulary): numpy, or whatever
        :meth:`sampler`'s sampler takes (a device tensor, so the mask is filled while the
        forward pass runs)."""
        ...

    def host_logits(self) -> Any:
        """The row of :meth:`logits` as a numpy array."""
        ...

    def sampler(self, params: SamplingParams) -> Any:
        """What draws tokens from :meth:`logits` rows: ``sample(logits, bitmask=None) -> int``
        and ``uniform() -> float`` (the numpy :class:`~toolmask.sampling.Sampler`, or a
        sampler on the logits' device)."""
        ...

    def logits_many(
        self, context: list[int], continuations: list[list[int]], every: bool = False
    ) -> tuple[list[Any], int, int]:
        """The logits after ``context`` and each (non-empty) continuation, with the cost:
        ``(rows, model calls, token positions evaluated)``. ``rows[i]`` is the float32 row
        after all of ``continuations[i]``, or with ``every`` a ``[len(c), V]`` array of the
        rows after each of its prefixes. The arrays are owned by the caller. Afterwards the
        context is ``context`` again. :func:`logits_by_trie` is the one-sequence default; an
        engine that evaluates many sequences in one batch does better."""
        ...


def logits_by_trie(
    engine: ModelEngine, context: list[int], continuations: list[list[int]], every: bool = False
) -> tuple[list[Any], int, int]:
    """:meth:`ModelEngine.logits_many` on one sequence: walk the continuations' token trie in
    sorted order, each node reusing its predecessor's prefix (about one call per trie node,
    plus one to come back to ``context``)."""
    V = engine.vocab.vocab_size
    nodes: dict[tuple[int, ...], Any] = {}
    for c in continuations:
        for k in range(1 if every else len(c), len(c) + 1):
            nodes.setdefault(tuple(c[:k]), None)
    passes = evaluated = 0
    for key in sorted(nodes):
        seq = context + list(key)
        evaluated += len(seq) - engine.sync_prompt(seq)
        passes += 1
        nodes[key] = np.array(engine.logits()[:V], dtype=np.float32)
    if nodes:
        evaluated += len(context) - engine.sync_prompt(context)
        passes += 1
    out: list[Any] = []
    for c in continuations:
        if every:
            out.append(np.stack([nodes[tuple(c[:k])] for k in range(1, len(c) + 1)]))
        else:
            out.append(nodes[tuple(c)])
    return out, passes, evaluated


def forced_tokens(engine: ModelEngine, m: Matcher) -> list[int]:
    """Tokens to append without sampling (jump-forward): the model's own tokenisation of the
    matcher's forced bytes (cut before a partial UTF-8 character), less its last token (which
    could merge with what follows), kept while each token's bytes are inside the forced
    text."""
    forced = m.forced_bytes()
    if len(forced) < 2:
        return []
    for cut in range(len(forced), max(len(forced) - 4, 0), -1):
        try:
            text = forced[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
        forced = forced[:cut]
        break
    else:
        return []
    out: list[int] = []
    pos = 0
    table = engine.vocab.token_bytes
    for t in engine.encode(text)[:-1]:
        piece = table[t]
        if not piece or forced[pos : pos + len(piece)] != piece:
            break
        out.append(t)
        pos += len(piece)
    return out
