"""What :func:`gymjax.trainers.ppo.train.train` takes, checked and adapted before anything is built:
the env (a gymjax env, an id, or ``gymnasium.make``'s env of a gymjax id), a config the env and these
devices can train, the metrics a progress bar shows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import gymnasium
import jax
import numpy as np

from gymjax import envs
from gymjax.core import Env
from gymjax.trainers import reference
from gymjax.trainers.ppo import memory
from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.ppo.networks import make_distribution
from gymjax.wrappers.gymnasium import GymnasiumEnv


def as_env(env: Any, name: str = "env") -> Env:
    """The gymjax env ``env`` names: itself, a registered id's, or the one inside ``gymnasium.make``'s
    env of a gymjax id. A Gymnasium wrapper the trainer would not apply (``NormalizeObservation``, a
    ``TimeLimit`` at another horizon) or session options (``action_repeat=...``) are refused in one
    line naming the config field or argument that does it; anything else is a ``TypeError``."""
    if isinstance(env, Env):
        return env
    if isinstance(env, str):
        return envs.make(env)
    if isinstance(env, gymnasium.vector.VectorEnv):
        raise TypeError(f"{name}: train batches the env itself (config.num_envs); pass the id or one env, not "
                        f"the vector env {env!r}")
    if not isinstance(env, gymnasium.Env) or not isinstance(env.unwrapped, GymnasiumEnv):
        raise TypeError(f"{name} must be a gymjax Env, a registered id or gymnasium.make's env of a gymjax id, "
                        f"got {env!r}")
    inner, session = env.unwrapped.session.base, env.unwrapped.session.options
    ignored = []
    for wrapper in _wrappers(env):
        if isinstance(wrapper, gymnasium.wrappers.TimeLimit):
            if wrapper._max_episode_steps != inner.max_episode_steps:
                ignored.append(f"TimeLimit({wrapper._max_episode_steps}) (config.episode_length)")
        elif not isinstance(wrapper, _MAKES_WRAPPERS):
            ignored.append(type(wrapper).__name__)
    for option, instead in _SESSION_OPTIONS.items():
        if getattr(session, option) != getattr(GymnasiumEnv.DEFAULTS, option):
            ignored.append(f"{option}={getattr(session, option)!r} ({instead})")
    if ignored:
        raise ValueError(f"{name}: train steps the gymjax env inside {env!r}, not Gymnasium's API, so it would ignore "
                         f"{', '.join(ignored)}; pass gymnasium.make(id) or the id, and say those in the config")
    return inner


# What gymnasium.make wraps every env in; the trainer checks the same (actions, call order) itself.
_MAKES_WRAPPERS = (gymnasium.wrappers.OrderEnforcing, gymnasium.wrappers.PassiveEnvChecker)
# A session's options that change what the env does, and what the trainer takes instead.
_SESSION_OPTIONS = {"max_episode_steps": "config.episode_length", "action_repeat": "config.action_repeat",
                    "randomization_fn": "train's randomization_fn"}


def _wrappers(env: gymnasium.Env) -> list[gymnasium.Wrapper]:
    found = []
    while isinstance(env, gymnasium.Wrapper):
        found.append(env)
        env = env.env
    return found


def check(config: PPOConfig, env: Env) -> None:
    """Refuses, in one ``ValueError`` line and before anything is built, a config PPO cannot train
    ``env`` with on these devices: observations that are not flat, an action space it has no policy
    for (a ``TypeError``), no time limit, a batch that does not split over the devices or fit their
    memory, reference episodes without a reference env.
    :class:`PPOTrainer` checks this first; a run directory checks it before writing anything."""
    if config.reference_episodes:
        reference.reference_id(env.env_id)  # refused now, not at the first evaluation
    obs_shape = env.observation_space.shape
    if len(obs_shape) != 1:
        raise ValueError(f"PPO's MLPs need flat observations, got shape {obs_shape}")
    make_distribution(env.action_space, config.policy_distribution)  # TypeError: a space it has none for
    config.agent_episode_length(env)
    if getattr(env, "cpu_only", False) and jax.default_backend() != "cpu":
        raise ValueError(
            f"{env!r} runs on the CPU only (MuJoCo's C engine) and JAX's devices are {jax.default_backend()} ones: "
            f"train it with engine=\"mjx\" there, or on the CPU with JAX_PLATFORMS=cpu"
        )
    num_devices = len(jax.devices())
    config.check_batch_split(num_devices)
    action_shape = getattr(env.action_space, "shape", None) or (1,)
    local_envs = config.num_envs // num_devices * len(jax.local_devices())
    memory.check_fits(config, env, obs_shape[0], int(np.prod(action_shape)), local_envs)


def check_progress_metrics(keys: Iterable[str] | None) -> tuple[str, ...] | None:
    if keys is None:
        return None
    if isinstance(keys, str):  # iterating it would show one metric per character
        raise TypeError(f"progress_metrics must be a sequence of metric names, got the string {keys!r}")
    keys = tuple(keys)
    if not all(isinstance(k, str) and k for k in keys):
        raise TypeError(f"progress_metrics must be non-empty strings (metric names), got {keys!r}")
    return keys
