"""``gymjax crosscheck``: gymjax, SB3 and the torch agent agree on one rollout, and a mismatch fails;
the torch agent's GAE (the crosscheck's compute_gae_torch) by hand and against a plain double loop."""

import numpy as np
import pytest

from gymjax import crosscheck
from gymjax.cli import main
from gymjax.crosscheck import compute_gae_torch

pytest.importorskip("stable_baselines3")
import torch  # noqa: E402  (installed with SB3)


@pytest.fixture(scope="module")
def checks():
    return crosscheck.run("JaxCartPole-v0", num_envs=4, steps=64, max_episode_steps=20, seed=0)


def test_every_check_passes_on_cartpole(checks):
    failed = [(c.name, c.max_diff) for c in checks if not c.passed]
    assert not failed
    names = " ".join(c.name for c in checks)
    for expected in ("SB3 RolloutBuffer", "torch agent", "sb3_vecmonitor", "gymnasium_stats", "brax"):
        assert expected in names
    # the rollout really holds both kinds of episode end
    window = next(c for c in checks if c.name.startswith("rollout: window"))
    assert window.passed


def test_episode_metrics_cover_timeouts():
    rollout = crosscheck.collect("JaxCartPole-v0", num_envs=2, steps=50, max_episode_steps=15, seed=0)
    lengths = [length for _, _, _, length in rollout.episodes["gymjax"]]
    assert 15 in lengths and min(lengths) < 15  # cut by the time limit, and terminated
    assert sorted(rollout.episodes["gymjax"]) == sorted(rollout.episodes["sb3_vecmonitor"])


def test_a_wrong_gae_is_caught(monkeypatch, capsys):
    real = crosscheck.compute_gae_torch

    def off_by_a_little(*args, **kwargs):
        adv, ret = real(*args, **kwargs)
        return adv + 1e-3, ret  # what a subtly wrong bootstrap would look like

    monkeypatch.setattr(crosscheck, "compute_gae_torch", off_by_a_little)
    code = main(["crosscheck", "--env", "JaxCartPole-v0", "--steps", "32"])
    out = capsys.readouterr().out
    assert code == 1
    assert "GAE advantages: gymjax == torch agent" in out and "FAIL" in out
    assert "GAE returns: gymjax == torch agent" in out


def test_brax_mode_is_reported_as_numbers(checks):
    detail = next(c.detail for c in checks if c.name.startswith("brax == standard") and c.detail)
    assert "steps differ" in detail and "timeout steps is 0" in detail
    diff = float(detail.split("advantage ")[1].split(";")[0])
    assert np.isfinite(diff) and diff > 0


def test_gae_by_hand_termination_and_truncation():
    """gamma 0.9, lambda 0.8 (gamma * lambda = 0.72); two envs, three steps.

    env 0 terminates at t=1 (its next value 9.0 must be ignored), then goes on:
      deltas: 1 + 0.9*1.0 - 0.5 = 1.4 | 2 + 0 - 1.0 = 1.0 | 3 + 0.9*2.0 - 1.5 = 3.3
      A: A2 = 3.3, A1 = 1.0 (the recursion stops at the end), A0 = 1.4 + 0.72*1.0 = 2.12
    env 1 is truncated at t=1: bootstrapped from the final observation's value 4.0:
      deltas: 1 + 0.9*1 = 1.9 | 1 + 0.9*4 = 4.6 | 1 + 0.9*1 = 1.9
      A: A2 = 1.9, A1 = 4.6, A0 = 1.9 + 0.72*4.6 = 5.212
    """
    rewards = torch.tensor([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    values = torch.tensor([[0.5, 0.0], [1.0, 0.0], [1.5, 0.0]])
    next_values = torch.tensor([[1.0, 1.0], [9.0, 4.0], [2.0, 1.0]])
    terminations = torch.tensor([[False, False], [True, False], [False, False]])
    truncations = torch.tensor([[False, False], [False, True], [False, False]])
    advantages, returns = compute_gae_torch(rewards, values, next_values, terminations, truncations, 0.9, 0.8)
    torch.testing.assert_close(advantages, torch.tensor([[2.12, 5.212], [1.0, 4.6], [3.3, 1.9]]))
    torch.testing.assert_close(returns, advantages + values)


def _gae_by_sums(rewards, values, next_values, terminations, truncations, gamma, lam):
    """A_t = sum_l (gamma lam)^l delta_{t+l} up to the episode's end, in Python floats."""
    steps, envs = rewards.shape
    out = np.zeros((steps, envs))
    for b in range(envs):
        deltas = [
            rewards[t, b] + gamma * (1 - terminations[t, b]) * next_values[t, b] - values[t, b]
            for t in range(steps)
        ]
        for t in range(steps):
            total, weight = 0.0, 1.0
            for k in range(t, steps):
                total += weight * deltas[k]
                if terminations[k, b] or truncations[k, b]:
                    break
                weight *= gamma * lam
            out[t, b] = total
    return out


def test_gae_equals_the_sum_definition_on_random_rollouts():
    rng = np.random.default_rng(0)
    shape = (40, 5)
    rewards, values, next_values = (rng.normal(size=shape) for _ in range(3))
    terminations = rng.random(shape) < 0.08
    truncations = (rng.random(shape) < 0.08) & ~terminations
    expected = _gae_by_sums(rewards, values, next_values, terminations, truncations, 0.99, 0.95)
    as_tensor = [torch.tensor(a, dtype=torch.float32) for a in (rewards, values, next_values)]
    advantages, returns = compute_gae_torch(
        *as_tensor, torch.tensor(terminations), torch.tensor(truncations), 0.99, 0.95
    )
    np.testing.assert_allclose(advantages.numpy(), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(returns.numpy(), expected + values, rtol=1e-4, atol=1e-4)
    # 0/1 floats for the flags mean the same as bools.
    again, _ = compute_gae_torch(*as_tensor, torch.tensor(terminations, dtype=torch.float32),
                                 torch.tensor(truncations, dtype=torch.float32), 0.99, 0.95)
    torch.testing.assert_close(again, advantages)
