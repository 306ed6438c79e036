"""The V1 logits processor (``vllm/v1/sample/logits_processor/interface.py``): the interface
of the model runner vLLM uses today, on CPU and GPU."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from vllm.v1.sample.logits_processor import (  # type: ignore[import-not-found, unused-ignore]
    BatchUpdate,
    LogitsProcessor,
    MoveDirectionality,
)

from toolmask.integrations.vllm._core import (
    BatchConstrainer,
    check_spec,
    overlap_enabled,
    read_spec,
    step_stats,
)
from toolmask.integrations.vllm._vocab import model_format, vocabulary_from_tokenizer
from toolmask.vocab import Vocabulary

__all__ = ["ToolmaskLogitsProcessor", "model_vocabulary"]


def model_vocabulary(vllm_config: Any) -> Vocabulary:
    """The vocabulary of the model vLLM serves: vLLM's own tokenizer, the logits width of the
    model config, the stop ids of its generation config."""
    return _model(vllm_config)[0]


def _model(vllm_config: Any) -> tuple[Vocabulary, str]:
    """The vocabulary and the wire format (read from the chat template and special tokens) of
    the model vLLM serves."""
    from vllm.tokenizers import (  # type: ignore[import-not-found, unused-ignore]
        cached_tokenizer_from_config,
    )

    mc = vllm_config.model_config
    gen = mc.try_get_generation_config() or {}
    eos = gen.get("eos_token_id")
    eos_ids: Iterable[int] = eos if isinstance(eos, list) else ([eos] if eos is not None else [])
    tok = cached_tokenizer_from_config(mc)
    vocab = vocabulary_from_tokenizer(tok, int(mc.get_vocab_size()), eos_ids)
    return vocab, model_format(tok)


def _temperature(params: Any) -> float:
    """A request's sampling temperature (0: greedy)."""
    t = getattr(params, "temperature", 0.0)
    return float(t) if t is not None else 0.0


class ToolmaskLogitsProcessor(LogitsProcessor):  # type: ignore[misc, unused-ignore]
    """toolmask's masks inside vLLM's V1 sampler, for requests whose
    ``SamplingParams.extra_args`` carry a turn spec (see :mod:`._core`); other requests are
    untouched. Load with ``LLM(..., logits_processors=[ToolmaskLogitsProcessor])`` or
    ``vllm serve --logits-processors toolmask.integrations.vllm:ToolmaskLogitsProcessor``.

    Not argmax-invariant (it changes which token is greedy), so vLLM calls it for greedy
    requests too. Cost per step: the batch update's bookkeeping, each constrained request's new
    tokens through its matcher and one mask copy, then one masked fill over the constrained
    rows.

    Overlap: ``update_state`` runs before the forward pass; when every constrained row's
    tokens are in by then (synchronous scheduling, vLLM's CPU backend), it starts the next
    bitmask's fill on the fill thread and ``apply`` joins it, so the engine waits for
    max(0, fill - forward). Under asynchronous scheduling the newest token is a ``-1``
    placeholder until just before sampling: then ``apply`` feeds it and fills (on a GPU the
    device is still running the forward while it does). ``TOOLMASK_VLLM_OVERLAP=0`` always
    fills in ``apply``.
    """

    def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool) -> None:
        self.device = device
        vocab, fmt = _model(vllm_config)
        self.constrainer = BatchConstrainer(vocab, fmt=fmt)
        self.stats = step_stats()
        self.overlap = overlap_enabled()
        self._spent = 0.0  # seconds in this step's update_state
        self._rows = 0  # the batch's rows, from the last batch update

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        """ValueError (HTTP 400) for a spec that does not read or whose schemas do not
        compile (compiled byte-level here, cached; the model's vocabulary is not at hand in
        vLLM's front end)."""
        check_spec(sampling_params.extra_args)

    def is_argmax_invariant(self) -> bool:
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        t0 = time.perf_counter()
        self._update(batch_update)
        if self.overlap:
            c = self.constrainer
            c.fill_ahead([(s, s) for s in sorted(c.slots) if s < self._rows])
        self._spent = time.perf_counter() - t0

    def _update(self, batch_update: BatchUpdate | None) -> None:
        c = self.constrainer
        c.settle()  # a fill still in flight (a step without apply) reads the slots
        if batch_update is not None:
            self._rows = int(batch_update.batch_size)
            for slot in batch_update.removed:
                c.remove(slot)
            for slot, params, _prompt, output in batch_update.added:
                c.add(slot, read_spec(params.extra_args), output, _temperature(params))
            for a, b, how in batch_update.moved:
                if how == MoveDirectionality.SWAP:
                    c.swap(a, b)
                else:
                    c.move(a, b)
        for slot in c.slots:
            c.catch_up(slot)

    def apply(self, logits: Any) -> Any:
        t0 = time.perf_counter()
        c = self.constrainer
        self._rows = int(logits.shape[0])
        rows = sorted((slot, slot) for slot in c.slots if slot < logits.shape[0])
        if rows:
            logits = c.apply(logits, rows)
        else:
            c.settle()
        if self.stats is not None:
            spent = self._spent + time.perf_counter() - t0
            behind = c.ahead_s if rows else 0.0  # the fill thread's share of this step
            self.stats.add(int(logits.shape[0]), len(rows), spent, spent + behind, behind > 0)
        return logits
