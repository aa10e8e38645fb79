"""Hyperparameter tuning of PPO on Optuna: ``gymjax tune``, rl-baselines3-zoo's ``train.py --optimize``.

A *study* searches :class:`PPOConfig` fields (:class:`Param`, a :data:`SearchSpace` per kind of task
or from a file) for the highest evaluation return. Each *trial* trains a base config with the
trial's values on the study's seeds (``base seed + 0 .. K-1``, the same for every trial, so that two
trials differ by their settings and not by their seeds' luck), one ordinary run a seed, one after
another, each for ``minutes_per_trial`` minutes (:func:`gymjax.trainers.ppo.train.time_budget`) or
for the base config's ``num_timesteps``. Its value is the study's :data:`OBJECTIVES` (``mean`` by
default) of each seed's last evaluation return. It reports to Optuna after each evaluation the
objective over the seeds trained so far (the finished seeds' last returns and the current seed's
latest), its step ``seed index x num_evals + evaluation index``: every run makes ``num_evals``
evaluations spread over its budget, so a step is the same seed at the same point of its budget in
every trial whatever their batch sizes. A pruner that judges it hopeless stops it as any hook stops
a run (:class:`~gymjax.trainers.hooks.StopTraining`), and its remaining seeds are not trained.

Several processes and machines share one study through Optuna's RDB storage (its own distributed
mode: each process asks the storage for its next trial). What a study is (env, base config, search
space, budget: :class:`TuneSetup`) is stored with it, and a process that would add trials of
another setup to it is refused. A process killed mid-trial leaves its trial RUNNING; the next
process that opens the study on the same host marks it FAILED (each trial records the host, pid
and start time of its process), and Optuna's heartbeat does the same for other hosts' after
:data:`HEARTBEAT_GRACE_S`. A failed trial is never a result: not the best, not in the importances.

Optuna is imported by the functions that need it: ``pip install 'gymjax[tune]'``. From Python::

    setup = tune.make_setup("JaxCartPole-v0", PPOConfig.preset("cartpole"), minutes_per_trial=1)
    study = tune.open_study(setup, "sqlite:///tune.db")      # created, or continued
    tune.optimize(study, setup, n_trials=20)
    tune.write_report("runs/tune", study, setup)             # best_preset.json, trials.csv, plots
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import pathlib
import socket
import statistics
import time
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import jax

from gymjax import envs, program
from gymjax.core import Env
from gymjax.trainers import files
from gymjax.trainers.hooks import Hook, Metrics, Progress, StopTraining
from gymjax.trainers.ppo import PPOConfig, budget, preset_file, train
from gymjax.trainers.ppo.preset_file import PresetFile, PresetFileError, read_preset_file  # noqa: F401 (public names)
from gymjax.trainers.ppo.preset_file import clip as _clip
from gymjax.trainers.ppo.preset_file import short as _short
from gymjax.trainers.ppo.train import TrainingDiverged, time_budget
from gymjax.trainers.ppo.train import check as ppo_check

if TYPE_CHECKING:
    import optuna

EXTRA = "pip install 'gymjax[tune]'"
SETUP_ATTR = "gymjax_setup"  # the study's user attribute holding its TuneSetup
# Optuna's heartbeat (RDB storages): a trial whose process stopped beating this long ago is failed by
# the next trial any process starts. Long beside the interval: a live process must never lose its trial.
HEARTBEAT_INTERVAL_S = 60
HEARTBEAT_GRACE_S = 300
# How a trial's seeds make one value. The mean is the default: the median of 3 hides one seed that
# fails (HalfCheetah's 5,228 beside two over 9,000 had the median of the three over 9,000), the min
# ranks the unluckiest seed's noise; the mean keeps both the level and a third of any seed's failure.
OBJECTIVES: dict[str, Callable[[Sequence[float]], float]] = {
    "mean": statistics.fmean, "median": statistics.median, "min": min,
}
DEFAULT_OBJECTIVE = "mean"


class TuneError(ValueError):
    """A tune cannot start as asked; the message is one line naming what was expected."""


def read_data_file(path: str | os.PathLike, what: str) -> Any:
    """A search space's file (JSON or YAML, :func:`gymjax.trainers.ppo.preset_file.read_data_file`):
    TuneError in one line when it cannot be read."""
    try:
        return preset_file.read_data_file(path, what)
    except PresetFileError as e:
        raise TuneError(str(e)) from None


def import_optuna():
    """Optuna, or a :class:`TuneError` naming the extra that installs it."""
    try:
        import optuna
    except ImportError:
        raise TuneError(f"tuning needs Optuna: {EXTRA}") from None
    return optuna


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


# -- what a study is ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TuneSetup:
    """What every trial of a study shares; stored with the study, so that every process adding
    trials to it, on any machine, and every continuation, tunes the same thing.

    Attributes:
        env_id, env_kwargs: the task.
        base: the config each trial changes the searched fields of.
        space: the searched fields.
        minutes_per_trial: the wall-clock budget of each of a trial's runs; None: each trains
            ``base.num_timesteps``.
        seeds_per_trial: the runs a trial makes, on seeds ``base.seed + 0 .. K-1``.
        objective: how their last returns make the trial's value (:data:`OBJECTIVES`).
        env: the built env (not stored).
    """

    env_id: str
    env_kwargs: dict[str, Any]
    base: PPOConfig
    space: SearchSpace
    minutes_per_trial: float | None
    env: Env = dataclasses.field(compare=False, repr=False)
    seeds_per_trial: int = 1
    objective: str = DEFAULT_OBJECTIVE

    @property
    def seeds(self) -> tuple[int, ...]:
        """Every trial's seeds: the same for all, so trials differ by their settings alone."""
        return tuple((self.base.seed + k) % 2**32 for k in range(self.seeds_per_trial))

    def aggregate(self, returns: Sequence[float]) -> float:
        """The trial's value (or, mid-trial, its intermediate value) from its seeds' returns."""
        return float(OBJECTIVES[self.objective](returns))

    def to_json(self) -> dict[str, Any]:
        return json.loads(json.dumps({
            "env": self.env_id, "env_kwargs": self.env_kwargs, "config": self.base.to_dict(),
            "minutes_per_trial": self.minutes_per_trial, "search_space": space_to_json(self.space),
            "seeds": list(self.seeds), "objective": self.objective,
        }))

    def trial_config(self, params: Mapping[str, Any], seed: int) -> PPOConfig:
        """The base config with a trial's ``params`` (as Optuna stores them) and ``seed``."""
        values = {name: from_optuna(name, value) for name, value in params.items()}
        return self.base.replace(**values, seed=seed % 2**32)

    def base_params(self) -> dict[str, Any]:
        """The base config's values of the searched fields, as Optuna stores them: the yardstick trial.
        TuneError, naming the field, for a value outside its range (Optuna would not sample it)."""
        params = {}
        for name, param in self.space.items():
            value = to_optuna(getattr(self.base, name))
            if param.type == "categorical":
                inside = value in [to_optuna(c) for c in param.choices]
            else:
                number = isinstance(value, (int, float)) and not isinstance(value, bool)
                inside = number and param.low <= value <= param.high
            if not inside:
                searched = (f"choices {_short([to_optuna(c) for c in param.choices])}"
                            if param.type == "categorical" else f"[{param.low!r}, {param.high!r}]")
                raise TuneError(f"--enqueue-base: the base config's {name} = {value!r} is outside the search "
                                f"space's {searched}; widen the space or change the base")
            params[name] = value
        return params


