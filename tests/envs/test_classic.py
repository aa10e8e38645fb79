"""CartPole and Pendulum step for step against Gymnasium's own, from the same states."""

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gymjax
from gymjax.envs.classic import CartPole, CartPoleParams, Pendulum


def _reference_states(env_id, n, seed):
    """States visited by Gymnasium's env under random actions, episode ends included."""
    ref = gymnasium.make(env_id).unwrapped
    ref.reset(seed=seed)
    rng = np.random.default_rng(seed)
    states = []
    while len(states) < n:
        action = ref.action_space.sample() if env_id == "Pendulum-v1" else int(rng.integers(2))
        states.append((np.array(ref.state, np.float64), action))
        _, _, terminated, _, _ = ref.step(action)
        if terminated:
            ref.reset(seed=int(rng.integers(1 << 30)))
    return ref, states


def test_cartpole_matches_gymnasium_step_for_step():
    ref, states = _reference_states("CartPole-v1", 300, seed=0)
    env = CartPole()
    step = jax.jit(env.step)
    endings = 0
    for physics, action in states:
        ref.state, ref.steps_beyond_terminated = physics.copy(), None
        obs_ref, reward_ref, term_ref, _, _ = ref.step(action)
        out = step(env.reset_to(physics), jnp.int32(action))
        np.testing.assert_allclose(out.obs, obs_ref, rtol=1e-5, atol=1e-5)
        assert float(out.reward) == reward_ref
        assert bool(out.terminated) == term_ref
        endings += term_ref
    assert endings >= 5, "the reference rollout should cover terminations"


def test_pendulum_matches_gymnasium_step_for_step():
    ref, states = _reference_states("Pendulum-v1", 300, seed=1)
    env = Pendulum()
    step = jax.jit(env.step)
    for physics, action in states:
        ref.state = physics.copy()
        obs_ref, reward_ref, _, _, _ = ref.step(action)
        out = step(env.reset_to(physics), jnp.asarray(action))
        np.testing.assert_allclose(out.obs, obs_ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out.reward, reward_ref, rtol=1e-5, atol=1e-5)
        assert not bool(out.terminated)


@pytest.mark.parametrize("env_id, ref_id", [("JaxCartPole-v0", "CartPole-v1"), ("JaxPendulum-v0", "Pendulum-v1")])
def test_spaces_and_limits_match_gymnasium(env_id, ref_id):
    ours, ref = gymnasium.make(env_id), gymnasium.make(ref_id)
    assert ours.observation_space == ref.observation_space
    assert ours.action_space == ref.action_space
    assert ours.spec.max_episode_steps == ref.spec.max_episode_steps


def test_reset_distribution_follows_gymnasium():
    env = CartPole()
    obs = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), 2000)).obs
    assert obs.dtype == jnp.float32
    assert float(jnp.abs(obs).max()) <= 0.05
    assert float(jnp.abs(obs).max()) > 0.049  # uniform on [-0.05, 0.05], not a point
    pendulum = jax.vmap(Pendulum().reset)(jax.random.split(jax.random.PRNGKey(0), 2000))
    theta, theta_dot = pendulum.env_state.T
    assert float(jnp.abs(theta).max()) > 3.1 and float(jnp.abs(theta_dot).max()) > 0.99


def test_params_change_the_dynamics():
    env = CartPole()
    state = env.reset_to(jnp.array([0.0, 0.0, 0.1, 0.0]))
    light = env.step(state, 1, CartPoleParams(gravity=1.0))
    heavy = env.step(state, 1, CartPoleParams(gravity=20.0))
    assert float(heavy.obs[3]) > float(light.obs[3])  # the pole falls faster under more gravity


def test_registry_rejects_duplicates_and_unknown_ids():
    with pytest.raises(ValueError, match="already registered"):
        gymjax.envs.register("JaxCartPole-v0", CartPole, max_episode_steps=500)
    with pytest.raises(ValueError, match="unknown environment id 'Nope-v0'"):
        gymjax.make("Nope-v0")
