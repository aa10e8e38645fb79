"""Classic control step for step against Gymnasium's own, from the same states."""

import dataclasses
import pickle

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gymjax
from gymjax.envs.classic import (
    Acrobot,
    AcrobotParams,
    CartPole,
    CartPoleParams,
    MountainCar,
    MountainCarContinuous,
    MountainCarContinuousParams,
    MountainCarParams,
    Pendulum,
)


def _reference_states(env_id, n, seed):
    """States visited by Gymnasium's env under random actions, episode ends included."""
    ref = gymnasium.make(env_id).unwrapped
    ref.reset(seed=seed)
    rng = np.random.default_rng(seed)
    states = []
    while len(states) < n:
        action = ref.action_space.sample() if env_id == "Pendulum-v1" else int(rng.integers(2))
        states.append((np.array(ref.state, np.float64), action))
        _, _, terminated, _, _ = ref.step(action)
        if terminated:
            ref.reset(seed=int(rng.integers(1 << 30)))
    return ref, states


def test_cartpole_matches_gymnasium_step_for_step():
    ref, states = _reference_states("CartPole-v1", 300, seed=0)
    env = CartPole()
    step = jax.jit(env.step)
    endings = 0
    for physics, action in states:
        ref.state, ref.steps_beyond_terminated = physics.copy(), None
        obs_ref, reward_ref, term_ref, _, _ = ref.step(action)
        out = step(env.reset_to(physics), jnp.int32(action))
        np.testing.assert_allclose(out.obs, obs_ref, rtol=1e-5, atol=1e-5)
        assert float(out.reward) == reward_ref
        assert bool(out.terminated) == term_ref
        endings += term_ref
    assert endings >= 5, "the reference rollout should cover terminations"


def test_pendulum_matches_gymnasium_step_for_step():
    ref, states = _reference_states("Pendulum-v1", 300, seed=1)
    env = Pendulum()
    step = jax.jit(env.step)
    for physics, action in states:
        ref.state = physics.copy()
        obs_ref, reward_ref, _, _, _ = ref.step(action)
        out = step(env.reset_to(physics), jnp.asarray(action))
        np.testing.assert_allclose(out.obs, obs_ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out.reward, reward_ref, rtol=1e-5, atol=1e-5)
        assert not bool(out.terminated)