def make_setup(
    env_id: str,
    base: PPOConfig,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    space: SearchSpace | Mapping[str, Any] | None = None,
    minutes_per_trial: float | None = None,
    seeds_per_trial: int = 1,
    objective: str = DEFAULT_OBJECTIVE,
    env: Env | None = None,
) -> TuneSetup:
    """A checked :class:`TuneSetup`; ``space`` None: the default for the kind of task
    (:func:`task_kind`), else a :data:`SearchSpace` or its JSON form (:func:`parse_space`).
    Refuses, in one line, whatever would make trials fail alike: a config PPO cannot train the env
    with, a range PPOConfig refuses, a base config without evaluations."""
    env_kwargs = dict(env_kwargs or {})
    if env is None:
        try:
            env = envs.make(env_id, **env_kwargs)
        except (ValueError, TypeError) as e:
            raise TuneError(str(e)) from None
    if base.num_evals < 1:
        raise TuneError("num_evals must be >= 1: a trial's value is its evaluations' return")
    if isinstance(seeds_per_trial, bool) or not isinstance(seeds_per_trial, int) or seeds_per_trial < 1:
        raise TuneError(f"seeds per trial: expected an int >= 1, got {seeds_per_trial!r}")
    if objective not in OBJECTIVES:
        raise TuneError(f"objective: expected one of {', '.join(OBJECTIVES)}, got {objective!r}")
    if minutes_per_trial is not None:
        try:
            minutes_per_trial = budget.check_minutes(minutes_per_trial)
        except ValueError as e:
            raise TuneError(f"minutes per trial: {e}") from None
    if space is None:
        space = dict(SPACES[task_kind(env_id, env)])
    elif not all(isinstance(p, Param) for p in space.values()):
        space = parse_space(space, base)
    try:
        ppo_check(base, env)
    except (ValueError, TypeError) as e:
        raise TuneError(f"the base config cannot train {env_id}: {e}") from None
    for name, param in space.items():  # each end or choice alone, as parse_space did for PPOConfig
        for value in param.values():
            try:
                ppo_check(base.replace(**{name: value}), env)
            except (ValueError, TypeError) as e:
                raise TuneError(f"search space: {name} = {_short(value)} cannot train {env_id}: "
                                f"{_clip(str(e))}") from None
    return TuneSetup(env_id, env_kwargs, base, dict(space), minutes_per_trial, env, seeds_per_trial, objective)


