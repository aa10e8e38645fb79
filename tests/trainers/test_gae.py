"""GAE: hand-computed values for both modes, a plain-loop reference, and where the modes agree."""

import numpy as np
import pytest

from gymjax.trainers.gae import compute_gae


def col(*values):
    """A ``[T, 1]`` column."""
    return np.array(values, np.float32)[:, None]


def test_standard_by_hand():
    # gamma = 0.5, lambda = 0.5. Step 1 is cut by the time limit, step 2 terminates.
    r, v, nv = col(1, 2, 3), col(10, 20, 30), col(20, 40, 99)
    term, trunc = col(0, 0, 1), col(0, 1, 0)
    adv, ret = compute_gae(r, v, nv, term, trunc, gamma=0.5, gae_lambda=0.5)
    # delta0 = 1 + 0.5*20 - 10 = 1
    # delta1 = 2 + 0.5*40 - 20 = 2     (timeout: bootstrapped from the final obs's value)
    # delta2 = 3 + 0 - 30 = -27        (terminal: no bootstrap)
    # adv2 = -27; adv1 = 2 (episode ended, recursion stops); adv0 = 1 + 0.25*2 = 1.5
    np.testing.assert_allclose(adv[:, 0], [1.5, 2.0, -27.0], rtol=1e-6)
    np.testing.assert_allclose(ret[:, 0], [11.5, 22.0, 3.0], rtol=1e-6)


def test_brax_by_hand():
    # Same data as above. Brax masks the truncated step instead of bootstrapping.
    r, v, nv = col(1, 2, 3), col(10, 20, 30), col(20, 40, 99)
    term, trunc = col(0, 0, 1), col(0, 1, 0)
    adv, ret = compute_gae(r, v, nv, term, trunc, gamma=0.5, gae_lambda=0.5, mode="brax")
    # deltas: d0 = (1 + 0.5*20 - 10) * 1 = 1; d1 = (2 + 0.5*40 - 20) * 0 = 0; d2 = 3 - 30 = -27
    # acc2 = -27; acc1 = 0 + 0.25*(1-0)*(1-1)*acc2 = 0; acc0 = 1 + 0.25*acc1 = 1
    # vs = acc + v = [11, 20, 3]
    # adv0 = (1 + 0.5*vs1 - 10) = 1; adv1 = masked = 0; adv2 = 3 + 0 - 30 = -27
    np.testing.assert_allclose(ret[:, 0], [11.0, 20.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(adv[:, 0], [1.0, 0.0, -27.0], rtol=1e-6)


def reference_standard(r, v, nv, term, trunc, gamma, lam):
    """A plain loop over time, the textbook definition."""
    adv = np.zeros_like(r)
    last = np.zeros(r.shape[1], np.float64)
    for t in reversed(range(r.shape[0])):
        delta = r[t] + gamma * (1 - term[t]) * nv[t] - v[t]
        last = delta + gamma * lam * (1 - np.maximum(term[t], trunc[t])) * last
        adv[t] = last
    return adv, adv + v


def reference_brax(r, v, nv, term, trunc, gamma, lam):
    """Brax's compute_gae + advantage written as Brax writes it: ``values[t + 1]`` from the
    next row (here: a *different* number where the episode ended, as after an auto-reset)."""
    values_next = np.concatenate([v[1:], nv[-1:]])
    mask = 1 - trunc
    deltas = (r + gamma * (1 - term) * values_next - v) * mask
    acc = np.zeros(r.shape[1])
    vs_minus_v = np.zeros_like(r)
    for t in reversed(range(r.shape[0])):
        acc = deltas[t] + gamma * (1 - term[t]) * mask[t] * lam * acc
        vs_minus_v[t] = acc
    vs = vs_minus_v + v
    vs_next = np.concatenate([vs[1:], nv[-1:]])
    adv = (r + gamma * (1 - term) * vs_next - v) * mask
    return adv, vs


def random_rollout(seed, T=64, B=5, p_term=0.05, p_trunc=0.05):
    rng = np.random.default_rng(seed)
    r = rng.normal(size=(T, B))
    v = rng.normal(size=(T, B))
    term = (rng.random((T, B)) < p_term).astype(np.float64)
    trunc = (rng.random((T, B)) < p_trunc).astype(np.float64)
    # next_values: V(obs[t+1]) while the episode continues, V(final obs) where it ended
    nv = np.concatenate([v[1:], rng.normal(size=(1, B))])
    ended = np.maximum(term, trunc) > 0
    nv = np.where(ended, rng.normal(size=(T, B)), nv)
    return r, v, nv, term, trunc


@pytest.mark.parametrize("seed", [0, 1])
def test_standard_matches_loop(seed):
    r, v, nv, term, trunc = random_rollout(seed)
    adv, ret = compute_gae(r, v, nv, term, trunc, gamma=0.97, gae_lambda=0.9)
    ref_adv, ref_ret = reference_standard(r, v, nv, term, trunc, 0.97, 0.9)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, ref_ret, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1])
def test_brax_matches_brax_written_with_reset_values(seed):
    # Brax reads values[t + 1] (the next episode's first value after an auto-reset);
    # gymjax passes the final obs's value. The answers must be the same.
    r, v, nv, term, trunc = random_rollout(seed)
    adv, ret = compute_gae(r, v, nv, term, trunc, gamma=0.97, gae_lambda=0.9, mode="brax")
    ref_adv, ref_ret = reference_brax(r, v, nv, term, trunc, 0.97, 0.9)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, ref_ret, rtol=1e-5, atol=1e-5)


def test_modes_agree_with_lambda_one_and_no_truncation():
    r, v, nv, term, _ = random_rollout(3, p_trunc=0.0)
    none = np.zeros_like(term)
    std = compute_gae(r, v, nv, term, none, gamma=0.95, gae_lambda=1.0, mode="standard")
    brax = compute_gae(r, v, nv, term, none, gamma=0.95, gae_lambda=1.0, mode="brax")
    np.testing.assert_allclose(std[0], brax[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(std[1], brax[1], rtol=1e-5, atol=1e-5)


def test_modes_differ_with_truncation():
    # ... and the difference is exactly at and before the truncated steps.
    r, v, nv, term, trunc = random_rollout(4, p_term=0.0, p_trunc=0.1)
    std = compute_gae(r, v, nv, term, trunc, gamma=0.95, gae_lambda=1.0, mode="standard")
    brax = compute_gae(r, v, nv, term, trunc, gamma=0.95, gae_lambda=1.0, mode="brax")
    truncated = trunc > 0
    assert np.all(np.asarray(brax[0])[truncated] == 0.0)
    assert not np.allclose(np.asarray(std[0])[truncated], 0.0)


def test_bad_shapes_are_named():
    with pytest.raises(ValueError, match=r"next_values must have the rewards' shape"):
        compute_gae(np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((2, 2)), np.zeros((3, 2)), np.zeros((3, 2)),
                    gamma=0.9, gae_lambda=0.9)
    with pytest.raises(ValueError, match="mode must be one of"):
        compute_gae(np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 2)),
                    gamma=0.9, gae_lambda=0.9, mode="sb3")