def _lockstep(env, ref_id, starts, policy, seed):
    """Gymnasium's env and ``env`` side by side through whole episodes.

    Each episode starts at Gymnasium's own reset, or at a given state of ``starts``
    (None: reset's), and runs to termination or the time limit; before every step ours
    is put at the reference's state, then both take the same action, and both the
    observations and the states reached (Gymnasium's ``state``, wrapped angles included)
    must agree. Returns the reference's (state, action, obs, reward, terminated, next
    state) of every step.
    """
    ref = gymnasium.make(ref_id).unwrapped
    step = jax.jit(env.step)
    rng = np.random.default_rng(seed)
    visited = []
    for start in starts:
        ref.reset(seed=int(rng.integers(1 << 30)))
        if start is not None:
            ref.state = np.array(start, np.float64)
        for _ in range(env.max_episode_steps):
            physics, action = np.array(ref.state, np.float64), policy(rng)
            obs_ref, reward_ref, term_ref, _, _ = ref.step(action)
            out = step(env.reset_to(physics), jnp.asarray(action))
            np.testing.assert_allclose(out.obs, obs_ref, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(out.reward, reward_ref, rtol=1e-5, atol=1e-5)
            assert bool(out.terminated) == term_ref, (physics, action)
            next_physics = np.array(ref.state, np.float64)
            np.testing.assert_allclose(out.env_state, next_physics, rtol=1e-5, atol=1e-5)
            assert out.obs.dtype == jnp.float32 and out.reward.dtype == jnp.float32
            visited.append((physics, action, obs_ref, reward_ref, term_ref, next_physics))
            if term_ref:
                break
    return visited


def test_acrobot_matches_gymnasium_step_for_step():
    rng = np.random.default_rng(2)
    # Random torques from Gymnasium's start rarely reach the goal within 500 steps; starts with
    # the first link raised reach it within a few, and fast starts hit the velocity bounds.
    max_vel = np.array([4 * np.pi, 9 * np.pi])
    near_goal = [
        np.concatenate([rng.uniform([1.2, -1.0], [2.2, 1.0]), rng.uniform(-max_vel, max_vel)])
        for _ in range(12)
    ]
    # Angles set several periods out: Gymnasium's wrap takes away whole periods until in range.
    far = [[10.0, -9.0, 0.0, 0.0], [-13.0, 16.0, 1.0, -1.0]]
    starts = [None] * 2 + near_goal + far
    visited = _lockstep(gymjax.make("JaxAcrobot-v0"), "Acrobot-v1", starts, lambda r: int(r.integers(3)), 3)
    assert len(visited) > 1000
    ends = [v for v in visited if v[4]]
    assert len(ends) >= 8 and all(v[3] == 0.0 for v in ends)
    assert {v[3] for v in visited if not v[4]} == {-1.0}
    assert any(np.isclose(np.abs(v[2][4:]), max_vel).any() for v in visited), "velocity bounds not reached"
    wraps = [v for v in visited if (np.abs(v[5][:2] - v[0][:2]) > np.pi).any()]
    assert len(wraps) >= 5, "angles should cross pi and be wrapped"


def test_mountain_car_matches_gymnasium_step_for_step():
    # A random policy never reaches the goal: start some episodes near it, and some
    # against the left wall, where the car stops dead.
    starts = [None] * 3 + [[0.45, 0.05], [0.49, 0.01], [0.3, 0.07], [0.48, -0.01], [-1.15, -0.06]] * 2
    visited = _lockstep(gymjax.make("JaxMountainCar-v0"), "MountainCar-v0", starts, lambda r: int(r.integers(3)), 4)
    assert sum(v[4] for v in visited) >= 6
    assert all(v[3] == -1.0 for v in visited)
    assert any(v[2][0] == np.float32(-1.2) and v[2][1] == 0.0 for v in visited), "the left wall not hit"


def test_mountain_car_continuous_matches_gymnasium_step_for_step():
    # Actions past [-1, 1]: the push is clipped but the reward prices the action as given.
    def policy(rng):
        return rng.uniform(-1.5, 1.5, (1,)).astype(np.float32)

    starts = [None] * 2 + [[0.4, 0.05], [0.44, 0.01], [0.3, 0.07], [-1.15, -0.06]] * 2
    visited = _lockstep(gymjax.make("JaxMountainCarContinuous-v0"), "MountainCarContinuous-v0", starts, policy, 5)
    ends = [v for v in visited if v[4]]
    assert len(ends) >= 6 and all(v[3] > 99.0 for v in ends)
    assert any(abs(v[1][0]) > 1.0 for v in visited)
    assert any(v[2][0] == np.float32(-1.2) and v[2][1] == 0.0 for v in visited), "the left wall not hit"


def test_goal_velocity_option_delays_the_end_as_in_gymnasium():
    for cls, ref_id, physics in [
        (MountainCar, "MountainCar-v0", [0.49, 0.01]),
        (MountainCarContinuous, "MountainCarContinuous-v0", [0.44, 0.01]),
    ]:
        action = 2 if cls is MountainCar else np.ones(1, np.float32)
        ends = []
        for goal_velocity in (0, 0.05):
            ref = gymnasium.make(ref_id, goal_velocity=goal_velocity).unwrapped
            ref.reset(seed=0)
            ref.state = np.array(physics, np.float64)
            term_ref = ref.step(action)[2]
            env = cls(goal_velocity=goal_velocity)
            out = env.step(env.reset_to(jnp.array(physics)), jnp.asarray(action))
            assert bool(out.terminated) == term_ref
            ends.append(term_ref)
        assert ends == [True, False]


@pytest.mark.parametrize(
    "env_id, ref_id",
    [
        ("JaxCartPole-v0", "CartPole-v1"),
        ("JaxPendulum-v0", "Pendulum-v1"),
        ("JaxAcrobot-v0", "Acrobot-v1"),
        ("JaxMountainCar-v0", "MountainCar-v0"),
        ("JaxMountainCarContinuous-v0", "MountainCarContinuous-v0"),
    ],
)
def test_spaces_and_limits_match_gymnasium(env_id, ref_id):
    ours, ref = gymnasium.make(env_id), gymnasium.make(ref_id)
    assert ours.observation_space == ref.observation_space
    assert ours.action_space == ref.action_space
    assert ours.spec.max_episode_steps == ref.spec.max_episode_steps
    assert ours.metadata["render_fps"] == ref.metadata["render_fps"]
    # Gymnasium's time step where it has one (tau for CartPole); mountain cars move per step
    assert ours.unwrapped.dt == getattr(ref.unwrapped, "dt", getattr(ref.unwrapped, "tau", 1.0))


def test_reset_distribution_follows_gymnasium():
    env = CartPole()
    obs = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), 2000)).obs
    assert obs.dtype == jnp.float32
    assert float(jnp.abs(obs).max()) <= 0.05
    assert float(jnp.abs(obs).max()) > 0.049  # uniform on [-0.05, 0.05], not a point
    pendulum = jax.vmap(Pendulum().reset)(jax.random.split(jax.random.PRNGKey(0), 2000))
    theta, theta_dot = pendulum.env_state.theta, pendulum.env_state.theta_dot
    assert float(jnp.abs(theta).max()) > 3.1 and float(jnp.abs(theta_dot).max()) > 0.99


