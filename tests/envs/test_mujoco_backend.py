"""The "mujoco" backend (MuJoCo C inside jit) against Gymnasium and against MJX."""

import functools
import logging

import gymnasium
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import gymjax
from gymjax.core import field_names
from gymjax.envs.mujoco import base
from gymjax.envs.mujoco.engine import HostData, NotDifferentiableError
from gymjax.envs.mujoco.engine.callback import HostPhysics
from gymjax.wrappers.training import wrap_for_training


@pytest.fixture(scope="module")
def ant_c():
    return gymjax.make("JaxAnt-v0", engine="mujoco")


@pytest.fixture(scope="module")
def pendulum_c():
    return gymjax.make("JaxInvertedPendulum-v0", engine="mujoco")


def _f32(x):
    """What a float32 JAX array can hold of ``x``, back in float64 for MuJoCo."""
    return np.asarray(x, np.float32).astype(np.float64)


@functools.cache
def _jit(method):
    """One compiled program per bound method (``env.step``), shared by the tests."""
    return jax.jit(method)


def _trajectory_parity(ours, reference, qpos, qvel, actions):
    """Steps ``ours`` (jitted) beside ``reference`` from the same state; returns the worst errors.

    The reference starts from the float32-rounded state with a zero warm start,
    as a reset does, so the two run the same float64 arithmetic from there.
    """
    reference.reset(seed=0)
    reference.data.qacc_warmstart[:] = 0.0
    reference.set_state(_f32(qpos), _f32(qvel))
    state = _jit(ours.reset_to)(jnp.float32(qpos), jnp.float32(qvel))
    step = _jit(ours.step)
    worst = {"obs": 0.0, "reward": 0.0, "steps": 0}
    for action in actions:
        obs_ref, reward_ref, term_ref, _, info_ref = reference.step(_f32(action))
        state = step(state, jnp.float32(action))
        obs = np.asarray(state.obs)
        worst["obs"] = max(worst["obs"], np.abs(obs - obs_ref).max() / max(1.0, np.abs(obs_ref).max()))
        reward_error = abs(float(state.reward) - reward_ref) / max(1.0, abs(reward_ref))
        worst["reward"] = max(worst["reward"], reward_error)
        assert bool(state.terminated) == term_ref
        for key, value in info_ref.items():
            np.testing.assert_allclose(state.info[key], value, rtol=1e-5, atol=1e-5, err_msg=key)
        worst["steps"] += 1
        if term_ref:
            break
    return worst


def test_ant_trajectory_matches_ant_v5_to_float32(ant_c):
    """100 steps in lockstep: the same engine on the same float64 state gives Ant-v5's numbers."""
    reference = gymnasium.make("Ant-v5").unwrapped
    rng = np.random.default_rng(1)
    reference.reset(seed=3)
    qpos, qvel = reference.data.qpos.copy(), reference.data.qvel.copy()
    worst = _trajectory_parity(ant_c, reference, qpos, qvel, rng.uniform(-1, 1, (100, 8)))
    assert worst["steps"] >= 30, worst  # long enough to hit the ground and walk on contacts
    assert worst["obs"] <= 1e-5 and worst["reward"] <= 1e-5, worst


def test_ant_one_step_matches_from_contact_states(ant_c):
    """From 30 states of Ant-v5 rollouts (some in contact), one step each."""
    reference = gymnasium.make("Ant-v5").unwrapped
    reference.reset(seed=0)
    rng = np.random.default_rng(0)
    starts, in_contact = [], 0
    for t in range(450):
        _, _, terminated, _, _ = reference.step(rng.uniform(-1, 1, 8))
        if t % 15 == 0:
            starts.append((reference.data.qpos.copy(), reference.data.qvel.copy()))
            in_contact += reference.data.ncon > 0
        if terminated:
            reference.reset(seed=t)
    assert in_contact >= 5
    for qpos, qvel in starts:
        worst = _trajectory_parity(ant_c, reference, qpos, qvel, rng.uniform(-1, 1, (1, 8)))
        assert worst["obs"] <= 1e-5 and worst["reward"] <= 1e-5, worst


