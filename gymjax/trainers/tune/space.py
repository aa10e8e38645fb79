"""The search space of a study: which PPOConfig fields a trial chooses, and from what (:class:`Param`,
a :data:`SearchSpace` per kind of task or read from a file), and the one-line error a tune gives."""


from __future__ import annotations

import dataclasses
import math
import os
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from gymjax import envs
from gymjax.core import Env
from gymjax.trainers.ppo import PPOConfig, preset_file
from gymjax.trainers.ppo.preset_file import PresetFileError
from gymjax.trainers.ppo.preset_file import clip as _clip
from gymjax.trainers.ppo.preset_file import short as _short

if TYPE_CHECKING:
    import optuna


class TuneError(ValueError):
    """A tune cannot start as asked; the message is one line naming what was expected."""


def read_data_file(path: str | os.PathLike, what: str) -> Any:
    """A search space's file (JSON or YAML, :func:`gymjax.trainers.ppo.preset_file.read_data_file`):
    TuneError in one line when it cannot be read."""
    try:
        return preset_file.read_data_file(path, what)
    except PresetFileError as e:
        raise TuneError(str(e)) from None


# -- the search space ----------------------------------------------------------------------------

PARAM_TYPES = ("float", "int", "categorical")
# Fields a trial does not choose: each is its own fact, given once for the whole study.
NOT_SEARCHED = {
    "num_timesteps": "the budget of a trial's runs: --minutes-per-trial, or --timesteps-per-trial",
    "seed": "the study's seeds (the base seed and the --seeds-per-trial after it), the same for every trial",
    "num_evals": "the pruner's steps, the same for every trial",
}


def _is_sizes(name: str) -> bool:
    return name.endswith("_sizes")


@dataclasses.dataclass(frozen=True)
class Param:
    """One searched field, as Optuna samples it: ``float`` or ``int`` from ``[low, high]`` (on a log
    scale with ``log``), or one of ``choices``. Layer sizes are chosen among tuples (``(64, 64)``),
    which Optuna stores as the strings ``gymjax train --policy-hidden-sizes`` takes (``"64,64"``)."""

    type: Literal["float", "int", "categorical"]
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Any, ...] | None = None

    def values(self) -> list[Any]:
        """The values PPOConfig must take for the whole range to be usable: its ends, or each choice."""
        return list(self.choices) if self.type == "categorical" else [self.low, self.high]

    def suggest(self, trial: optuna.Trial, name: str) -> Any:
        """The trial's value of field ``name``, as PPOConfig takes it."""
        if self.type == "float":
            return trial.suggest_float(name, self.low, self.high, log=self.log)
        if self.type == "int":
            return trial.suggest_int(name, self.low, self.high, log=self.log)
        return from_optuna(name, trial.suggest_categorical(name, [to_optuna(c) for c in self.choices]))

    def to_json(self) -> dict[str, Any]:
        if self.type == "categorical":
            choices = [list(c) if isinstance(c, tuple) else c for c in self.choices]
            return {"type": self.type, "choices": choices}
        return {"type": self.type, "low": self.low, "high": self.high, "log": self.log}


SearchSpace = dict[str, Param]


def to_optuna(value: Any) -> Any:
    """A config value as an Optuna choice (None, bool, int, float or str): layer sizes as ``"64,64"``."""
    return ",".join(map(str, value)) if isinstance(value, tuple) else value


def from_optuna(name: str, value: Any) -> Any:
    """An Optuna parameter of field ``name`` as PPOConfig takes it."""
    return tuple(int(x) for x in value.split(",")) if _is_sizes(name) and isinstance(value, str) else value


def _float(low, high, log=False) -> Param:
    return Param("float", low, high, log)


def _choice(*choices) -> Param:
    return Param("categorical", choices=choices)


# rl-baselines3-zoo's PPO ranges (hyperparams_opt.py), in PPOConfig's fields; the batch sizes are
# powers of two, so every combination splits into whole minibatches.
CLASSIC_SPACE: SearchSpace = {
    "learning_rate": _float(1e-4, 3e-3, log=True),
    "lr_schedule": _choice("constant", "linear"),
    "entropy_cost": _float(1e-8, 0.1, log=True),
    "clip_epsilon": _choice(0.1, 0.2, 0.3, 0.4),
    "gamma": _choice(0.9, 0.95, 0.98, 0.99, 0.995, 0.999),
    "gae_lambda": _choice(0.8, 0.9, 0.92, 0.95, 0.98, 0.99, 1.0),
    "num_envs": _choice(8, 16, 32, 64),
    "unroll_length": _choice(16, 32, 64, 128),
    "num_minibatches": _choice(1, 2, 4, 8),
    "update_epochs": _choice(1, 5, 10, 20),
    "policy_hidden_sizes": _choice((64,), (64, 64), (256, 256)),
    "value_hidden_sizes": _choice((64,), (64, 64), (256, 256)),
    "normalize_observations": _choice(True, False),
}
# Physics tasks: on a CPU the physics bounds the wall time, so more envs, larger networks and fewer
# passes are in range (the presets' Ant settings sit inside it), and the discounts of long episodes.
MUJOCO_SPACE: SearchSpace = {
    "learning_rate": _float(3e-5, 3e-3, log=True),
    "lr_schedule": _choice("constant", "linear"),
    "entropy_cost": _float(1e-8, 1e-2, log=True),
    "clip_epsilon": _choice(0.1, 0.2, 0.3),
    "gamma": _choice(0.98, 0.99, 0.995, 0.999, 0.9999),
    "gae_lambda": _choice(0.9, 0.92, 0.95, 0.98, 0.99),
    "num_envs": _choice(64, 128, 256, 512),
    "unroll_length": _choice(16, 32, 64),
    "num_minibatches": _choice(4, 8, 16, 32),
    "update_epochs": _choice(2, 5, 10),
    "policy_hidden_sizes": _choice((64, 64), (256, 256), (256, 256, 256)),
    "value_hidden_sizes": _choice((64, 64), (256, 256), (256, 256, 256)),
    "normalize_observations": _choice(True, False),
    "normalize_rewards": _choice(True, False),
}
SPACES = {"classic": CLASSIC_SPACE, "mujoco": MUJOCO_SPACE}


