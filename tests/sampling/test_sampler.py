"""Sampler: masking, temperature, top-k, top-p, min-p, greedy, reproducibility, errors."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolmask.sampling import Sampler, SamplingParams, bitmask_from_ids, new_bitmask


def softmax(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    e = np.exp(x - x.max())
    return e / e.sum()  # type: ignore[no-any-return]


LOG = np.log(np.array([0.1, 0.4, 0.2, 0.3]))  # probabilities 0.1, 0.4, 0.2, 0.3


# --- the property the issue demands ----------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(data=st.data(), v=st.integers(1, 3000))
def test_constrained_equals_renormalised_unconstrained(data: st.DataObject, v: int) -> None:
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal(v) * data.draw(st.sampled_from([0.1, 1.0, 5.0, 30.0]))).astype(
        data.draw(st.sampled_from([np.float32, np.float64]))
    )
    allowed = rng.random(v) < data.draw(st.floats(0.01, 1.0))
    allowed[rng.integers(v)] = True
    mask = bitmask_from_ids(np.flatnonzero(allowed), v)

    probs = Sampler().probabilities(logits, mask)
    full = softmax(logits.astype(np.float64))
    want = np.where(allowed, full, 0.0)
    want /= want.sum()
    assert probs.dtype == np.float64
    np.testing.assert_allclose(probs, want, rtol=1e-9, atol=1e-300)
    assert probs.sum() == pytest.approx(1.0)
    assert (probs[~allowed] == 0).all()

    best = int(np.flatnonzero(allowed)[np.argmax(logits[allowed])])
    assert Sampler(temperature=0).sample(logits, mask) == best
    assert Sampler(temperature=0).probabilities(logits, mask)[best] == 1.0
    assert allowed[Sampler(seed=seed).sample(logits, mask)]


def test_unmasked_is_softmax() -> None:
    probs = Sampler().probabilities(LOG)
    np.testing.assert_allclose(probs, [0.1, 0.4, 0.2, 0.3])


# --- greedy ----------------------------------------------------------------------------------


def test_greedy_picks_best_allowed_and_lowest_id_on_ties() -> None:
    x = np.array([1.0, 5.0, 3.0, 3.0, 5.0])
    s = Sampler(temperature=0)
    assert s.sample(x) == 1
    assert s.sample(x, bitmask_from_ids([2, 3, 4], 5)) == 4
    assert s.sample(x, bitmask_from_ids([0, 2, 3], 5)) == 2
    assert s.sample(x, bitmask_from_ids([0], 5)) == 0


def test_greedy_ignores_filters() -> None:
    s = Sampler(temperature=0, top_k=1, top_p=0.1, min_p=0.9)
    assert s.sample(LOG) == 1


# --- temperature, top-k, top-p, min-p on hand-computed examples ----------------------------------


def test_temperature() -> None:
    # T = 0.5 squares the probabilities before renormalising: 0.01 .16 .04 .09 / 0.30
    probs = Sampler(temperature=0.5).probabilities(LOG)
    np.testing.assert_allclose(probs, np.array([0.01, 0.16, 0.04, 0.09]) / 0.30)
    # T = 2 takes square roots
    sq = np.sqrt([0.1, 0.4, 0.2, 0.3])
    np.testing.assert_allclose(Sampler(temperature=2).probabilities(LOG), sq / sq.sum())


def test_top_k() -> None:
    np.testing.assert_allclose(Sampler(top_k=2).probabilities(LOG), [0, 0.4 / 0.7, 0, 0.3 / 0.7])
    np.testing.assert_allclose(Sampler(top_k=1).probabilities(LOG), [0, 1, 0, 0])
    np.testing.assert_allclose(Sampler(top_k=10).probabilities(LOG), [0.1, 0.4, 0.2, 0.3])


def test_top_k_ties_go_to_lowest_ids() -> None:
    x = np.array([0.0, 1.0, 1.0, 1.0, 2.0])
    e = np.exp(1.0)
    np.testing.assert_allclose(
        Sampler(top_k=2).probabilities(x), [0, 1 / (1 + e), 0, 0, e / (1 + e)]
    )
    assert np.flatnonzero(Sampler(top_k=3).probabilities(x)).tolist() == [1, 2, 4]


def test_top_k_counts_allowed_tokens_only() -> None:
    mask = bitmask_from_ids([0, 2], 4)
    np.testing.assert_allclose(Sampler(top_k=1).probabilities(LOG, mask), [0, 0, 1, 0])
    np.testing.assert_allclose(Sampler(top_k=2).probabilities(LOG, mask), [1 / 3, 0, 2 / 3, 0])


@pytest.mark.parametrize(
    ("top_p", "kept"),
    [
        (0.39, [1]),
        (0.41, [1, 3]),  # 0.4 + 0.3
        (0.69, [1, 3]),
        (0.71, [1, 2, 3]),
        (0.9, [1, 2, 3]),
        (0.95, [0, 1, 2, 3]),
        (1.0, [0, 1, 2, 3]),
        (1e-9, [1]),  # always at least one token
    ],
)
def test_top_p(top_p: float, kept: list[int]) -> None:
    probs = Sampler(top_p=top_p).probabilities(LOG)
    assert np.flatnonzero(probs).tolist() == kept
    base = np.array([0.1, 0.4, 0.2, 0.3])
    np.testing.assert_allclose(probs[kept], base[kept] / base[kept].sum())


def test_top_p_after_top_k_uses_the_remaining_mass() -> None:
    # top-k=3 leaves .4 .2 .3 (mass .9); top_p=0.7 of that is .63: .4 + .3 = .7 >= .63
    probs = Sampler(top_k=3, top_p=0.7).probabilities(LOG)
    assert np.flatnonzero(probs).tolist() == [1, 3]


def test_top_p_ties_go_to_lowest_ids() -> None:
    x = np.zeros(6)
    assert np.flatnonzero(Sampler(top_p=0.5).probabilities(x)).tolist() == [0, 1, 2]


def test_top_p_large_vocab_matches_full_sort() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(50_000) * 3
    for top_p in (0.01, 0.5, 0.9, 0.999):
        probs = Sampler(top_p=top_p).probabilities(x)
        p = softmax(x)
        order = np.argsort(-p, kind="stable")
        n = int(np.searchsorted(np.cumsum(p[order]), top_p)) + 1
        assert set(np.flatnonzero(probs).tolist()) == set(order[:n].tolist())


@pytest.mark.parametrize(
    ("min_p", "kept"),
    [(0.0, [0, 1, 2, 3]), (0.24, [0, 1, 2, 3]), (0.26, [1, 2, 3]), (0.49, [1, 2, 3]),
     (0.51, [1, 3]), (0.74, [1, 3]), (0.76, [1]), (1.0, [1])],
)  # fmt: skip
def test_min_p(min_p: float, kept: list[int]) -> None:
    # threshold = min_p * 0.4: 0.1 survives up to min_p = .25, 0.2 up to .5, 0.3 up to .75
    probs = Sampler(min_p=min_p).probabilities(LOG)
    assert np.flatnonzero(probs).tolist() == kept


def test_min_p_after_top_p() -> None:
    # top_p=0.85 keeps .4 .3 .2; min_p=0.6 (threshold .24) then drops .2
    probs = Sampler(top_p=0.85, min_p=0.6).probabilities(LOG)
    np.testing.assert_allclose(probs, [0, 4 / 7, 0, 3 / 7])


# --- drawing ---------------------------------------------------------------------------------


def test_seed_reproducible() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    mask = bitmask_from_ids(rng.choice(1000, 400, replace=False), 1000)
    a = Sampler(seed=42, top_p=0.95)
    b = Sampler(SamplingParams(top_p=0.95, seed=42))
    draws_a = [a.sample(x, mask) for _ in range(50)]
    draws_b = [b.sample(x, mask) for _ in range(50)]
    assert draws_a == draws_b
    assert len(set(draws_a)) > 1
    c = Sampler(seed=43, top_p=0.95)
    assert [c.sample(x, mask) for _ in range(50)] != draws_a


def test_draws_follow_the_distribution() -> None:
    s = Sampler(seed=7)
    counts = np.bincount([s.sample(LOG) for _ in range(4000)], minlength=4)
    np.testing.assert_allclose(counts / 4000, [0.1, 0.4, 0.2, 0.3], atol=0.03)


def test_draws_respect_filters_and_mask() -> None:
    s = Sampler(seed=1, top_k=3, min_p=0.6)
    mask = bitmask_from_ids([0, 1, 2], 4)  # top-k 3 of {.1 .4 .2} = all; min_p .24 keeps {1}
    assert {s.sample(LOG, mask) for _ in range(100)} == {1}


def test_neg_inf_logits_are_never_drawn() -> None:
    x = np.array([-np.inf, 0.0, -np.inf, 0.0])
    s = Sampler(seed=0)
    assert {s.sample(x) for _ in range(200)} == {1, 3}
    np.testing.assert_allclose(s.probabilities(x), [0, 0.5, 0, 0.5])


def test_pos_inf_logits_dominate() -> None:
    x = np.array([0.0, np.inf, 5.0, np.inf])
    np.testing.assert_allclose(Sampler().probabilities(x), [0, 0.5, 0, 0.5])
    assert Sampler(temperature=0).sample(x) == 1


def test_extreme_logits_are_stable() -> None:
    x = np.array([1e4, 1e4 - 1, -1e4], dtype=np.float32)
    probs = Sampler(temperature=0.01).probabilities(x)
    assert np.isfinite(probs).all() and probs[0] == pytest.approx(1.0)


def test_list_and_int_logits_are_accepted() -> None:
    assert Sampler(temperature=0).sample([1, 3, 2]) == 1


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [0, 1])
def test_all_masked_raises(temperature: float) -> None:
    s = Sampler(temperature=temperature)
    with pytest.raises(ValueError, match="no token allowed by the mask"):
        s.sample(LOG, new_bitmask(4))
    with pytest.raises(ValueError, match="no token allowed by the mask"):
        s.probabilities(LOG, new_bitmask(4))


@pytest.mark.parametrize("temperature", [0, 1])
def test_allowed_only_neg_inf_raises(temperature: float) -> None:
    x = np.array([0.0, -np.inf, 0.0])
    with pytest.raises(ValueError, match="no token allowed"):
        Sampler(temperature=temperature).sample(x, bitmask_from_ids([1], 3))


@pytest.mark.parametrize("temperature", [0, 1])
def test_nan_raises(temperature: float) -> None:
    x = np.array([0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="NaN"):
        Sampler(temperature=temperature).sample(x)


def test_bad_shapes_raise() -> None:
    with pytest.raises(ValueError, match="1-D"):
        Sampler().sample(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="covers 32"):
        Sampler().sample(np.zeros(40), new_bitmask(32))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", -0.1),
        ("temperature", float("nan")),
        ("temperature", float("inf")),
        ("top_k", -1),
        ("top_k", 1.5),
        ("top_p", 0.0),
        ("top_p", 1.01),
        ("top_p", float("nan")),
        ("min_p", -0.01),
        ("min_p", 1.5),
        ("seed", -1),
    ],
)
def test_params_validation_names_the_field(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        SamplingParams(**{field: value})  # type: ignore[arg-type]


def test_params_frozen_and_overrides() -> None:
    p = SamplingParams(temperature=0.7, seed=3)
    with pytest.raises(AttributeError):
        p.temperature = 1.0  # type: ignore[misc]
    s = Sampler(p, top_k=5)
    assert s.params == SamplingParams(temperature=0.7, top_k=5, seed=3)
    assert SamplingParams(temperature=0).greedy
    with pytest.raises(TypeError):
        Sampler(bogus=1)


# --- torch (optional) ------------------------------------------------------------------------


def test_torch_logits_and_mask() -> None:
    torch = pytest.importorskip("torch")
    x = torch.tensor(LOG, dtype=torch.bfloat16)
    mask = torch.from_numpy(bitmask_from_ids([0, 2], 4))
    assert Sampler(temperature=0).sample(x, mask) == 2
    probs = Sampler().probabilities(torch.tensor(LOG), mask)
    np.testing.assert_allclose(probs, [1 / 3, 0, 2 / 3, 0], rtol=1e-6)
