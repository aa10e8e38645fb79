"""HostPhysics (the fallback engine's host side, on ``mujoco.batch``) against MuJoCo's plain
sequence on one MjData, bit for bit (no JAX involved)."""

import copy

import mujoco
import numpy as np
import pytest

import gymjax
from gymjax.envs.mujoco.engine import STATE_SPEC
from gymjax.envs.mujoco.engine.callback import HostPhysics

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
    """The reset writes the state in NumPy and stops at the position stage; its outputs must be
    mj_forward's, cfrc_ext zero included, whatever the batch's MjData held before."""
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
    """The batch's threads take simulations as they come, so the split varies from call to call."""
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


def _reference_step(model, state, ctrl, frame_skip=5):
    """Gymnasium's do_simulation from ``state``: mj_step frame_skip times, then mj_rnePostConstraint."""
    data = mujoco.MjData(model)
    mujoco.mj_setState(model, data, state, STATE_SPEC)
    data.ctrl[:] = ctrl
    mujoco.mj_step(model, data, nstep=frame_skip)
    mujoco.mj_rnePostConstraint(model, data)
    out = np.empty(mujoco.mj_stateSize(model, STATE_SPEC))
    mujoco.mj_getState(model, data, out, STATE_SPEC)
    return out, data


def _parts(data):
    """Every array of a :class:`HostData` of NumPy views."""
    return [data.state, data.qpos, data.qvel, *data.fields.values(), *data.residual.values()]


def test_a_masked_call_resets_the_envs_it_names_and_steps_the_others(ant_model):
    """step_or_reset: each row is the step's or the reset's, as if run alone; init_where leaves the
    rows it does not name zero. The JAX state is the truth: the same state stepped again is the
    same, whatever the batch ran in between."""
    physics = HostPhysics(ant_model, frame_skip=5, nthread=2, fields=ANT_FIELDS)
    qpos, qvel = _start(ant_model, 6, seed=4)
    state = physics.split(physics.init(qpos, qvel, {})).state
    ctrl = np.random.default_rng(5).uniform(-1, 1, (6, ant_model.nu)).astype(np.float32)
    reset = np.array([False, True, False, False, True, False])
    fresh_qpos, fresh_qvel = _start(ant_model, 6, seed=6)
    mixed = physics.split(physics.step_or_reset(np.array(state), ctrl, reset, fresh_qpos, fresh_qvel, {}))
    stepped = physics.split(physics.step(np.array(state), ctrl, {}))
    fresh = physics.split(physics.init(fresh_qpos, fresh_qvel, {}))
    for i in range(6):
        want = fresh if reset[i] else stepped
        for x, y in zip(_parts(mixed), _parts(want)):
            np.testing.assert_array_equal(x[i], y[i])
    for i in np.flatnonzero(~reset):
        state_i, data = _reference_step(ant_model, state[i].view(np.float64), ctrl[i])
        np.testing.assert_array_equal(mixed.state[i].view(np.float64), state_i)
        np.testing.assert_array_equal(mixed.fields["cfrc_ext"][i], data.cfrc_ext.astype(np.float32))
    some = physics.split(physics.init_where(reset, fresh_qpos, fresh_qvel, {}))
    np.testing.assert_array_equal(some.state[reset], fresh.state[reset])
    assert not some.state[~reset].any() and not some.fields["xpos"][~reset].any()
    physics.close()


def test_randomized_fields_reach_the_post_constraint_pass(ant_model):
    """mj_rnePostConstraint runs per simulation on that simulation's model: cacc starts from the
    (randomized) gravity."""
    fields = ANT_FIELDS + ("cacc",)
    physics = HostPhysics(ant_model, frame_skip=5, nthread=2, fields=fields)
    qpos, qvel = _start(ant_model, 4, seed=7)
    state = physics.split(physics.init(qpos, qvel, {})).state
    ctrl = np.zeros((4, ant_model.nu), np.float32)
    gravity = np.array([[0, 0, -9.81], [0, 0, -3.0], [1.0, 0, -9.81], [0, 0, -20.0]], np.float32)
    out = physics.split(physics.step(np.array(state), ctrl, {"opt.gravity": gravity}))
    for i in range(4):
        model = copy.copy(ant_model)
        model.opt.gravity[:] = gravity[i]
        state_i, data = _reference_step(model, state[i].view(np.float64), ctrl[i])
        np.testing.assert_array_equal(out.state[i].view(np.float64), state_i)
        np.testing.assert_array_equal(out.fields["cacc"][i], data.cacc.astype(np.float32))
        np.testing.assert_array_equal(out.fields["cfrc_ext"][i], data.cfrc_ext.astype(np.float32))
    # Nominal again when a call names no field.
    nominal = physics.split(physics.step(np.array(state), ctrl, {}))
    np.testing.assert_array_equal(nominal.fields["cacc"][0, 0, 3:], -ant_model.opt.gravity.astype(np.float32))
    physics.close()
