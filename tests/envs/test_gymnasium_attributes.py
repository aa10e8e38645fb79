"""What users read (and write) on ``env.unwrapped``, against Gymnasium's own envs at the same state.

Every env here runs MuJoCo C (``engine="mujoco"``), Gymnasium's own physics, so values agree
exactly where both compute in float64 and to float32 where gymjax keeps float32.
"""

import gymnasium
import mujoco
import numpy as np
import pytest
from tiers import slow_unless  # tests/tiers.py

import gymjax  # noqa: F401  (registers the ids)

SIZE = {"width": 48, "height": 32}


def _pair(env_id, reference_id, **kwargs):
    ours = gymnasium.make(env_id, engine="mujoco", **kwargs)
    reference = gymnasium.make(reference_id, **kwargs)
    return ours, reference


def _same_state(ours, reference, qpos, qvel):
    """Both envs at ``(qpos, qvel)`` rounded to float32 (what gymjax's set_state keeps)."""
    qpos, qvel = np.float32(qpos).astype(np.float64), np.float32(qvel).astype(np.float64)
    reference.unwrapped.data.qacc_warmstart[:] = 0.0  # a reset's, as ours starts from
    reference.unwrapped.set_state(qpos, qvel)
    ours.unwrapped.set_state(qpos, qvel)


def test_model_data_and_state_vector_before_any_reset():
    ours, reference = _pair("JaxAnt-v0", "Ant-v5")
    env, ref = ours.unwrapped, reference.unwrapped
    assert env.model.nq == ref.model.nq == 15
    data = env.data  # raised ResetNeeded before
    np.testing.assert_array_equal(data.qpos, ref.data.qpos)  # qpos0: Gymnasium's fresh MjData
    np.testing.assert_array_equal(data.xpos, ref.data.xpos)  # not forwarded yet, there either
    np.testing.assert_array_equal(env.state_vector(), ref.state_vector())
    assert env.is_healthy == ref.is_healthy and env.healthy_reward == ref.healthy_reward
    np.testing.assert_allclose(env._get_obs(), ref._get_obs(), atol=1e-7)
    ours.reset(seed=0)
    assert env.data is data  # one MjData, as Gymnasium's env holds
    ours.close()
    reference.close()


