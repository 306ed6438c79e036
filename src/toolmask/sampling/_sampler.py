"""From (masked) logits to one token id: temperature, top-k, top-p, min-p, greedy.

The pipeline, in this order (see ``docs/sampling.md``):

1. mask: only tokens allowed by the bitmask are candidates (the others get probability 0);
2. temperature: ``logits / T``; ``T == 0`` means greedy (argmax over the allowed ids, ties to the
   lowest id) and skips the remaining steps;
3. top-k: keep the ``k`` largest logits (ties at the boundary go to the lowest ids);
4. top-p: keep the smallest set of most probable tokens whose mass reaches ``p`` of the mass left
   after top-k (ties in probability go to the lowest ids);
5. min-p: keep tokens whose probability is at least ``min_p`` times the largest one;
6. renormalise and draw with the sampler's own ``numpy.random.Generator``.

Everything is computed in float64 on the allowed candidates only, with the maximum subtracted
before ``exp``. Cost for a vocabulary of V with A allowed tokens: O(V) to read the logits and the
mask, O(A) for exp and the draw; top-k is a partition, O(A); top-p sorts only the candidates that
can be in the nucleus, found by partitions of growing size, O(A log n) with n the nucleus size.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from toolmask.sampling._bitmask import _is_torch, bitmask_to_bool

__all__ = ["Sampler", "SamplingParams"]

_F64 = npt.NDArray[np.float64]
_I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """How to turn a distribution into a token. Validated on construction (``ValueError``).
    (How a whole reply is drawn, the decoding mode and its budgets, is
    :class:`toolmask.decoding.DecodingParams`.)

    - ``temperature``: ``>= 0``; ``0`` means greedy decoding.
    - ``top_k``: keep the ``k`` most likely tokens; ``0`` turns it off.
    - ``top_p``: nucleus mass in ``(0, 1]``; ``1`` turns it off.
    - ``min_p``: in ``[0, 1]``; drop tokens below ``min_p * max probability``; ``0`` turns it off.
    - ``seed``: seeds the sampler's generator (reproducible draws); ``None`` draws fresh entropy.
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    seed: int | None = None

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, int | float) or not (0 <= t < math.inf):
            raise ValueError(f"temperature must be a finite number >= 0, got {t!r}")
        k = self.top_k
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"top_k must be an int >= 0 (0 = off), got {k!r}")
        p = self.top_p
        if isinstance(p, bool) or not isinstance(p, int | float) or not (0 < p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {p!r}")
        m = self.min_p
        if isinstance(m, bool) or not isinstance(m, int | float) or not (0 <= m <= 1):
            raise ValueError(f"min_p must be in [0, 1], got {m!r}")
        s = self.seed
        if s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 0):
            raise ValueError(f"seed must be None or an int >= 0, got {s!r}")

    @property
    def greedy(self) -> bool:
        """True when sampling reduces to argmax (``temperature == 0``)."""
        return self.temperature == 0


class Sampler:
    """Draws token ids from logits under an optional bitmask, reproducibly when seeded.

    ``Sampler(params)`` or ``Sampler(temperature=0.7, top_p=0.9, seed=1)``; keywords override the
    fields of ``params``. One sampler holds one ``numpy.random.Generator``: two samplers built with
    the same seed and fed the same logits return the same ids. Not thread-safe (the generator).
    """

    __slots__ = ("_params", "_rng")

    def __init__(self, params: SamplingParams | None = None, **kw: Any) -> None:
        if params is None:
            params = SamplingParams(**kw)
        elif kw:
            params = dataclasses.replace(params, **kw)
        self._params = params
        self._rng = np.random.default_rng(params.seed)

    @property
    def params(self) -> SamplingParams:
        """The (immutable) parameters this sampler applies."""
        return self._params

    def __repr__(self) -> str:
        return f"Sampler({self._params!r})"

    def uniform(self) -> float:
        """One uniform draw in [0, 1) from this sampler's generator (for decoders that choose
        among whole sequences with the same seeded stream)."""
        return float(self._rng.random())

    def sample(self, logits: Any, bitmask: Any = None) -> int:
        """One token id drawn from :meth:`probabilities` (greedy: the best allowed id).

        ``logits``: 1-D float array of width V (numpy, or a torch tensor, copied to the CPU as
        float32). ``bitmask``: int32 ``[ceil(V/32)]`` or ``None`` (everything allowed).
        Raises ``ValueError`` if no token is allowed, or on NaN logits. Cost: see the module doc;
        about 2 ms at V = 152k with half allowed (0.4 ms greedy) on a 2-core AVX2 VM, most of it
        float64 ``exp`` over the allowed tokens.
        """
        x, allowed = _prepare(logits, bitmask)
        if self._params.greedy:
            return _argmax(x, allowed)
        ids, p = self._candidates(x, allowed)
        return int(ids[_draw(p, self._rng.random())])

    def probabilities(self, logits: Any, bitmask: Any = None) -> _F64:
        """The distribution :meth:`sample` draws from: float64 ``[V]``, sums to 1, zero where the
        mask or a filter removed the token (greedy: one-hot on the best allowed id).

        Same arguments, errors and cost as :meth:`sample` plus an O(V) scatter.
        """
        x, allowed = _prepare(logits, bitmask)
        out = np.zeros(x.shape[0], dtype=np.float64)
        if self._params.greedy:
            out[_argmax(x, allowed)] = 1.0
            return out
        ids, p = self._candidates(x, allowed)
        out[ids] = p / p.sum()
        return out

    def _candidates(
        self, x: npt.NDArray[Any], allowed: npt.NDArray[np.bool_] | None
    ) -> tuple[_I64, _F64]:
        """Surviving ids (ascending) and their unnormalised probabilities (max entry == 1)."""
        prm = self._params
        if allowed is None:
            ids: _I64 = np.arange(x.shape[0], dtype=np.int64)
            v: _F64 = x.astype(np.float64)
        else:
            ids = np.flatnonzero(allowed).astype(np.int64, copy=False)
            v = x.take(ids).astype(np.float64, copy=False)
        top = v.max() if v.size else -np.inf
        if top == -np.inf:
            raise ValueError("no token allowed by the mask (or every allowed logit is -inf)")
        if top == np.inf:  # +inf logits dominate everything: uniform over them
            keep = v == np.inf
            return ids[keep], np.ones(int(keep.sum()), dtype=np.float64)
        if prm.temperature != 1:
            v = v / prm.temperature
            top = top / prm.temperature
        # top-k on logits (monotone in probability): a partition, ties to the lowest ids
        if 0 < prm.top_k < v.size:
            ids, v = _top_k(ids, v, prm.top_k)
        p = np.exp(v - top)
        if prm.top_p < 1:
            ids, p = _top_p(ids, p, prm.top_p)
        if prm.min_p > 0:
            keep = p >= prm.min_p * p.max()
            ids, p = ids[keep], p[keep]
        return ids, p


