"""The registry of gymjax environments: ``gymjax.envs.make("JaxAnt-v0")``.

The registry owns what makes an id more than its class: the entry point and the options fixed for
the id (a variant is a registry line: ``kwargs={"scenario": "Hopper"}``), the time limit, and the
Gymnasium env whose task it reproduces with the options that env takes. A class built directly
(``Hopper()``) has no time limit, as Gymnasium's own classes have none outside their registry.
:func:`register` is public: a user's id (Ant with their XML) is made, vectorized, trained and
tested as gymjax's own are.

Single-agent ids are also registered with Gymnasium, by :func:`register`.
Multi-agent ids (``gymjax.envs.make_multi("JaxMultiAnt-v0", agent_conf="4x2")``)
share the table and its rules but not that registration: their actions are a
dict per agent, which no Gymnasium ``Env`` takes. Their adapter is
:mod:`gymjax.wrappers.pettingzoo`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gymjax import compile_cache
from gymjax.envs import external  # names only: no collection is imported

if TYPE_CHECKING:
    from gymjax.core import Env


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """What the registry knows of an id without building the env."""

    env_id: str
    entry_point: str | Callable[..., Env]  # "module:Class", imported when the id is first made
    max_episode_steps: int | None
    multi_agent: bool = False
    reference_id: str | None = None  # Gymnasium's own env with the same task: what a policy is judged on
    collection: str | None = None  # "brax", "playground", "gymnax": another collection's env (gymjax.envs.external)
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # the id's fixed options (a variant)
    reference_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # the reference's, for them

    @property
    def reward_threshold(self) -> float | None:
        """The reference's: the return at which Gymnasium counts its task solved (clients stop
        training there); None where the reference has none, or there is no reference."""
        if self.reference_id is None:
            return None
        import gymnasium  # its registry only: the reference's module is not imported

        return gymnasium.spec(self.reference_id).reward_threshold

    def load(self) -> Callable[..., Env]:
        if callable(self.entry_point):
            return self.entry_point
        module, _, name = self.entry_point.partition(":")
        return getattr(importlib.import_module(module), name)


_REGISTRY: dict[str, EnvSpec] = {}


def register(
    env_id: str,
    entry_point: str | Callable[..., Env],
    max_episode_steps: int | None,
    *,
    kwargs: Mapping[str, Any] | None = None,
    reference_id: str | None = None,
    reference_kwargs: Mapping[str, Any] | None = None,
    multi_agent: bool = False,
    collection: str | None = None,
) -> None:
    """Registers ``entry_point(**kwargs, **options) -> Env`` under ``env_id``; ids are unique.

    Args:
        entry_point: a callable, or ``"module:Class"`` imported when the id is first made.
        max_episode_steps: the time limit (Gymnasium's ``TimeLimit``, the trainer's episode length);
            None for an env that truncates by itself or never.
        kwargs: options fixed for this id, which a caller's options override (a variant of a task).
        reference_id, reference_kwargs: the Gymnasium env (and its options) whose task this id
            reproduces: ``gymjax eval --reference`` plays a trained policy there, and the
            conformance tests step both from the same states. An id without one gets the tests
            that need no twin.
        multi_agent: actions are a dict per agent (:func:`make_multi`); not registered with Gymnasium.

    A single-agent id is registered with Gymnasium too: ``gymnasium.make(env_id)`` works at once.
    """
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"an environment id is a non-empty str, got {env_id!r}")
    if env_id in _REGISTRY:
        raise ValueError(f"environment id {env_id!r} is already registered")
    if max_episode_steps is not None and (isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int)
                                          or max_episode_steps < 1):  # fmt: skip
        raise ValueError(f"max_episode_steps must be an int >= 1 or None, got {max_episode_steps!r}")
    if reference_kwargs and reference_id is None:
        raise ValueError(f"{env_id}: reference_kwargs without a reference_id")
    spec_ = EnvSpec(env_id, entry_point, max_episode_steps, multi_agent, reference_id, collection,
                    dict(kwargs or {}), dict(reference_kwargs or {}))  # fmt: skip
    _REGISTRY[env_id] = spec_
    if not multi_agent:
        _register_with_gymnasium(spec_)


def _register_with_gymnasium(spec_: EnvSpec) -> None:
    import gymnasium

    if spec_.env_id in gymnasium.registry:
        return  # a re-import (importlib.reload) registers nothing twice
    # Another collection's time limit is known once its env is built: the session applies it in
    # JAX (time_limit), where Gymnasium's TimeLimit would need it now.
    gymnasium.register(
        id=spec_.env_id,
        entry_point="gymjax.wrappers.gymnasium:GymnasiumEnv",
        vector_entry_point="gymjax.wrappers.gymnasium:GymnasiumVectorEnv",
        max_episode_steps=spec_.max_episode_steps,
        reward_threshold=spec_.reward_threshold,
        kwargs={"env": spec_.env_id} | ({"time_limit": True} if spec_.collection else {}),
    )


def spec(env_id: str) -> EnvSpec:
    if env_id not in _REGISTRY:
        raise ValueError(f"unknown environment id {env_id!r}; registered: {sorted(_REGISTRY)}")
    return _REGISTRY[env_id]


def _factory(env_id: str, multi_agent: bool) -> Callable[..., Env]:
    env_spec = spec(env_id)
    if env_spec.multi_agent != multi_agent:
        kind, builder = ("multi-agent", "make_multi") if env_spec.multi_agent else ("single-agent", "make")
        raise ValueError(f"{env_id!r} is a {kind} env; build it with gymjax.envs.{builder}")
    return env_spec.load()


def make(env_id: str, **kwargs: Any) -> Env:
    """Builds the functional (pure JAX, unbatched) single-agent env registered as ``env_id``."""
    return _built(env_id, kwargs, _factory(env_id, multi_agent=False))


def make_multi(env_id: str, **kwargs: Any) -> Env:
    """Builds the functional multi-agent env registered as ``env_id`` (actions: a dict per agent)."""
    return _built(env_id, kwargs, _factory(env_id, multi_agent=True))


def takes_engine(env_id: str) -> bool:
    """Whether ``env_id`` is one of gymjax's MuJoCo ids, which take ``engine=`` (the multi-agent
    ones pass it on to their task, with their other options)."""
    env_spec = spec(env_id)
    if env_spec.collection is not None:
        return False
    known = options_of(env_spec.load())
    return known is None or "engine" in known


def options_of(factory: Callable[..., Env]) -> list[str] | None:
    """The keyword options ``factory`` takes; None when it takes any.

    A class's ``**kwargs`` are taken to go on to the next ``__init__`` of its MRO (a task's
    ``super().__init__(..., **kwargs)``), whose options count too; ``**kwargs`` that reach
    ``object`` (or a plain function's) accept anything.
    """
    if inspect.isclass(factory):
        inits = [vars(cls)["__init__"] for cls in inspect.getmro(factory) if "__init__" in vars(cls)]
    else:
        inits = [factory]
    names: list[str] = []
    for init in inits:
        parameters = list(inspect.signature(init).parameters.values())
        keywords = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        names += [p.name for p in parameters if p.kind in keywords and p.name != "self" and p.name not in names]
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            return names
    return None


class UnknownOption(TypeError, ValueError):
    """An option the env does not take. A TypeError with Python's words ("unexpected keyword argument
    'x'") as clients expect of a constructor (torchrl's GymEnv tries ``frameskip=`` and drops it on
    exactly that); a ValueError as gymjax's other bad values."""


