"""The registry of gymjax environments: ``gymjax.envs.make("JaxAnt-v0")``.

Single-agent ids are also registered with Gymnasium on ``import gymjax``.
Multi-agent ids (``gymjax.envs.make_multi("JaxMultiAnt-v0", agent_conf="4x2")``)
share the table and its rules but not that registration: their actions are a
dict per agent, which no Gymnasium ``Env`` takes. Their adapter is
:mod:`gymjax.wrappers.pettingzoo`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from gymjax.core import Env


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """What the registry knows of an id without building the env."""

    env_id: str
    factory: Callable[..., Env]
    max_episode_steps: int | None
    multi_agent: bool = False
    reference_id: str | None = None  # Gymnasium's own env with the same task: what a policy is judged on


_REGISTRY: dict[str, EnvSpec] = {}


def register(
    env_id: str,
    factory: Callable[..., Env],
    max_episode_steps: int | None,
    *,
    multi_agent: bool = False,
    reference_id: str | None = None,
) -> None:
    """Registers ``factory(**kwargs) -> Env`` under ``env_id``; ids are unique.

    ``reference_id``: the Gymnasium env whose task this one reproduces (``gymjax eval --reference``
    plays a trained policy on it).
    """
    if env_id in _REGISTRY:
        raise ValueError(f"environment id {env_id!r} is already registered")
    _REGISTRY[env_id] = EnvSpec(env_id, factory, max_episode_steps, multi_agent, reference_id)


def spec(env_id: str) -> EnvSpec:
    if env_id not in _REGISTRY:
        raise ValueError(f"unknown environment id {env_id!r}; registered: {sorted(_REGISTRY)}")
    return _REGISTRY[env_id]


def _factory(env_id: str, multi_agent: bool) -> Callable[..., Env]:
    env_spec = spec(env_id)
    if env_spec.multi_agent != multi_agent:
        kind, builder = ("multi-agent", "make_multi") if env_spec.multi_agent else ("single-agent", "make")
        raise ValueError(f"{env_id!r} is a {kind} env; build it with gymjax.envs.{builder}")
    return env_spec.factory


def make(env_id: str, **kwargs: Any) -> Env:
    """Builds the functional (pure JAX, unbatched) single-agent env registered as ``env_id``."""
    return _built(env_id, kwargs, _factory(env_id, multi_agent=False)(**kwargs))


def make_multi(env_id: str, **kwargs: Any) -> Env:
    """Builds the functional multi-agent env registered as ``env_id`` (actions: a dict per agent)."""
    return _built(env_id, kwargs, _factory(env_id, multi_agent=True)(**kwargs))


def _built(env_id: str, kwargs: dict[str, Any], env: Env) -> Env:
    env.env_id, env.env_kwargs = env_id, dict(kwargs)
    return env


def parse_env_kwargs(pairs: list[str]) -> dict[str, Any]:
    """``["KEY=VALUE", ...]`` from a command line as env options: JSON values, or bare words."""
    kwargs = {}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"--env-kwargs expects KEY=VALUE pairs, got {pair!r}")
        key, text = pair.split("=", 1)
        try:
            kwargs[key] = json.loads(text)
        except json.JSONDecodeError:
            kwargs[key] = text  # a bare word, e.g. solver=fast
    return kwargs


def registered_ids(multi_agent: bool = False) -> list[str]:
    """The single-agent ids (those registered with Gymnasium), or the multi-agent ones."""
    return sorted(i for i, s in _REGISTRY.items() if s.multi_agent == multi_agent)


def _engine(kwargs: dict[str, Any]) -> dict[str, Any]:
    """MuJoCo envs take ``engine=`` (``"mjx"``, ``"mujoco"``, ``"auto"``), or its alias ``backend=``.

    ``engine`` is the name to use through clients that keep ``backend=`` for themselves
    (torchrl's ``GymEnv(id, backend=...)`` picks its gym library by it).
    """
    if "engine" in kwargs:
        if "backend" in kwargs:
            raise ValueError("pass engine= or its alias backend=, not both")
        kwargs = dict(kwargs)
        kwargs["backend"] = kwargs.pop("engine")
    return kwargs


def _ant(**kwargs):
    from gymjax.envs.mujoco import Ant

    return Ant(**_engine(kwargs))


def _inverted_pendulum(**kwargs):
    from gymjax.envs.mujoco import InvertedPendulum

    return InvertedPendulum(**_engine(kwargs))


def _multi_ant(**kwargs):
    from gymjax.envs.mujoco import MultiAnt

    return MultiAnt(**_engine(kwargs))


def _cartpole(**kwargs):
    from gymjax.envs.classic import CartPole

    return CartPole(**kwargs)


def _pendulum(**kwargs):
    from gymjax.envs.classic import Pendulum

    return Pendulum(**kwargs)


# MuJoCo is imported lazily: classic-control users do not pay for loading MJX. Each id's time
# limit is stated here only (Gymnasium needs it at import, before any env is built); the env
# classes read it back as their ``max_episode_steps``.
register("JaxAnt-v0", _ant, max_episode_steps=1000, reference_id="Ant-v5")
register("JaxMultiAnt-v0", _multi_ant, max_episode_steps=1000, multi_agent=True)  # MaMuJoCo's: not in Gymnasium
register("JaxInvertedPendulum-v0", _inverted_pendulum, max_episode_steps=1000, reference_id="InvertedPendulum-v5")
register("JaxCartPole-v0", _cartpole, max_episode_steps=500, reference_id="CartPole-v1")  # v1's limit (v0's was 200)
register("JaxPendulum-v0", _pendulum, max_episode_steps=200, reference_id="Pendulum-v1")
