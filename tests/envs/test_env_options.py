"""Env options are checked at construction, with the env, the option and what it takes named."""

import os
import warnings

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gymjax import envs

BAD = [
    ("JaxAnt-v0", {"frame_skip": 2.5}, "Ant: frame_skip must be an int >= 1, got 2.5 (float)"),
    ("JaxAnt-v0", {"frame_skip": 0}, "Ant: frame_skip must be an int >= 1, got 0"),
    ("JaxAnt-v0", {"frame_skip": 10**9}, "Ant: frame_skip must be an int from 1 to 1000, got 1000000000 (int)"),
    ("JaxHopper-v0", {"frame_skip": 2**40}, "Hopper: frame_skip must be an int from 1 to 1000, got 1099511627776"),
    ("JaxAnt-v0", {"ctrl_cost_weight": "x"}, "Ant: ctrl_cost_weight must be a real number, got 'x' (str)"),
    ("JaxAnt-v0", {"healthy_reward": float("nan")}, "Ant: healthy_reward must be a real number, got nan"),
    ("JaxAnt-v0", {"healthy_z_range": "ab"}, "Ant: healthy_z_range must be a pair (low, high) of real numbers"),
    ("JaxAnt-v0", {"contact_force_range": (1.0, -1.0)}, "with low < high, got (1.0, -1.0)"),
    ("JaxAnt-v0", {"solver": (4,)}, "Ant: solver must be one of ['accurate', 'fast', 'model', 'reference'] or a pair"),
    ("JaxAnt-v0", {"solver": "quick"}, "Ant: solver must be one of"),
    ("JaxAnt-v0", {"terminate_when_unhealthy": "yes"}, "Ant: terminate_when_unhealthy must be True or False"),
    ("JaxAnt-v0", {"reset_noise_scale": -0.1}, "Ant: reset_noise_scale must be a real number >= 0"),
    ("JaxAnt-v0", {"main_body": 1.5}, "Ant: main_body must be a body's id or name"),
    ("JaxAnt-v0", {"default_camera_config": "far"}, "Ant: default_camera_config must be a dict"),
    ("JaxAnt-v0", {"engine": "cuda"}, "engine must be one of"),
    ("JaxInvertedPendulum-v0", {"reset_noise_scale": "0.1"}, "InvertedPendulum: reset_noise_scale must be a real"),
    ("JaxPendulum-v0", {"g": "x"}, "Pendulum: g must be a real number, got 'x' (str)"),
    ("JaxCartPole-v0", {"sutton_barto_reward": "no"}, "CartPole: sutton_barto_reward must be True or False"),
    ("JaxMountainCar-v0", {"goal_velocity": "x"}, "MountainCar: goal_velocity must be a real number, got 'x' (str)"),
    ("JaxMountainCarContinuous-v0", {"goal_velocity": "x"},
     "MountainCarContinuous: goal_velocity must be a real number, got 'x' (str)"),
]


@pytest.mark.parametrize("env_id, kwargs, words", BAD, ids=[f"{e}-{k}" for e, k, _ in BAD])
def test_a_bad_option_is_refused_at_construction(env_id, kwargs, words):
    with pytest.raises(ValueError) as error:
        envs.make(env_id, **{"engine": "mujoco", **kwargs} if "Ant" in env_id or "Inverted" in env_id else kwargs)
    assert words in str(error.value)
    with pytest.raises(ValueError):  # gymnasium.make reaches the same check
        gymnasium.make(env_id, **kwargs)


def test_frame_skip_up_to_its_bound_constructs():
    assert envs.make("JaxHopper-v0", engine="mujoco", frame_skip=1000).frame_skip == 1000


def test_good_options_still_construct():
    env = envs.make("JaxAnt-v0", engine="mujoco", healthy_z_range=[0.3, float("inf")], ctrl_cost_weight=1,
                    terminate_when_unhealthy=np.bool_(False), solver=(2, 4), main_body="torso")
    assert env.healthy_z_range == (0.3, float("inf")) and env.ctrl_cost_weight == 1.0
    assert envs.make("JaxPendulum-v0", g=np.float32(9.81)).g == pytest.approx(9.81)


def test_a_huge_action_costs_what_ant_v5_charges_up_to_float32s_largest():
    """Ant-v5 prices the action as given, in float64; a float32 square overflowed to -inf."""
    env = envs.make("JaxAnt-v0", engine="mujoco")
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    reference = gymnasium.make("Ant-v5")
    reference.reset(seed=0)
    for value in (1e10, 1e20):
        action = np.full(8, value, np.float32)
        expected = reference.step(action.astype(np.float64))[4]["reward_ctrl"]
        got = float(step(state, jnp.asarray(action)).info["reward_ctrl"])
        assert np.isfinite(expected) and np.isfinite(got)
        assert got == pytest.approx(max(expected, -float(np.finfo(np.float32).max)), rel=1e-6)


def test_mujoco_warnings_show_once_and_write_no_log_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = envs.make("JaxAnt-v0", engine="mujoco")
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), 8))
    states = jax.vmap(env.reset_to)(states.env_state.qpos, jnp.full((8, env.mj_model.nv), 1e10))
    step = jax.jit(jax.vmap(env.step))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's usual filter: once per message and place
        for _ in range(10):
            states = step(states, jnp.zeros((8, 8)))
        jax.block_until_ready(states)  # the warning comes when the step runs, not when it is dispatched
    unstable = [w for w in caught if "The simulation is unstable" in str(w.message)]
    assert len(unstable) == 1 and "Time =" not in str(unstable[0].message)
    assert not os.path.exists(tmp_path / "MUJOCO_LOG.TXT")
