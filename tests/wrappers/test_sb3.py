"""The SB3 VecEnv adapter, checked against SB3's own DummyVecEnv + Monitor and its algorithms."""

import gymnasium
import jax
import numpy as np
import pytest
import torch
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.utils import check_for_correct_spaces
from stable_baselines3.common.vec_env import DummyVecEnv, VecCheckNan, VecEnv, VecNormalize

from gymjax.envs.classic import CartPole
from gymjax.wrappers.gymnasium import GymnasiumEnv
from gymjax.wrappers.sb3 import SB3VecEnv


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Two cores are shared by everyone: SB3's tiny networks gain nothing from more."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _dummy(env_id, num_envs, max_episode_steps):
    """SB3's reference: one Python env per slot, each in a Monitor."""
    return DummyVecEnv(
        [
            lambda: Monitor(gymnasium.make(env_id, max_episode_steps=max_episode_steps))
            for _ in range(num_envs)
        ]
    )


def _lockstep(ours, reference, steps, seed, tol=1e-5):
    """Steps both VecEnvs with the same random actions, comparing all they return.

    Keys (in order), dones, flags and episode lengths must be equal; numbers to
    ``tol`` (a batched and an unbatched XLA program may round differently).
    Returns how many episodes were terminated and how many truncated.
    """
    assert ours.seed(seed) == reference.seed(seed) == [seed + i for i in range(ours.num_envs)]
    np.testing.assert_allclose(ours.reset(), reference.reset(), rtol=tol, atol=tol)
    _assert_infos_equal(ours.unwrapped.reset_infos, reference.unwrapped.reset_infos, tol)
    space = reference.action_space
    space.seed(seed)
    terminated = truncated = 0
    for _ in range(steps):
        actions = np.stack([space.sample() for _ in range(ours.num_envs)])
        obs, rewards, dones, infos = ours.step(actions)
        obs_ref, rewards_ref, dones_ref, infos_ref = reference.step(actions)
        assert obs.dtype == obs_ref.dtype and rewards.dtype == rewards_ref.dtype and dones.dtype == dones_ref.dtype
        np.testing.assert_allclose(obs, obs_ref, rtol=tol, atol=tol)
        np.testing.assert_allclose(rewards, rewards_ref, rtol=tol, atol=tol)
        np.testing.assert_array_equal(dones, dones_ref)
        _assert_infos_equal(infos, infos_ref, tol)
        _assert_infos_equal(ours.unwrapped.reset_infos, reference.unwrapped.reset_infos, tol)
        timeouts = np.array([info["TimeLimit.truncated"] for info in infos_ref])
        truncated += int((dones & timeouts).sum())
        terminated += int((dones & ~timeouts).sum())
    return terminated, truncated


def _assert_infos_equal(ours, reference, tol):
    assert len(ours) == len(reference)
    for info, info_ref in zip(ours, reference):
        assert list(info) == list(info_ref)  # same keys, same order
        for key, value in info_ref.items():
            if key == "episode":
                assert info[key].keys() == value.keys() == {"r", "l", "t"}
                assert type(info[key]["r"]) is type(value["r"]) is float
                np.testing.assert_allclose(info[key]["r"], value["r"], rtol=tol, atol=tol)
                assert info[key]["l"] == value["l"] and type(info[key]["l"]) is int
            elif key == "TimeLimit.truncated":
                assert info[key] is value  # both Python bools
            else:
                assert np.asarray(info[key]).dtype == np.asarray(value).dtype, key
                np.testing.assert_allclose(info[key], value, rtol=tol, atol=tol, err_msg=key)


def test_equals_dummy_vec_env_with_monitor_cartpole():
    ours = SB3VecEnv("JaxCartPole-v0", 3, max_episode_steps=15)
    reference = _dummy("JaxCartPole-v0", 3, 15)
    terminated, truncated = _lockstep(ours, reference, 90, seed=3)
    assert terminated >= 3 and truncated >= 3  # both kinds of episode end are compared
    assert ours.env_is_wrapped(Monitor) == reference.env_is_wrapped(Monitor) == [True] * 3
    assert ours.env_is_wrapped(gymnasium.wrappers.TimeLimit) == [True] * 3
    assert ours.env_is_wrapped(gymnasium.wrappers.RecordVideo) == [False] * 3
    assert ours.metadata == reference.metadata and ours.render_mode == reference.render_mode
    assert ours.observation_space == reference.observation_space
    assert ours.action_space == reference.action_space


def test_equals_dummy_vec_env_with_monitor_pendulum():
    """Box actions and fractional rewards: Monitor's rounded float64 return is matched."""
    ours = SB3VecEnv("JaxPendulum-v0", 2, max_episode_steps=10)
    _, truncated = _lockstep(ours, _dummy("JaxPendulum-v0", 2, 10), 25, seed=0)
    assert truncated == 4


