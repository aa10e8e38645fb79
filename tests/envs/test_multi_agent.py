"""Every multi-agent id against Gymnasium-Robotics' MaMuJoCo: partitions, actions, observations,
rewards and terminations, value for value from the same states (MuJoCo C on both sides)."""

import warnings

import jax
import numpy as np
import pytest

import gymjax
from gymjax.envs.mujoco import Reacher
from gymjax.envs.mujoco.multi_agent import MultiAgentMujoco
from gymjax.envs.mujoco.multi_agent_graphs import SCENARIOS, agent_confs

mamujoco = pytest.importorskip("gymnasium_robotics").mamujoco_v1

IDS = gymjax.envs.registered_ids(multi_agent=True)
# a registry line of MultiAgentMujoco names its scenario; MultiAnt's class does
SCENARIO_OF = {i: gymjax.envs.spec(i).kwargs.get("scenario") or gymjax.envs.spec(i).load().scenario_name for i in IDS}
CASES = [(env_id, conf) for env_id in IDS for conf in agent_confs(SCENARIO_OF[env_id])]
# Tasks that end when the body leaves a height range: (qpos index of the height, a height outside).
UNHEALTHY = {"Ant": (2, 1.5), "Hopper": (1, 0.1), "Walker2d": (1, 2.5), "Humanoid": (2, 2.5)}


def test_the_registry_serves_every_scenario():
    assert set(SCENARIO_OF.values()) == set(SCENARIOS)
    assert {"HalfCheetah", "Hopper", "Walker2d", "Swimmer", "Reacher", "Humanoid", "Ant"} <= set(SCENARIOS)
    for env_id, scenario in SCENARIO_OF.items():
        single = f"Jax{scenario}-v0"
        assert gymjax.envs.spec(env_id).max_episode_steps == gymjax.envs.spec(single).max_episode_steps
        assert env_id not in gymjax.envs.registered_ids()  # not a Gymnasium env
    with pytest.raises(ValueError, match=r"unknown agent_conf '2x2'; valid choices: \['2x3', '6x1'\]"):
        gymjax.envs.make_multi("JaxMultiHalfCheetah-v0", agent_conf="2x2")
    with pytest.raises(ValueError, match=r"unknown agent_conf '6x1'; valid choices: \['9\|8'\]"):
        gymjax.envs.make_multi("JaxMultiHumanoid-v0", agent_conf="6x1")
    with pytest.raises(ValueError, match="agent_obsk must be an int >= 0"):
        gymjax.envs.make_multi("JaxMultiHopper-v0", agent_obsk=-1)


@pytest.mark.parametrize(("env_id", "conf"), CASES)
def test_partitions_and_actions_equal_mamujocos(env_id, conf):
    ref = mamujoco.parallel_env(SCENARIO_OF[env_id], conf, agent_obsk=1)
    env = gymjax.envs.make_multi(env_id, agent_conf=conf, engine="mujoco")  # building compiles nothing
    nu = env.task.mj_model.nu
    actuators = [a for agent in env.agents for a in env.agent_actuators[agent]]
    assert sorted(actuators) == list(range(nu))  # every actuator driven, once
    assert env.agents == tuple(ref.possible_agents)
    for i, agent in enumerate(env.agents):
        assert env.agent_actuators[agent] == tuple(
            node.act_ids % nu for node in ref.agent_action_partitions[i]
        )
        assert env.action_spaces[agent].shape == ref.action_space(agent).shape
        assert env.observation_spaces[agent].shape == ref.observation_space(agent).shape
        assert env.observation_spaces[agent].dtype == np.float32

    rng = np.random.default_rng(0)
    actions = {a: rng.uniform(-1, 1, s.shape).astype(np.float32) for a, s in env.action_spaces.items()}
    control = np.asarray(env.global_action(actions))
    for agent in env.agents:  # each agent's action lands on its actuators, in its order
        np.testing.assert_array_equal(control[list(env.agent_actuators[agent])], actions[agent])
    np.testing.assert_array_equal(control, ref.map_local_actions_to_global_action(actions).astype(np.float32))
    ref.close()


def _assert_same(ours, theirs, env):
    for agent in env.agents:
        np.testing.assert_allclose(ours[agent], theirs[agent], rtol=1e-5, atol=1e-5, err_msg=agent)


