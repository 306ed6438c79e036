"""The Model Runner V2 logits processor
(``vllm/v1/worker/gpu/sample/logits_processor/interface.py``)."""

from __future__ import annotations

import time
from typing import Any

from vllm.v1.worker.gpu.sample.logits_processor.interface import (  # type: ignore[import-not-found, unused-ignore]
    LogitsProcessor,
)

from toolmask.integrations.vllm._core import BatchConstrainer, check_spec, read_spec, step_stats
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
    """

    def __init__(self, vllm_config: Any, req_states: Any) -> None:
        if getattr(vllm_config, "speculative_config", None) is not None:
            raise ValueError("toolmask's logits processor does not support speculative decoding")
        self.req_states = req_states
        vocab, fmt = self._model(vllm_config)
        self.constrainer = BatchConstrainer(vocab, fmt=fmt)
        self._prompt_len: dict[int, int] = {}
        self.stats = step_stats()

    def _model(self, vllm_config: Any) -> tuple[Vocabulary, str]:
        """The model's vocabulary and wire format (overridden in tests without a vLLM config)."""
        return _model(vllm_config)

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        check_spec(sampling_params.extra_args)

    def add_request(self, req_idx: int, sampling_params: Any) -> bool:
        self._prompt_len.pop(req_idx, None)  # read on the slot's first apply
        spec = read_spec(sampling_params.extra_args)
        return self.constrainer.add(req_idx, spec, None, _temperature(sampling_params))

    def apply(self, logits: Any, ctx: Any) -> Any:
        t0 = time.perf_counter()
        out, rows = self._apply(logits, ctx)
        if self.stats is not None:
            self.stats.add(int(logits.shape[0]), rows, time.perf_counter() - t0)
        return out

    def _apply(self, logits: Any, ctx: Any) -> tuple[Any, int]:
        c = self.constrainer
        if not c.slots:
            return logits, 0
        slots = [int(s) for s in ctx.idx_mapping_np]
        rows = [(r, s) for r, s in enumerate(slots) if s in c.slots]
        if not rows:
            return logits, 0
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