# -- the study ---------------------------------------------------------------------------------------


def open_storage(url: str | None) -> Any:
    """Optuna's storage for ``url`` (None: in memory), connected now: TuneError in one line for a URL
    it cannot use, before any trial."""
    optuna = import_optuna()
    if url is None:
        return optuna.storages.InMemoryStorage()
    import sqlalchemy
    import sqlalchemy.exc

    shown = masked(url)
    expected = "an RDB URL such as sqlite:///tune.db (one machine) or postgresql://user@host/db (several)"
    try:
        parsed = sqlalchemy.engine.make_url(url)
    except sqlalchemy.exc.ArgumentError:
        raise TuneError(f"--storage {shown}: expected {expected}") from None
    # SQLite waits this long for another process's write rather than failing the trial at once.
    engine = {"connect_args": {"timeout": 60}} if parsed.get_backend_name() == "sqlite" else {}
    try:
        _refuse_foreign(url, engine, shown)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # the heartbeat's
            return optuna.storages.RDBStorage(
                url, engine_kwargs=engine, heartbeat_interval=HEARTBEAT_INTERVAL_S,
                grace_period=HEARTBEAT_GRACE_S,
            )
    except (sqlalchemy.exc.SQLAlchemyError, ImportError, ValueError, RuntimeError) as e:
        reason = " ".join(str(getattr(e, "orig", None) or e).split()).split(" (Background on")[0][:200]
        raise TuneError(
            f"--storage {shown}: cannot open it ({type(e).__name__}: {reason}); expected {expected}"
        ) from None


OPTUNA_TABLES = {"studies", "trials", "version_info"}  # what every Optuna RDB storage holds


