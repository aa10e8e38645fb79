"""The registry of gymjax environments: ``gymjax.envs.make("JaxAnt-v0")``.

Ids registered here are also registered with Gymnasium on ``import gymjax``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from gymjax.core import Env


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """What the registry knows of an id without building the env."""

    env_id: str
    factory: Callable[..., Env]
    max_episode_steps: int | None


_REGISTRY: dict[str, EnvSpec] = {}


def register(env_id: str, factory: Callable[..., Env], max_episode_steps: int | None) -> None:
    """Registers ``factory(**kwargs) -> Env`` under ``env_id``; ids are unique."""
    if env_id in _REGISTRY:
        raise ValueError(f"environment id {env_id!r} is already registered")
    _REGISTRY[env_id] = EnvSpec(env_id, factory, max_episode_steps)


def spec(env_id: str) -> EnvSpec:
    if env_id not in _REGISTRY:
        raise ValueError(f"unknown environment id {env_id!r}; registered: {sorted(_REGISTRY)}")
    return _REGISTRY[env_id]


def make(env_id: str, **kwargs: Any) -> Env:
    """Builds the functional (pure JAX, unbatched) env registered as ``env_id``."""
    return spec(env_id).factory(**kwargs)


def registered_ids() -> list[str]:
    return sorted(_REGISTRY)


def _ant(**kwargs):
    from gymjax.envs.mujoco import Ant

    return Ant(**kwargs)


def _inverted_pendulum(**kwargs):
    from gymjax.envs.mujoco import InvertedPendulum

    return InvertedPendulum(**kwargs)


def _cartpole(**kwargs):
    from gymjax.envs.classic import CartPole

    return CartPole(**kwargs)


def _pendulum(**kwargs):
    from gymjax.envs.classic import Pendulum

    return Pendulum(**kwargs)


# MuJoCo is imported lazily: classic-control users do not pay for loading MJX.
register("JaxAnt-v0", _ant, max_episode_steps=1000)
register("JaxInvertedPendulum-v0", _inverted_pendulum, max_episode_steps=1000)
register("JaxCartPole-v0", _cartpole, max_episode_steps=500)
register("JaxPendulum-v0", _pendulum, max_episode_steps=200)
