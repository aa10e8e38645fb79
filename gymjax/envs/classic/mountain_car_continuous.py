"""Mountain car with a continuous push in pure JAX, step-for-step equal to Gymnasium's
MountainCarContinuous-v0.

Source matched: ``gymnasium/envs/classic_control/continuous_mountain_car.py`` (Gymnasium 1.x).
The push is the action clipped to ``[-1, 1]``, but the reward ``-0.1 * a**2`` prices the
action *as given*, unclipped, as Gymnasium's code does; 100 is added on the terminating step.
The episode ends at ``position >= 0.45`` *and* ``velocity >= goal_velocity`` (the code's rule;
its docstring names the position only).
"""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

from gymjax.core import Env, State, pytree
from gymjax.envs import options
from gymjax.envs.classic.mountain_car import fresh_state, move, reset_physics, state_box
from gymjax.envs.classic.state import LAYOUT


@pytree.dataclass
class MountainCarContinuousParams:
    """Physical constants; every field may be randomized per env."""

    power: float = 0.0015
    gravity: float = 0.0025
    max_speed: float = 0.07
    min_position: float = -1.2  # the left wall, where the car stops dead
    max_position: float = 0.6


class MountainCarContinuous(Env[MountainCarContinuousParams]):
    """Observation ``[position, velocity]``; action a push in ``[-1, 1]``."""

    state_layout = LAYOUT

    goal_position = 0.45  # 0.5 in MountainCar-v0
    goal_reward = 100.0

    def __init__(self, goal_velocity: float = 0):
        self.goal_velocity = options.real(self, "goal_velocity", goal_velocity)
        self.observation_space = state_box(MountainCarContinuousParams())
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    @property
    def default_params(self) -> MountainCarContinuousParams:
        return MountainCarContinuousParams()

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
        a = jnp.reshape(jnp.asarray(action, jnp.float32), (-1,))[0]
        push = jnp.clip(a, -1.0, 1.0)
        # Grouped as Gymnasium's `velocity += ...`, which sums the two terms before adding.
        physics = move(p, position, velocity + (push * p.power - p.gravity * jnp.cos(3 * position)))
        terminated = (physics.position >= self.goal_position) & (physics.velocity >= self.goal_velocity)
        reward = jnp.where(terminated, self.goal_reward, 0.0) - a**2 * 0.1
        return state.replace(
            env_state=physics,
            obs=physics.vector(),
            reward=reward.astype(jnp.float32),
            terminated=terminated,
            truncated=jnp.bool_(False),
        )

    def render(self, state, *, width=None, height=None, camera=None):
        from gymjax.envs.classic.rendering import render_with_gymnasium

        return render_with_gymnasium(
            "MountainCarContinuous-v0", np.asarray(state.env_state, np.float64), width, height
        )
