"""The decoding interface: what a request is (:class:`DecodeRequest`, its mode and budgets in
:class:`DecodingParams`), what a mode is (:class:`Decoder`), and the table of modes
(:func:`register_mode`, :func:`mode_names`; :class:`Decoders`, one engine's decoders).

A mode is a name in the table and a factory (usually the decoder's class) that makes one
:class:`Decoder` per engine; the decoder keeps what it caches across requests (finite
branches, scored alternatives) itself, bounded. Callers choose a decoder by its name and never
branch on it: what differs between modes is behind :meth:`Decoder.decode`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from toolmask.decoding._reasoning import ReasoningBudget
from toolmask.decoding._result import Generation, OnToken
from toolmask.errors import ContextOverflowError, ToolmaskError
from toolmask.sampling import SamplingParams

if TYPE_CHECKING:
    import numpy as np

    from toolmask._compile import CompiledGrammar
    from toolmask.decoding._engine import ModelEngine
    from toolmask.vocab import Vocabulary

__all__ = [
    "DecodeRequest",
    "Decoder",
    "DecoderFactory",
    "Decoders",
    "DecodingParams",
    "Opening",
    "check_compiled_for",
    "check_prompt",
    "mode_names",
    "register_mode",
    "resolve_params",
    "unregister_mode",
]


# -- the table of modes ---------------------------------------------------------------------------
class Decoder(Protocol):
    """One decoding mode: draws a reply from ``engine`` under ``request`` (its grammar, its
    sampling, its budgets). Made once per engine by the mode's factory; it may keep bounded
    caches across requests. ``request`` has been checked (:func:`check_prompt`,
    :func:`check_compiled_for`). The contract of the reply is
    :meth:`toolmask.backends.DecodingBackend.generate`'s; ``Generation.mode`` is
    ``request.decoding.mode``."""

    def decode(self, engine: ModelEngine, request: DecodeRequest) -> Generation: ...


#: what the table holds per mode: makes a decoder (one per engine)
DecoderFactory = Callable[[], Decoder]

_MODES: dict[str, DecoderFactory] = {}


def register_mode(name: str, factory: DecoderFactory, *, replace: bool = False) -> None:
    """Add the mode ``name`` to the table: ``factory()`` makes its decoder. From then on
    ``DecodingParams(name)``, ``generate(..., decoding=name)``, ``Agent(..., decoding=name)``,
    the server's ``sampling`` field and ``toolmask serve --sampling`` accept it. ValueError
    for a name already taken (unless ``replace``) or not a lowercase identifier."""
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise ValueError(f"a mode name is a lowercase identifier, not {name!r}")
    if name in _MODES and not replace:
        raise ValueError(f"the decoding mode {name!r} is registered already")
    _MODES[name] = factory


def unregister_mode(name: str) -> None:
    """Remove the mode ``name`` from the table (KeyError if it is not there)."""
    del _MODES[name]


def mode_names() -> tuple[str, ...]:
    """The registered modes, in the order they were registered (the built-in ones first:
    ``plain``, ``exact``, ``aligned``)."""
    return tuple(_MODES)


def _factory(name: str) -> DecoderFactory:
    got = _MODES.get(name)
    if got is None:
        raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {name!r}")
    return got


class Decoders:
    """One engine's decoders, one per mode, each made when first asked for (so each keeps its
    caches for that engine). A mode registered again with another factory gets a new
    decoder."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[DecoderFactory, Decoder]] = {}

    def get(self, name: str) -> Decoder:
        """The decoder of mode ``name`` (ValueError for an unknown mode)."""
        factory = _factory(name)
        hit = self._made.get(name)
        if hit is None or hit[0] is not factory:
            hit = self._made[name] = (factory, factory())
        return hit[1]

    def clear(self) -> None:
        """Forget every decoder (and so what each cached): the next request makes new ones."""
        self._made.clear()

    def decode(self, engine: ModelEngine, request: DecodeRequest) -> Generation:
        """Check ``request`` against ``engine`` and decode it with its mode's decoder."""
        check_compiled_for(request.compiled, engine.vocab)
        check_prompt(request.prompt, engine.n_ctx)
        return self.get(request.decoding.mode).decode(engine, request)


