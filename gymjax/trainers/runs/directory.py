"""A training run's directory: what it holds, who writes it, and what it refuses.

``gymjax train`` and :func:`train` keep the same directory, with the same guarantees::

    DIR/run.json            what the run is (RunRecord): env id and options, the full config
    DIR/.lock               held by the process that writes the run
    DIR/checkpoints/<epoch> orbax checkpoints (gymjax.trainers.store.checkpoint)
    DIR/checkpoints/best/   the best evaluated policy, beside the last (gymjax.trainers.store.best)
    DIR/metrics.csv         one row per epoch (or metrics.jsonl)
    DIR/tensorboard/        TensorBoard scalars, with tensorboard=True
    DIR/learning_curve.png  return against env steps and against wall time
    DIR/policy.mp4          the final policy, one episode

``run.json``'s ``trackers`` names the MLflow / W&B runs the run logs to (``loggers=["mlflow"]``,
``gymjax train --logger mlflow``), by id, so that a resume continues the same tracker run:
``{"mlflow": {"run_id", "tracking_uri", "experiment", "claim"}, "wandb": {"run_id", "project", "mode", "claim"}}``.
A recorded MLflow tracking URI is never used to connect: it must equal the one the user gives. Each
tracker run is tied to the directory by ``claim``, which every start renews: a copy of the directory,
or a run.json taken from another run, cannot continue a tracker run that another directory has
continued since (:mod:`gymjax.trainers.runs.trackers` says why and what to do instead).

What it guarantees, for directories people share (downloaded results, a colleague's runs, a
cluster disk):

- **Nothing read from it is executed or used as a path.** ``run.json`` is checked against
  :class:`RunRecord` (known keys, their types and values; the metrics file is one of two fixed
  names) before anything else; a damaged or foreign one is refused in one line naming the field.
- **Nothing outside it is written.** A directory holding a symbolic link is refused (gymjax never
  makes one); every file is opened without following links and replaced by an atomic rename
  (:mod:`gymjax.trainers.store.files`); the two written in place, the locks' notes and ``metrics.jsonl``,
  are refused in one line when they have another hard link, whose file a write would change.
- **One writer at a time**, by an ``fcntl`` lock on ``DIR/.lock`` that dies with its holder.
- **Nothing saved is lost or mixed.** A fresh run refuses a directory holding another run's
  checkpoints or metrics; a start that fails before saving anything leaves no trace, so the
  corrected command runs as if it were the first; a resumed run replays from its checkpoint
  and drops only the metric rows logged after it.
"""


from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import stat
from typing import Any

from gymjax import envs
from gymjax.core import Env
from gymjax.trainers.loggers import read_rows
from gymjax.trainers.ppo import PPOConfig, SavedMeta, budget, presets, resume
from gymjax.trainers.ppo.networks import describe_action_space
from gymjax.trainers.runs import trackers
from gymjax.trainers.store import best, files
from gymjax.trainers.store import checkpoint as ckpt

RUN_FILE = "run.json"
CHECKPOINTS = "checkpoints"
METRICS_FORMATS = ("csv", "jsonl")


class RunDirectoryError(ValueError):
    """A run directory cannot be used as asked; the message names the directory and why."""


