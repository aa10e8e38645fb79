"""Brax envs (``brax.envs``) as gymjax envs: ``from_brax("halfcheetah", backend="positional")``.

Brax's own ``GymWrapper`` returns legacy Gym's 4-tuple (no truncation) and JAX arrays, and its
``AutoResetWrapper`` restarts every episode from one cached first state. Here the raw env is
stepped by gymjax's stack: a fresh reset per episode, time limits as truncations, the last
observation of every ended episode kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gymjax.envs.external.base import StatefulSource, box, require, unbounded

# Brax's own default episode length (``brax.envs.create(..., episode_length=1000)``).
EPISODE_LENGTH = 1000


class BraxEnv(StatefulSource):
    """A ``brax.envs.Env`` (a ``PipelineEnv``) behind the gymjax protocol; params: its ``sys``.

    Actions: a Box of the actuators' control range (``sys.actuator.ctrl_range``: inverted_pendulum
    takes [-3, 3]), not an assumed [-1, 1]; Brax clips controls to it.
    """

    params_attribute = "sys"

    def __init__(self, source: Any, name: str, episode_length: int = EPISODE_LENGTH):
        self.name = name
        low, high = np.asarray(source.sys.actuator.ctrl_range, np.float32).T
        super().__init__(
            source,
            episode_length=episode_length,
            observation_space=unbounded(source.observation_size),
            action_space=box(low, high, (source.action_size,)),
        )

    def _frames(self, states, width, height, camera):
        return self.source.render([s.pipeline_state for s in states], height=height, width=width, camera=camera)


def from_brax(env_or_name: Any, *, episode_length: int = EPISODE_LENGTH, **kwargs: Any) -> BraxEnv:
    """A Brax env as a gymjax env.

    Args:
        env_or_name: a ``brax.envs.Env`` (unwrapped: no ``EpisodeWrapper`` or ``AutoResetWrapper``,
            whose work gymjax does), or a name ``brax.envs.get_environment`` takes (``"ant"``).
        episode_length: the time limit, in agent steps (Brax's default, 1000).
        **kwargs: the env's options, with a name (``backend="positional"``,
            ``ctrl_cost_weight=...``).
    """
    brax_envs = require("brax.envs", "brax")
    if isinstance(env_or_name, str):
        known = sorted(brax_envs._envs)
        if env_or_name not in known:
            raise ValueError(f"Brax has no env {env_or_name!r}; its envs: {known}")
        return BraxEnv(brax_envs.get_environment(env_or_name, **kwargs), env_or_name, episode_length)
    if kwargs:
        raise TypeError(f"options {sorted(kwargs)} apply only when the env is given by name")
    if isinstance(env_or_name, brax_envs.Wrapper):
        # A wrapper's physics is its inner env's: stepping a copy with other params would not reach
        # it. Brax's training wrappers (episode, auto-reset, vmap) do what gymjax does here anyway.
        raise TypeError(f"pass the unwrapped env (env.unwrapped), not {type(env_or_name).__name__}: gymjax adds "
                         "the time limit, auto-reset and batching itself")
    if not isinstance(env_or_name, brax_envs.Env):
        raise TypeError(f"from_brax takes a brax.envs.Env or an env's name, got {env_or_name!r}")
    return BraxEnv(env_or_name, type(env_or_name).__name__.lower(), episode_length)