def _refuse_foreign(url: str, engine_kwargs: dict[str, Any], shown: str) -> None:
    """Refuses, before Optuna adds its tables, a database that holds another application's (a copy
    of an MLflow store, say): tables, and not Optuna's. An empty database is Optuna's to set up."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, **engine_kwargs)
    try:
        tables = set(sqlalchemy.inspect(engine).get_table_names())
    finally:
        engine.dispose()
    if tables and not OPTUNA_TABLES <= tables:
        listed = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise TuneError(f"--storage {shown}: the database holds another application's tables ({listed}) and no "
                        "Optuna storage; it was left untouched: give a new database, or one gymjax tune made")


def in_memory(url: str | None) -> bool:
    """Whether ``url`` names a database private to the process that opens it (no storage, or SQLite
    in memory): another process, a --n-jobs worker, would open a database of its own."""
    if url is None:
        return True
    import sqlalchemy
    import sqlalchemy.exc

    try:
        parsed = sqlalchemy.engine.make_url(url)
    except sqlalchemy.exc.ArgumentError:
        return False  # open_storage refuses it, naming what was expected
    database = parsed.database or ""
    return parsed.get_backend_name() == "sqlite" and (
        database in ("", ":memory:") or database.startswith("file::memory:") or "mode=memory" in url
    )


def masked(url: str | None) -> str:
    """``url`` without its password, as messages and the report name it; ``"memory"`` for None."""
    if url is None:
        return "memory"
    import sqlalchemy
    import sqlalchemy.exc

    try:
        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except sqlalchemy.exc.ArgumentError:
        return url


def make_sampler(name: str, n_startup_trials: int) -> Any:
    """rl-zoo's samplers: ``tpe`` (multivariate, random for the first ``n_startup_trials``) or ``random``.
    Unseeded: processes sharing a study, or continuing one, must not propose the same trials again."""
    optuna = import_optuna()
    if name == "tpe":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # multivariate
            return optuna.samplers.TPESampler(n_startup_trials=n_startup_trials, multivariate=True)
    if name == "random":
        return optuna.samplers.RandomSampler()
    raise TuneError(f"sampler: expected tpe or random, got {name!r}")


def make_pruner(name: str, n_startup_trials: int, num_evals: int) -> Any:
    """rl-zoo's pruners: ``median`` (from the ``n_startup_trials``-th trial, past a third of the
    evaluations) or ``none``."""
    optuna = import_optuna()
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=n_startup_trials, n_warmup_steps=num_evals // 3)
    if name == "none":
        return optuna.pruners.NopPruner()
    raise TuneError(f"pruner: expected median or none, got {name!r}")


def default_study_name(setup: TuneSetup) -> str:
    """The same command continues the same study; another setup in the same storage is refused."""
    return f"gymjax-{setup.env_id}"


def open_study(
    setup: TuneSetup,
    storage: str | None = None,
    study_name: str | None = None,
    *,
    sampler: str = "tpe",
    pruner: str | Any = "median",
    n_startup_trials: int = 5,
    say: Callable[[str], None] = print,
) -> optuna.Study:
    """Creates the study, or loads it to continue it: refused in one line if it was made for another
    setup. Marks FAILED the RUNNING trials whose process died on this host (``say`` names them).
    ``pruner``: a name (:func:`make_pruner`) or an Optuna pruner."""
    optuna = import_optuna()
    name = study_name or default_study_name(setup)
    if isinstance(pruner, str):
        pruner = make_pruner(pruner, n_startup_trials, setup.base.num_evals)
    study = optuna.create_study(
        storage=open_storage(storage), study_name=name, direction="maximize", load_if_exists=True,
        sampler=make_sampler(sampler, n_startup_trials), pruner=pruner,
    )
    wanted = setup.to_json()
    stored = study.user_attrs.get(SETUP_ATTR)
    if stored is None:
        if study.trials:
            raise TuneError(f"study {name!r} in {masked(storage)} was not made by gymjax tune; "
                            "give another --study-name")
        study.set_user_attr(SETUP_ATTR, wanted)
    elif stored != wanted:
        raise TuneError(
            f"study {name!r} in {masked(storage)} tunes another setup (it differs in "
            f"{', '.join(_differences(stored, wanted))}); "
            f"give the same flags to continue it, or another --study-name"
        )
    for number in fail_dead_trials(study):
        say(f"trial {number}: FAIL (its process died mid-trial; not counted)")
    return study


def _differences(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    found = []
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict) and key != "search_space":
            found += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            found.append(f"{prefix}{key} ({_short(a)} there, {_short(b)} here)")
    return found


# -- who runs a trial ------------------------------------------------------------------------------


def this_process() -> dict[str, Any]:
    """The ``worker`` a trial records: this process's host, pid and start."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "start": program.start_ticks(os.getpid())}


def _alive(worker: Mapping[str, Any]) -> bool:
    """Whether the process a trial recorded (on this host) still runs."""
    pid = worker.get("pid")
    if not isinstance(pid, int):
        return True  # not ours to judge
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process with that pid
    start = program.start_ticks(pid)
    return start is None or worker.get("start") is None or start == worker.get("start")


