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
import functools
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium
import jax
import jax.numpy as jnp

from gymjax.core import pytree

Params = TypeVar("Params")


# The version of State's pytree layout. Checkpoints of a training run carry the env's state,
# so they record it: a run saved under another layout cannot resume (its policy still loads).
# 1: wrapper bookkeeping in info and metrics (to gymjax 0.1's issue 12); 2: typed fields;
# 3: the C engine's physics state holds the MjData fields its env declares, and residuals.
# An env whose own physics state changes layout says so in Env.state_layout, so that runs of
# the other envs keep resuming.
STATE_LAYOUT = 3


@pytree.dataclass
class EpisodeStatistics:
    """The episode in progress (kept by :class:`~gymjax.wrappers.EpisodeWrapper`).

    Attributes:
        episode_return: float32, the sum of the episode's rewards so far.
        episode_length: int32, agent steps since the reset; the time limit reads it.
    """

    episode_return: jax.Array
    episode_length: jax.Array


@pytree.dataclass
class AutoResetState:
    """What :class:`~gymjax.wrappers.AutoReset` keeps per env, batched ``[N]``.

    Attributes:
        key: each env's PRNG key for its next reset.
        final_obs, final_info, final_episode: the observation, info and statistics the
            last step reached, before any reset replaced them (equal to the live
            ones where no episode ended). Same-step mode only needs them.
        pending: bool, the episode ended on the last step and the env resets at
            the next one (next-step mode; always False in same-step mode).
    """

    key: jax.Array
    final_obs: Any
    final_info: dict[str, Any]
    final_episode: EpisodeStatistics | None
    pending: jax.Array


@pytree.dataclass
class State:
    """One environment's state, or a batch of them (leading axis ``[N]``).

    What the env produces and what wrappers keep are apart: an env writes the
    first six fields; wrappers own theirs, which an env's ``state.replace(...)``
    carries through untouched.

    Attributes:
        env_state: the dynamics state (``mjx.Data``, or a typed dataclass for classic envs).
        obs: observation, float32 ``[obs_dim]``.
        reward: float32 scalar.
        terminated: bool scalar, the MDP reached a terminal state.
        truncated: bool scalar, the episode was cut (time limit), not terminal.
        info: the env's own Gymnasium-style step information, nothing else (fixed
            keys, so the pytree has one structure at reset and at step).
        episode: running episode statistics (:class:`EpisodeWrapper`), else None.
        autoreset: auto-reset bookkeeping (:class:`AutoReset`), else None.
        randomized: the physics fields drawn for this env, by name
            (:class:`DomainRandomization`), else None.
    """

    env_state: Any
    obs: Any
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    info: dict[str, Any] = pytree.field(default_factory=dict)
    episode: EpisodeStatistics | None = None
    autoreset: AutoResetState | None = None
    randomized: dict[str, jax.Array] | None = None

    @property
    def done(self) -> jax.Array:
        return self.terminated | self.truncated


def where(mask: jax.Array, on_true: Any, on_false: Any) -> Any:
    """``jnp.where`` over matching pytrees, ``mask`` broadcast from the leading axes."""

    def pick(a, b):
        m = jnp.reshape(mask, mask.shape + (1,) * (jnp.ndim(a) - mask.ndim))
        return jnp.where(m, a, b)

    return jax.tree.map(pick, on_true, on_false)


def where_env(mask: jax.Array, on_true: State, on_false: State) -> State:
    """``on_false`` with the env's own fields (physics, obs, reward, flags, info) taken from ``on_true``
    where ``mask`` holds; the wrappers' fields stay ``on_false``'s, for each wrapper to set its own."""
    own = ("env_state", "obs", "reward", "terminated", "truncated", "info")
    picked = where(mask, {f: getattr(on_true, f) for f in own}, {f: getattr(on_false, f) for f in own})
    return on_false.replace(**picked)


def field_names(params: Any) -> list[str]:
    """Dotted names of a params pytree's leaves (``"body_mass"``, ``"opt.gravity"``)."""
    paths, _ = jax.tree_util.tree_flatten_with_path(params)
    return [jax.tree_util.keystr(path, simple=True, separator=".") for path, _ in paths]