def _built(env_id: str, kwargs: dict[str, Any], factory: Callable[..., Env]) -> Env:
    compile_cache.enable_from_env()  # what the user asked for with GYMJAX_COMPILATION_CACHE; else nothing
    env_spec = spec(env_id)
    recorded = dict(kwargs)
    kwargs = {**env_spec.kwargs, **kwargs}
    if env_spec.collection is None:  # Brax's envs take backend= as their own option
        kwargs = _engine(kwargs)
    known = options_of(factory)
    unknown = sorted(set(kwargs) - set(known)) if known is not None else []
    if unknown:  # named here, before the env loads its model, rather than as a TypeError deep inside
        raise UnknownOption(
            f"{env_id} has no option {unknown[0]!r} (an unexpected keyword argument {unknown[0]!r}); "
            f"its options are {sorted(known)}"
        )
    env = factory(**kwargs)
    env.env_id, env.env_kwargs = env_id, recorded
    if env_spec.max_episode_steps is not None:  # else the env's own (another collection's)
        env.max_episode_steps = env_spec.max_episode_steps
    return env


def parse_env_kwargs(pairs: list[str]) -> dict[str, Any]:
    """``["KEY=VALUE", ...]`` from a command line as env options: JSON values, or bare words.
    ValueError, naming what was expected, for a pair without ``=`` or JSON nested past reading."""
    kwargs = {}
    for pair in pairs:
        if "=" not in pair:
            raise ValueError(f"--env-kwargs expects KEY=VALUE pairs, got {pair!r}")
        key, text = pair.split("=", 1)
        try:
            kwargs[key] = json.loads(text)
        except json.JSONDecodeError:
            kwargs[key] = text  # a bare word, e.g. solver=fast
        except RecursionError:
            raise ValueError(f"--env-kwargs {key}: its JSON value is nested too deeply to read") from None
    return kwargs