def test_inverted_pendulum_matches_v5(pendulum_c):
    reference = gymnasium.make("InvertedPendulum-v5").unwrapped
    rng = np.random.default_rng(2)
    qpos, qvel = np.array([0.01, -0.02]), np.array([0.0, 0.05])
    worst = _trajectory_parity(pendulum_c, reference, qpos, qvel, rng.uniform(-3, 3, (200, 1)))
    assert worst["steps"] >= 5 and worst["obs"] <= 1e-5, worst


def test_state_is_a_small_pytree_read_like_mjx_data(ant_c):
    state = jax.jit(ant_c.reset)(jax.random.PRNGKey(0))
    data = state.env_state
    assert isinstance(data, HostData)
    m = ant_c.mj_model
    nstate = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS | mujoco.mjtState.mjSTATE_WARMSTART)
    assert data.state.shape == (2 * nstate,) and data.state.dtype == jnp.uint32  # float64 bits
    assert data.qpos.shape == (m.nq,) and data.fields["cfrc_ext"].shape == (m.nbody, 6)
    assert set(data.fields) == {"xpos", "cfrc_ext"} and set(data.residual) == {"xpos"}  # what Ant declared
    np.testing.assert_array_equal(np.asarray(data.state).view(np.float64)[1 : 1 + m.nq], _f32(data.qpos))
    np.testing.assert_array_equal(state.obs[27:], 0.0)  # no contact force after reset, as in MuJoCo


def test_a_vmapped_batch_is_one_host_call_and_scans_with_auto_reset(ant_c):
    before = ant_c.physics_engine.stats()
    env = wrap_for_training(ant_c, episode_length=4)
    n, steps = 3, 9
    state = jax.jit(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))
    actions = jax.random.uniform(jax.random.PRNGKey(1), (steps, n, 8), minval=-1, maxval=1)

    @jax.jit
    def rollout(state, actions):
        def body(state, action):
            state = env.step(state, action)
            return state, (state.reward, state.truncated, state.episode.episode_length)

        return jax.lax.scan(body, state, actions)

    final, (rewards, truncated, counters) = jax.block_until_ready(rollout(state, actions))
    ran = {k: v - before[k] for k, v in ant_c.physics_engine.stats().items()}
    # One native call per batched step over the whole batch, and one per step that ends episodes
    # (same-step auto-reset), which runs only the envs that reset; one for the first reset.
    assert ran == {"calls": 1 + steps + 2, "stepped": n * steps, "reset": n + 2 * n}, ran
    assert truncated[:, 0].tolist() == [False, False, False, True] * 2 + [False]
    assert counters[:, 0].tolist() == [1, 2, 3, 0, 1, 2, 3, 0, 1]  # auto-reset restarted them
    # The scan is the same computation as stepping in a Python loop.
    step = jax.jit(env.step)
    loop = state
    for action in actions:
        loop = step(loop, action)
    np.testing.assert_array_equal(loop.obs, final.obs)
    np.testing.assert_array_equal(loop.env_state.state, final.env_state.state)
    assert np.isfinite(np.asarray(rewards)).all()


def test_mjx_and_mujoco_backends_agree(ant_env, ant_c):
    """MJX's accurate preset and MuJoCo C from the same states, one step (solver tolerance)."""
    reference = gymnasium.make("Ant-v5").unwrapped
    reference.reset(seed=4)
    rng = np.random.default_rng(4)
    mjx_env = ant_env.unwrapped
    mjx_env.reset(seed=0)
    step_c, reset_c = _jit(ant_c.step), _jit(ant_c.reset_to)
    errors = []
    for t in range(40):
        _, _, terminated, _, _ = reference.step(rng.uniform(-1, 1, 8))
        if terminated:
            reference.reset(seed=t)
        if t % 8:
            continue
        qpos, qvel, action = _f32(reference.data.qpos), _f32(reference.data.qvel), rng.uniform(-1, 1, 8)
        mjx_env.set_state(qpos, qvel)
        obs_mjx, *_ = mjx_env.step(np.float32(action))
        obs_c = step_c(reset_c(jnp.float32(qpos), jnp.float32(qvel)), jnp.float32(action)).obs
        errors.append(np.linalg.norm(obs_mjx[:27] - obs_c[:27]) / np.linalg.norm(obs_c[:27]))
    assert np.median(errors) <= 1e-4, errors


