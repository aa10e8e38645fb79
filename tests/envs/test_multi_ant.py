"""JaxMultiAnt-v0 against JaxAnt-v0 (same physics) and MaMuJoCo (same partitions and observations)."""

import gymnasium
import jax
import mujoco
import numpy as np
import pytest

import gymjax
from gymjax.envs.mujoco import AGENT_CONFS, MultiAnt

# The partitions of MaMuJoCo's Ant documentation, by the joint each actuator
# drives (ant.xml's actuators have no names of their own).
DOCUMENTED = {
    "2x4": [("hip_1", "ankle_1", "hip_2", "ankle_2"), ("hip_3", "ankle_3", "hip_4", "ankle_4")],
    "2x4d": [("hip_1", "ankle_1", "hip_4", "ankle_4"), ("hip_2", "ankle_2", "hip_3", "ankle_3")],
    "4x2": [("hip_1", "ankle_1"), ("hip_2", "ankle_2"), ("hip_3", "ankle_3"), ("hip_4", "ankle_4")],
}


@pytest.fixture(scope="module")
def partitions():
    """One unjitted MultiAnt per agent_conf: building one compiles nothing."""
    return {conf: MultiAnt(agent_conf=conf) for conf in AGENT_CONFS}


def _actuated_joint(model, actuator):
    return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, model.actuator_trnid[actuator, 0])


@pytest.mark.parametrize("conf", sorted(DOCUMENTED))
def test_each_partition_drives_every_actuator_once(partitions, conf):
    env = partitions[conf]
    model = env.ant.mj_model
    assert env.agents == tuple(f"agent_{i}" for i in range(len(DOCUMENTED[conf])))
    actuators = [a for agent in env.agents for a in env.agent_actuators[agent]]
    assert sorted(actuators) == list(range(model.nu)) == list(range(8))
    for agent, joints in zip(env.agents, DOCUMENTED[conf]):
        assert tuple(_actuated_joint(model, a) for a in env.agent_actuators[agent]) == joints
        assert env.agent_joints[agent] == joints
        assert env.action_spaces[agent] == gymnasium.spaces.Box(-1, 1, (len(joints),), np.float32)


@pytest.mark.parametrize("conf", sorted(DOCUMENTED))
def test_agents_actions_land_on_their_actuators(partitions, conf):
    env = partitions[conf]
    rng = np.random.default_rng(0)
    actions = {a: rng.uniform(-1, 1, env.action_spaces[a].shape).astype(np.float32) for a in env.agents}
    control = np.asarray(env.global_action(actions))
    for agent in env.agents:
        np.testing.assert_array_equal(control[list(env.agent_actuators[agent])], actions[agent])


def test_bad_configurations_and_actions_are_clear_errors(partitions):
    with pytest.raises(ValueError, match=r"unknown agent_conf '3x3'.*\['2x4', '2x4d', '4x2'\]"):
        MultiAnt(agent_conf="3x3")
    with pytest.raises(ValueError, match="agent_obsk must be an int >= 0"):
        MultiAnt(agent_obsk=-1)
    env = partitions["2x4"]
    ok = {a: np.zeros(4, np.float32) for a in env.agents}
    with pytest.raises(ValueError, match=r"missing \['agent_1'\], unknown \[\]"):
        env.global_action({"agent_0": ok["agent_0"]})
    with pytest.raises(ValueError, match=r"missing \[\], unknown \['agent_7'\]"):
        env.global_action({**ok, "agent_7": ok["agent_0"]})
    with pytest.raises(ValueError, match=r"action of agent_1 must have shape \(4,\), got \(8,\)"):
        env.global_action({**ok, "agent_1": np.zeros(8)})
    with pytest.raises(TypeError, match="must be a dict"):
        env.global_action(np.zeros(8))


def test_registry_keeps_multi_agent_ids_apart():
    env = gymjax.envs.make_multi("JaxMultiAnt-v0", agent_conf="4x2", agent_obsk=2)
    assert isinstance(env, MultiAnt) and len(env.agents) == 4 and env.agent_obsk == 2
    assert gymjax.envs.make_multi("JaxMultiAnt-v0").agent_conf == "2x4"
    assert "JaxMultiAnt-v0" in gymjax.envs.registered_ids(multi_agent=True)
    assert "JaxMultiAnt-v0" not in gymjax.envs.registered_ids()
    assert "JaxMultiAnt-v0" not in gymnasium.registry  # a dict of actions is no Gymnasium Env
    with pytest.raises(ValueError, match="multi-agent env; build it with gymjax.envs.make_multi"):
        gymjax.make("JaxMultiAnt-v0")
    with pytest.raises(ValueError, match="single-agent env; build it with gymjax.envs.make"):
        gymjax.envs.make_multi("JaxAnt-v0")


