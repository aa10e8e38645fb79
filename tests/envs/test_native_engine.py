"""MuJoCo's batch engine through XLA FFI (gymjax.envs.mujoco.engine.native) against the callback engine.

The callback engine (``engine.callback.CallbackEngine``, ``mujoco.batch`` under a ``pure_callback``) is the one
gymjax falls back to without a compiler: every MuJoCo task's batched trajectories, masked resets in
both auto-reset modes, randomized model fields and action repeat included, must be the same bits on
both, from the same calls.
"""

import ctypes
import pathlib
import pickle
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from tiers import slow_unless  # tests/tiers.py

import gymjax
from gymjax import envs
from gymjax.core import SimulationError, simulation_error
from gymjax.envs.mujoco import engine as engines
from gymjax.envs.mujoco.engine import MuJoCoWarning, callback, native
from gymjax.envs.mujoco.engine.callback import CallbackEngine
from gymjax.wrappers.training import wrap_for_training

pytestmark = pytest.mark.skipif(not native.available(), reason="the native MuJoCo engine is not built here")

MUJOCO_IDS = [i for i in envs.registered_ids()
              if i in envs.CATALOG and envs.spec(i).entry_point.startswith("gymjax.envs.mujoco.")]
N, STEPS, EPISODE = 5, 24, 7


def _pair(env_id, **kwargs):
    """The same env on the native engine and on the callback engine."""
    ours = gymjax.make(env_id, engine="mujoco", **kwargs)
    assert isinstance(ours.physics_engine, native.NativeEngine)
    theirs = gymjax.make(env_id, engine="mujoco", **kwargs)
    theirs.physics_engine = CallbackEngine(theirs.mj_model, theirs.frame_skip, theirs.data_fields,
                                           theirs.differenced_fields)
    return ours, theirs


def _scale_masses(params, key):
    scale = jax.random.uniform(key, params.body_mass.shape, minval=0.7, maxval=1.3)
    return params.replace(body_mass=params.body_mass * scale)


def _rollout(env, mode, randomize):
    """``STEPS`` batched steps of random actions through the training stack; every state."""
    stack = wrap_for_training(env, episode_length=EPISODE, autoreset_mode=mode,
                              randomization_fn=_scale_masses if randomize else None,
                              action_repeat=2 if randomize else 1)
    state = jax.jit(stack.reset)(jax.random.split(jax.random.PRNGKey(3), N))
    step = jax.jit(stack.step)
    rng = np.random.default_rng(0)
    low, high = env.action_space.low, env.action_space.high
    states = [state]
    for _ in range(STEPS):
        state = step(state, rng.uniform(low, high, (N, *low.shape)).astype(np.float32))
        states.append(state)
    return states


# Every task once, the two auto-reset paths in turn: same-step (a masked restart after the step) on
# half the tasks, next-step (resets fused into the step's call, randomized masses, action repeat) on
# the other half. A task's physics and a mode's path are each covered; every pairing would double
# the suite's most expensive compiles for no path not already run.
BIT_CASES = [(i, *[("same_step", False), ("next_step", True)][k % 2]) for k, i in enumerate(MUJOCO_IDS)]
# `make test` runs a body with contacts in each mode and the smallest body; the rest (5 to 16 s
# each on 2 cores) with `-m slow`.
IN_MAKE_TEST = ("JaxAnt-v0", "JaxInvertedPendulum-v0", "JaxSwimmer-v0")
BIT_CASES = slow_unless(IN_MAKE_TEST, BIT_CASES)


