"""The PettingZoo adapters over JaxMultiAnt-v0, checked with PettingZoo's own tests."""

import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest

pytest.importorskip("pettingzoo")
from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402

from gymjax.wrappers.pettingzoo import PettingZooEnv, PettingZooVectorEnv  # noqa: E402

EPISODE = 5  # the fixtures' max_episode_steps


def _actions(env, rng, batch=None):
    shape = () if batch is None else (batch,)
    return {
        a: rng.uniform(-1, 1, (*shape, *env.action_space(a).shape)).astype(np.float32)
        for a in env.possible_agents
    }


def test_parallel_api_test_passes(multi_ant_pz):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the API test reports what it dislikes as warnings
        parallel_api_test(multi_ant_pz, num_cycles=3 * EPISODE)


def test_parallel_seed_test_passes(multi_ant):
    parallel_seed_test(lambda: PettingZooEnv(multi_ant, max_episode_steps=EPISODE), num_cycles=EPISODE)


def test_same_seed_same_episode(multi_ant_pz):
    rng = np.random.default_rng(0)
    actions = [_actions(multi_ant_pz, rng) for _ in range(3)]

    def episode(seed):
        obs, _ = multi_ant_pz.reset(seed=seed)
        trajectory = [obs]
        for a in actions:
            trajectory.append(multi_ant_pz.step(a)[0])
        return trajectory

    first, again, other = episode(11), episode(11), episode(12)
    for ours, same, different in zip(first, again, other):
        for agent in multi_ant_pz.possible_agents:
            np.testing.assert_array_equal(ours[agent], same[agent])
            assert not np.allclose(ours[agent], different[agent])


def test_agents_leave_together_when_the_episode_ends(multi_ant_pz):
    env = multi_ant_pz
    obs, infos = env.reset(seed=3)
    assert env.agents == env.possible_agents == ["agent_0", "agent_1"]
    assert set(infos["agent_0"]) == {"x_position", "y_position", "distance_from_origin"}
    rng = np.random.default_rng(3)
    for t in range(1, EPISODE + 1):
        obs, rewards, terminations, truncations, infos = env.step(_actions(env, rng))
        assert set(obs) == set(rewards) == set(truncations) == set(infos) == set(env.possible_agents)
        assert rewards["agent_0"] == rewards["agent_1"] != 0.0
        assert infos["agent_0"] == infos["agent_1"] and infos["agent_0"] is not infos["agent_1"]
        assert not any(terminations.values())
        assert all(truncations.values()) == (t == EPISODE) == (not env.agents)
        for agent, o in obs.items():
            assert env.observation_space(agent).contains(o)
    with pytest.raises(gymnasium.error.ResetNeeded, match="episode has ended"):
        env.step(_actions(env, rng))
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        PettingZooEnv(env.jax_env.unwrapped).step({})


def test_bad_actions_are_clear_errors(multi_ant_pz):
    env = multi_ant_pz
    env.reset(seed=0)
    ok = {a: np.zeros(4, np.float32) for a in env.possible_agents}
    with pytest.raises(ValueError, match=r"missing \['agent_1'\]"):
        env.step({"agent_0": ok["agent_0"]})
    with pytest.raises(ValueError, match=r"unknown \['agent_9'\]"):
        env.step({**ok, "agent_9": ok["agent_0"]})
    with pytest.raises(ValueError, match=r"of shape \(4,\), got shape \(3,\)"):
        env.step({**ok, "agent_1": np.zeros(3)})
    with pytest.raises(ValueError, match="finite values"):
        env.step({**ok, "agent_0": np.full(4, np.nan)})
    with pytest.raises(ValueError, match=r"unknown agent_conf '2x2'; valid choices"):
        PettingZooEnv("JaxMultiAnt-v0", agent_conf="2x2")


def test_state_render_and_spaces(multi_ant_pz):
    env = multi_ant_pz
    env.reset(seed=4)
    env.step(_actions(env, np.random.default_rng(4)))
    state, data = env.state(), env.jax_state.env_state
    assert state.shape == env.state_space.shape == (105,)
    np.testing.assert_allclose(state[:27], np.concatenate([data.qpos[2:], data.qvel]), rtol=1e-6)
    frame = env.render()
    assert frame.shape == (64, 64, 3) and frame.dtype == np.uint8 and frame.std() > 1.0
    assert env.observation_space("agent_0") is env.observation_space("agent_0")
    other = PettingZooEnv(env.jax_env.unwrapped)
    assert other.action_space("agent_0") == env.action_space("agent_0")
    assert other.action_space("agent_0") is not env.action_space("agent_0")  # seeded apart
    with pytest.warns(UserWarning, match="render_mode=None"):
        assert other.render() is None


def test_vector_env_i_is_the_single_env_seeded_s_plus_i(multi_ant, multi_ant_pz):
    num_envs, seed, steps = 2, 7, EPISODE + 2
    vec = PettingZooVectorEnv(multi_ant, num_envs=num_envs, max_episode_steps=EPISODE)
    rng = np.random.default_rng(7)
    actions = [_actions(vec, rng, batch=num_envs) for _ in range(steps)]

    expected = []  # per env: reset obs, then per step (obs, reward, truncated, obs after auto-reset)
    for i in range(num_envs):
        obs, _ = multi_ant_pz.reset(seed=seed + i)
        rows = [obs]
        for t in range(steps):
            obs, rewards, _, truncations, _ = multi_ant_pz.step({a: x[i] for a, x in actions[t].items()})
            after = multi_ant_pz.reset()[0] if not multi_ant_pz.agents else obs
            rows.append((obs, rewards["agent_0"], truncations["agent_0"], after))
        expected.append(rows)

    def close(got, want):
        for agent in vec.possible_agents:
            np.testing.assert_allclose(got[agent], want[agent], rtol=1e-4, atol=1e-5)

    obs, _ = vec.reset(seed=seed)
    for i in range(num_envs):
        close({a: o[i] for a, o in obs.items()}, expected[i][0])
    for t in range(steps):
        obs, rewards, terminations, truncations, infos = vec.step(actions[t])
        assert (infos["agent_0"].get("_final_obs") is not None) == (t == EPISODE - 1)
        for i in range(num_envs):
            last, reward, truncated, after = expected[i][t + 1]
            np.testing.assert_allclose(rewards["agent_1"][i], reward, rtol=1e-4, atol=1e-5)
            assert truncations["agent_1"][i] == truncated and not terminations["agent_1"][i]
            close({a: o[i] for a, o in obs.items()}, after)
            if truncated:
                assert infos["agent_0"]["_final_obs"][i]
                close({a: infos[a]["final_obs"][i] for a in vec.possible_agents}, last)
    with pytest.raises(ValueError, match=r"a batch of 2 actions .* of shape \(2, 4\)"):
        vec.step(_actions(vec, rng, batch=3))
    with pytest.raises(ValueError, match="expected 2 seeds"):
        vec.reset(seed=[1, 2, 3])


def test_import_gymjax_does_not_import_pettingzoo():
    code = "import sys, gymjax, gymjax.envs.mujoco, gymjax.wrappers; assert 'pettingzoo' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