@pytest.mark.parametrize(("env_id", "conf"), CASES)
def test_observations_rewards_terminations_equal_mamujocos(env_id, conf):
    scenario = SCENARIO_OF[env_id]
    ref = mamujoco.parallel_env(scenario, conf, agent_obsk=1)
    env = gymjax.envs.make_multi(env_id, agent_conf=conf, engine="mujoco")
    reset_to, step, global_state = jax.jit(env.reset_to), jax.jit(env.step), jax.jit(env.global_state)
    single = ref.unwrapped.single_agent_env.unwrapped
    rng = np.random.default_rng(1)

    def act():
        return {a: rng.uniform(-1, 1, s.shape).astype(np.float32) for a, s in env.action_spaces.items()}

    ref.reset(seed=1)  # a state off the initial one: MaMuJoCo's own steps, until something touches
    for _ in range(30):  # the floor (Ant's agents observe contact forces, clipped to [-1, 1])
        ref.step(act())
        if np.abs(single.data.cfrc_ext[1:]).max() > 1 or scenario in ("Swimmer", "Reacher"):
            break
    assert scenario in ("Swimmer", "Reacher") or np.abs(single.data.cfrc_ext[1:]).max() > 1
    starts = [(single.data.qpos.copy(), single.data.qvel.copy(), False)]
    if scenario in UNHEALTHY:  # and the same, moved out of the healthy heights: the step must end the episode
        index, height = UNHEALTHY[scenario]
        unhealthy = starts[0][0].copy()
        unhealthy[index] = height
        starts.append((unhealthy, starts[0][1], True))

    for qpos, qvel, ends in starts:
        qpos, qvel = qpos.astype(np.float32), qvel.astype(np.float32)  # the same numbers on both sides
        ref.reset(seed=2)  # a fresh MjData (no solver warm start), as reset_to's
        single.set_state(qpos.astype(np.float64), qvel.astype(np.float64))
        state = reset_to(qpos, qvel)
        _assert_same(state.obs, ref._get_obs(), env)
        np.testing.assert_allclose(global_state(state), ref.state(), rtol=1e-5, atol=1e-5)
        for agent, obs in state.obs.items():
            assert obs.dtype == np.float32 and obs.shape == env.observation_spaces[agent].shape

        actions = act()
        state = step(state, actions)
        obs, rewards, terminations, truncations, _ = ref.step(actions)
        _assert_same(state.obs, obs, env)
        np.testing.assert_allclose(global_state(state), ref.state(), rtol=1e-5, atol=1e-5)
        assert set(rewards) == set(env.agents)
        np.testing.assert_allclose(state.reward, rewards["agent_0"], rtol=1e-5, atol=1e-5)
        assert bool(state.terminated) == terminations["agent_0"]
        assert terminations["agent_0"] == ends
        assert not bool(state.truncated) and not truncations["agent_0"]
    ref.close()


def test_fields_a_task_does_not_declare_are_read_on_the_c_engine():
    """Reacher declares xpos only; agents observing bodies' cvel make its C engine return cvel."""
    categories = [["qpos", "qvel", "cvel", "fingertip_dist"], ["qpos"]]
    env = gymjax.envs.make_multi("JaxMultiReacher-v0", engine="mujoco", local_categories=categories)
    assert (
        "cvel" not in Reacher.data_fields and "cvel" in env.task.data_fields and isinstance(env.task, Reacher)
    )
    ref = mamujoco.parallel_env("Reacher", "2x1", agent_obsk=1, local_categories=categories)
    ref.reset(seed=3)
    for _ in range(3):
        ref.step({a: np.full(s.shape, 0.5) for a, s in env.action_spaces.items()})
    single = ref.unwrapped.single_agent_env.unwrapped
    qpos, qvel = single.data.qpos.astype(np.float32), single.data.qvel.astype(np.float32)
    single.set_state(qpos.astype(np.float64), qvel.astype(np.float64))
    expected = ref._get_obs()
    assert env.observation_spaces["agent_0"].shape == expected["agent_0"].shape == (5 + 2 * 6 + 2,)
    _assert_same(jax.jit(env.reset_to)(qpos, qvel).obs, expected, env)
    ref.close()


def test_multi_ant_is_an_entry_of_the_table():
    env = gymjax.envs.make_multi("JaxMultiAnt-v0", agent_conf="4x2")
    assert isinstance(env, MultiAgentMujoco) and env.scenario_name == "Ant" and env.ant is env.task


def test_pettingzoo_parallel_api_test_passes_on_a_new_id():
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test

    from gymjax.wrappers.pettingzoo import PettingZooEnv

    env = PettingZooEnv("JaxMultiHopper-v0", engine="mujoco", max_episode_steps=5)
    assert env.possible_agents == ["agent_0", "agent_1", "agent_2"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the API test reports what it dislikes as warnings
        parallel_api_test(env, num_cycles=15)
    obs, _ = env.reset(seed=0)
    assert env.state().shape == env.state_space.shape == (11,)
    assert {a: o.shape for a, o in obs.items()} == {"agent_0": (8,), "agent_1": (9,), "agent_2": (8,)}
    env.close()


def test_observations_under_vmap_on_mjx():
    env = gymjax.envs.make_multi("JaxMultiReacher-v0", engine="mjx")  # traced only: nothing compiles
    state = jax.eval_shape(jax.vmap(env.reset), jax.random.split(jax.random.PRNGKey(0), 3))
    for agent, space in env.observation_spaces.items():
        assert state.obs[agent].shape == (3, *space.shape) and state.obs[agent].dtype == np.float32
    assert state.reward.shape == state.terminated.shape == state.truncated.shape == (3,)
