"""JaxAnt-v0 against Gymnasium's Ant-v5 (MuJoCo C) on the same ant.xml."""

import gymnasium
import numpy as np
import pytest

import gymjax
from gymjax.envs.mujoco import SOLVER_PRESETS, Ant


@pytest.fixture(scope="module")
def reference_states():
    """30 states from Ant-v5 rollouts with random actions, some in contact, plus actions."""
    ref = gymnasium.make("Ant-v5").unwrapped
    ref.reset(seed=0)
    rng = np.random.default_rng(0)
    states = []
    for t in range(450):
        _, _, terminated, _, _ = ref.step(rng.uniform(-1, 1, 8))
        if t % 15 == 0:
            states.append((ref.data.qpos.copy(), ref.data.qvel.copy(), rng.uniform(-1, 1, 8)))
        if terminated:
            ref.reset(seed=t)
    return ref, states


def test_one_step_matches_ant_v5(ant_env, reference_states):
    ref, states = reference_states
    ours = ant_env.unwrapped
    ours.reset(seed=0)
    state_err, reward_err, in_contact = [], [], 0
    for qpos, qvel, action in states:
        ref.set_state(qpos, qvel)
        obs_ref, reward_ref, term_ref, _, info_ref = ref.step(action)
        ours.set_state(qpos, qvel)
        obs, reward, terminated, truncated, info = ours.step(action.astype(np.float32))
        data = ours.jax_state.env_state
        q_ref = np.concatenate([ref.data.qpos, ref.data.qvel])
        q_ours = np.concatenate([data.qpos, data.qvel])
        state_err.append(np.linalg.norm(q_ours - q_ref) / np.linalg.norm(q_ref))
        reward_err.append(abs(reward - reward_ref) / abs(reward_ref))
        assert terminated == term_ref and not truncated
        assert info.keys() == info_ref.keys()
        in_contact += ref.data.ncon > 0
    assert len(states) >= 20 and in_contact >= 5
    assert np.median(state_err) <= 1e-4, state_err
    assert np.median(reward_err) <= 1e-3, reward_err


def test_observation_layout_is_ant_v5s(ant_env, reference_states):
    ref, states = reference_states
    qpos, qvel, action = states[3]
    ref.set_state(qpos, qvel)
    obs_ref, *_ = ref.step(action)
    ours = ant_env.unwrapped
    ours.reset(seed=0)
    ours.set_state(qpos, qvel)
    obs, *_ = ours.step(action.astype(np.float32))
    assert obs.shape == (105,) == ant_env.observation_space.shape and obs.dtype == np.float32
    # qpos[2:] (13) + qvel (14) to solver accuracy; clipped contact forces (78) too.
    np.testing.assert_allclose(obs[:27], obs_ref[:27], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(obs[27:], obs_ref[27:], atol=1e-3)
    assert np.abs(obs[27:]).max() <= 1.0


def test_reset_follows_ant_v5(ant_env):
    obs, info = ant_env.reset(seed=5)
    data = ant_env.unwrapped.jax_state.env_state
    qpos0 = ant_env.unwrapped.jax_env.mj_model.qpos0
    assert np.abs(np.asarray(data.qpos) - qpos0).max() <= 0.1 + 1e-6
    assert np.abs(np.asarray(data.qvel)).max() > 0.1  # 0.1 * N(0, 1) over 14 dofs
    np.testing.assert_array_equal(obs[27:], 0.0)  # cfrc_ext is zero after reset, as in MuJoCo
    assert set(info) == {"x_position", "y_position", "distance_from_origin"}
    again, _ = ant_env.reset(seed=5)
    np.testing.assert_array_equal(obs, again)


def test_unhealthy_torso_terminates(ant_env):
    ant_env.reset(seed=0)
    qpos = np.array(ant_env.unwrapped.jax_env.mj_model.qpos0)
    qpos[2] = 1.5  # above healthy_z_range; one step of free fall (0.05 s) keeps it there
    ant_env.unwrapped.set_state(qpos, np.zeros(14))
    _, reward, terminated, _, info = ant_env.step(np.zeros(8, np.float32))
    assert terminated and info["reward_survive"] == 0.0


def test_constructor_options_shape_the_spaces():
    assert Ant(include_cfrc_ext_in_observation=False).observation_space.shape == (27,)
    assert Ant(exclude_current_positions_from_observation=False).observation_space.shape == (107,)
    assert Ant().action_space == gymnasium.spaces.Box(-1, 1, (8,), np.float32)
    assert Ant(main_body="torso").main_body == 1
    with pytest.raises(ValueError, match="main_body 'tail'"):
        Ant(main_body="tail")


def test_solver_presets():
    assert SOLVER_PRESETS["accurate"] == (4, 8)
    fast = Ant(solver="fast")
    assert (fast.mj_model.opt.iterations, fast.mj_model.opt.ls_iterations) == SOLVER_PRESETS["fast"]
    custom = Ant(solver=(2, 3))
    assert (custom.default_params.opt.iterations, custom.default_params.opt.ls_iterations) == (2, 3)
    with pytest.raises(ValueError, match="solver must be one of"):
        Ant(solver="sloppy")


def test_reward_is_the_sum_of_its_terms(ant_env):
    ant_env.reset(seed=1)
    action = np.full(8, 0.5, np.float32)
    _, reward, _, _, info = ant_env.step(action)
    np.testing.assert_allclose(info["reward_ctrl"], -0.5 * 8 * 0.25, rtol=1e-6)  # ctrl_cost_weight 0.5
    assert info["reward_survive"] == 1.0
    terms = info["reward_forward"] + info["reward_survive"] + info["reward_ctrl"] + info["reward_contact"]
    np.testing.assert_allclose(reward, terms, rtol=1e-5)
    np.testing.assert_allclose(info["reward_forward"], info["x_velocity"], rtol=1e-6)


def test_missing_model_file_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="no MuJoCo model 'nope.xml'"):
        gymjax.make("JaxAnt-v0", xml_file="nope.xml")