# -- run.json ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """``run.json``: everything needed to continue, evaluate or render the run.

    Attributes:
        env: the registered id trained on.
        env_kwargs: its options (JSON values).
        config: the full :class:`PPOConfig`.
        preset: the preset the config started from, if any.
        metrics_format: ``"csv"`` or ``"jsonl"``: the metrics file is ``metrics.<format>``.
        tensorboard: whether TensorBoard scalars are written too.
        video: whether the final policy is rendered to ``policy.mp4``.
        trackers: the tracker runs it logs to, by tracker name (:func:`gymjax.trainers.runs.trackers.check_record`).
        minutes: the wall-clock budget a fresh run's ``config.num_timesteps`` is chosen for
            (:func:`gymjax.trainers.ppo.budget.choose`); the file records the chosen steps, which a
            resume continues and ``num_timesteps`` replays. None: the steps were given.
        deadline_stop: the env step at which that budget's deadline stopped the run, short of the
            chosen steps (the machine ran slower than timed): ``num_timesteps`` replays the run up
            to there, and a resume trains the rest. None: the deadline did not stop it.
    """

    env: str
    env_kwargs: dict[str, Any]
    config: PPOConfig
    preset: str | None = None
    metrics_format: str = "csv"
    tensorboard: bool = False
    video: bool = True
    trackers: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    minutes: float | None = None
    deadline_stop: int | None = None

    def __post_init__(self):
        if not isinstance(self.env, str):  # whether it is registered: make_env says, listing the ids
            raise RunDirectoryError(f"env must be a registered id (a string), got {self.env!r}")
        if not isinstance(self.env_kwargs, dict) or not all(isinstance(k, str) for k in self.env_kwargs):
            raise RunDirectoryError(f"env_kwargs must be an object of option names, got {self.env_kwargs!r}")
        if not isinstance(self.config, PPOConfig):
            raise RunDirectoryError(f"config must be a PPOConfig, got {type(self.config).__name__}")
        if self.preset is not None and (not isinstance(self.preset, str) or self.preset not in presets.names()):
            raise RunDirectoryError(f"preset must be null or one of {presets.names()}, got {self.preset!r}")
        if self.metrics_format not in METRICS_FORMATS:
            raise RunDirectoryError(f"metrics_format must be one of {METRICS_FORMATS}, got {self.metrics_format!r}")
        for name in ("tensorboard", "video"):
            if not isinstance(getattr(self, name), bool):
                raise RunDirectoryError(f"{name} must be true or false, got {getattr(self, name)!r}")
        try:
            trackers.check_record(self.trackers)
            if self.minutes is not None:
                object.__setattr__(self, "minutes", budget.check_minutes(self.minutes))
        except ValueError as e:
            raise RunDirectoryError(str(e)) from None
        stop = self.deadline_stop
        if stop is not None and (self.minutes is None or type(stop) is not int or stop < 1):
            raise RunDirectoryError(f"deadline_stop must be null, or an env step >= 1 with minutes, got {stop!r}")

    def to_json(self) -> dict[str, Any]:
        return {**{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}, "config": self.config.to_dict()}

    @classmethod
    def from_json(cls, data: Any) -> RunRecord:
        """The record in ``data`` (parsed JSON), or :class:`RunDirectoryError` naming the first bad field."""
        if not isinstance(data, dict):
            raise RunDirectoryError(f"expected a JSON object, got {type(data).__name__}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise RunDirectoryError(f"unknown keys {unknown}; known: {sorted(fields)}")
        missing = [n for n, f in fields.items() if f.default is dataclasses.MISSING and n not in data]
        if missing:
            raise RunDirectoryError(f"missing keys {missing}")
        config = data["config"]
        if not isinstance(config, dict):
            raise RunDirectoryError(f"config must be an object of PPOConfig fields, got {config!r}")
        try:
            config = PPOConfig.from_dict(config)
        except (TypeError, ValueError) as e:
            raise RunDirectoryError(f"config: {e}") from None
        return cls(**{**data, "config": config})


# -- the directory ------------------------------------------------------------------------


class RunDirectory:
    """The paths of a run directory and the checks made before anything is written to it."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise RunDirectoryError(f"{self.path} is a file; expected a run directory")
        self.run_file = self.path / RUN_FILE
        self.checkpoints = self.path / CHECKPOINTS

    def metrics(self, record: RunRecord) -> pathlib.Path:
        return self.path / f"metrics.{record.metrics_format}"  # one of two fixed names, never from the file

    def read(self) -> RunRecord:
        """The validated ``run.json``; a missing, damaged or foreign one is refused in one line."""
        if self.run_file.is_symlink() or (self.run_file.exists() and not self.run_file.is_file()):
            raise RunDirectoryError(f"{self.run_file} is not a regular file; gymjax wrote none such")
        if not self.run_file.exists():
            raise RunDirectoryError(f"{self.path} is not a gymjax run directory (no {RUN_FILE}); train into it first")
        try:
            data = files.loads_json(files.read_text(self.run_file, files.JSON_LIMIT))
        except files.UnsafePath as e:  # a FIFO, or a file larger than any run.json
            raise RunDirectoryError(e.strerror) from None
        except (ValueError, UnicodeDecodeError) as e:
            raise RunDirectoryError(
                f"{self.run_file} is not valid JSON ({e}); it records the run's env and config"
            ) from None
        try:
            return RunRecord.from_json(data)
        except RunDirectoryError as e:
            raise RunDirectoryError(f"{self.run_file} is damaged or not gymjax's: {e}") from None

    def recorded_env(self, record: RunRecord) -> Env:
        """The env ``run.json`` records, or one line naming the file when it cannot be built."""
        try:
            return make_env(record.env, record.env_kwargs)
        except RunDirectoryError as e:
            raise RunDirectoryError(f"{self.run_file} is damaged or not gymjax's: {e}") from None

    def check_policy_env(self, record: RunRecord, env: Env, meta: dict[str, Any]) -> None:
        """Refuses, in one line naming both, a checkpoint (its ``meta``, as a reader checked it) whose
        policy cannot act in ``env``, the env ``record`` names: run.json's env or options were
        changed after training."""
        mismatch = resume.env_mismatch(SavedMeta.from_json(meta), env.env_id, env.observation_space.shape[0],
                                       describe_action_space(env.action_space), f"{record.env} {record.env_kwargs}")
        if mismatch:
            raise RunDirectoryError(
                f"{self.run_file} records env {record.env} with options {record.env_kwargs}, but {mismatch}: "
                f"run.json was changed after training; its env and env_kwargs must be the run's"
            )

    def check_links(self) -> None:
        """Refuses a directory holding a symbolic link: a write through one would land outside."""
        try:
            if self.path.is_dir():
                files.refuse_symlinks(self.path)
        except files.UnsafePath as e:
            raise RunDirectoryError(e.strerror) from None

    def check_best(self) -> None:
        """Refuses a ``checkpoints/best`` whose save would fail after an epoch (gymjax.trainers.store.best)."""
        try:
            best.check_layout(self.checkpoints)
        except ckpt.CheckpointError as e:
            raise RunDirectoryError(str(e)) from None

    def write(self, record: RunRecord) -> None:
        files.replace_text(self.run_file, json.dumps(record.to_json(), indent=2) + "\n")

    def logged_rows(self) -> int:
        return sum(len(read_rows(self.path / f"metrics.{fmt}")[1]) for fmt in METRICS_FORMATS)

    def check_fresh(self) -> str | None:
        """Refuses a directory holding another run's data, for a new run; returns what the run will
        replace, to say once it starts."""
        saved = ckpt.step_dirs(self.checkpoints)
        rows = self.logged_rows()
        if self.run_file.exists():
            if saved or rows:
                raise RunDirectoryError(
                    f"{self.path} already holds a run; resume it (gymjax train --resume) or pick another run directory"
                )
            return f"{self.path}: replacing the run recorded in {RUN_FILE}, which never saved a checkpoint or a metric"
        if saved:
            raise RunDirectoryError(
                f"{self.checkpoints} holds checkpoints {saved} without a {RUN_FILE}: another run's; pick another "
                f"run directory"
            )
        if rows:
            raise RunDirectoryError(
                f"{self.path} holds {rows} metric rows without a {RUN_FILE}: another run's; pick another run directory"
            )
        return None

    def lock(self) -> files.DirectoryLock:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            return files.DirectoryLock(self.path, "run directory")
        except files.LockError as e:
            raise RunDirectoryError(str(e)) from None
        except OSError as e:
            raise RunDirectoryError(f"cannot write the run directory {self.path}: {e.strerror or e}") from None

    def remove_unstarted(self, created: bool) -> None:
        """Undoes a start that saved nothing, so the corrected command runs as if it were the first."""
        for name in (RUN_FILE, *(f"metrics.{fmt}" for fmt in METRICS_FORMATS)):
            (self.path / name).unlink(missing_ok=True)
        if created:
            shutil.rmtree(self.path, ignore_errors=True)


def make_env(env_id: str, env_kwargs: dict[str, Any]) -> Env:
    for name, value in env_kwargs.items():
        if isinstance(value, str) and _names_a_special_file(value):
            raise RunDirectoryError(f"cannot make {env_id}: its option {name}={value!r} names a FIFO, socket or "
                                    "device, not a file (reading a FIFO waits for a writer forever)")
    try:
        return envs.make(env_id, **env_kwargs)
    except (KeyError, TypeError, ValueError) as e:
        raise RunDirectoryError(f"cannot make {env_id} with {env_kwargs}: {e}") from None


def _names_a_special_file(value: str) -> bool:
    """Whether ``value`` is the path of something neither a regular file nor a directory: an option
    such as ``xml_file`` read from run.json may name a FIFO, and the env's loader would wait on it."""
    try:
        mode = os.stat(value).st_mode
    except (OSError, ValueError):  # no such path; ValueError: a NUL in it
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