def registered_ids(multi_agent: bool = False, collection: str | None = None) -> list[str]:
    """gymjax's own single-agent ids (registered with Gymnasium), or its multi-agent ones; with a
    ``collection`` (``"brax"``, ``"playground"``, ``"gymnax"``), that collection's ids instead."""
    return sorted(i for i, s in _REGISTRY.items() if s.multi_agent == multi_agent and s.collection == collection)


def __getattr__(name: str):
    # from_brax, from_playground, from_gymnax: imported on first use, as their packages are.
    if name in ("from_brax", "from_playground", "from_gymnax"):
        from gymjax.envs import external

        return external.constructor(name)
    raise AttributeError(f"module 'gymjax.envs' has no attribute {name!r}")


def _engine(kwargs: dict[str, Any]) -> dict[str, Any]:
    """MuJoCo envs take ``engine=`` (``"mjx"``, ``"mujoco"``, ``"auto"``); ``backend=`` is its old name.

    ``backend`` stays accepted because run directories recorded it and clients pass it on; it
    becomes ``engine`` here, so an env only ever sees one name.
    """
    if "backend" in kwargs:
        if "engine" in kwargs:
            raise ValueError("pass engine= or its old name backend=, not both")
        kwargs = dict(kwargs)
        kwargs["engine"] = kwargs.pop("backend")
    return kwargs


# Each id's time limit is stated here only (Gymnasium needs it at import, before any env is built).
# Entry points are imported when an id is made: classic-control users never load MuJoCo.
_MUJOCO = "gymjax.envs.mujoco"
_CLASSIC = "gymjax.envs.classic"
register("JaxAnt-v0", f"{_MUJOCO}.ant:Ant", max_episode_steps=1000, reference_id="Ant-v5")
register("JaxHalfCheetah-v0", f"{_MUJOCO}.half_cheetah:HalfCheetah", max_episode_steps=1000,
         reference_id="HalfCheetah-v5")
