"""What a study is (:class:`TuneSetup`: env, base config, space, seeds, budget, stored with the study)
and where it lives: Optuna's storage, opened or continued only for the same setup, its sampler and
pruner, and the trials whose process died (each records the host, pid and start time of its process)."""


from __future__ import annotations

import dataclasses
import json
import os
import socket
import statistics
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gymjax import envs, program
from gymjax.core import Env
from gymjax.trainers.ppo import PPOConfig, budget
from gymjax.trainers.ppo.inputs import check as ppo_check
from gymjax.trainers.ppo.preset_file import clip as _clip
from gymjax.trainers.ppo.preset_file import short as _short
from gymjax.trainers.tune.space import (
    SPACES,
    Param,
    SearchSpace,
    TuneError,
    from_optuna,
    parse_space,
    space_to_json,
    task_kind,
    to_optuna,
)

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


def import_optuna():
    """Optuna, or a :class:`TuneError` naming the extra that installs it."""
    try:
        import optuna
    except ImportError:
        raise TuneError(f"tuning needs Optuna: {EXTRA}") from None
    return optuna


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


