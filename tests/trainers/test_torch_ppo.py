"""The torch PPO: its GAE by hand and against a plain double loop, and learning CartPole."""

import math

import numpy as np
import pytest
import torch

from gymjax.trainers.torch_ppo import Args, compute_gae_torch, parse_args, train


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


def test_ppo_learns_cartpole():
    args = Args(env_id="JaxCartPole-v0", num_envs=8, num_steps=128, total_timesteps=20_480,
                learning_rate=2.5e-3, torch_threads=1, seed=1)
    history = train(args).history
    assert len(history) == 20 and history[-1]["train/global_step"] == 20_480
    first = history[0]["episode/return"]
    last = np.nanmean([m["episode/return"] for m in history[-5:]])
    assert first < 40  # a random policy's ~22
    assert last > 150  # out of reach of a random policy on CartPole


def test_same_seed_same_run_and_continuous_actions():
    args = Args(env_id="JaxPendulum-v0", num_envs=4, num_steps=32, total_timesteps=256,
                max_episode_steps=40, torch_threads=1, seed=3)
    first, second = train(args).history, train(args).history
    assert len(first) == 2
    for a, b in zip(first, second):
        assert {k: v for k, v in a.items() if k != "sps"} == pytest.approx(
            {k: v for k, v in b.items() if k != "sps"}, nan_ok=True
        )
    assert first[-1]["episode/count"] == 4 and first[-1]["episode/length"] == 40
    assert all(math.isfinite(m["losses/value_loss"]) for m in first)


def test_command_line_flags():
    args = parse_args(["--env-id", "JaxAnt-v0", "--num-envs", "64", "--no-anneal-lr",
                       "--target-kl", "0.02", "--max-episode-steps", "none"])
    assert (args.env_id, args.num_envs, args.anneal_lr, args.target_kl) == ("JaxAnt-v0", 64, False, 0.02)
    assert args.max_episode_steps is None and args.batch_size == 64 * 128
    with pytest.raises(ValueError, match="minibatches"):
        train(Args(num_envs=3, num_steps=5, total_timesteps=15, num_minibatches=4))