def test_equals_dummy_vec_env_with_monitor_with_info_keys(cartpole_with_info):
    """The env's info per step (final info at an end) and reset-only keys in reset_infos."""
    ours = SB3VecEnv(cartpole_with_info, 2, max_episode_steps=12)
    reference = DummyVecEnv(
        [lambda: Monitor(gymnasium.wrappers.TimeLimit(GymnasiumEnv(cartpole_with_info), 12)) for _ in range(2)]
    )
    terminated, truncated = _lockstep(ours, reference, 40, seed=5)
    assert terminated + truncated >= 4
    assert set(ours.reset_infos[0]) == {"x", "angles"}  # the reset keys, not the step-only ones


def test_unseeded_reset_continues_each_envs_stream():
    ours, reference = SB3VecEnv("JaxCartPole-v0", 2), _dummy("JaxCartPole-v0", 2, 500)
    ours.seed(7), reference.seed(7)
    np.testing.assert_allclose(ours.reset(), reference.reset(), atol=1e-6)
    second = ours.reset()  # no seed: each env draws its next episode, as a Gymnasium env does
    np.testing.assert_allclose(second, reference.reset(), atol=1e-6)
    ours.seed(7)
    assert not np.allclose(second, ours.reset())


def test_vec_normalize_over_the_adapter_equals_over_dummy_vec_env():
    ours = VecNormalize(SB3VecEnv("JaxPendulum-v0", 2, max_episode_steps=10))
    reference = VecNormalize(_dummy("JaxPendulum-v0", 2, 10))
    _, truncated = _lockstep(ours, reference, 22, seed=4, tol=1e-4)
    assert truncated == 4  # terminal observations were normalized alike
    np.testing.assert_allclose(ours.obs_rms.mean, reference.obs_rms.mean, rtol=1e-5)
    np.testing.assert_allclose(ours.ret_rms.var, reference.ret_rms.var, rtol=1e-4)


class _LeanPolicy:
    """Pushes the cart toward the side the pole leans: long CartPole episodes."""

    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        return (obs[:, 2] > 0).astype(np.int64), state


def test_evaluate_policy_equals_on_both():
    ours, reference = SB3VecEnv("JaxCartPole-v0", 2, max_episode_steps=60), _dummy("JaxCartPole-v0", 2, 60)
    results = []
    for env in (ours, reference):
        env.seed(0)
        results.append(evaluate_policy(_LeanPolicy(), env, n_eval_episodes=6, return_episode_rewards=True))
    assert results[0] == results[1]
    rewards, lengths = results[0]
    assert len(rewards) == 6 and rewards == [float(n) for n in lengths] and max(lengths) > 30


def test_vec_env_contract():
    env = SB3VecEnv("JaxCartPole-v0", 4)
    assert isinstance(env, VecEnv) and env.num_envs == 4
    check_for_correct_spaces(env, CartPole().observation_space, gymnasium.spaces.Discrete(2))
    checked = VecCheckNan(env, raise_exception=True)
    assert env.seed(10) == [10, 11, 12, 13]
    obs = checked.reset()
    assert obs.shape == (4, 4) and obs.flags.writeable
    assert env.reset_infos == [{}, {}, {}, {}]
    for _ in range(60):
        obs, rewards, dones, infos = checked.step(np.random.randint(2, size=4))
        assert obs.shape == (4, 4) and rewards.shape == dones.shape == (4,) and len(infos) == 4
        assert (obs.dtype, rewards.dtype, dones.dtype) == (np.float32, np.float32, np.bool_)
        for info, done in zip(infos, dones):
            assert ("terminal_observation" in info) == ("episode" in info) == done
    assert env.get_attr("render_mode") == [None] * 4
    assert env.get_attr("max_episode_steps", indices=[0, 2]) == [500, 500]
    assert env.has_attr("theta_threshold") and not env.has_attr("no_such_attribute")
    env.set_attr("scale", 2.0, indices=[1])
    assert env.get_attr("scale", indices=1) == [2.0]
    env.set_attr("double", lambda x: 2 * x)
    assert env.env_method("double", 3, indices=[0, 3]) == [6, 6]
    with pytest.raises(AttributeError, match="scale"):
        env.get_attr("scale", indices=0)
    with pytest.raises(AttributeError, match="compiled into the jitted step"):
        env.set_attr("theta_threshold", 1.0)
    with pytest.warns(UserWarning, match="no `render_mode`"):
        assert env.render() is None  # no image, as from a DummyVecEnv