@pytest.mark.slow  # MJX's step under randomized params: 45 s of compiles on 2 cores
def test_randomized_params_follow_mjx_semantics(pendulum_mjx, pendulum_c):
    """Per-env physics from DomainRandomization: C and MJX give the same transitions."""

    def heavier(params, key):
        scale = jax.random.uniform(key, (), minval=0.5, maxval=2.0)
        gravity = params.opt.gravity * jax.random.uniform(key, (), minval=0.5, maxval=1.5)
        return params.replace(
            body_mass=params.body_mass * scale,
            dof_damping=params.dof_damping + scale,
            actuator_gainprm=params.actuator_gainprm * scale,
            opt=params.opt.replace(gravity=gravity),
        )

    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    actions = jnp.full((4, 1), 2.0)
    obs = {}
    for name, env in (("mjx", pendulum_mjx), ("mujoco", pendulum_c)):
        batch = wrap_for_training(env, randomization_fn=heavier)
        state = jax.jit(batch.reset)(keys)
        step = jax.jit(batch.step)
        for _ in range(5):
            state = step(state, actions)
        obs[name] = np.asarray(state.obs)
    np.testing.assert_allclose(obs["mujoco"], obs["mjx"], rtol=1e-4, atol=1e-5)
    assert np.ptp(obs["mujoco"][:, 1]) > 1e-3  # the envs really got different physics


def test_unsupported_randomized_field_is_a_clear_error(pendulum_c):
    params = pendulum_c.default_params
    names = field_names(params)
    leaves = jax.tree.leaves(params)
    index = next(i for i, n in enumerate(names) if "_impl" in n and isinstance(leaves[i], jax.Array))
    state = pendulum_c.reset(jax.random.PRNGKey(0))
    with pytest.raises(NotImplementedError, match=names[index].replace(".", r"\.")):
        pendulum_c.step(state, jnp.zeros(1), {names[index]: leaves[index] + 0})
    # A whole model does not say which fields changed: refused, with the form that works.
    heavier = params.replace(body_mass=params.body_mass * 2)
    with pytest.raises(ValueError, match=r"dict \{field name: value\}"):
        pendulum_c.step(state, jnp.zeros(1), heavier)


def test_gradients_through_step_are_a_clear_error(pendulum_c):
    state = pendulum_c.reset(jax.random.PRNGKey(0))
    with pytest.raises(NotDifferentiableError, match='not differentiable.*engine="mjx"'):
        jax.grad(lambda a: pendulum_c.step(state, a).reward)(jnp.zeros(1))
    with pytest.raises(NotDifferentiableError, match='engine="mjx"'):
        jax.grad(lambda q: pendulum_c.reset_to(q, jnp.zeros(2)).obs.sum())(jnp.zeros(2))


def test_gymnasium_make_with_engine_passes_check_env():
    env = gymnasium.make("JaxAnt-v0", engine="mujoco", render_mode="rgb_array", width=32, height=32)
    assert env.unwrapped.jax_env.engine == "mujoco"
    check_env(env.unwrapped)
    env.close()


def test_auto_picks_mujoco_c_on_cpu_and_says_so(caplog):
    assert jax.default_backend() == "cpu"
    base._auto_engine.cache_clear()
    with caplog.at_level(logging.INFO, logger=base.__name__):
        env = gymjax.make("JaxInvertedPendulum-v0", engine="auto")
        again = gymjax.make("JaxInvertedPendulum-v0", backend="auto")  # the old name still works
    assert env.engine == again.engine == "mujoco" and env.solver == "model"
    assert [r.getMessage() for r in caplog.records].count(
        'engine="auto": JAX runs on cpu, so MuJoCo envs use engine=\'mujoco\''
    ) == 1  # logged once
    default = gymjax.make("JaxInvertedPendulum-v0")  # "auto" is the default: no MJX hang on a CPU
    assert default.engine == "mujoco" and gymjax.make("JaxInvertedPendulum-v0", engine="mjx").engine == "mjx"
    with pytest.raises(ValueError, match="engine must be one of"):
        gymjax.make("JaxInvertedPendulum-v0", backend="warp")