def fail_dead_trials(study: optuna.Study) -> list[int]:
    """Marks FAILED the RUNNING trials whose process, on this host, is gone; returns their numbers."""
    optuna = import_optuna()
    host, failed = socket.gethostname(), []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        worker = trial.user_attrs.get("worker")
        if isinstance(worker, dict) and worker.get("host") == host and not _alive(worker):
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
            failed.append(trial.number)
    return failed


# -- one trial -------------------------------------------------------------------------------------


class TrialFailed(Exception):
    """A trial the trainer refused or that diverged; its ``error`` user attribute says why."""


class _Reporter(Hook):
    """Reports the trial's intermediate value after each evaluation of each of its runs, and stops the
    run when the pruner says so: the objective over the finished seeds' last returns and the current
    seed's latest, at step ``seed index x num_evals + evaluation index``."""

    def __init__(self, trial: optuna.Trial, setup: TuneSetup):
        self.trial, self.setup = trial, setup
        self.returns: list[float] = []  # each finished run's last evaluation return
        self.latest: float | None = None  # the current run's latest evaluation return
        self.evaluations = 0  # the current run's
        self.env_steps = 0  # all runs'
        self._run_steps = 0
        self.pruned: str | None = None

    def start_run(self) -> None:
        self.latest, self.evaluations, self._run_steps = None, 0, 0

    def end_run(self) -> None:
        self.stop()
        if self.latest is None or not math.isfinite(self.latest):
            raise TrialFailed(f"seed {self.setup.seeds[len(self.returns)]}: no finite evaluation return "
                              f"({self.latest})")
        self.returns.append(self.latest)

    def after_eval(self, progress: Progress, metrics: Metrics) -> None:
        self.latest = float(metrics["eval/episode_return"])
        value = self.setup.aggregate([*self.returns, self.latest])
        self.trial.report(value, len(self.returns) * self.setup.base.num_evals + self.evaluations)
        self.evaluations += 1
        last_run = len(self.returns) == self.setup.seeds_per_trial - 1
        if last_run and progress.epoch >= progress.num_epochs:  # trained to its end: a result
            return
        if self.trial.should_prune():
            self.pruned = f"evaluation {self.evaluations} of seed {self.setup.seeds[len(self.returns)]}"
            self.trial.set_user_attr("pruned_at", self.pruned)
            raise StopTraining(f"pruned at {self.pruned} ({self.setup.objective} {value:.6g})")

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        self._run_steps = progress.env_steps

    def stop(self) -> None:
        """Counts the steps of a run that stopped early (pruned or failed)."""
        self.env_steps += self._run_steps
        self._run_steps = 0


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())}"[:300]


def run_trial(setup: TuneSetup, trial: optuna.Trial) -> float:
    """Trains one trial (Optuna's objective): a run on each of the study's seeds, one after another.
    Its attributes: ``worker``, ``seeds``, ``returns`` (each finished run's last evaluation return),
    ``num_timesteps`` (the steps each run's budget chose: the median where they differ), ``env_steps``
    (those all its runs made), ``error`` (why it failed)."""
    optuna = import_optuna()
    trial.set_user_attr("worker", this_process())
    params = {name: param.suggest(trial, name) for name, param in setup.space.items()}
    trial.set_user_attr("seeds", list(setup.seeds))
    reporter = _Reporter(trial, setup)
    planned: list[int] = []
    try:
        for seed in setup.seeds:
            started_at = time.time()
            config = setup.base.replace(**params, seed=seed)
            deadline = None
            if setup.minutes_per_trial is not None:
                deadline = time_budget(config, setup.env, minutes=setup.minutes_per_trial,
                                       started_at=started_at, saves=False, say=False)
                config = deadline.config
            planned.append(config.num_timesteps)
            trial.set_user_attr("num_timesteps", int(statistics.median_low(planned)))
            reporter.start_run()
            train(config, setup.env, deadline=deadline, hooks=[reporter], progress_bar=False)
            if reporter.pruned:
                break
            reporter.end_run()
            trial.set_user_attr("returns", reporter.returns)
    # A run the machine cannot hold (XLA's RESOURCE_EXHAUSTED, a JaxRuntimeError) fails its trial, as
    # a config the trainer refuses does: the next trial may fit.
    except (ValueError, TypeError, MemoryError, jax.errors.JaxRuntimeError, TrainingDiverged, TrialFailed) as e:
        error = str(e) if isinstance(e, TrialFailed) else _one_line(e)
        trial.set_user_attr("error", error)
        raise TrialFailed(error) from None
    except KeyboardInterrupt:  # a signal: Optuna fails the trial and the command stops
        trial.set_user_attr("error", "interrupted")
        raise
    finally:
        reporter.stop()
        trial.set_user_attr("env_steps", reporter.env_steps)
    if reporter.pruned:
        raise optuna.TrialPruned(f"pruned at {reporter.pruned}")
    return setup.aggregate(reporter.returns)


