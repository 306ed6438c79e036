"""Where each sampled token's time went in the transformers backend (:class:`DecodeTimings`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["DecodeTimings"]


@dataclass
class DecodeTimings:
    """Where each sampled token's time went, in seconds, one entry per sampling step of
    :meth:`Transformers.generate` (appended as it runs; :meth:`clear` empties it).

    - ``forward_s``: the forward passes since the previous step, on the device (CUDA events;
      on the CPU the wall time of the call); jump-forward and the prompt count with the step
      that follows them;
    - ``launch_s``: CPU time spent issuing those forward passes (on the CPU, the passes);
    - ``fill_s``: from reading the logits handle to calling the sampler: the mask fill and the
      matcher's accepting test, run while the forward is in flight;
    - ``wait_s``: the sampler's wait for the forward after the fill (its visible part);
    - ``sample_s``: the sampler's CPU time: queueing the bitmask upload, mask, filters and
      draw, and reading the token id back (with the torch sampler on a GPU, the queueing
      happens before the wait, behind the running forward);
    - ``sample_hidden_s``: the part of ``sample_s`` spent while the forward was still running
      (the queueing, when the forward had not ended by its end; else 0): no wall time;
    - ``step_s``: wall time since the previous step ended (NaN for a generation's first step).

    Per step, ``step - launch - wait - fill - sample_hidden`` is the loop's own overhead
    (sampling and bookkeeping: what the backend adds beyond the forward and the mask); the
    mask was fully hidden when ``wait > 0``.
    """

    forward_s: list[float] = field(default_factory=list)
    launch_s: list[float] = field(default_factory=list)
    fill_s: list[float] = field(default_factory=list)
    wait_s: list[float] = field(default_factory=list)
    sample_s: list[float] = field(default_factory=list)
    sample_hidden_s: list[float] = field(default_factory=list)
    step_s: list[float] = field(default_factory=list)

    def clear(self) -> None:
        for xs in (self.forward_s, self.launch_s, self.fill_s, self.wait_s, self.sample_s):
            xs.clear()
        self.sample_hidden_s.clear()
        self.step_s.clear()

    def __len__(self) -> int:
        return len(self.step_s)

    def summary(self) -> dict[str, float | int]:
        """Means in milliseconds over the steps that have a ``step_s`` (a generation's first
        step holds the prompt), with ``overhead_ms`` = mean of
        ``step - launch - wait - fill - sample_hidden`` (``overhead_p50_ms``: its median;
        ``sample_p50_ms``: the sampling's) and ``hidden`` = the fraction of steps whose fill
        ended before the forward did."""
        idx = [i for i, s in enumerate(self.step_s) if not math.isnan(s)]
        out: dict[str, float | int] = {"steps": len(idx)}
        if not idx:
            return out
        n = len(idx)

        def mean(xs: list[float]) -> float:
            return 1000 * sum(xs[i] for i in idx) / n

        for name in ("forward", "launch", "fill", "wait", "sample", "sample_hidden", "step"):
            out[f"{name}_ms"] = mean(getattr(self, f"{name}_s"))
        over = [
            self.step_s[i]
            - self.launch_s[i]
            - self.wait_s[i]
            - self.fill_s[i]
            - self.sample_hidden_s[i]
            for i in idx
        ]
        out["overhead_ms"] = 1000 * sum(over) / n
        # the median too: a garbage collection or a page fault in one step moves the mean
        out["overhead_p50_ms"] = 1000 * sorted(over)[n // 2]
        out["sample_p50_ms"] = 1000 * sorted(self.sample_s[i] for i in idx)[n // 2]
        out["hidden"] = sum(1 for i in idx if self.wait_s[i] > 0) / n
        return out
