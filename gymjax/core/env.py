"""The functional environment protocol every gymjax env and wrapper follows.

An env is an immutable object holding static configuration and *default physics
parameters*; everything that changes lives in a :class:`State` pytree. Physics
parameters (an ``mjx.Model`` for MuJoCo envs, a small dataclass for classic envs)
are an explicit argument of ``reset`` and ``step``, so domain randomization can
vmap over them without ever writing to the env object. Writing to it is what
leaked tracers in Brax (``env.unwrapped.sys = <tracer>`` inside ``vmap``).
"""

from __future__ import annotations

import abc
from typing import Any, Generic, TypeVar

import gymnasium
import jax
from flax import struct

Params = TypeVar("Params")


@struct.dataclass
class State:
    """One environment's state, or a batch of them (leading axis ``[N]``).

    Attributes:
        env_state: the dynamics state (``mjx.Data``, or an array for classic envs).
        obs: observation, float32 ``[obs_dim]``.
        reward: float32 scalar.
        terminated: bool scalar, the MDP reached a terminal state.
        truncated: bool scalar, the episode was cut (time limit), not terminal.
        info: Gymnasium-style step information (fixed keys, so the pytree has one
            structure at reset and at step) plus the wrappers' bookkeeping.
        metrics: running statistics for logging (episode return and length).
    """

    env_state: Any
    obs: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    info: dict[str, Any] = struct.field(default_factory=dict)
    metrics: dict[str, Any] = struct.field(default_factory=dict)

    @property
    def done(self) -> jax.Array:
        return self.terminated | self.truncated


class Env(abc.ABC, Generic[Params]):
    """A single, unbatched, pure-JAX environment.

    Subclasses set ``observation_space`` and ``action_space`` (Gymnasium spaces
    describing one env), ``max_episode_steps`` (the registered time limit) and
    implement :meth:`reset`, :meth:`step` and :attr:`default_params`.
    """

    observation_space: gymnasium.spaces.Space
    action_space: gymnasium.spaces.Space
    max_episode_steps: int | None = None
    metadata: dict[str, Any] = {"render_modes": []}
    # The info keys a Gymnasium reset reports (None: all); some Gymnasium envs
    # report fewer keys at reset than at step.
    reset_info_keys: tuple[str, ...] | None = None

    @property
    @abc.abstractmethod
    def default_params(self) -> Params:
        """The nominal physics parameters, used when ``params`` is None."""

    @abc.abstractmethod
    def reset(self, key: jax.Array, params: Params | None = None) -> State:
        """Samples an initial state. ``key`` is one PRNG key."""

    @abc.abstractmethod
    def step(self, state: State, action: jax.Array, params: Params | None = None) -> State:
        """Advances one agent step (all physics substeps included)."""

    @property
    def dt(self) -> float:
        """Seconds of simulated time per :meth:`step`."""
        raise NotImplementedError

    @property
    def unwrapped(self) -> Env:
        return self

    def render(self, state: State, *, width: int = 480, height: int = 480, camera: Any = None):
        """Renders one (unbatched) state to an ``[H, W, 3]`` uint8 array."""
        raise NotImplementedError(f"{type(self).__name__} has no renderer")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Wrapper(Env):
    """Delegates everything to ``env``; subclasses override what they change.

    A wrapper owns the ``info`` keys it adds and must write them again after
    delegating, because the inner env does not know them.
    """

    def __init__(self, env: Env):
        self.env = env

    observation_space = property(lambda self: self.env.observation_space)
    action_space = property(lambda self: self.env.action_space)
    max_episode_steps = property(lambda self: self.env.max_episode_steps)
    metadata = property(lambda self: self.env.metadata)
    reset_info_keys = property(lambda self: self.env.reset_info_keys)

    @property
    def default_params(self):
        return self.env.default_params

    def reset(self, key, params=None):
        return self.env.reset(key, params)

    def step(self, state, action, params=None):
        return self.env.step(state, action, params)

    @property
    def dt(self) -> float:
        return self.env.dt

    @property
    def unwrapped(self) -> Env:
        return self.env.unwrapped

    def render(self, state, **kwargs):
        return self.env.render(state, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env!r})"
