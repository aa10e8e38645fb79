"""HostPhysics's shortcuts against MuJoCo's plain sequence, bit for bit (no JAX involved)."""

import mujoco
import numpy as np
import pytest

import gymjax
from gymjax.envs.mujoco.host import STATE_SPEC, HostPhysics


ANT_FIELDS = ("xpos", "cfrc_ext")  # what Ant reads: a kinematic field and a post-constraint one


@pytest.fixture(scope="module")
def ant_model():
    return gymjax.make("JaxAnt-v0", engine="mujoco").mj_model


def _start(model, n, seed=0):
    rng = np.random.default_rng(seed)
    qpos = (model.qpos0 + rng.uniform(-0.3, 0.3, (n, model.nq))).astype(np.float32)
    qpos[:, 2] = rng.uniform(0.0, 0.8, n)  # some torsos start in the floor: contacts at reset
    qvel = rng.normal(0.0, 1.0, (n, model.nv)).astype(np.float32)
    return qpos, qvel


def _reference_reset(model, qpos, qvel):
    """Gymnasium's reset + set_state, one env at a time: mj_resetData, write, mj_forward."""
    data = mujoco.MjData(model)
    rows = []
    for p, v in zip(qpos, qvel):
        mujoco.mj_resetData(model, data)
        data.qpos[:], data.qvel[:] = p, v
        mujoco.mj_forward(model, data)
        state = np.empty(mujoco.mj_stateSize(model, STATE_SPEC))
        mujoco.mj_getState(model, data, state, STATE_SPEC)
        rows.append((state, data.xpos.copy(), data.cfrc_ext.copy()))
    return rows


def test_reset_is_mj_forwards_even_on_data_that_stepped_before(ant_model):
    """The reset writes the state in NumPy and runs mj_kinematics only; its outputs must be
    mj_forward's, cfrc_ext zero included, whatever the threads' MjData held before."""
    physics = HostPhysics(ant_model, frame_skip=5, nthread=2, fields=ANT_FIELDS)
    qpos, qvel = _start(ant_model, 24)
    words = physics.init(qpos, qvel, {})
    for _ in range(10):  # leave contact forces and a warm start in the threads' MjData
        ctrl = np.ones((24, ant_model.nu), np.float32)
        words = physics.step(np.array(physics.split(words).state), ctrl, {})
    assert np.abs(physics.split(words).fields["cfrc_ext"]).max() > 0
    again = physics.split(physics.init(qpos, qvel, {}))
    for i, (state, xpos, cfrc) in enumerate(_reference_reset(ant_model, qpos, qvel)):
        np.testing.assert_array_equal(again.state[i].view(np.float64), state)
        np.testing.assert_array_equal(again.fields["xpos"][i], xpos.astype(np.float32))
        np.testing.assert_array_equal(again.fields["cfrc_ext"][i], cfrc.astype(np.float32))
        np.testing.assert_array_equal(again.qpos[i], qpos[i])
        assert not cfrc.any()
    physics.close()


def test_results_do_not_depend_on_which_thread_steps_which_env(ant_model):
    """Threads take envs from a shared counter, so the split varies from call to call."""
    qpos, qvel = _start(ant_model, 13, seed=1)
    ctrl = np.random.default_rng(2).uniform(-1, 1, (20, 13, ant_model.nu)).astype(np.float32)
    results = []
    for nthread in (1, 3):
        physics = HostPhysics(ant_model, frame_skip=5, nthread=nthread, fields=ANT_FIELDS)
        words = physics.init(qpos, qvel, {})
        for action in ctrl:
            words = physics.step(np.array(physics.split(words).state), action, {})
        results.append(words)
        physics.close()
    np.testing.assert_array_equal(results[0], results[1])


def test_a_model_with_sensors_resets_through_mj_forward(ant_model):
    """An accelerometer makes mj_forward fill cfrc_ext (mj_rnePostConstraint): the reset must
    then run the full sequence, and still equal it."""
    spec = mujoco.MjSpec.from_file(gymjax.make("JaxAnt-v0", engine="mujoco").xml_path)
    spec.body("torso").add_site(name="imu")
    spec.add_sensor(type=mujoco.mjtSensor.mjSENS_ACCELEROMETER, objtype=mujoco.mjtObj.mjOBJ_SITE, objname="imu")
    model = spec.compile()
    physics = HostPhysics(model, frame_skip=5, nthread=2, fields=ANT_FIELDS)
    qpos, qvel = _start(model, 8, seed=3)
    words = physics.split(physics.init(qpos, qvel, {}))
    reference = _reference_reset(model, qpos, qvel)
    assert any(cfrc.any() for _, _, cfrc in reference)  # the case the shortcut would get wrong
    for i, (state, xpos, cfrc) in enumerate(reference):
        np.testing.assert_array_equal(words.state[i].view(np.float64), state)
        np.testing.assert_array_equal(words.fields["xpos"][i], xpos.astype(np.float32))
        np.testing.assert_array_equal(words.fields["cfrc_ext"][i], cfrc.astype(np.float32))
    physics.close()
