"""What the three collections' adapters share: loading an optional package with a one-line error
naming its extra, spaces in Gymnasium's types, and the env for a *stateful* source (Brax and
MuJoCo Playground: ``source.reset(key) -> state``, ``source.step(state, action) -> state``, with
``obs``, ``reward``, ``done`` and ``metrics`` on the state).

A source keeps its physics on the env object (Brax's ``sys``, Playground's ``mjx_model``). gymjax
passes physics as an argument instead (:mod:`gymjax.core.env`), so the adapter steps a shallow
*copy* of the source holding the given params: the source object itself is only ever read, and a
randomized batch cannot leave a tracer on it (what Brax's ``DomainRandomizationVmapWrapper`` does
when no separate eval env is given).
"""

from __future__ import annotations

import copy
import importlib
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

from gymjax.core import Env, State


class MissingExtra(ImportError):
    """An optional collection that is not installed; its message is one line naming the extra."""


def require(module: str, extra: str, install: str | None = None) -> Any:
    """``import module``, or a :class:`MissingExtra` saying how to install it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module.split(".")[0]:
            raise  # the package is there and one of *its* imports failed: that error says more
        how = install or f"pip install 'gymjax[{extra}]'"
        raise MissingExtra(f"{module} is not installed; gymjax's {extra} envs need it: {how}") from None


def box(low: Any, high: Any, shape: tuple[int, ...], dtype: Any = np.float32) -> gymnasium.spaces.Box:
    """A Box of ``shape`` whose bounds broadcast from ``low``/``high`` (scalars or arrays)."""
    dtype = np.dtype(dtype)
    low = np.broadcast_to(np.asarray(low, dtype), shape)
    high = np.broadcast_to(np.asarray(high, dtype), shape)
    return gymnasium.spaces.Box(low, high, shape, dtype)


def unbounded(size: int | tuple[int, ...] | dict) -> gymnasium.spaces.Space:
    """Float32 observations of ``size`` (an int, a shape, or a dict of those: a Dict space)."""
    if isinstance(size, dict) or hasattr(size, "items"):
        return gymnasium.spaces.Dict({k: unbounded(v) for k, v in size.items()})
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    return box(-np.inf, np.inf, shape)


def float32_info(info: dict[str, Any]) -> dict[str, jax.Array]:
    """A source's metrics as info: arrays, floats as float32 (one dtype at reset and at step)."""
    out = {}
    for k, v in info.items():
        v = jnp.asarray(v)
        out[k] = v.astype(jnp.float32) if jnp.issubdtype(v.dtype, jnp.floating) else v
    return out


class StatefulSource(Env):
    """A Brax or Playground env as a gymjax :class:`~gymjax.core.Env`.

    The source's whole state rides in ``State.env_state``; ``obs`` and ``reward`` are its own,
    ``terminated`` its ``done`` (a raw source env has no time limit: that is the episode
    wrapper's, Brax's ``EpisodeWrapper`` there, gymjax's :class:`~gymjax.wrappers.EpisodeWrapper`
    here, at the source's own episode length); ``info`` holds its ``metrics``. Each reset is a
    fresh ``source.reset(key)``, never a cached first state.

    Subclasses set :attr:`params_attribute` (where the source keeps its physics) and build the
    spaces.
    """

    params_attribute: str

    def __init__(
        self,
        source: Any,
        *,
        episode_length: int,
        observation_space: gymnasium.spaces.Space,
        action_space: gymnasium.spaces.Space,
        action_repeat: int = 1,
    ):
        self.source = source
        self.max_episode_steps = int(episode_length)
        self.observation_space = observation_space
        self.action_space = action_space
        self.action_repeat = int(action_repeat)
        fps = max(1, round(1.0 / self.dt))
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": fps}  # both collections draw frames

    @property
    def default_params(self) -> Any:
        return getattr(self.source, self.params_attribute)

    def _source(self, params: Any) -> Any:
        """The source, or a shallow copy of it holding ``params`` (the source is never written)."""
        if params is None:
            return self.source
        shadow = copy.copy(self.source)
        setattr(shadow, self.params_attribute, self.resolve_params(params))
        return shadow

    def reset(self, key: jax.Array, params: Any = None) -> State:
        return State(**self._fields(self._source(params).reset(key)))

    def step(self, state: State, action: jax.Array, params: Any = None) -> State:
        source = self._source(params)
        inner = source.step(state.env_state, action)
        if self.action_repeat > 1:  # the source's own repeat (Playground's config), stopping at an end

            def again(inner, _):
                nxt = source.step(inner, action)
                ended = inner.done > 0
                nxt = jax.tree.map(lambda a, b: jnp.where(ended, a, b), inner, nxt)
                return nxt.replace(reward=inner.reward + jnp.where(ended, 0.0, nxt.reward)), None

            inner, _ = jax.lax.scan(again, inner, None, length=self.action_repeat - 1)
        return state.replace(**self._fields(inner))  # the wrappers' fields ride along

    @staticmethod
    def _fields(inner: Any) -> dict[str, Any]:
        """The env's six :class:`State` fields from the source's state."""
        return {
            "env_state": inner,
            "obs": inner.obs,
            "reward": jnp.asarray(inner.reward, jnp.float32),
            "terminated": jnp.asarray(inner.done) > 0,
            "truncated": jnp.zeros((), bool),
            "info": float32_info(inner.metrics),
        }

    @property
    def dt(self) -> float:
        return float(self.source.dt) * self.action_repeat

    def render(self, state: State, *, width: int = 480, height: int = 480, camera: Any = None) -> np.ndarray:
        return np.asarray(self._frames([jax.device_get(state.env_state)], width, height, camera)[0])

    def _frames(self, states: list, width: int, height: int, camera: Any) -> list:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