@pytest.mark.parametrize("conf", sorted(DOCUMENTED))
def test_observations_match_spaces_under_vmap(partitions, conf):
    env = partitions[conf]
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    state = jax.eval_shape(jax.vmap(env.reset), keys)
    outs = [state]
    if conf == "2x4":  # tracing a step costs seconds; the observation code is the reset's
        actions = {a: jax.ShapeDtypeStruct((3, *s.shape), np.float32) for a, s in env.action_spaces.items()}
        outs.append(jax.eval_shape(jax.vmap(env.step), state, actions))
    for out in outs:
        assert set(out.obs) == set(env.agents)
        for agent, space in env.observation_spaces.items():
            assert out.obs[agent].shape == (3, *space.shape) and out.obs[agent].dtype == space.dtype
        assert out.reward.shape == out.terminated.shape == out.truncated.shape == (3,)


def test_step_equals_jax_ant_step_with_the_concatenated_action(multi_ant):
    # On the C engine (tests/conftest.py's multi_ant, 2x4), as the other multi-agent tests: the
    # physics is Ant's either way, and MJX's is bounded against C's in test_mjx_parity.py.
    ant = gymjax.make("JaxAnt-v0", engine="mujoco")
    multi_step, ant_step = jax.jit(multi_ant.step), jax.jit(ant.step)
    key = jax.random.PRNGKey(3)
    ours, theirs = jax.jit(multi_ant.reset)(key), jax.jit(ant.reset)(key)
    np.testing.assert_array_equal(ours.env_state.qpos, theirs.env_state.qpos)
    rng = np.random.default_rng(3)
    for t in range(9):
        actions = {a: rng.uniform(-1, 1, (4,)).astype(np.float32) for a in multi_ant.agents}
        control = np.zeros(8, np.float32)
        for agent, acts in multi_ant.agent_actuators.items():
            control[list(acts)] = actions[agent]
        if t == 8:  # restart both with the torso above healthy_z_range: both must terminate
            lifted, qvel = theirs.env_state.qpos.at[2].set(1.5), theirs.env_state.qvel
            ours, theirs = jax.jit(multi_ant.reset_to)(lifted, qvel), jax.jit(ant.reset_to)(lifted, qvel)
        ours, theirs = multi_step(ours, actions), ant_step(theirs, control)
        for got, want in [
            (ours.env_state.qpos, theirs.env_state.qpos),
            (ours.env_state.qvel, theirs.env_state.qvel),
            (ours.reward, theirs.reward),
        ]:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        assert bool(ours.terminated) == bool(theirs.terminated) == (t == 8)
        np.testing.assert_allclose(multi_ant.global_state(ours), theirs.obs, rtol=1e-6, atol=1e-6)
        for agent, space in multi_ant.observation_spaces.items():
            assert ours.obs[agent].shape == space.shape and space.contains(np.asarray(ours.obs[agent]))


@pytest.mark.parametrize("agent_obsk", [0, 1, 2])
@pytest.mark.parametrize("conf", sorted(DOCUMENTED))
def test_partitions_and_local_observations_equal_mamujocos(conf, agent_obsk):
    mamujoco = pytest.importorskip("gymnasium_robotics").mamujoco_v1
    ref = mamujoco.parallel_env("Ant", conf, agent_obsk=agent_obsk)
    ours = MultiAnt(agent_conf=conf, agent_obsk=agent_obsk)
    assert ours.agents == tuple(ref.possible_agents)
    for i, agent in enumerate(ref.possible_agents):
        assert ours.agent_actuators[agent] == tuple(node.act_ids for node in ref.agent_action_partitions[i])
        assert ours.action_spaces[agent].shape == ref.action_space(agent).shape
        assert ours.observation_spaces[agent].shape == ref.observation_space(agent).shape

    # Values, from a MaMuJoCo state with a foot on the ground (non-zero contact forces;
    # the ant hops, so few states have any).
    rng = np.random.default_rng(agent_obsk)
    ref.reset(seed=agent_obsk)
    data = ref.unwrapped.single_agent_env.unwrapped.data
    for _ in range(100):
        actions = {a: rng.uniform(-1, 1, ref.action_space(a).shape) for a in ref.possible_agents}
        expected, *_ = ref.step(actions)
        if np.any(data.cfrc_ext[1:]):
            break
    assert np.any(data.cfrc_ext[1:])
    got = ours.local_observations(data.qpos, data.qvel, data.cfrc_ext)
    for agent in ref.possible_agents:
        np.testing.assert_allclose(got[agent], expected[agent], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(
        ours.global_action(actions), ref.map_local_actions_to_global_action(actions).astype(np.float32)
    )
    ref.close()
