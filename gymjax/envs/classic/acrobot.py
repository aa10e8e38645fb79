"""Acrobot in pure JAX, step-for-step equal to Gymnasium's Acrobot-v1.

Source matched: ``gymnasium/envs/classic_control/acrobot.py`` (Gymnasium 1.x), with its
defaults: the "book" dynamics (not "nips"), one RK4 step over ``dt = 0.2``, no torque
noise (``torque_noise_max = 0``), reward -1 on every step and 0 on the terminating one.
"""

from __future__ import annotations

import math

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

from gymjax.core import Env, State, prng, pytree
from gymjax.envs.classic.state import LAYOUT, PhysicsState, first_state


@pytree.dataclass
class AcrobotParams:
    """Physical constants; every field may be randomized per env.

    Gymnasium's second link length is left out: its dynamics never read it (only its
    renderer does), so randomizing it would change nothing.
    """

    link_length_1: float = 1.0
    link_mass_1: float = 1.0
    link_mass_2: float = 1.0
    link_com_pos_1: float = 0.5
    link_com_pos_2: float = 0.5
    link_moi: float = 1.0  # both links' moment of inertia, as in Gymnasium
    max_vel_1: float = 4 * math.pi
    max_vel_2: float = 9 * math.pi
    gravity: float = 9.8
    dt: float = 0.2  # seconds per step, one RK4 step


@pytree.dataclass
class AcrobotState(PhysicsState):
    """The first link's angle from hanging down, the second's relative to the first (rad, wrapped
    to [-pi, pi]), and their rates."""

    theta1: jax.Array
    theta2: jax.Array
    dtheta1: jax.Array
    dtheta2: jax.Array


def _wrap(x: jax.Array, low: float, high: float) -> jax.Array:
    """Gymnasium's ``wrap``: shifts by whole periods into ``[low, high]``.

    Closed form of its two while loops (same number of periods removed), so a jitted,
    vmapped step never loops, and an infinite angle gives NaN rather than a hang.
    """
    span = high - low
    x = jnp.where(x > high, x - span * jnp.ceil((x - high) / span), x)
    return jnp.where(x < low, x + span * jnp.ceil((low - x) / span), x)


class Acrobot(Env[AcrobotParams]):
    """Observation ``[cos th1, sin th1, cos th2, sin th2, dth1, dth2]``; action 0, 1, 2 (torque -1, 0, +1)."""

    state_layout = LAYOUT


    def __init__(self):
        p = AcrobotParams()
        high = np.array([1.0, 1.0, 1.0, 1.0, p.max_vel_1, p.max_vel_2], dtype=np.float32)
        self.observation_space = gymnasium.spaces.Box(-high, high, dtype=np.float32)
        self.action_space = gymnasium.spaces.Discrete(3)
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    @property
    def default_params(self) -> AcrobotParams:
        return AcrobotParams()

    @property
    def dt(self) -> float:
        return AcrobotParams().dt

    def reset(self, key, params=None):
        return self.reset_to(prng.uniform(key, (4,), jnp.float32, -0.1, 0.1))

    def reset_to(self, physics: jax.Array) -> State:
        """A fresh state at Gymnasium's ``state = [theta1, theta2, dtheta1, dtheta2]``."""
        physics = AcrobotState.from_vector(physics)
        return first_state(physics, self._obs(physics))

    @staticmethod
    def _obs(physics: AcrobotState) -> jax.Array:
        s = physics
        return jnp.stack(
            [jnp.cos(s.theta1), jnp.sin(s.theta1), jnp.cos(s.theta2), jnp.sin(s.theta2), s.dtheta1, s.dtheta2]
        ).astype(jnp.float32)

    @staticmethod
    def _rate(p: AcrobotParams, s: AcrobotState, torque) -> AcrobotState:
        """The state's time derivative under the book's equations of motion; terms grouped and
        ordered as Gymnasium's ``_dsdt`` so that float32 rounding stays close to its float64 result."""
        m1, m2, l1 = p.link_mass_1, p.link_mass_2, p.link_length_1
        lc1, lc2, inertia, g = p.link_com_pos_1, p.link_com_pos_2, p.link_moi, p.gravity
        cos2, sin2 = jnp.cos(s.theta2), jnp.sin(s.theta2)
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * cos2) + inertia + inertia
        d2 = m2 * (lc2**2 + l1 * lc2 * cos2) + inertia
        phi2 = m2 * lc2 * g * jnp.cos(s.theta1 + s.theta2 - jnp.pi / 2.0)
        phi1 = (
            -m2 * l1 * lc2 * s.dtheta2**2 * sin2
            - 2 * m2 * l1 * lc2 * s.dtheta2 * s.dtheta1 * sin2
            + (m1 * lc1 + m2 * l1) * g * jnp.cos(s.theta1 - jnp.pi / 2)
            + phi2
        )
        ddtheta2 = (torque + d2 / d1 * phi1 - m2 * l1 * lc2 * s.dtheta1**2 * sin2 - phi2) / (
            m2 * lc2**2 + inertia - d2**2 / d1
        )
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return AcrobotState(theta1=s.dtheta1, theta2=s.dtheta2, dtheta1=ddtheta1, dtheta2=ddtheta2)

    def step(self, state, action, params=None):
        p = self.resolve_params(params)
        physics = state.env_state
        # Gymnasium's torques [-1, 0, +1] are exactly action - 1.
        torque = jnp.asarray(action, jnp.float32) - 1.0

        def rate(s):
            return self._rate(p, s, torque)

        def ahead(s, h, k):
            return jax.tree.map(lambda y, dy: y + h * dy, s, k)

        half = p.dt / 2.0
        k1 = rate(physics)
        k2 = rate(ahead(physics, half, k1))
        k3 = rate(ahead(physics, half, k2))
        k4 = rate(ahead(physics, p.dt, k3))
        end = jax.tree.map(lambda y, a, b, c, d: y + p.dt / 6.0 * (a + 2 * b + 2 * c + d), physics, k1, k2, k3, k4)
        physics = AcrobotState(
            theta1=_wrap(end.theta1, -jnp.pi, jnp.pi),
            theta2=_wrap(end.theta2, -jnp.pi, jnp.pi),
            dtheta1=jnp.clip(end.dtheta1, -p.max_vel_1, p.max_vel_1),
            dtheta2=jnp.clip(end.dtheta2, -p.max_vel_2, p.max_vel_2),
        ).as_float32()
        # The free end's height above the pivot, in link lengths of 1 as Gymnasium measures it
        # (its rule ignores the link length parameters).
        height = -jnp.cos(physics.theta1) - jnp.cos(physics.theta2 + physics.theta1)
        terminated = height > 1.0
        return state.replace(
            env_state=physics,
            obs=self._obs(physics),
            reward=jnp.where(terminated, 0.0, -1.0).astype(jnp.float32),
            terminated=terminated,
            truncated=jnp.bool_(False),
        )

    def render(self, state, *, width=None, height=None, camera=None):
        from gymjax.envs.classic.rendering import render_with_gymnasium

        return render_with_gymnasium("Acrobot-v1", np.asarray(state.env_state, np.float64), width, height)