def test_multi_ant_takes_the_engine_through_ants_options():
    multi = gymjax.envs.make_multi("JaxMultiAnt-v0", engine="mujoco")
    state = jax.jit(multi.reset)(jax.random.PRNGKey(0))
    state = jax.jit(multi.step)(state, {a: jnp.zeros(s.shape) for a, s in multi.action_spaces.items()})
    assert multi.ant.engine == "mujoco" and isinstance(state.env_state, HostData)
    assert set(state.obs) == set(multi.agents) and np.isfinite(float(state.reward))


def test_set_state_keeps_the_randomized_physics():
    """Gymnasium's set_state under randomization: the env keeps its drawn params (no gravity here)."""

    def no_gravity(params, key):
        return params.replace(opt=params.opt.replace(gravity=params.opt.gravity * 0.0))

    tilted = (np.array([0.0, 0.1]), np.zeros(2))
    angles = {}
    for name, fn in (("nominal", None), ("no gravity", no_gravity)):
        env = gymnasium.make("JaxInvertedPendulum-v0", engine="mujoco", randomization_fn=fn).unwrapped
        env.reset(seed=0)
        env.set_state(*tilted)
        obs, *_ = env.step(np.zeros(1, np.float32))
        angles[name] = float(obs[1])
    assert angles["no gravity"] == pytest.approx(0.1, abs=1e-6)  # nothing pulls the pole over
    assert angles["nominal"] > 0.1 + 1e-4


def test_native_ppo_trains_on_the_c_backend(pendulum_c):
    """The PPO epoch (a jitted lax.scan) runs the C physics: one native call per batched step."""
    from gymjax.trainers.ppo import PPOConfig, train

    before = pendulum_c.physics_engine.stats()
    config = PPOConfig(num_timesteps=2 * 8 * 16, num_envs=8, unroll_length=16, num_minibatches=2,
                       update_epochs=2, num_evals=1, num_eval_envs=4, episode_length=20)
    returns = []
    train(config, pendulum_c, progress_bar=False,
          progress_fn=lambda s, m: returns.append(m["eval/episode_return"]))
    ran = {k: v - before[k] for k, v in pendulum_c.physics_engine.stats().items()}
    # Training: 2 iterations of 16 steps, 8 envs each; evaluation: 4 envs, 20-step episodes.
    assert ran["stepped"] == 2 * 16 * 8 + 20 * 4, ran
    steps = 2 * 16 + 20
    assert steps <= ran["calls"] <= steps + (ran["reset"] - 8 - 4) + 2, ran  # resets: only where some env ends
    assert len(returns) == 1 and 1 <= returns[0] <= 20


def test_fields_randomized_earlier_go_back_to_nominal(pendulum_c):
    """A host shared by a training and an evaluation env: no randomized value outlives its call."""
    physics = HostPhysics(pendulum_c.mj_model, frame_skip=2, nthread=2)
    start = physics.init(np.array([[0.0, 0.1]] * 2, np.float32), np.zeros((2, 2), np.float32), {})
    tilted = physics.split(start).state
    ctrl = np.zeros((2, 1), np.float32)
    nominal = physics.split(physics.step(tilted, ctrl, {})).qpos
    floating = physics.split(physics.step(tilted, ctrl, {"opt.gravity": np.zeros((2, 3))})).qpos
    masses = np.tile(pendulum_c.mj_model.body_mass, (2, 1))
    after = physics.split(physics.step(tilted, ctrl, {"body_mass": masses})).qpos
    np.testing.assert_allclose(floating[:, 1], 0.1, atol=1e-6)
    assert np.abs(nominal[:, 1] - 0.1).min() > 1e-4
    np.testing.assert_array_equal(after, nominal)  # gravity is back, though this call did not name it
    physics.close()