def task_kind(env_id: str, env: Env) -> str:
    """``"mujoco"`` for a physics task (gymjax's MuJoCo envs, Brax's and Playground's), else ``"classic"``."""
    physics = type(env.unwrapped).__module__.startswith("gymjax.envs.mujoco")
    return "mujoco" if physics or envs.spec(env_id).collection in ("brax", "playground") else "classic"


def parse_space(data: Any, base: PPOConfig, where: str = "search space") -> SearchSpace:
    """``{field: {type, low, high, log, choices}}`` as a :data:`SearchSpace`, every range checked
    against PPOConfig (``base`` with each end or choice) before any trial: TuneError in one line."""
    if not isinstance(data, Mapping) or not data:
        raise TuneError(f"{where}: expected a non-empty mapping of PPOConfig fields to "
                        f"{{type: {'|'.join(PARAM_TYPES)}, low, high, log, choices}}, got {_short(data)}")
    known = {f.name for f in dataclasses.fields(PPOConfig)}
    space = {}
    for name, spec in data.items():
        if name not in known:
            raise TuneError(f"{where}: {name!r} is not a PPOConfig field; fields: {', '.join(sorted(known))}")
        if name in NOT_SEARCHED:
            raise TuneError(f"{where}: {name} is not searched: it is {NOT_SEARCHED[name]}")
        space[name] = _parse_param(name, spec, f"{where}: {name}")
        for value in space[name].values():
            try:
                base.replace(**{name: value})
            except (ValueError, TypeError, OverflowError) as e:
                raise TuneError(f"{where}: {name} = {_short(value)} is refused by PPOConfig: "
                                f"{_clip(str(e))}") from None
    return space


def _parse_param(name: str, spec: Any, where: str) -> Param:
    if not isinstance(spec, Mapping) or spec.get("type") not in PARAM_TYPES:
        raise TuneError(f"{where}: expected {{type: {'|'.join(PARAM_TYPES)}, ...}}, got {_short(spec)}")
    kind = spec["type"]
    allowed = {"type", "choices"} if kind == "categorical" else {"type", "low", "high", "log"}
    extra = sorted(set(spec) - allowed)
    if extra:
        raise TuneError(f"{where}: a {kind} range takes {', '.join(sorted(allowed))}, "
                        f"not {', '.join(map(str, extra))}")
    if kind == "categorical":
        return Param("categorical", choices=_parse_choices(name, spec.get("choices"), where))
    hint = typing.get_type_hints(PPOConfig)[name]
    if hint not in (int, float, int | None):
        raise TuneError(f"{where}: the field is not a number: search it as type categorical, "
                        "with its choices")
    if kind == "float" and hint is not float:
        raise TuneError(f"{where}: the field takes ints: use type int")
    low, high, log = spec.get("low"), spec.get("high"), spec.get("log", False)
    number = int if kind == "int" else (int, float)
    for end, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, number) or not _finite(value):
            raise TuneError(f"{where}: expected {end} as a finite {'int' if kind == 'int' else 'number'}, "
                            f"got {_short(value)}")
    if not low <= high:
        raise TuneError(f"{where}: expected low <= high, got low {_short(low)} and high {_short(high)}")
    if not isinstance(log, bool):
        raise TuneError(f"{where}: expected log as true or false, got {_short(log)}")
    if log and low <= 0:
        raise TuneError(f"{where}: a log scale needs low > 0, got {_short(low)}")
    return Param(kind, low, high, log)


def _parse_choices(name: str, choices: Any, where: str) -> tuple[Any, ...]:
    """A categorical range's choices, each one Optuna can store (layer sizes as tuples)."""
    if not isinstance(choices, list) or not choices:
        raise TuneError(f"{where}: expected choices as a non-empty list, got {_short(choices)}")
    if _is_sizes(name):
        choices = [tuple(c) if isinstance(c, list) else c for c in choices]
    scalar = (type(None), bool, int, float, str)
    for c in choices:
        if not (isinstance(c, scalar) or (isinstance(c, tuple) and all(isinstance(x, scalar) for x in c))):
            raise TuneError(f"{where}: expected each choice as null, true/false, a number or a string "
                            f"(layer sizes as a list of ints), got {_short(c)}")
    if len(set(map(to_optuna, choices))) != len(choices):
        raise TuneError(f"{where}: choices repeat a value: {_short(choices)}")
    return tuple(choices)


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past float's range: not a bound a search can use
        return False


def space_to_json(space: SearchSpace) -> dict[str, Any]:
    return {name: param.to_json() for name, param in space.items()}


