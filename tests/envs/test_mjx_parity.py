"""MJX against MuJoCo C for every MuJoCo id, one step from the same states, at each task's bound.

MJX runs float32 with the "accurate" solver preset (and Newton where the XML asks for PGS,
which MJX lacks); the C engine is Gymnasium's own physics. The bounds are the largest relative
observation error seen over these states, times about ten; benchmarks/results/catalog.md has
the measured deviation after 1 and 100 steps. Compiling MJX dominates this file's time (15 to
70 s a task on 2 cores), so each task compiles one program: reset_to and step together.
"""

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiers import slow_unless  # tests/tiers.py

import gymjax
from gymjax import envs

# Largest |obs_mjx - obs_c| / max(1, |obs_c|) allowed after one step.
BOUNDS = {
    "JaxAnt-v0": 0.3,  # the clipped contact forces of the observation: MJX's soft contacts differ most
    "JaxHalfCheetah-v0": 1e-3,
    "JaxHopper-v0": 1e-4,
    "JaxHumanoid-v0": 1e-3,
    "JaxHumanoidStandup-v0": 1e-2,  # lying on the floor: PGS (C) against Newton (MJX) in contact
    "JaxInvertedDoublePendulum-v0": 1e-5,
    "JaxInvertedPendulum-v0": 1e-5,
    "JaxPusher-v0": 1e-4,
    "JaxReacher-v0": 1e-5,
    "JaxSwimmer-v0": 1e-4,
    "JaxWalker2d-v0": 1e-4,
}
MUJOCO_IDS = [i for i in envs.registered_ids() if i in envs.CATALOG and envs.spec(i).reference_id.endswith("-v5")]
# Each program runs a few steps: XLA's optimizations would take longer than they save (on 2 cores
# they cut the compile from 27 to 17 s for Hopper, 39 to 34 s for Humanoid). No fast math either way.
QUICK_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


def test_every_mujoco_id_has_a_bound():
    assert set(BOUNDS) == set(MUJOCO_IDS)


def _states(reference_id, count=3, seed=0):
    """States of a Gymnasium rollout under random actions, with an action each."""
    reference = gymnasium.make(reference_id).unwrapped
    reference.reset(seed=seed)
    rng = np.random.default_rng(seed)
    low, high = reference.action_space.low, reference.action_space.high
    out = []
    for t in range(20 * count):
        action = rng.uniform(low, high)
        if t % 20 == 10:
            out.append((reference.data.qpos.copy(), reference.data.qvel.copy(), action))
        if reference.step(action)[2]:
            reference.reset(seed=seed + t + 1)
    return out


# Each task compiles MJX's step for 12 to 90 s on 2 cores. `make test` keeps a planar runner in
# contact with the floor (MJX's hinged pendulum is reset and observed in test_inverted_pendulum.py);
# the rest run with `-m slow` (`make test-slow`, which CI runs too).
IN_MAKE_TEST = ("JaxHalfCheetah-v0",)


@pytest.mark.parametrize("env_id", slow_unless(IN_MAKE_TEST, MUJOCO_IDS))
def test_mjx_one_step_matches_mujoco_c(env_id):
    transitions = {}
    for engine in ("mjx", "mujoco"):
        env = gymjax.make(env_id, engine=engine)
        transitions[engine] = jax.jit(lambda q, v, a, env=env: env.step(env.reset_to(q, v), a),
                                      compiler_options=QUICK_COMPILE)
    assert gymjax.make(env_id, engine="mjx").solver == "accurate"
    for qpos, qvel, action in _states(envs.spec(env_id).reference_id):
        args = (jnp.float32(qpos), jnp.float32(qvel), jnp.float32(action))
        mjx_out, c_out = transitions["mjx"](*args), transitions["mujoco"](*args)
        scale = max(1.0, float(jnp.abs(c_out.obs).max()))
        error = float(jnp.abs(mjx_out.obs - c_out.obs).max()) / scale
        assert error <= BOUNDS[env_id], (env_id, error)
        assert np.isfinite(float(mjx_out.reward))
        assert float(mjx_out.reward) == pytest.approx(float(c_out.reward), rel=max(BOUNDS[env_id], 1e-4), abs=1e-3)