@pytest.mark.parametrize("env_id,mode,randomize", BIT_CASES)
def test_trajectories_are_the_callback_engines_bit_for_bit(env_id, mode, randomize):
    ours, theirs = _pair(env_id)
    before = ours.physics_engine.stats()
    mine, reference = _rollout(ours, mode, randomize), _rollout(theirs, mode, randomize)
    ran = {k: v - before[k] for k, v in ours.physics_engine.stats().items()}
    for t, (a, b) in enumerate(zip(mine, reference)):
        for (path, x), y in zip(jax.tree_util.tree_flatten_with_path(a)[0], jax.tree.leaves(b)):
            name = jax.tree_util.keystr(path)
            if mode == "next_step" and "final_" in name:
                continue  # where an env resets, next-step mode keeps no final state (AutoResetState)
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=f"{env_id} step {t} {name}")
    # Resets ran mid-batch, and only for the envs that ended: never the whole batch each time.
    ended = sum(int(np.sum(s.done)) for s in mine[1:]) if mode == "same_step" else None
    if ended is not None:
        assert ran["reset"] == N + ended, ran
    assert N < ran["reset"] < N * (1 + STEPS // 2), ran
    if mode == "next_step":  # a reset happens in the call that steps the other envs
        assert ran["calls"] == 1 + STEPS * (1 if not randomize else 2), ran
    assert theirs.physics_engine.stats() == ran  # the fallback takes the same masked path


def test_vmap_over_two_batch_axes_is_one_flat_batch():
    env = gymjax.make("JaxHopper-v0", engine="mujoco")
    keys = jax.random.split(jax.random.PRNGKey(0), 6)
    actions = jax.random.uniform(jax.random.PRNGKey(1), (6, 3), minval=-1, maxval=1)
    flat = jax.jit(jax.vmap(env.step))(jax.jit(jax.vmap(env.reset))(keys), actions)
    twice = jax.vmap(jax.vmap(env.step))
    grid = jax.jit(twice)(jax.jit(jax.vmap(jax.vmap(env.reset)))(keys.reshape(2, 3, -1)), actions.reshape(2, 3, 3))
    for x, y in zip(jax.tree.leaves(flat), jax.tree.leaves(grid)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y).reshape(np.shape(x)))


def test_a_scan_of_steps_is_the_loop_of_steps():
    env = gymjax.make("JaxAnt-v0", engine="mujoco")
    state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), 3))
    actions = jax.random.uniform(jax.random.PRNGKey(1), (4, 3, 8), minval=-1, maxval=1)
    scanned, _ = jax.jit(lambda s, a: jax.lax.scan(lambda s, x: (jax.vmap(env.step)(s, x), None), s, a))(state, actions)
    step = jax.jit(jax.vmap(env.step))
    for action in actions:
        state = step(state, action)
    np.testing.assert_array_equal(np.asarray(scanned.env_state.state), np.asarray(state.env_state.state))


def test_fields_randomized_earlier_go_back_to_nominal():
    """One native engine serves every env of the same physics (a training and an evaluation env):
    no randomized value outlives the call that named it."""
    env = gymjax.make("JaxInvertedPendulum-v0", engine="mujoco")
    start = jax.jit(jax.vmap(env.reset_to))(jnp.array([[0.0, 0.1]] * 2), jnp.zeros((2, 2)))
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0)))
    ctrl = jnp.zeros((2, 1))
    plain = jax.jit(jax.vmap(env.step))
    nominal = plain(start, ctrl).env_state.qpos
    heavier = {"body_mass": jnp.tile(env.mj_model.body_mass * 2, (2, 1))}
    heavy = step(start, ctrl, heavier).env_state.qpos
    floating = step(start, ctrl, {"opt.gravity": jnp.zeros((2, 3))}).env_state.qpos
    np.testing.assert_allclose(floating[:, 1], 0.1, atol=1e-6)
    assert np.abs(nominal[:, 1] - 0.1).min() > 1e-4 and not np.array_equal(heavy, nominal)
    # Gravity is back, and the masses too, though the calls did not name them.
    np.testing.assert_array_equal(step(start, ctrl, heavier).env_state.qpos, heavy)
    np.testing.assert_array_equal(plain(start, ctrl).env_state.qpos, nominal)


