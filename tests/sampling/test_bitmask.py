"""Bitmask layout (xgrammar's), conversions, and apply_bitmask on numpy arrays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmask.sampling import (
    apply_bitmask,
    bitmask_from_ids,
    bitmask_size,
    bitmask_to_bool,
    bitmask_to_ids,
    new_bitmask,
)


@pytest.mark.parametrize(("v", "w"), [(0, 0), (1, 1), (31, 1), (32, 1), (33, 2), (151_936, 4748)])
def test_bitmask_size(v: int, w: int) -> None:
    assert bitmask_size(v) == w
    assert new_bitmask(v).shape == (w,)
    assert new_bitmask(v).dtype == np.int32


def test_bitmask_size_rejects_negative() -> None:
    with pytest.raises(ValueError, match="vocab_size"):
        bitmask_size(-1)


def test_layout_is_xgrammars() -> None:
    # token t <-> bit t % 32 of word t // 32, words read as uint32
    m = bitmask_from_ids([0, 31, 32, 65], 70)
    words = m.view(np.uint32)
    assert words.tolist() == [(1 << 0) | (1 << 31), 1 << 0, 1 << 1]
    assert m[0] < 0  # bit 31 set: negative as int32, as in xgrammar


@pytest.mark.parametrize("v", [1, 5, 31, 32, 33, 64, 100, 151_936])
def test_fill_sets_exactly_the_vocab_and_no_padding_bits(v: int) -> None:
    m = new_bitmask(v, fill=True)
    words = m.view(np.uint32)
    assert bitmask_to_bool(m, v).all()
    padded = np.unpackbits(words.view(np.uint8), bitorder="little")
    assert padded[:v].all()
    assert not padded[v:].any()  # padding bits beyond V are clear
    if v % 32:
        assert int(words[-1]) == (1 << (v % 32)) - 1
    assert np.array_equal(bitmask_to_ids(m, v), np.arange(v))


def test_empty_mask_and_ids() -> None:
    m = new_bitmask(50)
    assert bitmask_to_ids(m, 50).tolist() == []
    assert np.array_equal(bitmask_from_ids([], 50), m)
    assert bitmask_to_ids(m, 50).dtype == np.int64


def test_from_ids_accepts_iterables_and_duplicates() -> None:
    a = bitmask_from_ids({3, 7}, 10)
    b = bitmask_from_ids(iter([7, 3, 3]), 10)
    c = bitmask_from_ids(np.array([[3], [7]], dtype=np.int16), 10)
    assert np.array_equal(a, b) and np.array_equal(a, c)
    assert bitmask_to_ids(a, 10).tolist() == [3, 7]


@pytest.mark.parametrize("bad", [-1, 10])
def test_from_ids_rejects_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError, match=f"token id {bad}"):
        bitmask_from_ids([1, bad], 10)


def test_to_ids_ignores_bits_beyond_vocab() -> None:
    m = new_bitmask(64, fill=True)
    assert bitmask_to_ids(m, 40).tolist() == list(range(40))
    assert bitmask_to_bool(m, 40).shape == (40,)


def test_to_bool_rejects_short_mask_and_bad_dtype() -> None:
    with pytest.raises(ValueError, match="covers 32 token ids"):
        bitmask_to_bool(new_bitmask(32), 33)
    with pytest.raises(TypeError, match="int32"):
        bitmask_to_bool(np.zeros(2, dtype=np.int64), 40)


def test_uint32_view_is_accepted() -> None:
    m = bitmask_from_ids([1, 63], 64)
    assert bitmask_to_ids(m.view(np.uint32), 64).tolist() == [1, 63]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), v=st.integers(1, 5000))
def test_round_trip(data: st.DataObject, v: int) -> None:
    ids = data.draw(st.sets(st.integers(0, v - 1), max_size=min(v, 300)))
    m = bitmask_from_ids(sorted(ids), v)
    assert m.shape == (bitmask_size(v),) and m.dtype == np.int32
    assert bitmask_to_ids(m, v).tolist() == sorted(ids)
    as_bool = bitmask_to_bool(m, v)
    assert as_bool.shape == (v,) and int(as_bool.sum()) == len(ids)
    assert np.array_equal(bitmask_from_ids(np.flatnonzero(as_bool), v), m)
    # padding bits stay clear
    bits = np.unpackbits(m.view(np.uint8), bitorder="little")
    assert not bits[v:].any()


@settings(max_examples=100, deadline=None)
@given(data=st.data(), v=st.integers(1, 5000))
def test_round_trip_dense(data: st.DataObject, v: int) -> None:
    seed = data.draw(st.integers(0, 2**32 - 1))
    allowed = np.random.default_rng(seed).random(v) < data.draw(st.floats(0, 1))
    m = bitmask_from_ids(np.flatnonzero(allowed), v)
    assert np.array_equal(bitmask_to_bool(m, v), allowed)


# --- apply_bitmask ---------------------------------------------------------------------------


def test_apply_1d_copies_by_default() -> None:
    logits = np.arange(40, dtype=np.float32)
    m = bitmask_from_ids([0, 5, 39], 40)
    out = apply_bitmask(logits, m)
    assert out.dtype == np.float32
    assert np.isfinite(out).nonzero()[0].tolist() == [0, 5, 39]
    assert out[5] == 5.0
    assert np.isneginf(out[1])
    assert np.isfinite(logits).all()  # untouched


def test_apply_inplace() -> None:
    logits = np.zeros(40)
    m = bitmask_from_ids([3], 40)
    out = apply_bitmask(logits, m, inplace=True)
    assert out is logits
    assert np.isfinite(logits).nonzero()[0].tolist() == [3]


def test_apply_batch_row_masks() -> None:
    rng = np.random.default_rng(0)
    b, v = 3, 100
    logits = rng.standard_normal((b, v))
    rows = [[0, 1], [50], list(range(90, 100))]
    masks = np.stack([bitmask_from_ids(r, v) for r in rows])
    out = apply_bitmask(logits, masks)
    assert out.shape == (b, v)
    for i, r in enumerate(rows):
        assert np.isfinite(out[i]).nonzero()[0].tolist() == r
        assert np.array_equal(out[i, r], logits[i, r])


def test_apply_batch_shared_mask() -> None:
    logits = np.zeros((2, 33), dtype=np.float16)
    out = apply_bitmask(logits, bitmask_from_ids([32], 33))
    assert out.dtype == np.float16
    assert (np.isfinite(out).sum(axis=1) == 1).all() and np.isfinite(out[:, 32]).all()


def test_apply_narrower_logits_ignore_ids_beyond_width() -> None:
    m = bitmask_from_ids([2, 60], 64)
    out = apply_bitmask(np.zeros(50), m)
    assert np.isfinite(out).nonzero()[0].tolist() == [2]


@pytest.mark.parametrize(
    ("lshape", "mshape"),
    [((65,), (2,)), ((2, 10), (3, 1)), ((10,), (2, 1)), ((2, 2, 10), (1,))],
)
def test_apply_rejects_bad_shapes(lshape: tuple[int, ...], mshape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"logits of shape .* bitmask of shape"):
        apply_bitmask(np.zeros(lshape), np.zeros(mshape, dtype=np.int32))


def test_apply_rejects_int_logits() -> None:
    with pytest.raises(TypeError, match="float"):
        apply_bitmask(np.zeros(4, dtype=np.int64), new_bitmask(4))


# --- torch (optional) ------------------------------------------------------------------------


def test_apply_torch_matches_numpy() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((2, 70)).astype(np.float32)
    masks = np.stack([bitmask_from_ids([0, 31, 69], 70), bitmask_from_ids([32, 33], 70)])
    want = apply_bitmask(logits, masks)
    t = torch.from_numpy(logits.copy())
    for m in (masks, torch.from_numpy(masks)):
        got = apply_bitmask(t, m)
        assert isinstance(got, torch.Tensor)
        assert np.array_equal(got.numpy(), want)
    assert torch.isfinite(t).all()  # not in place by default
    assert apply_bitmask(t, masks, inplace=True) is t
    assert np.array_equal(t.numpy(), want)
    devices = ["cuda"] if torch.cuda.is_available() else []
    for dev in devices:
        got = apply_bitmask(torch.from_numpy(logits).to(dev), torch.from_numpy(masks))
        assert np.array_equal(got.cpu().numpy(), want)