def with_fields(params: Any, fields: dict[str, Any]) -> Any:
    """``params`` with the leaves named in ``fields`` replaced; unknown names are an error."""
    names = field_names(params)
    leaves, treedef = jax.tree.flatten(params)
    unknown = sorted(set(fields) - set(names))
    if unknown:
        raise ValueError(f"{type(params).__name__} has no fields {unknown}; its fields are {names}")
    return treedef.unflatten([fields.get(name, leaf) for name, leaf in zip(names, leaves)])


def check_agents(actions: Any, agents: tuple[str, ...] | list[str]) -> None:
    """Raises unless ``actions`` is a dict with exactly one entry per agent."""
    if not isinstance(actions, dict):
        raise TypeError(f"actions must be a dict agent -> action, got {type(actions).__name__}")
    missing = [a for a in agents if a not in actions]
    unknown = sorted(set(actions) - set(agents), key=str)
    if missing or unknown:
        raise ValueError(
            f"actions must have exactly the agents {list(agents)}; missing {missing}, unknown {unknown}"
        )


# The spaces whose one action is one array of a static shape: the shape step checks (a Dict space's
# env, multi-agent, checks its own actions by agent).
_ARRAY_SPACES = (gymnasium.spaces.Box, gymnasium.spaces.Discrete, gymnasium.spaces.MultiDiscrete,
                 gymnasium.spaces.MultiBinary)


def check_action_shape(env: Env, action: Any) -> None:
    """Raises unless ``action`` is one action of ``env``'s action space by shape.

    Shapes are static under ``jit`` and ``vmap``, so this runs when the step is traced and costs
    nothing per step. An env that took a wrongly shaped action would broadcast or slice it into its
    physics (a length-5 control on a 3-actuator Hopper steps) and return plausible numbers.
    """
    space = env.action_space
    if not isinstance(space, _ARRAY_SPACES):
        return
    shape = tuple(jnp.shape(action))
    if shape != tuple(space.shape):
        raise ValueError(
            f"{type(env).__name__}.step takes one env's action, of shape {tuple(space.shape)} ({space}); got "
            f"shape {shape}. A batch of actions is stepped under jax.vmap (or gymjax.wrappers.VmapWrapper), "
            "each env seeing one action of that shape."
        )


def _checking_action(method, position: int):
    """``method`` (an env's ``step`` or ``step_or_reset``) refusing an action of the wrong shape,
    ``position`` being the action's place among its arguments after ``self``."""

    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        action = args[position] if len(args) > position else kwargs.get("action", kwargs.get("actions"))
        check_action_shape(self, action)
        return method(self, *args, **kwargs)

    checked.checks_action = True
    return checked


