"""Pendulum swing-up in pure JAX, step-for-step equal to Gymnasium's Pendulum-v1.

Source matched: ``gymnasium/envs/classic_control/pendulum.py`` (Gymnasium 1.x).
"""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

from gymjax.core import Env, State, prng, pytree
from gymjax.envs import options
from gymjax.envs.classic.state import LAYOUT, PhysicsState, first_state


@pytree.dataclass
class PendulumParams:
    """Physical constants; every field may be randomized per env."""

    g: float = 10.0
    m: float = 1.0
    l: float = 1.0  # noqa: E741 - the name Gymnasium uses
    dt: float = 0.05
    max_speed: float = 8.0
    max_torque: float = 2.0


@pytree.dataclass
class PendulumState(PhysicsState):
    """The angle from upright (rad, not wrapped) and its rate."""

    theta: jax.Array
    theta_dot: jax.Array


def angle_normalize(x: jax.Array) -> jax.Array:
    return ((x + jnp.pi) % (2 * jnp.pi)) - jnp.pi


class Pendulum(Env[PendulumParams]):
    """Observation ``[cos(theta), sin(theta), theta_dot]``; action a torque in ``[-2, 2]``."""

    state_layout = LAYOUT


    def __init__(self, g: float = 10.0):
        self.g = options.real(self, "g", g)
        high = np.array([1.0, 1.0, 8.0], dtype=np.float32)
        self.observation_space = gymnasium.spaces.Box(-high, high, dtype=np.float32)
        self.action_space = gymnasium.spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    @property
    def default_params(self) -> PendulumParams:
        return PendulumParams(g=self.g)

    @property
    def dt(self) -> float:
        return PendulumParams().dt

    def reset(self, key, params=None):
        high = jnp.array([jnp.pi, 1.0], jnp.float32)
        return self.reset_to(prng.uniform(key, (2,), jnp.float32, -high, high))

    def reset_to(self, physics: jax.Array) -> State:
        """A fresh state at Gymnasium's ``state = [theta, theta_dot]``."""
        physics = PendulumState.from_vector(physics)
        return first_state(physics, self._obs(physics))

    @staticmethod
    def _obs(physics: PendulumState) -> jax.Array:
        return jnp.stack([jnp.cos(physics.theta), jnp.sin(physics.theta), physics.theta_dot]).astype(jnp.float32)

    def step(self, state, action, params=None):
        p = self.resolve_params(params)
        theta, theta_dot = state.env_state.theta, state.env_state.theta_dot
        u = jnp.clip(jnp.reshape(action, (-1,))[0], -p.max_torque, p.max_torque)
        cost = angle_normalize(theta) ** 2 + 0.1 * theta_dot**2 + 0.001 * u**2
        new_theta_dot = theta_dot + (
            3 * p.g / (2 * p.l) * jnp.sin(theta) + 3.0 / (p.m * p.l**2) * u
        ) * p.dt
        new_theta_dot = jnp.clip(new_theta_dot, -p.max_speed, p.max_speed)
        physics = PendulumState(theta=theta + new_theta_dot * p.dt, theta_dot=new_theta_dot).as_float32()
        return state.replace(
            env_state=physics,
            obs=self._obs(physics),
            reward=(-cost).astype(jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
        )

    def render(self, state, *, width=None, height=None, camera=None):
        from gymjax.envs.classic.rendering import render_with_gymnasium

        return render_with_gymnasium("Pendulum-v1", np.asarray(state.env_state, np.float64), width, height)
