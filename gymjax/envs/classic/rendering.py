"""Frames for classic-control envs, drawn by Gymnasium's own pygame renderers."""

from __future__ import annotations

import functools

import gymnasium
import numpy as np


@functools.cache
def _reference_env(env_id: str) -> gymnasium.Env:
    try:
        import pygame  # noqa: F401
    except ImportError as err:
        raise gymnasium.error.DependencyNotInstalled(
            f"Rendering {env_id} needs pygame: pip install 'gymnasium[classic-control]'"
        ) from err
    env = gymnasium.make(env_id, render_mode="rgb_array").unwrapped
    env.reset(seed=0)
    return env


def render_with_gymnasium(env_id: str, physics: np.ndarray) -> np.ndarray:
    """Draws ``physics`` (the reference env's ``state`` vector) with Gymnasium's renderer."""
    env = _reference_env(env_id)
    env.state = physics
    env.last_u = None  # Pendulum draws the last torque when there is one
    return env.render()
