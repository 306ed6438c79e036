"""The Model Runner V2 logits processor
(``vllm/v1/worker/gpu/sample/logits_processor/interface.py``)."""

from __future__ import annotations

import time
from typing import Any

from vllm.v1.worker.gpu.sample.logits_processor.interface import (  # type: ignore[import-not-found, unused-ignore]
    LogitsProcessor,
)

from toolmask.integrations.vllm._core import (
    BatchConstrainer,
    check_spec,
    overlap_enabled,
    read_spec,
    step_stats,
)
from toolmask.integrations.vllm._v1 import _model, _temperature
from toolmask.vocab import Vocabulary

__all__ = ["ToolmaskLogitsProcessorV2"]


class ToolmaskLogitsProcessorV2(LogitsProcessor):  # type: ignore[misc, unused-ignore]
    """toolmask's masks for Model Runner V2 (``VLLM_USE_V2_MODEL_RUNNER=1``): per-request
    state keyed by the request slot, created in :meth:`add_request`.

    Tokens reach the matchers without the V1 interface's live output lists: a slot's committed
    output is ``all_token_ids[slot, prompt_len:seq_len]``; in a decode step that is one new
    token, the row's ``input_ids`` entry (one host copy for the batch), and after a
    resumption the whole run is read back from ``all_token_ids``. Speculative decoding (several
    rows per request) is refused in ``__init__``, as vLLM refuses it for V1 processors.

    Overlap: :meth:`apply_staged_writes` runs once per step before the forward pass. There each
    constrained slot's committed length (``total_len``) and newest token are gathered on the
    device and copied to pinned memory without waiting, and the fill thread, once that copy has
    landed (it is queued before the forward), feeds them and fills every constrained slot's
    row; :meth:`apply` then picks the step's rows from it. A slot that missed more than one
    token (a resumption), or a request state without ``total_len``, falls back to the fill in
    :meth:`apply`. ``TOOLMASK_VLLM_OVERLAP=0`` turns it off.
    """

    def __init__(self, vllm_config: Any, req_states: Any) -> None:
        if getattr(vllm_config, "speculative_config", None) is not None:
            raise ValueError("toolmask's logits processor does not support speculative decoding")
        self.req_states = req_states
        vocab, fmt = self._model(vllm_config)
        self.constrainer = BatchConstrainer(vocab, fmt=fmt)
        self._prompt_len: dict[int, int] = {}
        self.stats = step_stats()
        self.overlap = overlap_enabled()
        self._pinned: Any = None

    def _model(self, vllm_config: Any) -> tuple[Vocabulary, str]:
        """The model's vocabulary and wire format (overridden in tests without a vLLM config)."""
        return _model(vllm_config)

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        check_spec(sampling_params.extra_args)

    def add_request(self, req_idx: int, sampling_params: Any) -> bool:
        self.constrainer.settle()  # a fill in flight reads the slots
        self._prompt_len.pop(req_idx, None)  # read on the slot's first apply
        spec = read_spec(sampling_params.extra_args)
        return self.constrainer.add(req_idx, spec, None, _temperature(sampling_params))

    def apply_staged_writes(self) -> None:
        """Before the forward pass: start the next bitmask's fill (see the class docstring)."""
        c = self.constrainer
        total = getattr(self.req_states, "total_len", None)
        if not self.overlap or not c.slots or total is None:
            return
        import torch  # type: ignore[import-not-found, unused-ignore]

        c.settle()
        slots = sorted(c.slots)
        rs = self.req_states
        table = rs.all_token_ids.gpu
        idx = torch.tensor(slots, dtype=torch.long).to(table.device, non_blocking=True)
        lens = total.gpu.index_select(0, idx).long()
        last = table[idx, (lens - 1).clamp_min(0)]
        ready = None
        if table.device.type == "cuda":
            n = len(slots)
            if self._pinned is None or self._pinned.shape[1] < n:
                self._pinned = torch.empty((2, max(n, 64)), dtype=torch.long, pin_memory=True)
            host = self._pinned[:, :n]
            host[0].copy_(lens, non_blocking=True)
            host[1].copy_(last, non_blocking=True)
            ready = torch.cuda.Event()  # type: ignore[no-untyped-call, unused-ignore]
            ready.record()
        else:
            host = torch.stack([lens, last.long()])
        for s in slots:
            if s not in self._prompt_len:
                self._prompt_len[s] = int(rs.prompt_len.np[s])
        prompt = [self._prompt_len[s] for s in slots]

        def prepare() -> bool:
            if ready is not None:
                ready.synchronize()  # only what was queued before the forward
            done_l, last_l = host.tolist()
            caught_up = True
            for s, p, n, t in zip(slots, prompt, done_l, last_l, strict=True):
                gap = max(0, int(n) - p) - c.slots[s].fed
                if gap == 1:
                    c.feed(s, [int(t)])
                elif gap > 1:
                    caught_up = False  # a resumption: apply reads the run
            return caught_up

        c.fill_ahead_with(slots, prepare)

    def apply(self, logits: Any, ctx: Any) -> Any:
        t0 = time.perf_counter()
        out, rows = self._apply(logits, ctx)
        if self.stats is not None:
            spent = time.perf_counter() - t0
            behind = self.constrainer.ahead_s if rows else 0.0
            self.stats.add(int(logits.shape[0]), rows, spent, spent + behind, behind > 0)
        return out

    def _apply(self, logits: Any, ctx: Any) -> tuple[Any, int]:
        c = self.constrainer
        if not c.slots:
            c.settle()
            return logits, 0
        slots = [int(s) for s in ctx.idx_mapping_np]
        rows = [(r, s) for r, s in enumerate(slots) if s in c.slots]
        if not rows:
            c.settle()
            return logits, 0
        filled = c.take_slots(rows)
        lens = ctx.seq_lens_upper_bound_np
        if filled is not None and all(
            max(0, int(lens[r]) - self._prompt_len.get(s, 0)) == c.slots[s].fed for r, s in rows
        ):  # the fill ahead saw every token this step's rows have: it is this step's mask
            return c.apply(logits, rows, filled), len(rows)
        rs = self.req_states
        lens = ctx.seq_lens_upper_bound_np
        newest: list[int] | None = None
        for r, s in rows:
            st = c.slots[s]
            if s not in self._prompt_len:
                self._prompt_len[s] = int(rs.prompt_len.np[s])
            done = max(0, int(lens[r]) - self._prompt_len[s])  # committed output tokens
            gap = done - st.fed
            if gap == 1:
                if newest is None:
                    newest = [int(t) for t in ctx.input_ids.tolist()]
                c.feed(s, [newest[r]])
            elif gap > 1:
                a = self._prompt_len[s] + st.fed
                run = rs.all_token_ids.gpu[s, a : a + gap].tolist()
                c.feed(s, [int(t) for t in run])
        return c.apply(logits, rows), len(rows)