def _prepare(logits: Any, bitmask: Any) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_] | None]:
    """1-D float numpy logits (no copy for numpy input) and the allowed set, validated."""
    if _is_torch(logits):
        logits = logits.detach().float().cpu().numpy()
    x = np.asarray(logits)
    if x.ndim != 1:
        raise ValueError(f"logits must be 1-D [V], got shape {x.shape}")
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if x.size == 0:
        raise ValueError("no token allowed by the mask (empty logits)")
    if np.isnan(np.min(x)):  # min propagates NaN: one reduction, no temporary
        raise ValueError("logits contain NaN")
    if bitmask is None:
        return x, None
    if _is_torch(bitmask):
        bitmask = bitmask.cpu().numpy()
    return x, bitmask_to_bool(bitmask, x.shape[0])


def _argmax(x: npt.NDArray[Any], allowed: npt.NDArray[np.bool_] | None) -> int:
    """Best allowed id; ties go to the lowest id (``np.argmax`` returns the first maximum)."""
    if allowed is None:
        i = int(np.argmax(x))
        best = x[i]
    else:
        ids = np.flatnonzero(allowed)
        vals = x.take(ids)
        j = int(np.argmax(vals)) if vals.size else 0
        best = vals[j] if vals.size else -np.inf
        i = int(ids[j]) if vals.size else -1
    if best == -np.inf:
        raise ValueError("no token allowed by the mask (or every allowed logit is -inf)")
    return i


_BLOCK = 1024


def _draw(p: _F64, u01: float) -> int:
    """Inverse-CDF draw from unnormalised weights ``p`` with a uniform ``u01`` in [0, 1).

    A full ``cumsum`` is a serial loop; instead sum blocks of 1024 (SIMD), pick the block, and
    cumsum inside it only. Entries of weight 0 are never returned.
    """
    n = p.size
    full = n - n % _BLOCK
    sums = p[:full].reshape(-1, _BLOCK).sum(axis=1)
    if full < n:
        sums = np.append(sums, p[full:].sum())
    cs = np.cumsum(sums)
    u = u01 * cs[-1]
    b = min(int(np.searchsorted(cs, u, side="right")), cs.size - 1)
    lo = b * _BLOCK
    block = p[lo : lo + _BLOCK]
    c = np.cumsum(block)
    r = u - (cs[b - 1] if b else 0.0)
    i = int(np.searchsorted(c, r, side="right"))
    if i < block.size and block[i] > 0:
        return lo + i
    # rounding put u at (or past) the end of the block: take the last positive weight up to it
    pos = np.flatnonzero(p[: lo + block.size])
    return int(pos[-1])


def _top_k(ids: _I64, v: _F64, k: int) -> tuple[_I64, _F64]:
    """The k largest entries, in id order; among equal values at the cut the lowest ids win."""
    n = v.size
    kth = np.partition(v, n - k)[n - k]  # the k-th largest value
    above = v > kth
    need = k - int(above.sum())
    keep = above
    if need > 0:
        eq = np.flatnonzero(v == kth)[:need]
        keep = above.copy()
        keep[eq] = True
    return ids[keep], v[keep]


def _top_p(ids: _I64, p: _F64, top_p: float) -> tuple[_I64, _F64]:
    """Smallest prefix of the candidates by descending probability (ties: lowest id first) whose
    mass reaches ``top_p`` of the total; always at least one token.

    Sorting everything would cost O(A log A) at A = 150k candidates. Instead take the largest
    ``m`` entries by a partition (O(A)), plus any entry tied with the smallest of them, and grow
    ``m`` four-fold until their mass reaches the target; only those are sorted.
    """
    total = float(p.sum())
    target = top_p * total
    n = p.size
    m = min(n, 64)
    while True:
        if m >= n:
            sub = np.arange(n)
        else:
            thr = np.partition(p, n - m)[n - m]
            sub = np.flatnonzero(p >= thr)
            if float(p[sub].sum()) < target:
                m *= 4
                continue
        # stable sort of -p over ascending positions: ties keep the lowest id first
        order = sub[np.argsort(-p[sub], kind="stable")]
        cum = np.cumsum(p[order])
        cut = min(int(np.searchsorted(cum, target, side="left")) + 1, order.size)
        chosen = np.sort(order[:cut])
        return ids[chosen], p[chosen]