class Env(abc.ABC, Generic[Params]):
    """A single, unbatched, pure-JAX environment.

    Subclasses set ``observation_space`` and ``action_space`` (Gymnasium spaces
    describing one env), ``max_episode_steps`` (the registered time limit) and
    implement :meth:`reset`, :meth:`step` and :attr:`default_params`. Their
    :meth:`step` and :meth:`step_or_reset` refuse an action whose shape is not
    ``action_space``'s, when traced (:func:`check_action_shape`).
    """

    observation_space: gymnasium.spaces.Space
    action_space: gymnasium.spaces.Space
    max_episode_steps: int | None = None
    metadata: dict[str, Any] = {"render_modes": []}
    # The info keys a Gymnasium reset reports (None: all); some Gymnasium envs
    # report fewer keys at reset than at step.
    reset_info_keys: tuple[str, ...] | None = None
    # Whether reset/step take changed params as a dict {field name: value} (see
    # resolve_params); domain randomization passes full params to envs that do not.
    params_by_name: bool = False
    # Whether the env's computations run on the CPU only (MuJoCo's C engine: its XLA FFI handler
    # is a CPU one); the adapters then run it on the CPU device when JAX's default is an accelerator.
    cpu_only: bool = False
    # Whether a session compiles this env's programs with its own CPU options (a quicker compile,
    # gymjax.wrappers.programs.CPU_COMPILER_OPTIONS) rather than XLA's defaults: where MuJoCo's C
    # engine computes the physics, which no compiler option changes. Other envs (Brax's, a user's
    # own) compile as the user's own jit of them does, and so step to the same bits.
    session_compiler_options: bool = False
    # Set by gymjax.envs.make: the registered id and the options the env was built with (None for
    # an env built by its class); the trainer records the id, and finds the env's Gymnasium
    # reference (gymjax.trainers.reference) by it.
    env_id: str | None = None
    env_kwargs: dict[str, Any] | None = None
    # Whether step and step_or_reset take one action of action_space's shape, and refuse others
    # when traced (check_action_shape): every env's do; a wrapper's may take a batch, and the env
    # it wraps checks each action.
    checks_actions: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # The one place every env's step is checked, the envs gymjax.envs.make returns and a user's
        # registered own alike, without a line in each env.
        if not cls.checks_actions:
            return
        for name, position in (("step", 1), ("step_or_reset", 1)):
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "checks_action", False):
                setattr(cls, name, _checking_action(method, position))

    @property
    @abc.abstractmethod
    def default_params(self) -> Params:
        """The nominal physics parameters, used when ``params`` is None."""

    def resolve_params(self, params: Params | dict[str, jax.Array] | None) -> Params:
        """The full params for ``reset``/``step``'s ``params`` argument.

        ``params`` is None (the defaults), the env's params in full, or a dict naming
        the fields that differ from the defaults (what domain randomization passes).
        """
        if params is None:
            return self.default_params
        if isinstance(params, dict):
            return with_fields(self.default_params, params)
        return params

    @abc.abstractmethod
    def reset(self, key: jax.Array, params: Params | None = None) -> State:
        """Samples an initial state. ``key`` is one PRNG key."""

    @abc.abstractmethod
    def step(self, state: State, action: jax.Array, params: Params | None = None) -> State:
        """Advances one agent step (all physics substeps included)."""

    def step_or_reset(self, state: State, action: jax.Array, reset: jax.Array, key: jax.Array,
                      params: Params | None = None) -> State:
        """:meth:`step`, or where ``reset`` holds a fresh :meth:`reset` from ``key``: what auto-reset
        in next-step mode asks of each env. The wrappers' fields of the result are ``state``'s; each
        wrapper sets its own where ``reset`` holds.

        This default computes both and selects; an env whose physics can do either in one call
        (MuJoCo's batch engine) overrides it, and so does each wrapper that has state of its own.
        """
        return where_env(reset, self.reset(key, params), self.step(state, action, params))

    def restart(self, state: State, reset: jax.Array, key: jax.Array, params: Params | None = None) -> State:
        """``state``, or where ``reset`` holds a fresh :meth:`reset` from ``key``: what auto-reset in
        same-step mode asks after a step. Wrappers' fields as in :meth:`step_or_reset`. This default
        resets every env and selects; MuJoCo's batch engine runs only the envs that reset."""
        return where_env(reset, self.reset(key, params), state)

    @property
    def dt(self) -> float:
        """Seconds of simulated time per :meth:`step`."""
        raise NotImplementedError

    # The layout its checkpoints record (see STATE_LAYOUT): the core's, or above it when this
    # env's physics state changed shape (the classic envs' named fields: gymjax.envs.classic.state).
    state_layout: ClassVar[int] = STATE_LAYOUT

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

    A wrapper keeps its own bookkeeping in a :class:`State` field of its own, never
    in ``info``: the inner env's ``state.replace`` carries it through the step.
    """

    # A wrapper may batch (VmapWrapper takes [N, *shape]); the env under it checks each action.
    checks_actions: ClassVar[bool] = False

    def __init__(self, env: Env):
        self.env = env

    observation_space = property(lambda self: self.env.observation_space)
    action_space = property(lambda self: self.env.action_space)
    max_episode_steps = property(lambda self: self.env.max_episode_steps)
    metadata = property(lambda self: self.env.metadata)
    reset_info_keys = property(lambda self: self.env.reset_info_keys)
    env_id = property(lambda self: self.env.env_id)
    env_kwargs = property(lambda self: self.env.env_kwargs)
    session_compiler_options = property(lambda self: self.env.session_compiler_options)

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
