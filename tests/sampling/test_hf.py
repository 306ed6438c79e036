"""The transformers adapter's bookkeeping, driven by a tiny fake matcher (torch optional)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import numpy.typing as npt
import pytest

from toolmask.sampling import (
    MatcherLike,
    TransformersLogitsProcessor,
    bitmask_from_ids,
    make_logits_processor,
)


class ScriptMatcher:
    """Accepts exactly one token sequence; after its last token the matcher is finished."""

    def __init__(self, script: list[int], vocab_size: int = 40) -> None:
        self.script = script
        self.vocab_size = vocab_size
        self.fed: list[int] = []

    def accept_token(self, tid: int) -> bool:
        if self.is_finished() or self.script[len(self.fed)] != tid:
            return False
        self.fed.append(tid)
        return True

    def fill_bitmask(self, out: npt.NDArray[np.int32]) -> None:
        out[:] = bitmask_from_ids([self.script[len(self.fed)]], self.vocab_size)

    def is_finished(self) -> bool:
        return len(self.fed) == len(self.script)


def test_import_does_not_pull_torch_or_transformers() -> None:
    code = (
        "import sys, toolmask.sampling; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fake_matcher_is_matcher_like() -> None:
    assert isinstance(ScriptMatcher([1]), MatcherLike)


def test_rejects_empty_and_mismatched_matchers() -> None:
    with pytest.raises(ValueError, match="at least one"):
        TransformersLogitsProcessor([])
    with pytest.raises(ValueError, match="vocab_size"):
        TransformersLogitsProcessor([ScriptMatcher([1], 40), ScriptMatcher([1], 41)])
    with pytest.raises(ValueError, match="batch_size"):
        make_logits_processor(lambda: ScriptMatcher([1]), batch_size=0)


def _greedy_generate(
    proc: TransformersLogitsProcessor, prompt: list[list[int]], steps: int, width: int = 40
) -> list[list[int]]:
    """A minimal stand-in for ``generate``'s greedy loop (random scores, then the processor)."""
    torch = pytest.importorskip("torch")
    ids = torch.tensor(prompt, dtype=torch.long)
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        scores = torch.randn(ids.shape[0], width, generator=gen)
        out = proc(ids, scores)
        assert out.shape == scores.shape and torch.isfinite(scores).all()  # not in place
        ids = torch.cat([ids, out.argmax(dim=-1, keepdim=True)], dim=1)
    return [row[len(prompt[0]) :] for row in ids.tolist()]


def test_processor_constrains_each_row_and_feeds_new_tokens() -> None:
    pytest.importorskip("torch")
    m0, m1 = ScriptMatcher([5, 6, 7]), ScriptMatcher([33, 1, 39])
    proc = TransformersLogitsProcessor([m0, m1])
    assert proc.prompt_length is None
    out = _greedy_generate(proc, [[1, 2, 3], [4, 5, 6]], steps=3)
    assert proc.prompt_length == 3
    assert out == [[5, 6, 7], [33, 1, 39]]
    # the last token of each row is only fed on the next call
    assert m0.fed == [5, 6] and m1.fed == [33, 1]


def test_finished_rows_are_left_alone() -> None:
    torch = pytest.importorskip("torch")
    m0, m1 = ScriptMatcher([5]), ScriptMatcher([9, 10, 11])
    proc = make_logits_processor(iter([m0, m1]).__next__, batch_size=2)
    ids = torch.tensor([[1], [1]])
    scores = torch.zeros(2, 40)
    first = proc(ids, scores)
    assert torch.isfinite(first).sum(dim=1).tolist() == [1, 1]
    ids = torch.tensor([[1, 5], [1, 9]])
    second = proc(ids, scores)
    assert m0.is_finished()
    assert torch.isfinite(second[0]).all()  # finished: unconstrained (generate pads it)
    assert torch.isfinite(second[1]).nonzero().flatten().tolist() == [10]
    ids = torch.tensor([[1, 5, 0], [1, 9, 10]])  # the pad token is not fed to m0
    proc(ids, scores)
    assert m0.fed == [5] and m1.fed == [9, 10]


def test_padded_score_columns_are_disallowed() -> None:
    torch = pytest.importorskip("torch")
    proc = TransformersLogitsProcessor([ScriptMatcher([39], vocab_size=40)])
    out = proc(torch.tensor([[0]]), torch.zeros(1, 100))  # model pads its vocabulary to 100
    assert torch.isfinite(out[0]).nonzero().flatten().tolist() == [39]


def test_rejected_token_and_bad_steps_raise() -> None:
    torch = pytest.importorskip("torch")
    proc = TransformersLogitsProcessor([ScriptMatcher([5, 6])])
    proc(torch.tensor([[1]]), torch.zeros(1, 40))
    with pytest.raises(RuntimeError, match="token 7 was rejected"):
        proc(torch.tensor([[1, 7]]), torch.zeros(1, 40))
    proc = TransformersLogitsProcessor([ScriptMatcher([5, 6])])
    proc(torch.tensor([[1]]), torch.zeros(1, 40))
    with pytest.raises(RuntimeError, match="grew from 1 to 3"):
        proc(torch.tensor([[1, 5, 6]]), torch.zeros(1, 40))
    with pytest.raises(ValueError, match="2 rows"):
        proc(torch.tensor([[1, 5], [1, 5]]), torch.zeros(2, 40))