COUNTED = ("COMPLETE", "PRUNED", "RUNNING")  # what --max-total-trials counts, as rl-zoo: never FAIL


def counted_trials(study: optuna.Study) -> int:
    optuna = import_optuna()
    states = tuple(optuna.trial.TrialState[s] for s in COUNTED)
    return len(study.get_trials(deepcopy=False, states=states))


def optimize(
    study: optuna.Study,
    setup: TuneSetup,
    *,
    n_trials: int | None = None,
    max_total_trials: int | None = None,
    on_trial: Callable[[optuna.trial.FrozenTrial], None] | None = None,
) -> None:
    """Runs trials in this process until ``n_trials`` have run, or the study holds
    ``max_total_trials`` counted ones (:data:`COUNTED`, its other processes' included), whichever
    comes first. ``on_trial`` sees each finished trial. A trial that fails is recorded and the next
    one starts; an interrupt fails the trial in flight and propagates."""
    optuna = import_optuna()
    if n_trials is None and max_total_trials is None:
        raise TuneError("give n_trials (trials this process runs) or max_total_trials (the study's total)")
    callbacks = [] if on_trial is None else [lambda _, trial: on_trial(trial)]
    if max_total_trials is not None:
        if counted_trials(study) >= max_total_trials:
            return
        states = tuple(optuna.trial.TrialState[s] for s in COUNTED)
        callbacks.append(optuna.study.MaxTrialsCallback(max_total_trials, states=states))
    if n_trials == 0:
        return
    # gc_after_trial: each trial's compiled programs go with its trainer, not at the end of the study.
    study.optimize(lambda trial: run_trial(setup, trial), n_trials=n_trials, catch=(TrialFailed,),
                   callbacks=callbacks, gc_after_trial=True)


def describe(trial: optuna.trial.FrozenTrial, study: optuna.Study | None = None) -> str:
    """A finished trial in a line, with the best so far when ``study`` is given."""
    line = f"trial {trial.number}: {trial.state.name}"
    if trial.state.name == "PRUNED" and "pruned_at" in trial.user_attrs:
        line += f" at {trial.user_attrs['pruned_at']}"
    elif trial.state.name == "PRUNED" and trial.intermediate_values:  # a study from before multi-seed trials
        line += f" at evaluation {max(trial.intermediate_values) + 1}"
    if trial.value is not None:
        line += f", return {trial.value:.6g}"
    if trial.duration is not None:
        line += f" in {trial.duration.total_seconds():.0f} s"
    returns = ", ".join(f"{r:.6g}" for r in trial.user_attrs.get("returns", []))
    line += f" (seeds {_seeds(trial)}{': returns ' + returns if returns else ''}; " \
            f"{trial.user_attrs.get('env_steps', 0):,} env steps)"
    if "error" in trial.user_attrs:
        line += f": {trial.user_attrs['error']}"
    best = _best(study) if study is not None else None
    if best is not None:
        line += f"; best {best.value:.6g} (trial {best.number})"
    return line


def _seeds(trial: optuna.trial.FrozenTrial) -> str:
    """A trial's seeds as ``"0 1 2"`` (a trial of a study from before multi-seed trials: its one seed)."""
    seeds = trial.user_attrs.get("seeds", [trial.user_attrs["seed"]] if "seed" in trial.user_attrs else [])
    return " ".join(map(str, seeds))


