"""gymnasium.make / make_vec on gymjax ids, checked against Gymnasium's own machinery."""

import gymnasium
import jax
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import gymjax
from gymjax.wrappers.gymnasium import GymnasiumEnv, GymnasiumVectorEnv

IDS = ["JaxAnt-v0", "JaxInvertedPendulum-v0", "JaxCartPole-v0", "JaxPendulum-v0"]


@pytest.mark.parametrize("env_id", IDS)
def test_every_id_is_registered_for_make_and_make_vec(env_id):
    spec = gymnasium.spec(env_id)
    assert spec.entry_point == "gymjax.wrappers.gymnasium:GymnasiumEnv"
    assert spec.vector_entry_point == "gymjax.wrappers.gymnasium:GymnasiumVectorEnv"
    assert spec.max_episode_steps == gymjax.envs.spec(env_id).max_episode_steps


@pytest.mark.parametrize("env_id", ["JaxCartPole-v0", "JaxPendulum-v0", "JaxInvertedPendulum-v0"])
def test_check_env_passes(env_id):
    env = gymnasium.make(env_id)
    assert isinstance(env.unwrapped, GymnasiumEnv)
    check_env(env.unwrapped)


def test_check_env_passes_for_ant(ant_env):
    check_env(ant_env.unwrapped)  # renders too: the fixture has render_mode="rgb_array"
    assert ant_env.observation_space == gymnasium.spaces.Box(-np.inf, np.inf, (105,), np.float32)


def _lockstep(ours, reference, steps, seed, tol=1e-5):
    """Steps both vector envs with the same actions, comparing everything they return.

    Keys, masks and flags must be equal; numbers to ``tol`` (a batched and an
    unbatched XLA program round differently, and contacts amplify it).
    """
    assert ours.metadata["autoreset_mode"] == reference.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, info = ours.reset(seed=seed)
    obs_ref, info_ref = reference.reset(seed=seed)
    np.testing.assert_allclose(obs, obs_ref, rtol=tol, atol=tol)
    _assert_infos_equal(info, info_ref, tol)
    ours.action_space.seed(seed)
    ended = np.zeros(2, int)
    for _ in range(steps):
        action = ours.action_space.sample()
        obs, reward, terminated, truncated, info = ours.step(action)
        obs_ref, reward_ref, terminated_ref, truncated_ref, info_ref = reference.step(action)
        np.testing.assert_allclose(obs, obs_ref, rtol=tol, atol=tol)
        np.testing.assert_allclose(reward, reward_ref, rtol=tol, atol=tol)
        np.testing.assert_array_equal(terminated, terminated_ref)
        np.testing.assert_array_equal(truncated, truncated_ref)
        _assert_infos_equal(info, info_ref, tol)
        ended += [terminated.sum(), truncated.sum()]
    return ended


def _assert_infos_equal(ours, reference, tol):
    assert ours.keys() == reference.keys()
    for key, value in reference.items():
        if key == "final_obs":
            for a, b in zip(ours[key], value):
                assert (a is None) == (b is None)
                if b is not None:
                    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
        elif isinstance(value, dict):
            _assert_infos_equal(ours[key], value, tol)
        elif key.startswith("_"):
            np.testing.assert_array_equal(ours[key], value, err_msg=key)
        else:
            np.testing.assert_allclose(ours[key], value, rtol=tol, atol=tol, err_msg=key)


def _sync(env_id, num_envs, **kwargs):
    return gymnasium.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}, **kwargs,
    )


def test_vector_env_equals_sync_vector_env_cartpole():
    ours = gymnasium.make_vec("JaxCartPole-v0", num_envs=2, max_episode_steps=15)
    assert isinstance(ours, GymnasiumVectorEnv)
    terminations, truncations = _lockstep(ours, _sync("JaxCartPole-v0", 2, max_episode_steps=15), 120, seed=3)
    assert terminations >= 2 and truncations >= 2


def test_vector_env_equals_sync_vector_env_pendulum():
    ours = gymnasium.make_vec("JaxPendulum-v0", num_envs=2, max_episode_steps=10)
    _, truncations = _lockstep(ours, _sync("JaxPendulum-v0", 2, max_episode_steps=10), 35, seed=0)
    assert truncations >= 4


def test_vector_env_equals_sync_vector_env_ant(ant_vec):
    """Ant's info has step-only keys: masked out for envs that reset, as SyncVectorEnv does."""
    _, truncations = _lockstep(ant_vec, _sync("JaxAnt-v0", 2, max_episode_steps=6), 13, seed=1, tol=1e-3)
    assert truncations >= 2


