"""The example torch PPO (examples/torch_ppo.py): learning CartPole, determinism, its flags.
Its GAE is the crosscheck's, tested in tests/test_crosscheck.py."""

import math

import numpy as np
import pytest

from examples.torch_ppo import Args, parse_args, train


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
