"""The torch sampler against the numpy oracle, on CPU torch.

Same masked distribution: greedy picks are identical; sampled, the two samplers' probabilities
agree to float32 rounding with the same support, and the torch sampler's draws under a fixed
seed match its probabilities (a chi-square bound). Applying a bitmask: the byte lookup table, the
old [B, W, 32] unpacking and numpy's ``apply_bitmask`` agree; the Triton kernel runs under
Triton's interpreter when Triton is installed (a subprocess, ``TRITON_INTERPRET=1``).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from toolmask.sampling import (  # noqa: E402
    DeviceBitmask,
    Sampler,
    SamplingParams,
    TorchSampler,
    apply_bitmask,
    apply_bitmask_torch,
    bitmask_from_ids,
    new_bitmask,
)

RNG = np.random.default_rng(7)


def _random_mask(rng: np.random.Generator, v: int, density: float) -> np.ndarray:
    ids = np.flatnonzero(rng.random(v) < density)
    if ids.size == 0:
        ids = np.array([int(rng.integers(v))])
    return bitmask_from_ids(ids, v)


# -- applying a bitmask -------------------------------------------------------------------------


@pytest.mark.parametrize("v", [1, 31, 32, 33, 1000, 4099])
@pytest.mark.parametrize("method", ["lut", "unpack", "auto"])
def test_every_method_masks_like_numpy(v: int, method: str) -> None:
    rng = np.random.default_rng(v)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.from_numpy(rng.standard_normal((3, v)).astype(np.float32)).to(dtype)
        masks = np.stack([_random_mask(rng, v, d) for d in (0.01, 0.5, 0.99)])
        want = apply_bitmask(x.float().numpy(), masks)
        got = apply_bitmask_torch(x.clone(), torch.from_numpy(masks), method=method)
        assert np.array_equal(got.float().numpy(), want)
        # one [W] mask shared by every row
        want1 = apply_bitmask(x.float().numpy(), masks[1])
        got1 = apply_bitmask_torch(x.clone(), torch.from_numpy(masks[1]), method=method)
        assert np.array_equal(got1.float().numpy(), want1)
        # a 1-D row
        row = apply_bitmask_torch(x[0].clone(), torch.from_numpy(masks[0]), method=method)
        assert np.array_equal(row.float().numpy(), want[0])


def test_apply_bitmask_torch_is_in_place_and_checks_its_arguments() -> None:
    x = torch.zeros(2, 40)
    mask = torch.from_numpy(np.stack([bitmask_from_ids([3], 40)] * 2))
    out = apply_bitmask_torch(x, mask)
    assert out is x and torch.isinf(x).sum() == 2 * 39
    with pytest.raises(TypeError, match="float"):
        apply_bitmask_torch(torch.zeros(2, 40, dtype=torch.int64), mask)
    with pytest.raises(TypeError, match="int32"):
        apply_bitmask_torch(torch.zeros(2, 40), mask.long())
    with pytest.raises(ValueError, match="do not fit"):
        apply_bitmask_torch(torch.zeros(2, 65), mask)
    with pytest.raises(ValueError, match="method"):
        apply_bitmask_torch(torch.zeros(2, 40), mask, method="fast")


def test_numpy_entry_point_on_torch_uses_the_same_path() -> None:
    """``apply_bitmask`` on a tensor (the transformers logits processor's path) agrees with
    numpy, in place or not, on a non-contiguous view too."""
    v = 300
    x = torch.randn(4, v)
    mask = np.stack([_random_mask(RNG, v, 0.3) for _ in range(4)])
    want = apply_bitmask(x.numpy(), mask)
    assert np.array_equal(apply_bitmask(x, mask).numpy(), want)
    y = x.clone()
    assert apply_bitmask(y, mask, inplace=True) is y and np.array_equal(y.numpy(), want)
    t = x.t().contiguous().t()  # same values, column-major
    assert np.array_equal(apply_bitmask(t, mask).numpy(), want)


@pytest.mark.skipif(__import__("importlib").util.find_spec("triton") is None, reason="needs triton")
def test_triton_kernel_under_the_interpreter() -> None:
    code = textwrap.dedent(
        """
        import numpy as np, torch
        from toolmask.sampling import apply_bitmask, apply_bitmask_torch, bitmask_from_ids
        rng = np.random.default_rng(3)
        for v in (5, 32, 4097, 9000):
            x = torch.from_numpy(rng.standard_normal((3, v)).astype(np.float32))
            ids = [np.flatnonzero(rng.random(v) < d) for d in (0.01, 0.5, 0.99)]
            masks = np.stack([bitmask_from_ids(i, v) for i in ids])
            got = apply_bitmask_torch(x.clone(), torch.from_numpy(masks), method="triton")
            assert np.array_equal(got.numpy(), apply_bitmask(x.numpy(), masks)), v
            b = apply_bitmask_torch(x.bfloat16(), torch.from_numpy(masks), method="triton")
            want = apply_bitmask(x.bfloat16().float().numpy(), masks)
            assert np.array_equal(b.float().numpy(), want)
        print("ok")
        """
    )
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]


def test_device_bitmask_on_the_cpu_reads_host_memory() -> None:
    db = DeviceBitmask(4, "cpu", rows=2)
    assert not db.pinned
    host = db.reserve(3)
    host[:] = np.arange(12, dtype=np.int32).reshape(3, 4)
    dev = db.upload(3)
    assert dev.dtype == torch.int32 and dev.tolist() == host.tolist()
    staged = db.stage(np.ones(4, dtype=np.int32))
    assert staged.shape == (4,) and staged.tolist() == [1, 1, 1, 1]
    with pytest.raises(ValueError, match="expected"):
        db.stage(np.ones(5, dtype=np.int32))
    with pytest.raises(TypeError, match="int32"):
        db.stage(np.ones(4, dtype=np.int64))


# -- the sampler against the numpy oracle -------------------------------------------------------

PARAMS = [
    SamplingParams(temperature=1.0),
    SamplingParams(temperature=0.7),
    SamplingParams(temperature=1.3, top_k=5),
    SamplingParams(temperature=1.0, top_p=0.8),
    SamplingParams(temperature=0.8, min_p=0.05),
    SamplingParams(temperature=0.9, top_k=12, top_p=0.9, min_p=0.02),
]


def _logits(rng: np.random.Generator, v: int) -> np.ndarray:
    # distinct values spread wide enough that float32 and float64 agree on every cut
    return (rng.permutation(v) * 0.05 + rng.standard_normal(v) * 0.001).astype(np.float32)


@pytest.mark.parametrize("params", PARAMS, ids=repr)
def test_probabilities_match_numpy(params: SamplingParams) -> None:
    rng = np.random.default_rng(11)
    v = 200
    for density in (1.0, 0.3, 0.02):
        x = _logits(rng, v)
        mask = None if density == 1.0 else _random_mask(rng, v, density)
        want = Sampler(params).probabilities(x, mask)
        got = TorchSampler(params).probabilities(torch.from_numpy(x), mask).double().numpy()
        assert np.array_equal(got > 0, want > 0)  # the same support
        assert np.allclose(got, want, atol=1e-6, rtol=1e-4)


def test_top_k_ties_at_the_cut_go_to_the_lowest_ids_as_in_numpy() -> None:
    x = np.array([0.0, 2.0, 1.0, 2.0, 1.0, 1.0, 3.0, 1.0], dtype=np.float32)
    for k in range(1, 8):
        p = SamplingParams(top_k=k)
        want = Sampler(p).probabilities(x)
        got = TorchSampler(p).probabilities(torch.from_numpy(x)).double().numpy()
        assert np.array_equal(got > 0, want > 0), k
        assert np.allclose(got, want, atol=1e-6)


def test_top_p_ties_keep_the_lowest_ids_first_as_in_numpy() -> None:
    x = np.zeros(10, dtype=np.float32)  # ten equal tokens: the nucleus is a prefix of ids
    for top_p in (0.05, 0.25, 0.5, 0.95):
        p = SamplingParams(top_p=top_p)
        want = Sampler(p).probabilities(x)
        got = TorchSampler(p).probabilities(torch.from_numpy(x)).double().numpy()
        assert np.array_equal(got > 0, want > 0), top_p


def test_greedy_is_identical_to_numpy_including_ties_and_masks() -> None:
    rng = np.random.default_rng(5)
    greedy = SamplingParams(temperature=0.0)
    for _ in range(200):
        v = int(rng.integers(1, 300))
        x = rng.integers(-3, 3, size=v).astype(np.float32)  # many ties
        mask = _random_mask(rng, v, float(rng.random()))
        want = Sampler(greedy).sample(x, mask)
        assert TorchSampler(greedy).sample(torch.from_numpy(x), mask) == want
        assert TorchSampler(greedy).sample(torch.from_numpy(x).bfloat16(), mask) == want


def test_sampled_frequencies_match_the_distribution() -> None:
    """4000 seeded draws over 40 tokens: every draw in the support, and the counts within a
    chi-square bound of the numpy oracle's probabilities (p < 1e-6 under the null)."""
    rng = np.random.default_rng(2)
    v = 40
    x = (rng.standard_normal(v) * 1.5).astype(np.float32)
    mask = _random_mask(rng, v, 0.6)
    for params in (SamplingParams(temperature=0.8, seed=3), SamplingParams(top_p=0.9, seed=4)):
        p = Sampler(params).probabilities(x, mask)
        s = TorchSampler(params)
        n = 4000
        draws = np.array(
            s.sample_batch(torch.from_numpy(np.tile(x, (n, 1))), np.tile(mask, (n, 1)))
        )
        assert set(draws.tolist()) <= set(np.flatnonzero(p).tolist())
        counts = np.bincount(draws, minlength=v)
        support = p > 0
        expected = n * p[support]
        chi2 = float((((counts[support] - expected) ** 2) / expected).sum())
        dof = int(support.sum()) - 1
        assert chi2 < dof + 10 * np.sqrt(2 * dof) + 30, (chi2, dof)
        # and the numpy sampler's own draws agree with the same probabilities
        ns = Sampler(params)
        nd = np.array([ns.sample(x, mask) for _ in range(n)])
        ncounts = np.bincount(nd, minlength=v)
        nchi2 = float((((ncounts[support] - expected) ** 2) / expected).sum())
        assert nchi2 < dof + 10 * np.sqrt(2 * dof) + 30, (nchi2, dof)


def test_seeded_samplers_repeat_and_unseeded_run() -> None:
    x = torch.randn(3, 500)
    a = TorchSampler(temperature=1.0, seed=9).sample_batch(x)
    b = TorchSampler(temperature=1.0, seed=9).sample_batch(x)
    assert a == b
    assert len(TorchSampler(temperature=1.0).sample_batch(x)) == 3


def test_batch_rows_use_their_own_masks() -> None:
    v = 64
    masks = np.stack([bitmask_from_ids([i], v) for i in (5, 17, 63)])
    s = TorchSampler(temperature=1.0, seed=1)
    assert s.sample_batch(torch.randn(3, v), masks) == [5, 17, 63]
    assert TorchSampler(temperature=0).sample_batch(torch.randn(3, v), masks) == [5, 17, 63]


def test_the_sampler_never_writes_the_callers_logits() -> None:
    x = torch.randn(1, 100)
    before = x.clone()
    TorchSampler(temperature=0.5, top_k=3).sample_batch(x, bitmask_from_ids([1, 2], 100)[None])
    assert torch.equal(x, before)


def test_errors_read_like_the_numpy_samplers() -> None:
    v = 50
    nothing = new_bitmask(v)
    for params in (SamplingParams(temperature=0.0), SamplingParams(temperature=1.0)):
        with pytest.raises(ValueError, match="no token allowed"):
            TorchSampler(params).sample(torch.randn(v), nothing)
        with pytest.raises(ValueError, match="no token allowed"):
            Sampler(params).sample(np.random.randn(v), nothing)
        x = torch.zeros(v)
        x[[3, 4]] = float("-inf")
        with pytest.raises(ValueError, match="no token allowed"):
            TorchSampler(params).sample(x, bitmask_from_ids([3, 4], v))
        y = torch.zeros(v)
        y[7] = float("nan")
        with pytest.raises(ValueError, match="NaN"):
            TorchSampler(params).sample(y)
    with pytest.raises(ValueError, match="row 1"):
        TorchSampler(temperature=0).sample_batch(
            torch.randn(2, v), np.stack([new_bitmask(v, fill=True), nothing])
        )
    with pytest.raises(ValueError, match="1-D"):
        TorchSampler().sample(torch.randn(2, v))


def test_positive_infinity_is_uniform_over_the_infinite_logits() -> None:
    x = np.zeros(30, dtype=np.float32)
    x[[4, 9, 20]] = np.inf
    for params in (SamplingParams(), SamplingParams(top_p=0.5), SamplingParams(min_p=0.5)):
        want = Sampler(params).probabilities(x)
        got = TorchSampler(params).probabilities(torch.from_numpy(x)).double().numpy()
        assert np.allclose(got, want)
    assert TorchSampler(temperature=0).sample(torch.from_numpy(x)) == 4
    s = TorchSampler(top_k=2, seed=5)
    draws = {s.sample(torch.from_numpy(x)) for _ in range(60)}
    assert draws == {4, 9, 20}  # every +inf logit, and only those, whatever the filters
    masked = s.sample_batch(torch.from_numpy(np.tile(x, (2, 1))), bitmask_from_ids([9, 3], 30))
    assert masked == [9, 9]


def test_bitmask_buffer_is_filled_in_place_and_sampled_without_a_copy() -> None:
    s = TorchSampler(temperature=0, device="cpu")
    buf = s.bitmask_buffer(2, 70)
    assert buf.shape == (2, 3) and buf.dtype == np.int32
    buf[:] = np.stack([bitmask_from_ids([69], 70), bitmask_from_ids([0], 70)])
    assert s.sample_batch(torch.randn(2, 70), buf) == [69, 0]


# -- the greedy fast path and the two-phase draw ----------------------------------------------


def _packed(value: float, token: int) -> int:
    """What the fused kernel writes for a row whose first maximum is ``value`` at ``token``."""
    bits = int(np.array([value + 0.0], dtype=np.float32).view(np.uint32)[0])
    key = bits | 0x80000000 if bits < 0x80000000 else ~bits & 0xFFFFFFFF
    if value != value:
        key = 0xFFFFFFFF
    return key << 31 | (0x7FFFFFFF - token)


def test_unpack_argmax_reads_every_kind_of_maximum() -> None:
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    values = [0.0, -0.0, 1.5, -1.5, 3.0e38, -3.0e38, tiny, -tiny, np.inf, -np.inf]
    for token in (0, 1, 151935, 2**31 - 1):
        ids, vals = _unpack([_packed(v, token) for v in values])
        assert ids == [token] * len(values)
        assert vals == [float(np.float32(v)) + 0.0 for v in values]
    ids, vals = _unpack([_packed(float("nan"), 7), 0])  # 0: a row no block wrote
    assert ids[0] == 7 and vals[0] != vals[0] and vals[1] == -np.inf
    # the key orders as the values do, and equal values by the lower id
    keys = [_packed(v, 5) for v in sorted(values)]
    assert keys == sorted(keys)
    assert _packed(1.0, 3) > _packed(1.0, 4) and _packed(0.0, 9) == _packed(-0.0, 9)


def _unpack(packed: list[int]) -> tuple[list[int], list[float]]:
    from toolmask.sampling._torch import unpack_argmax

    return unpack_argmax(packed)


def test_fused_greedy_kernel_under_the_interpreter() -> None:
    """The CUDA greedy path's kernel (Triton's interpreter on CPU tensors): the same ids as the
    numpy sampler on ties, -0.0, bf16 and masks, NaN and -inf reported as the sampler's errors
    need, a row with no mask, widths around the block size."""
    pytest.importorskip("triton")
    code = textwrap.dedent(
        """
        import numpy as np, torch
        from toolmask.sampling import Sampler, SamplingParams, bitmask_from_ids
        from toolmask.sampling._torch import masked_argmax_packed, unpack_argmax
        rng = np.random.default_rng(4)
        greedy = Sampler(SamplingParams(temperature=0))
        def run(x, masks):
            out = torch.empty(x.shape[0], dtype=torch.int64)
            m = None if masks is None else torch.from_numpy(masks)
            return unpack_argmax(masked_argmax_packed(x, m, out).tolist())
        for v in (1, 7, 2047, 2048, 2049, 4500):
            for _ in range(3):
                x = rng.integers(-3, 3, size=(3, v)).astype(np.float32)  # many ties
                x[0, rng.integers(v)] = -0.0
                dens = (0.02, 0.5, 1.0)
                ids = [np.flatnonzero(rng.random(v) < d) if d < 1 else np.arange(v) for d in dens]
                masks = np.stack([bitmask_from_ids(i, v) for i in ids])
                for dt in (torch.float32, torch.bfloat16):
                    xt = torch.from_numpy(x).to(dt)
                    got, top = run(xt, masks)
                    for r in range(3):
                        row = xt[r].float().numpy()
                        if not ids[r].size:
                            assert top[r] == -np.inf
                            continue
                        want = greedy.sample(row, masks[r])
                        assert (got[r], top[r]) == (want, float(row[want])), (v, r)
                    got, _ = run(xt, None)
                    assert got == [int(np.argmax(xt[r].float().numpy())) for r in range(3)]
        x = torch.zeros(3, 100)
        x[0, 7] = float("nan")
        x[1] = float("-inf")
        x[2, 50] = float("inf")
        got, top = run(x, None)
        assert top[0] != top[0] and top[1] == -np.inf and (got[2], top[2]) == (50, np.inf)
        # a NaN the mask removes is not seen; a mask that removes everything reads -inf
        masks = np.stack([bitmask_from_ids([3], 100), bitmask_from_ids([], 100)] * 2)[:3]
        got, top = run(x, masks)
        assert (got[0], top[0]) == (3, 0.0) and top[1] == -np.inf
        print("ok")
        """
    )
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]