def test_new_envs_reset_as_gymnasium_does():
    keys = jax.random.split(jax.random.PRNGKey(0), 2000)
    acrobot = jax.vmap(Acrobot().reset)(keys)
    physics = acrobot.env_state.vector()
    assert physics.dtype == jnp.float32 and acrobot.obs.dtype == jnp.float32
    # uniform on [-0.1, 0.1] in each of the four numbers, independently
    assert float(jnp.abs(physics).max()) <= 0.1
    assert (jnp.abs(physics).max(axis=0) > 0.099).all()
    assert abs(float(jnp.corrcoef(acrobot.env_state.theta1, acrobot.env_state.theta2)[0, 1])) < 0.1
    np.testing.assert_allclose(acrobot.obs, jax.vmap(Acrobot()._obs)(acrobot.env_state))
    for env in (MountainCar(), MountainCarContinuous()):
        position, velocity = jax.vmap(env.reset)(keys).obs.T
        assert float(position.min()) >= -0.6 and float(position.max()) <= -0.4
        assert float(position.min()) < -0.599 and float(position.max()) > -0.401
        assert (velocity == 0).all()


def test_params_change_the_dynamics():
    env = CartPole()
    state = env.reset_to(jnp.array([0.0, 0.0, 0.1, 0.0]))
    light = env.step(state, 1, CartPoleParams(gravity=1.0))
    heavy = env.step(state, 1, CartPoleParams(gravity=20.0))
    assert float(heavy.obs[3]) > float(light.obs[3])  # the pole falls faster under more gravity


NEW = [
    ("JaxAcrobot-v0", "Acrobot-v1", AcrobotParams),
    ("JaxMountainCar-v0", "MountainCar-v0", MountainCarParams),
    ("JaxMountainCarContinuous-v0", "MountainCarContinuous-v0", MountainCarContinuousParams),
]


@pytest.mark.parametrize("env_id, ref_id, params_type", NEW)
def test_params_change_the_new_envs_dynamics(env_id, ref_id, params_type):
    env = gymjax.envs.make(env_id)
    assert type(env.default_params) is params_type
    state = env.reset(jax.random.PRNGKey(0))
    action = jnp.ones(1) if env_id.endswith("Continuous-v0") else 2
    weak = {"gravity": 0.5 * env.default_params.gravity}
    nominal, lighter = env.step(state, action), env.step(state, action, weak)
    assert not np.allclose(nominal.obs, lighter.obs, rtol=0, atol=1e-7)
    full = env.step(state, action, env.resolve_params(weak))  # the same, given in full
    np.testing.assert_array_equal(full.obs, lighter.obs)
    batch = jax.vmap(env.step, in_axes=(None, None, 0))(
        state, action, {"gravity": jnp.array([weak["gravity"], env.default_params.gravity])}
    )
    np.testing.assert_allclose(batch.obs, jnp.stack([lighter.obs, nominal.obs]), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("env_id, ref_id, params_type", NEW)
def test_new_envs_render_their_state(env_id, ref_id, params_type):
    env = gymjax.envs.make(env_id)
    state = env.reset(jax.random.PRNGKey(0))
    moved = env.reset_to(state.env_state.vector().at[0].add(0.3))
    frame, other = env.render(state), env.render(moved)
    ref = gymnasium.make(ref_id, render_mode="rgb_array")
    ref.reset(seed=0)
    assert frame.shape == ref.render().shape and frame.dtype == np.uint8
    assert (frame != other).any()


@pytest.mark.parametrize("env, fields", [
    (CartPole(), ("x", "x_dot", "theta", "theta_dot")),
    (Pendulum(), ("theta", "theta_dot")),
    (Acrobot(), ("theta1", "theta2", "dtheta1", "dtheta2")),
    (MountainCar(), ("position", "velocity")),
    (MountainCarContinuous(), ("position", "velocity")),
])
def test_physics_states_name_gymnasiums_state_vector(env, fields):
    vector = np.arange(1, len(fields) + 1, dtype=np.float64) / 10
    physics = env.reset_to(vector).env_state
    assert tuple(f.name for f in dataclasses.fields(physics)) == fields
    for name, number in zip(fields, vector):
        assert getattr(physics, name).dtype == jnp.float32 and float(getattr(physics, name)) == np.float32(number)
    np.testing.assert_array_equal(np.asarray(physics, np.float64), vector.astype(np.float32))  # what env.state reads
    # a step keeps the type (one pytree structure, as scan and checkpoints need), and pickles whole
    stepped = jax.jit(env.step)(env.reset_to(vector), jnp.asarray(env.action_space.sample()))
    assert jax.tree.structure(stepped) == jax.tree.structure(env.reset_to(vector))
    restored = pickle.loads(pickle.dumps(jax.device_get(stepped)))
    assert type(restored.env_state) is type(physics)
    np.testing.assert_array_equal(np.asarray(restored.env_state), np.asarray(stepped.env_state))
    with pytest.raises(ValueError, match=rf"takes Gymnasium's state vector \[{', '.join(fields)}\]: {len(fields)} "
                                         r"numbers in the last axis, got shape \(7,\)"):
        env.reset_to(np.zeros(7))


def test_registry_rejects_duplicates_and_unknown_ids():
    with pytest.raises(ValueError, match="already registered"):
        gymjax.envs.register("JaxCartPole-v0", CartPole, max_episode_steps=500)
    with pytest.raises(ValueError, match="unknown environment id 'Nope-v0'"):
        gymjax.make("Nope-v0")