def test_reset_seeding_is_deterministic_and_streams_continue():
    env = gymnasium.make_vec("JaxCartPole-v0", num_envs=3)
    first, _ = env.reset(seed=11)
    again, _ = env.reset(seed=11)
    np.testing.assert_array_equal(first, again)
    nxt, _ = env.reset()
    assert not np.allclose(nxt, first)
    single = gymnasium.make("JaxCartPole-v0")
    np.testing.assert_array_equal(single.reset(seed=12)[0], first[1])
    np.testing.assert_array_equal(single.reset()[0], nxt[1])
    explicit, _ = env.reset(seed=[11, 12, 13])
    np.testing.assert_array_equal(explicit, first)


@pytest.mark.parametrize("bad, message", [
    (np.zeros(7, np.float32), r"shape \(8,\), got shape \(7,\)"),
    (np.array(["a"] * 8), "dtype <U1"),
    (np.array([np.nan] + [0.0] * 7), "NaN or inf"),
    (np.array([np.inf] + [0.0] * 7), "NaN or inf"),
])
def test_bad_actions_are_clear_errors(ant_env, bad, message):
    ant_env.reset(seed=0)
    with pytest.raises(ValueError, match=message) as err:
        ant_env.unwrapped.step(bad)
    assert "Box(-1.0, 1.0, (8,), float32)" in str(err.value)


def test_bad_discrete_and_batched_actions():
    env = gymnasium.make("JaxCartPole-v0").unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"integers in \[0, 2\)"):
        env.step(2)
    with pytest.raises(ValueError, match="integers"):
        env.step(0.5)
    vec = gymnasium.make_vec("JaxCartPole-v0", num_envs=3)
    vec.reset(seed=0)
    with pytest.raises(ValueError, match=r"a batch of 3 actions from Discrete\(2\) of shape \(3,\)"):
        vec.step(np.zeros(2, int))


def test_stepping_before_reset_is_refused():
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        gymnasium.make("JaxCartPole-v0").unwrapped.step(0)
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        gymnasium.make_vec("JaxCartPole-v0", num_envs=2).step(np.zeros(2, int))


def test_bad_construction_and_seeds_are_clear_errors():
    with pytest.raises(ValueError, match="num_envs must be a positive int"):
        GymnasiumVectorEnv("JaxCartPole-v0", num_envs=0)
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        GymnasiumEnv("JaxCartPole-v0", render_mode="ansi")
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        GymnasiumVectorEnv("JaxCartPole-v0", 2, render_mode="human")  # one window per env: single envs only
    vec = gymnasium.make_vec("JaxCartPole-v0", num_envs=2)
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*32 - 1\], got -1"):
        vec.reset(seed=-1)
    with pytest.raises(ValueError, match="seed must be an int"):
        vec.reset(seed=1.5)
    with pytest.raises(ValueError, match="expected 2 seeds"):
        vec.reset(seed=[1, 2, 3])


def _distinct(a, b):
    return a.shape == b.shape and np.abs(a.astype(int) - b.astype(int)).mean() > 1.0


def test_render_rgb_array_single(ant_env):
    ant_env.reset(seed=0)
    standing = ant_env.render()
    assert standing.shape == (64, 64, 3) and standing.dtype == np.uint8
    assert standing.std() > 5  # an actual scene, not a blank frame
    qpos = np.array(ant_env.unwrapped.jax_env.mj_model.qpos0)
    qpos[3:7] = [0.0, 1.0, 0.0, 0.0]  # upside down
    ant_env.unwrapped.set_state(qpos, np.zeros(14))
    assert _distinct(ant_env.render(), standing)  # the frame follows the state


def test_render_rgb_array_vector(ant_vec):
    ant_vec.reset(seed=0)
    frames = ant_vec.render()
    assert len(frames) == 2 and all(f.shape == (64, 64, 3) for f in frames)
    assert _distinct(frames[0], frames[1]) or frames[0].std() > 5


def test_render_classic_control():
    env = gymnasium.make("JaxCartPole-v0", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (400, 600, 3) and frame.std() > 5


def test_randomization_through_make_and_make_vec():
    def heavier(params, key):
        return params.replace(masspole=params.masspole * jax.random.uniform(key, (), minval=2.0, maxval=3.0))

    vec = gymnasium.make_vec("JaxCartPole-v0", num_envs=4, randomization_fn=heavier)
    vec.reset(seed=0)
    masspole = vec.jax_state.randomized["masspole"]
    assert ((np.asarray(masspole) >= 0.2) & (np.asarray(masspole) <= 0.3)).all()
    single = gymnasium.make("JaxCartPole-v0", randomization_fn=heavier)
    single.reset(seed=0)
    single.step(1)
