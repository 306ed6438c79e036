"""What every backend shares: the :class:`Generation` result, the :class:`Backend` protocol and
the ``on_token`` streaming hook.

A backend turns prompt token ids into one completion under a compiled grammar::

    gen = backend.generate(prompt_ids, compiled, max_tokens=256, sampling=params,
                           on_token=callback)

``compiled`` must be compiled for ``backend.vocab`` (``None`` decodes unconstrained, for
baselines). ``on_token(ids, text)`` is called after every accepted chunk: one sampled token, or
a block of forced tokens appended without sampling (``text`` is the chunk's bytes). Returning
``True`` stops the generation there with ``finish_reason == "stop"``; this is how a server
honours stop strings and cancels a request whose client went away.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from toolmask.errors import ToolmaskError

if TYPE_CHECKING:
    from toolmask._compile import CompiledGrammar
    from toolmask.sampling import SamplingParams
    from toolmask.vocab import Vocabulary

__all__ = ["Backend", "ContextOverflowError", "Generation", "OnToken", "check_compiled_for"]

#: ``on_token(token_ids, text) -> stop?``: see the module docstring.
OnToken = Callable[[list[int], bytes], bool | None]


class ContextOverflowError(ToolmaskError):
    """The prompt does not fit the model's context window."""

    def __init__(self, prompt_tokens: int, n_ctx: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.n_ctx = n_ctx
        super().__init__(
            f"the prompt has {prompt_tokens} tokens but the model's context holds {n_ctx}"
        )


@dataclass
class Generation:
    """One completion: its tokens and text, why it stopped, and timings.

    ``finish_reason`` is ``"stop"`` (EOS, grammar finished, or ``on_token`` asked to stop) or
    ``"length"`` (``max_tokens`` reached, or the context window is full).
    ``forced_tokens`` counts the tokens appended without a sampling step (jump-forward).
    """

    tokens: list[int]
    text: bytes
    finish_reason: str
    prompt_tokens: int
    reused_prefix: int
    step_s: list[float] = field(default_factory=list)  # model forward passes, one per step
    mask_s: list[float] = field(default_factory=list)  # bitmask fill per sampled token
    first_token_s: float = 0.0
    forced_tokens: int = 0
    sampled_tokens: int = 0


class Backend(Protocol):
    """What :class:`toolmask.agent.Agent` and the server need from a model."""

    vocab: Vocabulary

    def tokenize(self, text: str) -> list[int]: ...

    def generate(
        self,
        prompt: list[int],
        compiled: CompiledGrammar | None,
        *,
        max_tokens: int = 256,
        sampling: SamplingParams | None = None,
        on_token: OnToken | None = None,
    ) -> Generation: ...


def check_compiled_for(compiled: CompiledGrammar | None, vocab: Vocabulary) -> None:
    """Raise unless ``compiled`` is ``None`` or was compiled for ``vocab``."""
    if compiled is None:
        return
    if compiled.vocab is None:
        raise ToolmaskError("compile the grammar with this backend's vocabulary")
    if compiled.vocab.fingerprint != vocab.fingerprint:
        raise ToolmaskError("the grammar was compiled for another vocabulary")
