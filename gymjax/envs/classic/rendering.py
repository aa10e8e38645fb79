"""Frames for classic-control envs, drawn by Gymnasium's own pygame renderers."""

from __future__ import annotations

import functools
import os

import gymnasium
import numpy as np


def _headless_sdl() -> None:
    """Gymnasium's renderer calls ``pygame.init()``, which starts SDL's video and audio drivers. On a
    machine with no display, SDL then prints "error: XDG_RUNTIME_DIR is invalid or not set" (and ALSA
    its errors) in every default run, though frames drawn offscreen need neither: there, SDL's
    dummy drivers. With a display, SDL's own choice stands (a "human" window may follow)."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")


@functools.cache
def _reference_env(env_id: str) -> gymnasium.Env:
    _headless_sdl()
    try:
        import pygame  # noqa: F401
    except ImportError as err:
        raise gymnasium.error.DependencyNotInstalled(
            f"Rendering {env_id} needs pygame: pip install 'gymnasium[classic-control]'"
        ) from err
    env = gymnasium.make(env_id, render_mode="rgb_array").unwrapped
    env.reset(seed=0)
    return env


def render_with_gymnasium(
    env_id: str, physics: np.ndarray, width: int | None = None, height: int | None = None
) -> np.ndarray:
    """Draws ``physics`` (the reference env's ``state`` vector) with Gymnasium's renderer, at its
    fixed size (CartPole's 600 x 400) or resized to the ``width`` and ``height`` given."""
    env = _reference_env(env_id)
    env.state = physics
    env.last_u = None  # Pendulum draws the last torque when there is one
    frame = env.render()
    size = (width or frame.shape[1], height or frame.shape[0])
    if size == (frame.shape[1], frame.shape[0]):
        return frame
    from PIL import Image

    return np.asarray(Image.fromarray(frame).resize(size, Image.Resampling.BILINEAR))