# -- what a request carries -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DecodingParams:
    """The decoding mode and its budgets. Validated on construction (``ValueError``).

    - ``mode``: a registered mode (:func:`mode_names`): ``"plain"`` masks and renormalises each
      token; ``"exact"`` chooses among a finite branch's complete alternatives by their whole
      sequence's probability; ``"aligned"`` samples whole replies by sequential Monte Carlo, or
      searches by beam at temperature 0. See ``docs/sampling.md``.
    - ``particles``: ``aligned`` only: the number of sequences drawn side by side (the beam
      width at temperature 0); ``>= 1``; 1 is plain masking.
    - ``branch_alternatives``: ``exact`` and ``aligned``: a finite branch with more complete
      alternatives than this falls back to token-by-token (counted); 0 turns exact branches off.
    - ``branch_tokens``: the token positions one branch decision may score (its alternatives'
      token trie); a branch above it falls back likewise.
    """

    mode: str = "plain"
    particles: int = 8
    branch_alternatives: int = 128
    branch_tokens: int = 512

    def __post_init__(self) -> None:
        if not isinstance(self.mode, str) or self.mode not in _MODES:
            raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {self.mode!r}")
        for name, low in (("particles", 1), ("branch_alternatives", 0), ("branch_tokens", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"{name} must be an int >= {low}, got {v!r}")


def resolve_params(
    sampling: SamplingParams | str | None, decoding: DecodingParams | str | None
) -> tuple[SamplingParams, DecodingParams]:
    """``generate``'s ``sampling`` and ``decoding`` arguments as parameters.

    ``sampling``: :class:`SamplingParams`, or None (greedy), or a mode name (the shorthand
    ``sampling="exact"``: that mode, greedy). ``decoding``: :class:`DecodingParams`, a mode
    name (its default budgets), or None (the mode ``sampling`` named, else ``plain``).
    ValueError for an unknown mode or two different modes, TypeError for anything else."""
    named: str | None = None
    if sampling is None or isinstance(sampling, str):
        named = sampling
        sp = SamplingParams(temperature=0.0)
    elif isinstance(sampling, SamplingParams):
        sp = sampling
    else:
        raise TypeError(f"sampling must be SamplingParams, a mode name or None, not {sampling!r}")
    if decoding is None:
        dp = DecodingParams(named or "plain")
    elif isinstance(decoding, DecodingParams):
        dp = decoding
    elif isinstance(decoding, str):
        dp = DecodingParams(decoding)
    else:
        raise TypeError(f"decoding must be DecodingParams, a mode name or None, not {decoding!r}")
    if named is not None and dp.mode != named:
        raise ValueError(f"sampling names the mode {named!r} and decoding {dp.mode!r}")
    return sp, dp


@dataclass(frozen=True, slots=True)
class Opening:
    """Where a reply may open with a call block or with prose (an ``auto`` turn with callable
    tools; :func:`~toolmask.decoding.call_opener`): the block's ``opener`` text and ``call``,
    which returns the grammar a call first is decoded under (the turn under ``required``;
    called only by a decoder that chooses a call first). A decoder may choose here by the
    model's probability of opening a call (``exact``, sampled) or ignore it and decode the
    turn as it is; prose first is decoded under the turn itself, the opener's tokens excluded
    at the first token only, so a call may still follow the prose."""

    opener: str
    call: Callable[[], CompiledGrammar | None]


def _greedy() -> SamplingParams:
    return SamplingParams(temperature=0.0)


@dataclass(frozen=True, slots=True)
class DecodeRequest:
    """One decode, as :meth:`toolmask.backends.DecodingBackend.generate` takes it (the meaning
    of each field is documented there): the prompt's token ids, the grammar (None:
    unconstrained), the token budget, the token sampler's settings, the mode and its budgets,
    and the options every mode honours or refuses (``ToolmaskError``)."""

    prompt: list[int]
    compiled: CompiledGrammar | None
    max_tokens: int = 256
    sampling: SamplingParams = field(default_factory=_greedy)
    decoding: DecodingParams = field(default_factory=DecodingParams)
    on_token: OnToken | None = None
    jump_forward: bool = True
    meter: bool = False
    end_on_exit: bool = True
    reasoning_budget: ReasoningBudget | None = None
    exclude_first: np.ndarray | None = None
    opening: Opening | None = None


def check_compiled_for(compiled: CompiledGrammar | None, vocab: Vocabulary) -> None:
    """Raise unless ``compiled`` is ``None`` or was compiled for ``vocab``."""
    if compiled is None:
        return
    if compiled.vocab is None:
        raise ToolmaskError("compile the grammar with this backend's vocabulary")
    if compiled.vocab.fingerprint != vocab.fingerprint:
        raise ToolmaskError("the grammar was compiled for another vocabulary")


def check_prompt(prompt: list[int], n_ctx: int) -> None:
    """Raise :class:`ContextOverflowError` when ``prompt`` does not fit ``n_ctx`` tokens,
    ``ToolmaskError`` when it is empty."""
    if len(prompt) >= n_ctx:
        raise ContextOverflowError(len(prompt), n_ctx)
    if not prompt:
        raise ToolmaskError("the prompt is empty")