def test_a_reset_of_a_model_with_an_accelerometer_keeps_the_cfrc_ext_mj_forward_fills():
    """With an acceleration sensor, Gymnasium's reset (mj_forward) fills cfrc_ext: a user's XML may
    have one, and its first observation must be that one, not zeros."""
    env = gymjax.make("JaxAnt-v0", engine="mujoco")
    spec = mujoco.MjSpec.from_file(env.xml_path)
    spec.body("torso").add_site(name="imu")
    spec.add_sensor(type=mujoco.mjtSensor.mjSENS_ACCELEROMETER, objtype=mujoco.mjtObj.mjOBJ_SITE, objname="imu")
    model = spec.compile()
    rng = np.random.default_rng(0)
    qpos = (model.qpos0 + rng.uniform(-0.1, 0.1, (3, model.nq))).astype(np.float32)
    qpos[:, 2] = [0.1, 0.3, 0.9]  # torsos in the floor: contact forces at reset
    qvel = rng.normal(0, 0.1, (3, model.nv)).astype(np.float32)
    engines = [cls(model, env.frame_skip, env.data_fields, env.differenced_fields)
               for cls in (native.NativeEngine, CallbackEngine)]
    ours, theirs = [jax.jit(jax.vmap(lambda q, v, e=e: e.init(None, q, v)))(qpos, qvel) for e in engines]
    assert np.asarray(theirs.fields["cfrc_ext"]).any()  # what mj_forward gives (tests/envs/test_host_physics.py)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_an_unstable_simulation_warns_naming_it():
    env = gymjax.make("JaxInvertedPendulum-v0", engine="mujoco")
    qvel = jnp.zeros((4, 2)).at[2].set(1e30)
    state = jax.jit(jax.vmap(env.reset_to))(jnp.zeros((4, 2)), qvel)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stepped = jax.block_until_ready(jax.jit(jax.vmap(env.step))(state, jnp.zeros((4, 1))))
    said = [str(w.message) for w in caught if issubclass(w.category, MuJoCoWarning)]
    assert said == ["MuJoCo: simulation 2 of 4: Nan, Inf or huge value in QVEL at DOF 0. The simulation is unstable."]
    assert np.isfinite(np.asarray(stepped.obs)).all()  # MuJoCo reset the unstable one, as in Gymnasium


@pytest.mark.parametrize("n", [1, 4])  # one env runs on the caller's thread, a batch on MuJoCo's pool
def test_mujocos_stage_timers_pause_during_a_call_and_come_back(n):
    """The engine's steps read no clock (MuJoCo's timer callback is paused while a call runs), and
    the callback a user set is theirs again after it: their own simulations still time their stages."""
    reads = []
    mujoco.set_mjcb_time(lambda: float(len(reads.append(0) or reads)))
    try:
        env = gymjax.make("JaxHopper-v0", engine="mujoco")
        state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))
        step = jax.jit(jax.vmap(env.step))
        jax.block_until_ready(step(state, jnp.zeros((n, 3))))  # compiled, and stepped once
        reads.clear()
        for _ in range(3):
            state = jax.block_until_ready(step(state, jnp.zeros((n, 3))))
        assert reads == []
        xml = "<mujoco><worldbody><body><freejoint/><geom size='1'/></body></worldbody></mujoco>"
        model = mujoco.MjModel.from_xml_string(xml)
        mujoco.mj_step(model, mujoco.MjData(model))
        assert reads  # a simulation of the user's own, stepped after the engine's calls
    finally:
        mujoco.set_mjcb_time(None)