register("JaxHopper-v0", f"{_MUJOCO}.hopper:Hopper", max_episode_steps=1000, reference_id="Hopper-v5")
register("JaxWalker2d-v0", f"{_MUJOCO}.walker2d:Walker2d", max_episode_steps=1000, reference_id="Walker2d-v5")
register("JaxSwimmer-v0", f"{_MUJOCO}.swimmer:Swimmer", max_episode_steps=1000, reference_id="Swimmer-v5")
register("JaxReacher-v0", f"{_MUJOCO}.reacher:Reacher", max_episode_steps=50, reference_id="Reacher-v5")
register("JaxPusher-v0", f"{_MUJOCO}.pusher:Pusher", max_episode_steps=100, reference_id="Pusher-v5")
register("JaxInvertedPendulum-v0", f"{_MUJOCO}.inverted_pendulum:InvertedPendulum", max_episode_steps=1000,
         reference_id="InvertedPendulum-v5")
register("JaxInvertedDoublePendulum-v0", f"{_MUJOCO}.inverted_double_pendulum:InvertedDoublePendulum",
         max_episode_steps=1000, reference_id="InvertedDoublePendulum-v5")
register("JaxHumanoid-v0", f"{_MUJOCO}.humanoid:Humanoid", max_episode_steps=1000, reference_id="Humanoid-v5")
register("JaxHumanoidStandup-v0", f"{_MUJOCO}.humanoid_standup:HumanoidStandup", max_episode_steps=1000,
         reference_id="HumanoidStandup-v5")
register("JaxMultiAnt-v0", f"{_MUJOCO}.multi_ant:MultiAnt", max_episode_steps=1000, multi_agent=True)  # MaMuJoCo's
# MaMuJoCo's other scenarios: one class, a line each (the scenario and its default partition)
_MULTI = f"{_MUJOCO}.multi_agent:MultiAgentMujoco"
register("JaxMultiHalfCheetah-v0", _MULTI, 1000, kwargs={"scenario": "HalfCheetah", "agent_conf": "6x1"},
         multi_agent=True)
register("JaxMultiHopper-v0", _MULTI, 1000, kwargs={"scenario": "Hopper", "agent_conf": "3x1"}, multi_agent=True)
register("JaxMultiWalker2d-v0", _MULTI, 1000, kwargs={"scenario": "Walker2d", "agent_conf": "2x3"}, multi_agent=True)
register("JaxMultiSwimmer-v0", _MULTI, 1000, kwargs={"scenario": "Swimmer", "agent_conf": "2x1"}, multi_agent=True)
register("JaxMultiReacher-v0", _MULTI, 50, kwargs={"scenario": "Reacher", "agent_conf": "2x1"}, multi_agent=True)
register("JaxMultiHumanoid-v0", _MULTI, 1000, kwargs={"scenario": "Humanoid", "agent_conf": "9|8"},
         multi_agent=True)
register("JaxMultiHumanoidStandup-v0", _MULTI, 1000, kwargs={"scenario": "HumanoidStandup", "agent_conf": "9|8"},
         multi_agent=True)
# CartPole's time limit is v1's (v0's was 200).
register("JaxCartPole-v0", f"{_CLASSIC}.cartpole:CartPole", max_episode_steps=500, reference_id="CartPole-v1")
register("JaxPendulum-v0", f"{_CLASSIC}.pendulum:Pendulum", max_episode_steps=200, reference_id="Pendulum-v1")
register("JaxAcrobot-v0", f"{_CLASSIC}.acrobot:Acrobot", max_episode_steps=500, reference_id="Acrobot-v1")
register("JaxMountainCar-v0", f"{_CLASSIC}.mountain_car:MountainCar", max_episode_steps=200,
         reference_id="MountainCar-v0")
register("JaxMountainCarContinuous-v0", f"{_CLASSIC}.mountain_car_continuous:MountainCarContinuous",
         max_episode_steps=999, reference_id="MountainCarContinuous-v0")

# The other collections' envs, by name (their time limits are their own, known when one is built).
for _id, (_collection, _name) in external.IDS.items():
    register(_id, functools.partial(external.make, _collection, _name), None, collection=_collection)

# The ids gymjax ships (presets, benchmarks and per-task tests cover these); a user's are registered later.
CATALOG: frozenset[str] = frozenset(_REGISTRY)