@pytest.mark.parametrize("params", [SamplingParams(temperature=0), *PARAMS], ids=repr)
def test_launch_then_collect_is_sample_batch(params: SamplingParams) -> None:
    rng = np.random.default_rng(8)
    x = torch.from_numpy(np.stack([_logits(rng, 300) for _ in range(4)]))
    masks = np.stack([_random_mask(rng, 300, d) for d in (0.05, 0.3, 0.9, 1.0)])
    seeded = dataclasses.replace(params, seed=21)
    want = TorchSampler(seeded).sample_batch(x, masks)
    s = TorchSampler(seeded)
    assert s.collect(s.launch_batch(x, masks)) == want
    with pytest.raises(ValueError, match="row 1"):
        s.collect(s.launch_batch(x[:2], np.stack([masks[0], new_bitmask(300)])))


@pytest.mark.parametrize("top_k", [1, 3, 7, 20])
@pytest.mark.parametrize("top_p", [1.0, 0.6])
def test_heavy_ties_at_the_top_k_cut_keep_numpys_support(top_k: int, top_p: float) -> None:
    """bf16 logits tie often: the sorted path's cut (stable: lowest ids first) is numpy's."""
    rng = np.random.default_rng(top_k)
    for _ in range(20):
        v = int(rng.integers(10, 400))
        x = rng.integers(-4, 4, size=v).astype(np.float32)
        mask = _random_mask(rng, v, float(rng.uniform(0.05, 1.0)))
        params = SamplingParams(temperature=0.8, top_k=top_k, top_p=top_p)
        want = Sampler(params).probabilities(x, mask)
        got = TorchSampler(params).probabilities(torch.from_numpy(x), mask).double().numpy()
        assert np.array_equal(got > 0, want > 0)
        assert np.allclose(got, want, atol=1e-6, rtol=1e-4)
