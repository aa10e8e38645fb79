"""The SB3-style options of the PPO trainer: reward normalization as VecNormalize does it, and the
clipped normal policy with a state-independent log std."""

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from gymjax.trainers.ppo import PPOConfig
from gymjax.trainers.ppo.networks import ClippedNormal, make_networks
from gymjax.trainers.ppo.normalization import RewardNormalizer, normalize_rewards

T, B, GAMMA = 60, 3, 0.97


class ScriptedVecEnv(VecEnv):
    """Replays fixed rewards and dones, so VecNormalize sees exactly what normalize_rewards sees."""

    def __init__(self, rewards, dones):
        space = gymnasium.spaces.Box(-1, 1, (1,), np.float32)
        super().__init__(rewards.shape[1], space, space)
        self.rewards, self.dones, self.t = rewards, dones, 0

    def reset(self):
        return np.zeros((self.num_envs, 1), np.float32)

    def step_async(self, actions):
        pass

    def step_wait(self):
        t, self.t = self.t, self.t + 1
        infos = [{"terminal_observation": np.zeros(1, np.float32)} if d else {} for d in self.dones[t]]
        return self.reset(), self.rewards[t].copy(), self.dones[t].copy(), infos

    def close(self):
        pass

    def get_attr(self, name, indices=None):
        return [None] * self.num_envs

    def set_attr(self, name, value, indices=None):
        pass

    def env_method(self, name, *args, indices=None, **kwargs):
        return [None] * self.num_envs

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * self.num_envs


def test_reward_normalization_matches_sb3_vecnormalize():
    rng = np.random.default_rng(0)
    # Rewards of different scales over time, and episode ends at different steps per env.
    rewards = (rng.normal(size=(T, B)) * np.linspace(0.5, 20, T)[:, None]).astype(np.float32)
    dones = rng.random((T, B)) < 0.08
    sb3 = VecNormalize(ScriptedVecEnv(rewards, dones), norm_obs=False, gamma=GAMMA)
    sb3.reset()
    expected = np.stack([sb3.step(np.zeros((B, 1)))[1] for _ in range(T)])

    norm, scaled = normalize_rewards(RewardNormalizer.create(B), jnp.asarray(rewards), jnp.asarray(dones), GAMMA)
    np.testing.assert_allclose(np.asarray(scaled), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(norm.returns), sb3.returns, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(float(norm.stats.var[0]), sb3.ret_rms.var, rtol=1e-5)
    assert np.any(np.abs(expected) == 10.0) or np.std(expected) < np.std(rewards)  # it did scale


def test_reward_normalization_carries_over_calls():
    """Two halves in a row give what the whole does: the state between rollouts is complete."""
    rng = np.random.default_rng(1)
    rewards = jnp.asarray(rng.normal(size=(T, B)), jnp.float32)
    dones = jnp.asarray(rng.random((T, B)) < 0.1)
    _, whole = normalize_rewards(RewardNormalizer.create(B), rewards, dones, GAMMA)
    norm, first = normalize_rewards(RewardNormalizer.create(B), rewards[: T // 2], dones[: T // 2], GAMMA)
    _, second = normalize_rewards(norm, rewards[T // 2:], dones[T // 2:], GAMMA)
    np.testing.assert_array_equal(np.concatenate([first, second]), whole)


def test_clipped_normal_matches_torch_and_clips_only_what_the_env_gets():
    space = gymnasium.spaces.Box(np.array([-1.0, -2.0], np.float32), np.array([1.0, 0.5], np.float32))
    dist = ClippedNormal(space)
    rng = np.random.default_rng(2)
    loc, log_std = rng.normal(size=(5, 2)), rng.normal(size=(5, 2)) * 0.5
    logits = jnp.asarray(np.concatenate([loc, log_std], -1), jnp.float32)
    raw = jnp.asarray(rng.normal(size=(5, 2)) * 3, jnp.float32)
    reference = torch.distributions.Normal(torch.tensor(loc), torch.tensor(log_std).exp())
    np.testing.assert_allclose(dist.log_prob(logits, raw), reference.log_prob(torch.tensor(np.asarray(raw))).sum(-1),
                               rtol=1e-5)
    np.testing.assert_allclose(dist.entropy(logits, None), reference.entropy().sum(-1), rtol=1e-5)
    action = np.asarray(dist.to_env(raw))
    np.testing.assert_array_equal(action, np.clip(np.asarray(raw), space.low, space.high))
    assert np.any(np.asarray(raw) != action)  # some samples were out of bounds


def test_normal_policy_log_std_is_a_state_independent_parameter():
    space = gymnasium.spaces.Box(-1, 1, (3,), np.float32)
    config = PPOConfig(policy_distribution="normal", log_std_init=-0.7)
    networks = make_networks(4, space, config)
    params = networks.init(jax.random.PRNGKey(0))
    np.testing.assert_allclose(params.policy["params"]["log_std"], -0.7)
    logits = networks.logits(params, jax.random.normal(jax.random.PRNGKey(1), (6, 4)))
    np.testing.assert_allclose(logits[:, 3:], -0.7)  # the same std for every observation
    assert np.ptp(np.asarray(logits[:, :3]), axis=0).max() > 0  # the mean depends on the observation


def test_unknown_policy_distribution_is_named():
    with pytest.raises(ValueError, match="policy_distribution must be one of"):
        PPOConfig(policy_distribution="beta")
