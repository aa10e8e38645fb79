"""MuJoCo Playground envs as gymjax envs: ``from_playground("CartpoleBalance")``.

Playground ships a Brax-training wrapper whose auto-reset drops the terminal observation (every
actor-critic then bootstraps from the reset state at time limits) and an RSL-RL wrapper that clips
actions to [-1, 1]. Here the raw env is stepped by gymjax's stack, as every gymjax env is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gymjax.envs.external.base import StatefulSource, box, require, unbounded

# Where Playground keeps its DM Control suite tasks, whose actions are the actuators' controls.
_CONTROL_SUITE = "mujoco_playground._src.dm_control_suite"


class PlaygroundEnv(StatefulSource):
    """A Playground ``MjxEnv`` behind the gymjax protocol; params: its ``mjx_model``.

    Observations: a Box, or a Dict of Boxes where the task has named observations (the locomotion
    tasks' ``state`` and ``privileged_state``). Actions: for the DM Control suite, whose tasks write
    the action to the controls, the actuators' control range; the locomotion and manipulation
    tasks scale an action in [-1, 1] into their own targets (``config.action_scale``), so theirs is
    [-1, 1], the range Playground's own policies (tanh-squashed) act in.
    """

    params_attribute = "_mjx_model"  # what Playground's MjxEnv.mjx_model returns

    def __init__(self, source: Any, name: str):
        self.name = name
        config = getattr(source, "_config", None)
        size = source.action_size
        if type(source).__module__.startswith(_CONTROL_SUITE):
            model = source.mj_model
            low, high = np.asarray(model.actuator_ctrlrange, np.float32).T
            limited = np.asarray(model.actuator_ctrllimited, bool)
            low, high = np.where(limited, low, -np.inf), np.where(limited, high, np.inf)
        else:
            low, high = -1.0, 1.0
        repeat = int(getattr(config, "action_repeat", 1) or 1)
        length = int(getattr(config, "episode_length", 1000))
        super().__init__(
            source,
            episode_length=-(-length // repeat),  # Playground counts its limit in env steps
            observation_space=unbounded(source.observation_size),
            action_space=box(low, high, (size,)),
            action_repeat=repeat,
        )

    def _frames(self, states, width, height, camera):
        return self.source.render(states, height=height, width=width, camera=camera)


def names() -> list[str]:
    """Playground's task names (imports Playground)."""
    return list(require("mujoco_playground", "playground").registry.ALL_ENVS)


def from_playground(name_or_env: Any, *, config: Any = None, config_overrides: dict | None = None) -> PlaygroundEnv:
    """A MuJoCo Playground env as a gymjax env.

    Args:
        name_or_env: a task name (``"CartpoleBalance"``; ``mujoco_playground.registry.ALL_ENVS``)
            or an ``MjxEnv`` already built (unwrapped: gymjax does the episode and auto-reset work).
        config: the task's ``ml_collections`` config (default: Playground's), as ``registry.load``.
        config_overrides: changes to it, by key. ``impl`` is ``"jax"`` (MJX) unless the config
            says otherwise (see :func:`check_impl`).
    """
    playground = require("mujoco_playground", "playground")
    if isinstance(name_or_env, str):
        known = list(playground.registry.ALL_ENVS)
        if name_or_env not in known:
            raise ValueError(f"MuJoCo Playground has no env {name_or_env!r}; its envs: {known}")
        if config is None:
            config = playground.registry.get_default_config(name_or_env)
            config.impl = "jax"
        source = playground.registry.load(name_or_env, config, config_overrides)
        return PlaygroundEnv(check_impl(source), name_or_env)
    if config is not None or config_overrides:
        raise TypeError("config and config_overrides apply only when the env is given by name")
    if not isinstance(name_or_env, playground.MjxEnv):
        raise TypeError(f"from_playground takes a mujoco_playground MjxEnv or a task's name, got {name_or_env!r}")
    return PlaygroundEnv(check_impl(name_or_env), type(name_or_env).__name__)


def check_impl(source: Any) -> Any:
    """Refuses MuJoCo Warp, Playground's default engine: gymjax steps each env under ``jax.vmap``,
    and Warp's data keeps fields for all its worlds at once (``ncollision``) that vmap cannot batch."""
    impl = getattr(getattr(source, "_config", None), "impl", "jax")
    if impl != "jax":
        raise ValueError(f"{type(source).__name__} runs on impl={impl!r}; gymjax batches envs with jax.vmap, "
                         "which MuJoCo Warp's data does not allow: use impl='jax' (MJX), gymjax's default")
    return source
