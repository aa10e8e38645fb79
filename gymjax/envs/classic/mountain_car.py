"""Mountain car with discrete pushes in pure JAX, step-for-step equal to Gymnasium's MountainCar-v0.

Source matched: ``gymnasium/envs/classic_control/mountain_car.py`` (Gymnasium 1.x): reward -1
on every step, the terminating one included; the episode ends at ``position >= 0.5`` *and*
``velocity >= goal_velocity`` (the code's rule; its docstring names the position only).
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
class MountainCarParams:
    """Physical constants; every field may be randomized per env."""

    force: float = 0.001
    gravity: float = 0.0025
    max_speed: float = 0.07
    min_position: float = -1.2  # the left wall, where the car stops dead
    max_position: float = 0.6


@pytree.dataclass
class MountainCarState(PhysicsState):
    """Both mountain cars' physics: the position along the valley and the velocity (per step)."""

    position: jax.Array
    velocity: jax.Array


def reset_physics(key: jax.Array) -> jax.Array:
    """Gymnasium's start for both mountain cars: position uniform on [-0.6, -0.4], at rest."""
    position = prng.uniform(key, (), jnp.float32, -0.6, -0.4)
    return jnp.stack([position, jnp.float32(0.0)])


def fresh_state(physics: jax.Array) -> State:
    physics = MountainCarState.from_vector(physics)
    return first_state(physics, physics.vector())


def state_box(p) -> gymnasium.spaces.Box:
    low = np.array([p.min_position, -p.max_speed], dtype=np.float32)
    high = np.array([p.max_position, p.max_speed], dtype=np.float32)
    return gymnasium.spaces.Box(low, high, dtype=np.float32)


def move(p, position: jax.Array, velocity: jax.Array) -> MountainCarState:
    """Both cars' shared tail of a step: clip the speed, move, clip at the walls.

    ``velocity`` is the new (unclipped) velocity. Hitting the left wall stops the car
    (an inelastic collision); the right wall only clips the position, as in Gymnasium.
    """
    velocity = jnp.clip(velocity, -p.max_speed, p.max_speed)
    position = jnp.clip(position + velocity, p.min_position, p.max_position)
    velocity = jnp.where((position == p.min_position) & (velocity < 0), 0.0, velocity)
    return MountainCarState(position=position, velocity=velocity).as_float32()


class MountainCar(Env[MountainCarParams]):
    """Observation ``[position, velocity]``; action 0 (push left), 1 (none), 2 (push right)."""

    state_layout = LAYOUT

    goal_position = 0.5

    def __init__(self, goal_velocity: float = 0):
        self.goal_velocity = options.real(self, "goal_velocity", goal_velocity)
        self.observation_space = state_box(MountainCarParams())
        self.action_space = gymnasium.spaces.Discrete(3)
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    @property
    def default_params(self) -> MountainCarParams:
        return MountainCarParams()

    @property
    def dt(self) -> float:
        # Gymnasium's dynamics have no time step: velocity is in position units per step.
        return 1.0

    def reset(self, key, params=None):
        return self.reset_to(reset_physics(key))

    def reset_to(self, physics: jax.Array) -> State:
        """A fresh state at ``physics = [position, velocity]`` (Gymnasium's ``state``)."""
        return fresh_state(physics)

    def step(self, state, action, params=None):
        p = self.resolve_params(params)
        position, velocity = state.env_state.position, state.env_state.velocity
        push = (jnp.asarray(action, jnp.float32) - 1.0) * p.force
        # Grouped as Gymnasium's `velocity += ...`, which sums the two terms before adding.
        physics = move(p, position, velocity + (push + jnp.cos(3 * position) * (-p.gravity)))
        terminated = (physics.position >= self.goal_position) & (physics.velocity >= self.goal_velocity)
        return state.replace(
            env_state=physics,
            obs=physics.vector(),
            reward=jnp.float32(-1.0),
            terminated=terminated,
            truncated=jnp.bool_(False),
        )

    def render(self, state, *, width=None, height=None, camera=None):
        from gymjax.envs.classic.rendering import render_with_gymnasium

        return render_with_gymnasium("MountainCar-v0", np.asarray(state.env_state, np.float64), width, height)