def test_a_pickled_env_steps_the_same_in_a_new_process(tmp_path):
    """The native engine is registered anew where an env is unpickled, never copied."""
    env = gymjax.make("JaxHalfCheetah-v0", engine="mujoco")
    state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), 2))
    here = jax.jit(jax.vmap(env.step))(state, jnp.full((2, 6), 0.5))
    (tmp_path / "env.pkl").write_bytes(pickle.dumps((env, jax.device_get(state))))
    script = (
        "import pickle, sys, jax, jax.numpy as jnp, numpy as np\n"
        f"env, state = pickle.loads(open({str(tmp_path / 'env.pkl')!r}, 'rb').read())\n"
        "out = jax.jit(jax.vmap(env.step))(state, jnp.full((2, 6), 0.5))\n"
        "sys.stdout.buffer.write(np.asarray(out.env_state.state).tobytes())\n"
    )
    there = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True, timeout=300).stdout
    assert there == np.asarray(here.env_state.state).tobytes()


def test_two_devices_step_concurrently(tmp_path):
    """Two CPU devices call one native engine at once: each call holds its own batch."""
    script = (
        "import os\n"
        "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=2'\n"
        "import jax, jax.numpy as jnp, numpy as np, gymjax\n"
        "env = gymjax.make('JaxAnt-v0', engine='mujoco')\n"
        "keys = jax.random.split(jax.random.PRNGKey(0), 8).reshape(2, 4, -1)\n"
        "actions = jax.random.uniform(jax.random.PRNGKey(1), (2, 4, 8), minval=-1, maxval=1)\n"
        "def run(keys, actions):\n"
        "    state = jax.vmap(env.reset)(keys)\n"
        "    for _ in range(20):\n"
        "        state = jax.vmap(env.step)(state, actions)\n"
        "    return state.env_state.state\n"
        "assert jax.device_count() == 2\n"
        "both = jax.pmap(run)(keys, actions)\n"
        "one = jax.jit(run)(keys.reshape(8, -1), actions.reshape(8, 8))\n"
        "assert np.array_equal(np.asarray(both).reshape(8, -1), np.asarray(one))\n"
        "print('same')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "same", out.stderr[-2000:]


def test_without_the_extension_the_callback_engine_runs_and_says_so(monkeypatch):
    def missing():
        raise native.NativeUnavailable("gymjax's native MuJoCo engine is not built (no C++ compiler at install?)")

    monkeypatch.setattr(native, "library", missing)
    engines._say_fallback.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fallen = gymjax.make("JaxInvertedPendulum-v0", engine="mujoco")
        gymjax.make("JaxInvertedPendulum-v0", engine="mujoco")
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and "not built" in said[0] and "mujoco.batch" in said[0], said  # once
    assert isinstance(fallen.physics_engine, CallbackEngine)
    engines._say_fallback.cache_clear()
    # The fallback runs the same physics and the same masked resets: an env whose episode ends
    # resets alone, in the call that steps the others (next-step mode), and the others go on.
    monkeypatch.undo()
    ours = gymjax.make("JaxInvertedPendulum-v0", engine="mujoco")
    mine, reference = _rollout(ours, "next_step", False), _rollout(fallen, "next_step", False)
    for a, b in zip(mine, reference):
        np.testing.assert_array_equal(np.asarray(a.env_state.state), np.asarray(b.env_state.state))
    pending = [int(np.sum(s.autoreset.pending)) for s in reference[:-1]]
    assert any(0 < p < N for p in pending), pending  # some envs ended while others went on
    assert fallen.physics_engine.stats() == {"calls": 1 + STEPS, "stepped": N * STEPS - sum(pending),
                                    "reset": N + sum(pending)}


def test_without_mujoco_batch_the_fallback_says_what_to_install(monkeypatch):
    def missing():
        raise native.NativeUnavailable("gymjax's native MuJoCo engine is not built (no C++ compiler at install?)")

    monkeypatch.setattr(native, "library", missing)
    monkeypatch.setattr(callback, "batch", None)
    with pytest.raises(native.NativeUnavailable, match=r"install mujoco>=4\.0, or use engine=\"mjx\""):
        gymjax.make("JaxInvertedPendulum-v0", engine="mujoco")


# Twenty boxes falling onto a floor in an arena too small for their contacts: MuJoCo raises
# "mj_stackAlloc: out of memory" in the collision stage of the first forward pass.
CRAMPED = ('<mujoco><size memory="40K"/><worldbody><geom type="plane" size="5 5 .1"/>'
           + "".join(f'<body pos="{i * 0.05} 0 {0.1 + 0.05 * i}"><freejoint/><geom type="box" size=".1 .1 .1"/></body>'
                     for i in range(20))
           + "</worldbody></mujoco>")


def test_a_mujoco_error_names_its_envs_alike_on_both_engines():
    model = mujoco.MjModel.from_xml_string(CRAMPED)
    qpos = np.tile(model.qpos0, (3, 1)).astype(np.float32)
    qvel = np.zeros((3, model.nv), np.float32)
    errors = []
    for cls in (native.NativeEngine, CallbackEngine):
        engine = cls(model, 1)
        # The native engine's kinematic reset runs no collision, so its error comes at the first step;
        # the callback engine's reset runs the position stage, collision included, and raises there.
        with pytest.raises(jax.errors.JaxRuntimeError) as caught:
            data = jax.jit(jax.vmap(lambda q, v, e=engine: e.init(None, q, v)))(qpos, qvel)
            step = jax.jit(jax.vmap(lambda d, e=engine: e.step(None, d, jnp.zeros(0))))
            jax.block_until_ready(step(data))
        errors.append(simulation_error(caught.value))
    native_error, callback_error = errors
    assert native_error is not None and callback_error is not None
    assert native_error.ids == callback_error.ids == (0, 1, 2) and native_error.size == callback_error.size == 3
    assert native_error.message == callback_error.message
    assert native_error.message.startswith("MuJoCo raised an error; simulation 0: mj_stackAlloc: out of memory")


def test_a_gymnasium_env_raises_the_typed_error(tmp_path):
    """Through the host runtime (any adapter), the error is a SimulationError, not JAX's text: Hopper
    among sixty boxes, in a stack too small for their collision pairs."""
    import gymnasium

    xml = (pathlib.Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "hopper.xml").read_text()
    boxes = "".join(f'<geom type="box" pos="{0.01 * i} 0 {0.03 * i}" size=".3 .3 .05"/>' for i in range(60))
    path = tmp_path / "hopper_in_boxes.xml"
    cramped = xml.replace("<worldbody>", f"<worldbody>{boxes}", 1)
    cramped = cramped.replace("<compiler", '<size memory="8K"/><compiler', 1)
    path.write_text(cramped)
    env = gymnasium.make_vec("JaxHopper-v0", num_envs=2, xml_file=str(path))
    env.reset(seed=0)  # the kinematics alone: no collision yet
    with pytest.raises(SimulationError, match=r"simulations \[0, 1\] of 2: MuJoCo raised an error; simulation 0"):
        env.step(np.zeros((2, 3), np.float32))


def test_randomized_fields_cross_once_as_a_registered_set():
    env = gymjax.make("JaxHopper-v0", engine="mujoco")
    engine = env.physics_engine
    masses = jnp.asarray(env.mj_model.body_mass, jnp.float32) * 1.1
    state = jax.jit(lambda k: env.reset(k, {"body_mass": masses}))(jax.random.PRNGKey(0))
    assert list(engine._field_sets) == [("body_mass",)]
    key = engine._field_sets[("body_mass",)]
    jax.jit(lambda s: env.step(s, jnp.zeros(3), {"body_mass": masses}))(state)
    assert engine._field_sets == {("body_mass",): key}  # the same set, not registered again
    assert native.library().gymjax_register_fields(engine.key, key, 1, (ctypes.c_char_p * 1)(b"body_mass"), b"x",
                                                   ctypes.create_string_buffer(64), 64) == -1  # a type C refuses