def test_ant_attributes_agree_with_ant_v5_step_after_step():
    ours, reference = _pair("JaxAnt-v0", "Ant-v5")
    env, ref = ours.unwrapped, reference.unwrapped
    ours.reset(seed=0)
    reference.reset(seed=0)
    data = env.data  # held across steps, as user code does
    _same_state(ours, reference, ref.data.qpos, ref.data.qvel)
    rng = np.random.default_rng(0)
    in_contact = 0
    for _ in range(25):
        action = rng.uniform(-1, 1, 8).astype(np.float32)
        ours.step(action)
        reference.step(action)
        # The step's own MjData, bit for bit: Gymnasium's xpos (the last substep's) and cfrc_ext.
        for name in ("qpos", "qvel", "xpos", "cfrc_ext", "qacc_warmstart"):
            np.testing.assert_array_equal(getattr(data, name), getattr(ref.data, name), err_msg=name)
        assert data.time == ref.data.time
        np.testing.assert_allclose(env.contact_forces, ref.contact_forces, rtol=1e-6, atol=1e-7)
        in_contact += np.abs(ref.contact_forces[1:]).max() > 0.01
        assert env.contact_cost == pytest.approx(ref.contact_cost, rel=1e-5, abs=1e-9)
        assert env.is_healthy == ref.is_healthy
        assert env.healthy_reward == ref.healthy_reward
        np.testing.assert_allclose(env._get_obs(), ref._get_obs(), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(env.state_vector(), ref.state_vector())
        np.testing.assert_array_equal(env.get_body_com("torso"), ref.get_body_com("torso"))
    assert in_contact >= 5  # the contact forces compared were not all zero
    # Gymnasium keeps its options as _<option>; healthy_reward is the reward of being healthy now.
    assert env._healthy_reward == ref._healthy_reward == 1.0
    assert env._ctrl_cost_weight == ref._ctrl_cost_weight
    assert env._contact_force_range == ref._contact_force_range
    ours.close()
    reference.close()


@pytest.mark.parametrize("env_id, reference_id", [
    ("JaxHopper-v0", "Hopper-v5"), ("JaxWalker2d-v0", "Walker2d-v5"), ("JaxHumanoid-v0", "Humanoid-v5"),
])
def test_health_agrees_with_the_reference_healthy_and_not(env_id, reference_id):
    ours, reference = _pair(env_id, reference_id)
    env, ref = ours.unwrapped, reference.unwrapped
    ours.reset(seed=0)
    reference.reset(seed=0)
    seen = set()
    for z in (ref.init_qpos[1 if "Humanoid" not in env_id else 2], 0.1, 3.0):  # standing, fallen, flying
        qpos = ref.init_qpos.copy()
        qpos[1 if "Humanoid" not in env_id else 2] = z
        _same_state(ours, reference, qpos, ref.init_qvel)
        assert env.is_healthy == ref.is_healthy
        assert env.healthy_reward == ref.healthy_reward
        np.testing.assert_allclose(env._get_obs(), ref._get_obs(), rtol=1e-5, atol=1e-5)
        if "Humanoid" in env_id:
            assert env.contact_cost == pytest.approx(ref.contact_cost, rel=1e-5, abs=1e-9)
        seen.add(bool(ref.is_healthy))
    assert seen == {True, False}
    ours.close()
    reference.close()


def test_writes_to_data_are_where_the_next_step_starts():
    ours, reference = _pair("JaxAnt-v0", "Ant-v5")
    env, ref = ours.unwrapped, reference.unwrapped
    ours.reset(seed=0)
    reference.reset(seed=0)
    _same_state(ours, reference, ref.data.qpos, ref.data.qvel)
    for target in (env, ref):  # what Ant-v5's users write
        target.data.qpos[2] = 0.5
        target.data.qpos[7:] = np.float32(0.3)
        target.data.qvel[:2] = np.float32(1.5)
        mujoco.mj_forward(target.model, target.data)
    assert env.state_vector()[2] == 0.5  # read back as written
    action = np.full(8, 0.2, np.float32)
    obs, reward, *_ = ours.step(action)
    obs_ref, reward_ref, *_ = reference.step(action)
    np.testing.assert_allclose(obs, obs_ref, rtol=1e-4, atol=1e-4)
    assert reward == pytest.approx(reward_ref, rel=1e-4, abs=1e-4)
    np.testing.assert_allclose(env.data.qpos, ref.data.qpos, atol=1e-5)
    # Written, then reset: the reset's state, as Gymnasium's reset overwrites the data.
    env.data.qpos[2] = 9.0
    ours.reset(seed=1)
    assert env.data.qpos[2] < 1.0 and env.jax_state.env_state.qpos[2] < 1.0
    # A write is seen by the derived attributes and by render before any step.
    env.data.qpos[2] = 5.0
    assert not env.is_healthy
    ours.close()
    reference.close()


@pytest.mark.parametrize("mode", ["depth_array", "rgbd_tuple"])
def test_depth_render_modes_are_gymnasiums(mode):
    ours, reference = _pair("JaxAnt-v0", "Ant-v5", render_mode=mode, **SIZE)
    assert mode in ours.metadata["render_modes"]
    ours.reset(seed=0)
    reference.reset(seed=0)
    ref = reference.unwrapped
    _same_state(ours, reference, ref.data.qpos, ref.data.qvel)
    frame, frame_ref = ours.render(), reference.render()
    if mode == "rgbd_tuple":
        (rgb, frame), (rgb_ref, frame_ref) = frame, frame_ref
        assert rgb.shape == (32, 48, 3) and rgb.dtype == np.uint8
        np.testing.assert_array_equal(rgb, rgb_ref)
    assert frame.shape == (32, 48) and frame.dtype == np.float32
    assert 0.0 <= frame.min() and frame.max() <= 1.0
    np.testing.assert_array_equal(frame, frame_ref)  # Gymnasium's depth buffer, as it returns it
    qpos = ref.data.qpos.copy()
    qpos[2] += 1.5  # lifted towards the camera
    _same_state(ours, reference, qpos, ref.data.qvel)
    moved = ours.render()
    moved = moved[1] if mode == "rgbd_tuple" else moved
    assert np.abs(moved - frame).max() > 1e-3  # depth follows the scene
    ours.close()
    reference.close()


def test_depth_is_refused_where_nothing_has_depth():
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        gymnasium.make("JaxCartPole-v0", render_mode="depth_array")


MUJOCO_TASKS = [
    ("JaxAnt-v0", "Ant-v5"), ("JaxHalfCheetah-v0", "HalfCheetah-v5"), ("JaxHopper-v0", "Hopper-v5"),
    ("JaxWalker2d-v0", "Walker2d-v5"), ("JaxSwimmer-v0", "Swimmer-v5"), ("JaxReacher-v0", "Reacher-v5"),
    ("JaxPusher-v0", "Pusher-v5"), ("JaxInvertedPendulum-v0", "InvertedPendulum-v5"),
    ("JaxInvertedDoublePendulum-v0", "InvertedDoublePendulum-v5"), ("JaxHumanoid-v0", "Humanoid-v5"),
    ("JaxHumanoidStandup-v0", "HumanoidStandup-v5"),
]


# Four tasks' cameras in make test (a tracking camera on a free body, on a planar one, a fixed view
# of an arm, of a cart); every task with `-m slow`.
VIEWS_IN_MAKE_TEST = {"JaxAnt-v0", "JaxHopper-v0", "JaxReacher-v0", "JaxInvertedPendulum-v0"}


@pytest.mark.parametrize("env_id, reference_id", slow_unless(VIEWS_IN_MAKE_TEST, MUJOCO_TASKS))
def test_default_view_is_gymnasiums(env_id, reference_id):
    """The first frame, one after the body moved (Gymnasium's free camera stays where it first
    looked, the median of the geoms, at its distance, azimuth and elevation), one after steps."""
    ours, reference = _pair(env_id, reference_id, render_mode="rgb_array", **SIZE)
    ours.reset(seed=0)
    reference.reset(seed=0)
    ref = reference.unwrapped
    _same_state(ours, reference, ref.data.qpos, ref.data.qvel)
    diffs = [np.abs(ours.render().astype(int) - reference.render()).mean()]
    qpos = ref.data.qpos.copy()
    qpos[0] += 0.3
    _same_state(ours, reference, qpos, ref.data.qvel)
    diffs.append(np.abs(ours.render().astype(int) - reference.render()).mean())
    rng = np.random.default_rng(0)
    for _ in range(3):  # drawn from the MjData as the step leaves it, as Gymnasium draws its own
        action = rng.uniform(-1, 1, ours.action_space.shape).astype(np.float32)
        ours.step(action)
        reference.step(action)
    diffs.append(np.abs(ours.render().astype(int) - reference.render()).mean())
    assert max(diffs) < 0.05, diffs  # measured: 0.0 for every task
    ours.close()
    reference.close()


@pytest.mark.parametrize("env_id, reference_id", [("JaxCartPole-v0", "CartPole-v1"), ("JaxPendulum-v0", "Pendulum-v1")])
def test_classic_state_is_gymnasiums_and_writable(env_id, reference_id):
    ours, reference = gymnasium.make(env_id), gymnasium.make(reference_id)
    env, ref = ours.unwrapped, reference.unwrapped
    assert env.state is None
    ours.reset(seed=0)
    reference.reset(seed=0)
    assert env.state.dtype == np.float64 and env.state.shape == ref.state.shape
    np.testing.assert_array_equal(env.state, np.asarray(env.jax_state.env_state, np.float64))
    start = np.array([0.1, -0.2, 0.05, 0.3] if env_id == "JaxCartPole-v0" else [2.0, -0.5])
    ref.state = start.copy()
    env.state = start.copy()  # assigned
    action = ours.action_space.sample()
    ours.step(action)
    reference.step(action)
    np.testing.assert_allclose(env.state, ref.state, rtol=1e-5, atol=1e-6)
    env.state[0] = ref.state[0] = 0.5  # written in place
    ours.step(action)
    reference.step(action)
    np.testing.assert_allclose(env.state, ref.state, rtol=1e-5, atol=1e-6)
    ours.close()
    reference.close()


@pytest.mark.parametrize("env_id, native", [("JaxCartPole-v0", (400, 600)), ("JaxPendulum-v0", (500, 500))])
def test_classic_frames_take_width_and_height(env_id, native):
    sized = gymnasium.make(env_id, render_mode="rgb_array", width=120, height=90)
    plain = gymnasium.make(env_id, render_mode="rgb_array")
    sized.reset(seed=0)
    plain.reset(seed=0)
    frame = sized.render()
    assert frame.shape == (90, 120, 3) and frame.dtype == np.uint8 and frame.std() > 5
    assert plain.render().shape == (*native, 3)  # Gymnasium's own size when none is asked
    sized.close()
    plain.close()
    # every adapter: the vector env and SB3's (one Session under all)
    from gymjax.wrappers.sb3 import SB3VecEnv

    for envs in (gymnasium.make_vec(env_id, 2, render_mode="rgb_array", width=120, height=90),
                 SB3VecEnv(env_id, 2, render_mode="rgb_array", width=120, height=90)):
        envs.reset()
        frames = envs.render() if isinstance(envs, gymnasium.vector.VectorEnv) else envs.get_images()
        assert [f.shape for f in frames] == [(90, 120, 3)] * 2
        envs.close()
    vector = gymnasium.make_vec(env_id, 2, render_mode="rgb_array")
    vector.reset()
    assert [f.shape for f in vector.render()] == [(*native, 3)] * 2
    vector.close()


def test_mujoco_renderer_is_gymnasiums_at_the_current_state():
    from gymnasium.envs.mujoco.mujoco_rendering import MujocoRenderer

    ours, reference = _pair("JaxHopper-v0", "Hopper-v5", render_mode="rgb_array", **SIZE)
    ours.reset(seed=0)
    reference.reset(seed=0)
    ref = reference.unwrapped
    _same_state(ours, reference, ref.data.qpos, ref.data.qvel)
    renderer = ours.unwrapped.mujoco_renderer
    assert isinstance(renderer, MujocoRenderer)
    np.testing.assert_array_equal(renderer.render("depth_array"), ref.mujoco_renderer.render("depth_array"))
    np.testing.assert_array_equal(renderer.render("rgb_array"), ours.render())
    ours.close()
    reference.close()


@pytest.mark.slow  # MJX's InvertedPendulum compiled for one env: 30 s on 2 cores
def test_data_writes_on_mjx_too():
    """MJX has no float64 state to replay a step onto: data is the state forwarded, writes applied."""
    env = gymnasium.make("JaxInvertedPendulum-v0", engine="mjx")
    u = env.unwrapped
    env.reset(seed=0)
    data = u.data
    u.data.qpos[:] = [0.1, 0.05]
    u.data.qvel[:] = 0.0
    env.step(np.zeros(1, np.float32))
    moved = np.array(data.qpos)
    np.testing.assert_allclose(moved, u.jax_state.env_state.qpos, atol=1e-6)  # held reference kept in step
    u.set_state(np.array([0.1, 0.05]), np.zeros(2))
    env.step(np.zeros(1, np.float32))
    np.testing.assert_allclose(u.data.qpos, moved, atol=1e-6)  # the write was the step's start
    env.close()