def test_randomization_and_env_options():
    def heavier(params, key):
        return params.replace(masspole=params.masspole * jax.random.uniform(key, (), minval=2.0, maxval=3.0))

    env = SB3VecEnv("JaxCartPole-v0", 4, randomization_fn=heavier, sutton_barto_reward=True)
    env.reset()
    masspole = env.jax_state.randomized["masspole"]
    assert ((np.asarray(masspole) >= 0.2) & (np.asarray(masspole) <= 0.3)).all()
    assert len(set(np.asarray(masspole).tolist())) == 4  # one draw per env
    assert env.get_attr("sutton_barto_reward") == [True] * 4
    _, rewards, _, _ = env.step(np.zeros(4, int))
    np.testing.assert_array_equal(rewards, 0.0)  # Sutton & Barto: 0 until the pole falls


def test_render_tiles_one_frame_per_env():
    env = SB3VecEnv("JaxCartPole-v0", 2, render_mode="rgb_array")
    env.reset()
    frames = env.get_images()
    assert len(frames) == 2 and frames[0].shape == (400, 600, 3)
    assert env.render().shape == (800, 600, 3)  # SB3 tiles them, one above the other


def test_bad_input_is_a_clear_error():
    env = SB3VecEnv("JaxCartPole-v0", 3)
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        env.step(np.zeros(3, int))
    env.reset()
    with pytest.raises(ValueError, match=r"a batch of 3 actions from Discrete\(2\) of shape \(3,\), got shape \(2,\)"):
        env.step(np.zeros(2, int))
    with pytest.raises(ValueError, match=r"integers in \[0, 2\)"):
        env.step(np.full(3, 2))
    with pytest.raises(RuntimeError, match="step_async"):
        env.step_wait()
    env.step_async(np.zeros(3, int))
    with pytest.raises(RuntimeError, match="called twice"):
        env.step_async(np.zeros(3, int))
    env.step_wait()
    env.seed(2**32 - 2)  # env 2 gets 2**32: any non-negative int is a seed, as in Gymnasium
    env.reset()
    env.seed(-1)
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        env.reset()
    env.set_options({"low": 0.1})
    with pytest.raises(ValueError, match="reset options are not supported"):
        env.reset()
    with pytest.raises(ValueError, match="num_envs must be a positive int"):
        SB3VecEnv("JaxCartPole-v0", 0)
    box = SB3VecEnv("JaxPendulum-v0", 2)
    box.reset()
    with pytest.raises(ValueError, match=r"shape \(2, 1\), got shape \(2,\)"):
        box.step(np.zeros(2, np.float32))
    # float64 past float32's largest would become inf in the float32 step: refused like inf itself.
    with pytest.raises(ValueError, match=r"finite values within float32's range \(\|x\| <= 3.403e\+38\)"):
        box.step(np.array([[1e300], [0.0]]))


def test_ppo_learns_cartpole():
    model = PPO(
        "MlpPolicy", SB3VecEnv("JaxCartPole-v0", 8), n_steps=64, batch_size=256, n_epochs=10,
        learning_rate=3e-3, gamma=0.98, gae_lambda=0.8, ent_coef=0.0,
        policy_kwargs={"net_arch": [32, 32]}, seed=0,
    )
    model.learn(12_000)
    assert len(model.ep_info_buffer) > 0  # SB3 found Monitor's episode records in the infos
    mean, _ = evaluate_policy(model, SB3VecEnv("JaxCartPole-v0", 4), n_eval_episodes=8)
    assert mean > 100  # a random policy averages ~22 on CartPole


def test_sac_bootstraps_timeouts_from_the_terminal_observation():
    """SAC's replay buffer must see time limits as timeouts, with the real last observation."""
    env = SB3VecEnv("JaxPendulum-v0", 2, max_episode_steps=50)
    model = SAC(
        "MlpPolicy", env, learning_starts=100, buffer_size=1_000, batch_size=64,
        policy_kwargs={"net_arch": [16, 16]}, seed=0,
    )
    model.learn(400)  # 200 steps of each env: 4 episodes each
    buffer, n = model.replay_buffer, model.replay_buffer.pos
    ends = np.flatnonzero(buffer.dones[:n].any(axis=1))
    np.testing.assert_array_equal(ends, [49, 99, 149, 199])
    assert buffer.timeouts[ends].all() and buffer.timeouts[:n].sum() == 8  # 4 ends x 2 envs
    # The stored next observation is the terminal one, not the reset one.
    for t in ends[:-1]:
        assert not np.allclose(buffer.next_observations[t], buffer.observations[t + 1])
    live = [t for t in range(n - 1) if t not in ends]
    np.testing.assert_array_equal(buffer.next_observations[live], buffer.observations[np.array(live) + 1])
    assert len(model.ep_info_buffer) == 8 and all(e["l"] == 50 for e in model.ep_info_buffer)
