"""What the conformance test's random states would rarely reach: the double pendulum's tip with
pole 2 fallen, positions far from the origin, and reset distributions against Gymnasium's."""

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiers import slow_unless  # tests/tiers.py

import gymjax
from gymjax import envs


def _f32(x):
    return np.asarray(x, np.float32).astype(np.float64)


def _step_both(env, reference, qpos, qvel, action):
    """One step of ours (jitted, C engine) and of Gymnasium's env from ``(qpos, qvel)``."""
    qpos, qvel = _f32(qpos), _f32(qvel)
    reference.reset(seed=0)
    reference.data.qacc_warmstart[:] = 0.0
    reference.set_state(qpos, qvel)
    out = jax.jit(env.step)(jax.jit(env.reset_to)(jnp.float32(qpos), jnp.float32(qvel)), jnp.float32(action))
    return out, reference.step(np.asarray(action, np.float64))


@pytest.fixture(scope="module")
def double_pendulum():
    return gymjax.make("JaxInvertedDoublePendulum-v0", engine="mujoco")


def test_double_pendulum_ends_when_pole_2_falls_with_pole_1_upright(double_pendulum):
    """Pole 1 upright, pole 2 at angles from upright to fallen: the tip is the model's ``tip`` site,
    so the episode ends exactly when Gymnasium's does and the ending step pays no alive bonus.

    Brax took pole 2's base shifted straight up as the tip (Brax #574): its height
    0.6 cos(th1) + 0.6 = 1.2 > 1 whatever pole 2 did, and the episode never ended here.
    """
    reference = gymnasium.make("InvertedDoublePendulum-v5").unwrapped
    ended = 0
    for angle in np.linspace(0.0, np.pi, 25):
        out, (obs_ref, reward_ref, terminated_ref, _, info_ref) = _step_both(
            double_pendulum, reference, np.array([0.0, 0.0, angle]), np.zeros(3), np.zeros(1)
        )
        tip = np.asarray(out.env_state.fields["site_xpos"][0])
        np.testing.assert_allclose(tip, reference.data.site_xpos[0], atol=1e-5)
        assert bool(out.terminated) == terminated_ref == (tip[2] <= 1)
        assert float(out.info["reward_survive"]) == info_ref["reward_survive"] == (0.0 if terminated_ref else 10.0)
        assert float(out.reward) == pytest.approx(reward_ref, rel=1e-5)
        np.testing.assert_allclose(out.obs, obs_ref, atol=1e-5)
        ended += terminated_ref
    assert 10 <= ended < 25  # upright pole 2 lives on, fallen ends: both sides of the boundary were met


@pytest.mark.parametrize("env_id, shift", [pytest.param("JaxHalfCheetah-v0", [500.0], marks=pytest.mark.slow),
                                           ("JaxSwimmer-v0", [500.0, -500.0])])
def test_far_from_the_origin_the_velocity_is_gymnasiums(env_id, shift):
    """At 500 m a float32 position moves in steps of 6e-5 m; differenced over dt it would be
    1e-3 m/s of noise. The C engine differences the float64 positions, as Gymnasium does."""
    env = gymjax.make(env_id, engine="mujoco")
    reference = gymnasium.make(envs.spec(env_id).reference_id).unwrapped
    reference.reset(seed=1)
    rng = np.random.default_rng(1)
    naive_errors = []
    for _ in range(8):
        for _ in range(5):
            reference.step(rng.uniform(-1, 1, reference.action_space.shape))
        qpos, qvel = reference.data.qpos.copy(), reference.data.qvel.copy()
        qpos[: len(shift)] += shift
        qpos += rng.uniform(0, 1e-3, qpos.shape) * (np.arange(len(qpos)) < len(shift))  # off the float32 grid
        action = rng.uniform(-1, 1, reference.action_space.shape).astype(np.float32)
        out, (_, reward_ref, _, _, info_ref) = _step_both(env, reference, qpos, qvel, action)
        assert float(out.info["x_position"]) == pytest.approx(qpos[0], abs=1.0)  # it really is far out
        assert float(out.info["x_velocity"]) == pytest.approx(info_ref["x_velocity"], rel=1e-5, abs=1e-5)
        assert float(out.reward) == pytest.approx(reward_ref, rel=1e-5, abs=1e-5)
        before = jax.jit(env.reset_to)(jnp.float32(_f32(qpos)), jnp.float32(_f32(qvel)))
        naive = (float(out.env_state.qpos[0]) - float(before.env_state.qpos[0])) / env.dt
        naive_errors.append(abs(naive - info_ref["x_velocity"]))
    assert max(naive_errors) > 1e-4  # what float32 positions would have given: the test can fail


def _ks_statistic(a, b):
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical CDFs."""
    grid = np.sort(np.concatenate([a, b]))
    cdf = lambda x: np.searchsorted(np.sort(x), grid, side="right") / len(x)  # noqa: E731
    return float(np.abs(cdf(a) - cdf(b)).max())


MUJOCO_IDS = [i for i in envs.registered_ids() if i in envs.CATALOG and envs.spec(i).reference_id.endswith("-v5")]


# Each kind of reset in make test: a goal's rejection loop (Reacher, Pusher), normal velocity noise
# (HalfCheetah), uniform noise on a terminating and on a contact-rich body; every task with `-m slow`.
RESETS_IN_MAKE_TEST = {"JaxReacher-v0", "JaxPusher-v0", "JaxHalfCheetah-v0", "JaxHopper-v0", "JaxAnt-v0"}


@pytest.mark.parametrize("env_id", slow_unless(RESETS_IN_MAKE_TEST, MUJOCO_IDS))
def test_reset_draws_gymnasiums_distribution(env_id):
    """qpos and qvel after 2,000 resets of ours and of Gymnasium's: the distributions of each
    coordinate, and of the length of each pair of neighbours (a goal's distance from the
    origin), within a Kolmogorov-Smirnov gap that uniform-for-normal noise (0.16) or a goal
    drawn from the square instead of the disc would exceed. Reacher's and Pusher's rejection
    loops are lax.while_loops here."""
    n = 2000
    env = gymjax.make(env_id, engine="mujoco")
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n)).env_state
    ours = np.concatenate([states.qpos, states.qvel], axis=1)
    reference = gymnasium.make(envs.spec(env_id).reference_id).unwrapped
    theirs = []
    for seed in range(n):
        reference.reset(seed=seed)
        theirs.append(np.concatenate([reference.data.qpos, reference.data.qvel]))
    theirs = np.array(theirs)
    pairs = lambda x: np.linalg.norm(np.stack([x[:, :-1], x[:, 1:]], axis=-1), axis=-1)  # noqa: E731
    for name, a, b in (("coordinate", ours, theirs), ("pair", pairs(ours), pairs(theirs))):
        for i in range(a.shape[1]):
            if np.ptp(b[:, i]) == 0:
                np.testing.assert_allclose(a[:, i], b[0, i], atol=1e-6, err_msg=f"{name} {i}")
            else:
                assert _ks_statistic(a[:, i], b[:, i]) < 0.08, f"{env_id}: {name} {i}"