def test_making_an_env_starts_no_jax_runtime():
    """A client that makes one env for its spaces and then forks workers (Gymnasium's AsyncVectorEnv,
    Tianshou's SubprocVectorEnv) needs JAX unstarted in the parent: its runtime does not survive a fork."""
    import subprocess
    import sys

    script = (
        "import gymnasium, gymjax\n"
        "from jax._src import xla_bridge\n"
        "for env_id in gymjax.envs.registered_ids():\n"
        "    if gymjax.envs.spec(env_id).entry_point.startswith('gymjax.envs.mujoco.'):\n"
        "        adapter = gymnasium.make(env_id)\n"
        "        adapter.observation_space, adapter.action_space, adapter.unwrapped.init_qpos\n"
        "        print(env_id, adapter.unwrapped.jax_env.engine, xla_bridge.backends_are_initialized())\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    rows = [line.split() for line in out.stdout.splitlines()]
    assert len(rows) >= 11 and all(row[1:] == ["mujoco", "False"] for row in rows), out.stdout + out.stderr[-2000:]


# -- Beside an accelerator (measured on an H200: benchmarks/results/gpu.md). Here JAX has only the CPU,
# so "an accelerator" is JAX's platform said to be one; what is checked is which engine and device
# gymjax picks from it, which is all that differs there.


def test_adapters_take_the_c_engine_below_thousands_of_envs_on_an_accelerator(monkeypatch):
    from gymjax.wrappers import session

    assert session.sized_engine("JaxHopper-v0", {}, 1) == {}  # on the CPU: "auto" stays the platform's
    monkeypatch.setattr(session, "platform", lambda: "gpu")
    monkeypatch.setattr(base, "platform", lambda: "gpu")
    large = base.ADAPTER_MJX_MIN_ENVS
    assert session.sized_engine("JaxHopper-v0", {}, 1) == {"engine": "mujoco"}
    assert session.sized_engine("JaxHopper-v0", {"engine": "auto"}, large - 1) == {"engine": "mujoco"}
    assert session.sized_engine("JaxMultiAnt-v0", {}, large) == {"engine": "mjx"}
    assert session.sized_engine("JaxHopper-v0", {"engine": "mjx"}, 1) == {"engine": "mjx"}  # said: kept
    assert session.sized_engine("JaxHopper-v0", {"backend": "mjx"}, 1) == {"backend": "mjx"}
    assert session.sized_engine("JaxCartPole-v0", {}, 1) == {}  # no engine to choose


def test_a_c_engine_session_runs_on_the_cpu_device_beside_an_accelerator(monkeypatch):
    """Its FFI handler exists for the CPU only: every program of the session runs with the CPU as
    JAX's default device, and a torch adapter's tensors come from there."""
    from gymjax.core import platform
    from gymjax.wrappers.torch import TorchEnv

    monkeypatch.setattr(platform, "platform", lambda: "gpu")
    used = []
    real = jax.default_device

    def recorded(device):
        used.append(device)
        return real(device)

    monkeypatch.setattr(jax, "default_device", recorded)
    cpu = jax.devices("cpu")[0]
    # An option no other test uses: a program of its own, not one cached before the patch.
    odd = {"reset_noise_scale": 0.0123}
    env = gymnasium.make("JaxInvertedPendulum-v0", engine="mujoco", **odd).unwrapped
    assert env.session.device == cpu
    env.reset(seed=0)
    env.step(np.zeros(1, np.float32))
    env.set_state(np.zeros(2), np.zeros(2))
    # the reset, the step, set_state's read of the state it replaces (kept packed between steps), set_state
    assert len(used) == 4 and set(used) == {cpu}
    torch_env = TorchEnv("JaxInvertedPendulum-v0", engine="mujoco", **odd)
    assert str(torch_env.bridge_device) == "cpu"
    mjx = gymnasium.make("JaxInvertedPendulum-v0", engine="mjx", **odd).unwrapped
    assert mjx.session.device is None  # MJX runs where JAX's default device is
    for e in (env, torch_env, mjx):
        e.close()


def test_training_the_c_engine_beside_an_accelerator_is_refused_in_one_line(monkeypatch, pendulum_c):
    from gymjax.trainers.ppo import PPOConfig, train

    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    with pytest.raises(ValueError, match=r"runs on the CPU only \(MuJoCo's C engine\) and JAX's devices are gpu "
                                         r"ones: train it with engine=\"mjx\" there, "
                                         r"or on the CPU with JAX_PLATFORMS=cpu"):
        train(PPOConfig(num_timesteps=1024, num_envs=8), pendulum_c, progress_bar=False)
