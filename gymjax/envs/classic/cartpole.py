"""CartPole in pure JAX, step-for-step equal to Gymnasium's CartPole-v1.

Source matched: ``gymnasium/envs/classic_control/cartpole.py`` (Gymnasium 1.x),
Euler integration, reward 1 on every step including the terminating one.
"""

from __future__ import annotations

import math

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

from gymjax.core import Env, State, prng, pytree
from gymjax.envs import options
from gymjax.envs.classic.state import LAYOUT, PhysicsState, first_state


@pytree.dataclass
class CartPoleParams:
    """Physical constants; every field may be randomized per env."""

    gravity: float = 9.8
    masscart: float = 1.0
    masspole: float = 0.1
    length: float = 0.5  # half the pole's length, as in Gymnasium
    force_mag: float = 10.0
    tau: float = 0.02  # seconds per step


@pytree.dataclass
class CartPoleState(PhysicsState):
    """The cart's position and velocity, the pole's angle from upright (rad) and its rate."""

    x: jax.Array
    x_dot: jax.Array
    theta: jax.Array
    theta_dot: jax.Array


class CartPole(Env[CartPoleParams]):
    """Observation ``[x, x_dot, theta, theta_dot]``; action 0 (push left) or 1 (push right)."""

    state_layout = LAYOUT

    theta_threshold = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def __init__(self, sutton_barto_reward: bool = False):
        self.sutton_barto_reward = options.flag(self, "sutton_barto_reward", sutton_barto_reward)
        high = np.array(
            [self.x_threshold * 2, np.inf, self.theta_threshold * 2, np.inf], dtype=np.float32
        )
        self.observation_space = gymnasium.spaces.Box(-high, high, dtype=np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    @property
    def default_params(self) -> CartPoleParams:
        return CartPoleParams()

    @property
    def dt(self) -> float:
        return CartPoleParams().tau

    def reset(self, key, params=None):
        return self.reset_to(prng.uniform(key, (4,), jnp.float32, -0.05, 0.05))

    def reset_to(self, physics: jax.Array) -> State:
        """A fresh state at Gymnasium's ``state = [x, x_dot, theta, theta_dot]``."""
        physics = CartPoleState.from_vector(physics)
        return first_state(physics, physics.vector())

    def step(self, state, action, params=None):
        p = self.resolve_params(params)
        s = state.env_state
        force = jnp.where(action == 1, p.force_mag, -p.force_mag)
        cos, sin = jnp.cos(s.theta), jnp.sin(s.theta)
        total_mass = p.masspole + p.masscart
        polemass_length = p.masspole * p.length
        temp = (force + polemass_length * s.theta_dot**2 * sin) / total_mass
        theta_acc = (p.gravity * sin - cos * temp) / (
            p.length * (4.0 / 3.0 - p.masspole * cos**2 / total_mass)
        )
        x_acc = temp - polemass_length * theta_acc * cos / total_mass
        physics = CartPoleState(
            x=s.x + p.tau * s.x_dot,
            x_dot=s.x_dot + p.tau * x_acc,
            theta=s.theta + p.tau * s.theta_dot,
            theta_dot=s.theta_dot + p.tau * theta_acc,
        ).as_float32()
        terminated = (jnp.abs(physics.x) > self.x_threshold) | (jnp.abs(physics.theta) > self.theta_threshold)
        if self.sutton_barto_reward:
            reward = jnp.where(terminated, -1.0, 0.0)
        else:
            reward = jnp.float32(1.0)
        return state.replace(
            env_state=physics,
            obs=physics.vector(),
            reward=jnp.asarray(reward, jnp.float32),
            terminated=terminated,
            truncated=jnp.bool_(False),
        )

    def render(self, state, *, width=None, height=None, camera=None):
        from gymjax.envs.classic.rendering import render_with_gymnasium

        return render_with_gymnasium("CartPole-v1", np.asarray(state.env_state, np.float64), width, height)
