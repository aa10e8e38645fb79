"""gymnax envs as gymjax envs: ``from_gymnax("CartPole-v1")``, ``from_gymnax("Breakout-MinAtar")``.

gymnax's own Gymnasium wrappers return JAX arrays, always auto-reset and start a ``seed=None``
reset from key 0. Here the env's ``reset_env``/``step_env`` (no auto-reset) are stepped by
gymjax's stack. gymnax 1.0.1 or later: its ``step_env`` reports termination alone and its
``is_truncated`` the time limit, which become ``terminated`` and ``truncated``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

from gymjax.core import Env, State, pytree
from gymjax.envs.external.base import box, float32_info, require

# gymnax 1.0.1 declares gymnasium<1.4 for its own Gymnasium wrappers, which gymjax does not use:
# installed without its dependencies, it runs beside the project's gymnasium.
INSTALL = "pip install 'gymjax[gymnax]' && pip install --no-deps 'gymnax>=1.0.1'"


@pytree.dataclass
class GymnaxState:
    """The source's state and the key its steps draw from (a gymnax step takes a key)."""

    key: jax.Array
    inner: Any


def _space(space: Any) -> gymnasium.spaces.Space:
    """A gymnax space as Gymnasium's."""
    kind = type(space).__name__
    if kind == "Discrete":
        return gymnasium.spaces.Discrete(int(space.n))
    if kind == "Box":
        return box(space.low, space.high, tuple(space.shape), np.dtype(space.dtype))
    if kind == "Dict":
        return gymnasium.spaces.Dict({k: _space(v) for k, v in space.spaces.items()})
    raise TypeError(f"gymnax space {space!r} has no Gymnasium counterpart here")


class GymnaxEnv(Env):
    """A gymnax ``Environment`` behind the gymjax protocol; params: its ``EnvParams``.

    ``info`` holds what ``step_env`` reports (``discount``), zeros at a reset (which reports no
    keys, as :attr:`reset_info_keys` says). The time limit is ``max_steps_in_episode`` of the
    params. Each step draws a key from ``GymnaxState.key``: ``key, use = split(key)``, the key
    of the reset being the other half of the reset's ``split``.
    """

    reset_info_keys = ()

    def __init__(self, source: Any, name: str, env_params: Any = None):
        self.source = source
        self.name = name
        self._params = source.default_params if env_params is None else env_params
        self.observation_space = _space(source.observation_space(self._params))
        self.action_space = _space(source.action_space(self._params))
        self.max_episode_steps = int(self._params.max_steps_in_episode)
        self.metadata = {"render_modes": []}
        # The info a step reports, by shape: a reset reports zeros of it (one pytree structure for both).
        _, inner = jax.eval_shape(source.reset_env, jax.random.PRNGKey(0), self._params)
        action = jax.ShapeDtypeStruct(self.action_space.shape, jnp.dtype(self.action_space.dtype))

        def info(key, inner, action):
            return float32_info(source.step_env(key, inner, action, self._params)[4])

        self._info = jax.eval_shape(info, jax.random.PRNGKey(0), inner, action)

    @property
    def default_params(self) -> Any:
        return self._params

    def reset(self, key: jax.Array, params: Any = None) -> State:
        params = self.resolve_params(params)
        use, keep = jax.random.split(key)
        obs, inner = self.source.reset_env(use, params)
        info = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), self._info)
        return State(GymnaxState(keep, inner), obs, jnp.float32(0.0), jnp.zeros((), bool), jnp.zeros((), bool), info)

    def step(self, state: State, action: jax.Array, params: Any = None) -> State:
        params = self.resolve_params(params)
        key, use = jax.random.split(state.env_state.key)
        obs, inner, reward, terminated, info = self.source.step_env(use, state.env_state.inner, action, params)
        return state.replace(
            env_state=GymnaxState(key, inner),
            obs=obs,
            reward=jnp.asarray(reward, jnp.float32),
            terminated=jnp.asarray(terminated, bool),
            truncated=jnp.asarray(self.source.is_truncated(inner, params), bool),
            info=float32_info(info),
        )

    def __repr__(self) -> str:
        return f"GymnaxEnv({self.name!r})"


def from_gymnax(name_or_env: Any, *, env_params: Any = None, **kwargs: Any) -> GymnaxEnv:
    """A gymnax env as a gymjax env.

    Args:
        name_or_env: a name ``gymnax.make`` takes (``"CartPole-v1"``; ``gymnax.registered_envs``)
            or a gymnax ``Environment``.
        env_params: its ``EnvParams`` (default: the env's defaults; ``max_steps_in_episode`` is the
            time limit).
        **kwargs: the env's constructor options, with a name.
    """
    gymnax = require("gymnax", "gymnax", INSTALL)
    from gymnax.environments.environment import Environment

    if not hasattr(Environment, "is_truncated"):
        raise ImportError(f"gymjax needs gymnax 1.0.1 or later (termination apart from truncation): {INSTALL}")
    if isinstance(name_or_env, str):
        if name_or_env not in gymnax.registered_envs:
            raise ValueError(f"gymnax has no env {name_or_env!r}; its envs: {list(gymnax.registered_envs)}")
        source, defaults = gymnax.make(name_or_env, **kwargs)
        return GymnaxEnv(source, name_or_env, defaults if env_params is None else env_params)
    if kwargs:
        raise TypeError(f"options {sorted(kwargs)} apply only when the env is given by name")
    if not isinstance(name_or_env, Environment):
        raise TypeError(f"from_gymnax takes a gymnax Environment or an env's name, got {name_or_env!r}")
    return GymnaxEnv(name_or_env, name_or_env.name, env_params)