def enqueue_base(study: optuna.Study, setup: TuneSetup) -> bool:
    """Puts the base config's values as the study's next trial (the yardstick the search must beat),
    unless a trial with the same values is already in it; returns whether it was added."""
    params = setup.base_params()
    # A trial that has not started holds its values as Optuna's fixed_params, one that has as params.
    if any(params in (t.params, t.system_attrs.get("fixed_params")) for t in study.get_trials(deepcopy=False)):
        return False
    study.enqueue_trial(params, user_attrs={"yardstick": "the base config's values"})
    return True


def _best(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    try:
        return study.best_trial
    except ValueError:  # no complete trial yet
        return None


# -- the report ------------------------------------------------------------------------------------



def best_preset(study: optuna.Study, setup: TuneSetup) -> PresetFile | None:
    """The best complete trial's config as a preset; None before any trial completes."""
    best = _best(study)
    if best is None:
        return None
    config = setup.trial_config(best.params, 0).replace(
        num_timesteps=best.user_attrs.get("num_timesteps", setup.base.num_timesteps)
    )
    defaults = PPOConfig()
    settings = {k: v for k, v in config.to_dict().items() if v != getattr(defaults, k) and k != "seed"}
    states = [t.state.name for t in study.get_trials(deepcopy=False)]
    budget = (f"{setup.minutes_per_trial:g} minutes" if setup.minutes_per_trial is not None
              else f"{setup.base.num_timesteps:,} env steps")
    each = f"{budget} on each of seeds {_seeds(best)}, {setup.objective} return"
    origin = (
        f"gymjax tune, study {study.study_name!r}: trial {best.number} ({setup.objective} return "
        f"{best.value:.6g}), the best of {states.count('COMPLETE')} complete trials "
        f"({states.count('PRUNED')} pruned, {states.count('FAIL')} failed) of {each}, on "
        f"{socket.gethostname()}"
    )
    return PresetFile(study.study_name, setup.env_id, setup.env_kwargs, settings, origin)


REPORT_FILE = "tune.json"  # which study a report directory holds


def check_out_dir(out: str | os.PathLike, study_name: str, storage: str | None) -> None:
    """Refuses, in one line, a report directory holding another study's report (or an in-memory
    study's, which lives nowhere else): nothing a user saved is replaced by another study's."""
    out = pathlib.Path(out)
    if out.is_symlink():  # the run directory's rule: the report is written where it is named, or nowhere
        raise TuneError(f"--out {out} is a symbolic link; gymjax never writes through one (name its target)")
    if out.exists() and not out.is_dir():
        raise TuneError(f"--out {out}: not a directory")
    marker = out / REPORT_FILE
    if not marker.exists():
        return
    try:
        held = files.loads_json(files.read_text(marker, preset_file.MAX_FILE_BYTES))
    except (OSError, ValueError):
        held = None
    mine = {"study_name": study_name, "storage": masked(storage)}
    if storage is None or not isinstance(held, dict) or {k: held.get(k) for k in mine} != mine:
        shown = "a report"
        if isinstance(held, dict):
            shown = f"study {held.get('study_name')!r} in {held.get('storage')}"
        raise TuneError(f"--out {out} holds the report of {shown}; pick another --out")


def start_report(out: str | os.PathLike, study: optuna.Study, storage: str | None, setup: TuneSetup) -> None:
    """Creates the report directory with what the study tunes (``tune.json``), before any trial."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"study_name": study.study_name, "storage": masked(storage), "setup": setup.to_json()}
    files.replace_text(out / REPORT_FILE, json.dumps(record, indent=2) + "\n")


def write_report(
    out: str | os.PathLike, study: optuna.Study, setup: TuneSetup, plots: bool = True
) -> list[str]:
    """Writes ``trials.csv``, ``best_preset.json`` and, with ``plots``, Optuna's optimization history
    and parameter importances as PNGs; returns a line for each file written or left out."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    trials = study.get_trials(deepcopy=False)
    lines = []
    files.replace_text(out / "trials.csv", trials_csv(trials))
    lines.append(f"trials: {out / 'trials.csv'} ({len(trials)})")
    preset = best_preset(study, setup)
    if preset is None:
        return lines + ["no trial completed: no best preset, no plots"]
    files.replace_text(out / "best_preset.json", json.dumps(preset.to_json(), indent=2) + "\n")
    lines.append(f"best: {out / 'best_preset.json'} ({preset.origin}); train it with "
                 f"gymjax train --preset-file {out / 'best_preset.json'} --run-dir DIR")
    if plots:
        lines += _plots(out, study)
    return lines


def trials_csv(trials: Sequence[optuna.trial.FrozenTrial]) -> str:
    """A row per trial: number, state, value, duration, seeds, env steps, process, error, whether it was
    the yardstick, each seed's return (``return_seed<S>``), then its params."""
    names = list(dict.fromkeys(name for t in trials for name in t.params))
    seeds = list(dict.fromkeys(s for t in trials for s in _seeds(t).split()))
    head = ["number", "state", "value", "duration_s", "seeds", "env_steps", "worker", "error", "yardstick",
            *(f"return_seed{s}" for s in seeds), *names]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(head)
    for t in trials:
        worker = t.user_attrs.get("worker") or {}
        returns = dict(zip(_seeds(t).split(), t.user_attrs.get("returns", [])))
        writer.writerow([
            t.number, t.state.name, "" if t.value is None else t.value,
            "" if t.duration is None else round(t.duration.total_seconds(), 1),
            _seeds(t), t.user_attrs.get("env_steps", ""),
            f"{worker.get('host')}:{worker.get('pid')}" if worker else "", t.user_attrs.get("error", ""),
            "yes" if "yardstick" in t.user_attrs else "",
            *(returns.get(s, "") for s in seeds), *(t.params.get(name, "") for name in names),
        ])
    return buffer.getvalue()


def _seeds_figure(study: optuna.Study) -> Any:
    """Each trial's seeds, a dot each, beside its value: which settings hold on every seed, and
    which win on one (what a single-seed study cannot show)."""
    import matplotlib.pyplot as plt

    trials = [t for t in study.get_trials(deepcopy=False) if t.user_attrs.get("returns")]
    setup = study.user_attrs.get(SETUP_ATTR, {})
    _, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(trials) + 2), 4))
    for t in trials:
        returns = t.user_attrs["returns"]
        ax.scatter([t.number] * len(returns), returns, s=14, color="C0", alpha=0.7, zorder=2)
        if t.value is not None and t.state.name == "COMPLETE":
            ax.scatter([t.number], [t.value], marker="_", s=300, color="C3", zorder=3)
    ax.scatter([], [], s=14, color="C0", label="a seed's last evaluation return")
    ax.scatter([], [], marker="_", s=300, color="C3", label=f"the trial's value ({setup.get('objective', 'mean')})")
    yardstick = [t.number for t in trials if "yardstick" in t.user_attrs]
    for number in yardstick:
        ax.axvline(number, color="gray", lw=0.8, ls=":", label="the base config (yardstick)")
    ax.set_xticks([t.number for t in trials])
    ax.set_xlabel("trial")
    ax.set_ylabel("return")
    ax.set_title(f"{study.study_name}: every seed of every trial that finished its runs", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax  # as Optuna's plots return theirs: _plots takes the figure from it


def _plots(out: pathlib.Path, study: optuna.Study) -> list[str]:
    optuna = import_optuna()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as plots

    complete = len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
    figures = [("optimization_history.png", plots.plot_optimization_history)]
    if any(len(t.user_attrs.get("returns", [])) > 1 for t in study.get_trials(deepcopy=False)):
        figures.append(("seeds.png", _seeds_figure))
    lines = []
    if complete >= 2:
        figures.append(("param_importances.png", plots.plot_param_importances))
    else:
        lines.append("param_importances.png left out: importances need 2 complete trials")
    for name, plot in figures:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            try:
                figure = plot(study).figure
            except (ValueError, RuntimeError) as e:  # e.g. importances of parameters that never varied
                lines.append(f"{name} left out: {_one_line(e)}")
                continue
        try:
            figure.tight_layout()
            with files.replaced(out / name) as tmp:
                figure.savefig(tmp, format="png", dpi=100)
        finally:
            plt.close(figure)
        lines.append(f"plot: {out / name}")
    return lines
