"""What every tracker shares: :class:`Tracker` (a hook that logs params, metrics by env step and files,
with the claim and the training that tie its run to one run directory), its options and their checks,
and the shape of run.json's ``trackers`` section (:func:`check_record`)."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from gymjax.trainers.hooks import Hook, Metrics, Progress
from gymjax.trainers.stopping import TrainingStopped

NAMES = ("mlflow", "wandb")
TITLES = {"mlflow": "MLflow", "wandb": "W&B"}
CLAIM_TAG = "gymjax.claim"  # the claim of the run directory that continues this tracker run
CLAIM_BEFORE_TAG = "gymjax.claim_before"  # the one it replaces, until run.json holds the new one
TRAINING_TAG = "gymjax.training"  # the run_id of the training (its checkpoints') this tracker run records
DEFAULT_PROJECT = "gymjax"
WANDB_MODES = ("online", "offline")
TRACKING_URIS = "sqlite:///PATH, http(s)://HOST[:PORT], databricks[://PROFILE] or file:///DIR"
DATABASES = ("postgresql", "mysql", "mssql")  # MLflow's other stores: database servers
SAFE_FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # an experiment name usable as a folder name


class TrackerError(RuntimeError):
    """A tracker cannot be used as asked; the message names the tracker and why."""


@dataclasses.dataclass(frozen=True)
class TrackerOptions:
    """How a run directory's trackers are started (a resumed tracker run keeps its own).

    Attributes:
        project: the MLflow experiment / W&B project (default: a resumed run's, else ``gymjax``).
        run_name: the tracker run's name (default: the run directory's name).
        tags: ``KEY=VALUE`` or plain tags (:func:`check_tags`); for MLflow a plain tag gets an empty value.
        mlflow_tracking_uri: MLflow's store (default: ``MLFLOW_TRACKING_URI``, else MLflow's own), one
            of :data:`TRACKING_URIS` (:func:`check_tracking_uri`).
        wandb_mode: ``online`` or ``offline`` (default: a resumed run's recorded mode, else ``WANDB_MODE``,
            else W&B's own); given, it switches a resumed run (``online`` to send it from now on).
        new_runs: trackers whose recorded runs a resume does not continue: it starts new ones (in the
            recorded experiment / project and W&B mode unless told otherwise) and run.json records
            them. A tracker the run did not log to is added.
    """

    project: str | None = None
    run_name: str | None = None
    tags: tuple[str, ...] = ()
    mlflow_tracking_uri: str | None = None
    wandb_mode: str | None = None
    new_runs: tuple[str, ...] = ()

    def __post_init__(self):
        if self.wandb_mode not in (None, *WANDB_MODES):
            raise ValueError(f"wandb_mode must be one of {WANDB_MODES} or None, got {self.wandb_mode!r}")
        if not set(self.new_runs) <= set(NAMES):
            raise ValueError(f"new_runs must name trackers of {NAMES}, got {self.new_runs!r}")
        check_tags(self.tags)
        if self.mlflow_tracking_uri is not None:
            check_tracking_uri(self.mlflow_tracking_uri)


def check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """``tags`` as a tuple; ValueError for a tag with an empty key (``=x``) or a key given twice
    (MLflow would keep one of its values, silently). A tag without ``=`` is a plain tag, W&B's kind."""
    keys = [tag.partition("=")[0] for tag in tags]
    for tag, key in zip(tags, keys):
        if not key.strip():
            raise ValueError(f"tracker tag {tag!r} has an empty key; expected KEY=VALUE or a plain TAG")
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"tracker tags give the key {', '.join(map(repr, repeated))} more than once; give each once")
    return tuple(tags)


def check_tracking_uri(uri: str) -> str:
    """``uri`` when it names an MLflow store gymjax logs to; ValueError names what is accepted.

    A database server's URI (``postgresql://``...) is refused: a client of one writes the artifacts
    to its own disk, where no one else finds them; an MLflow server in front of it keeps both.
    Whether the store answers is checked when the tracker starts (:meth:`MLflowLogger.start`).
    """
    parts = urllib.parse.urlsplit(uri) if isinstance(uri, str) else None
    scheme = parts.scheme if parts else None
    if scheme == "sqlite":
        ok = uri.startswith("sqlite:///") and sqlite_path(uri) not in ("", ":memory:")
    elif scheme in ("http", "https"):
        ok = bool(parts.hostname)
    elif scheme == "file":
        ok = bool(parts.path)
    else:
        ok = uri == "databricks" or scheme == "databricks"
    if not ok:
        server = "; put an MLflow server (mlflow server --backend-store-uri ...) in front of a database" * (
            scheme in DATABASES)
        raise ValueError(f"MLflow tracking URI {uri!r}: expected {TRACKING_URIS}{server}")
    return uri


def sqlite_path(uri: str) -> str:
    """The database file of a ``sqlite:///`` URI (relative to the working directory unless absolute)."""
    return urllib.parse.unquote(uri[len("sqlite:///"):].partition("?")[0])


def import_tracker(module: str, cls: str):
    try:
        return __import__(module)
    except ImportError:
        raise TrackerError(f"{cls} needs {module}: pip install 'gymjax[{module}]'") from None


def require(name: str) -> None:
    """Refuses, in one line naming the extra, a tracker whose library is not installed (without importing it)."""
    import importlib.util

    if name not in NAMES:
        raise TrackerError(f"unknown tracker {name!r}; known: {NAMES}")
    if importlib.util.find_spec(name) is None:
        raise TrackerError(f"the {name} logger needs {name}: pip install 'gymjax[{name}]'")


def _exit_status() -> str:
    """How the run ends, from the exception being handled (``close`` runs in the trainer's ``finally``)."""
    error = sys.exc_info()[1]
    if error is None:
        return "finished"
    return "killed" if isinstance(error, (TrainingStopped, KeyboardInterrupt)) else "failed"


class Tracker(Hook):
    """A tracker run: started (or continued, with ``run_id``) at :meth:`start`, ended at :meth:`close`."""

    name: ClassVar[str]

    def __init__(
        self,
        params: Mapping[str, Any] | None = None,
        *,
        project: str | None = None,
        run_name: str | None = None,
        tags: Sequence[str] = (),
        run_id: str | None = None,
        claim: str | None = None,
        held_claim: str | None = None,
        training: str | None = None,
    ):
        """``claim``: a run directory's new claim (see the module's docstring), written to the run;
        ``held_claim``: the one its run.json holds, which a continued run's must equal (None: a
        run.json from before claims, which continues a run never claimed); ``training``: the
        ``run_id`` of the training the directory continues (its checkpoints'), None before its first
        checkpoint (:meth:`bind_training` gives it then). Both are a run directory's: without a
        claim nothing is checked or tied."""
        self.params = dict(params or {})
        self.project = project or DEFAULT_PROJECT
        self.run_name = run_name
        self.tags = tuple(tags)
        self.run_id = run_id
        self.claim, self.held_claim = claim, held_claim
        self.training, self.training_tied = training, False
        self.claim_before = False  # whether the run holds CLAIM_BEFORE_TAG, for before_training to drop
        self.last_step: int | None = None  # steps up to this one are in the tracker already
        self.started = self.closed = False

    def start(self) -> None:
        """Starts or continues the tracker run and logs the params (once; ``before_training`` calls it too)."""
        if self.started:
            return
        continuing = self.run_id is not None
        self._open()
        self.started = True
        if continuing:
            self.last_step = self._last_step()
        self._log_params()

    def record(self) -> dict[str, str]:
        """What run.json keeps to continue this tracker run: its id, where it lives and its claim."""
        return {**self._where(), **({"claim": self.claim} if self.claim else {})}

    def before_training(self, progress: Progress, resumed: bool) -> None:
        self.start()
        if self.claim_before:
            # run.json holds the new claim by now (it is written before training): the old one no longer
            # continues this run. Until here, a kill leaves a run.json with the old one, which may.
            self._drop_claim_before()
            self.claim_before = False

    def _check_claim(self, current: str | None, before: str | None) -> None:
        """Refuses a run another run directory has continued since (see the module's docstring); the
        run's ``current`` claim and the one ``before`` it, None where it holds none."""
        if not self.claim:
            return  # not a run directory's tracker: the caller chose the run by its id
        held = {current, before} - {None, ""}
        if self.held_claim in held or (self.held_claim is None and not held):
            return
        title = TITLES[self.name]
        raise TrackerError(
            f"{title} run {self.run_id} is continued by another run directory (its {CLAIM_TAG} is {current}, "
            f"run.json's trackers.{self.name}.claim {self.held_claim}): this one is a copy or holds another run's "
            f"run.json, and would mix their points; to log it to a new {title} run, resume with "
            f"--new-tracker-run {self.name}"
        )

    def _check_training(self, held: str | None) -> None:
        """Refuses a run that records another training than the one this directory continues (see the
        module's docstring); ``held``: the run's TRAINING_TAG, None where it records none yet."""
        if not self.claim or not held or held == self.training:
            return
        title = TITLES[self.name]
        ours = f"of training {self.training[:8]}" if self.training else "none (it restarts from scratch)"
        raise TrackerError(
            f"{title} run {self.run_id} records training {held[:8]} (its {TRAINING_TAG}), but this run "
            f"directory's checkpoints are {ours}: its run.json's trackers.{self.name} was taken from another "
            f"run, and continuing would mix their points; to log this run to a new {title} run, resume with "
            f"--new-tracker-run {self.name}"
        )

    def bind_training(self, training: str) -> None:
        """Ties the tracker run to ``training`` (a run_id its checkpoints carry) if not tied yet."""
        if self.claim and self.started and not self.training_tied:
            self.training = training
            self._write_training()
            self.training_tied = True

    def _take_claim(self) -> None:
        """Writes this start's claim to a continued run, keeping the held one valid until run.json has the new."""
        if self.claim:
            self.claim_before = self.held_claim is not None
            self._write_claim(self.held_claim if self.claim_before else None)

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        if self.last_step is not None and progress.env_steps <= self.last_step:
            return  # a replayed epoch the tracker already holds (see the module's docstring)
        values = {"epoch": progress.epoch, **{k: float(v) for k, v in metrics.items() if k != "env_steps"}}
        self._log_metrics(values, progress.env_steps)

    def log_artifact(self, path: str | os.PathLike) -> None:
        """Attaches a file (a plot, a video) to the tracker run."""
        raise NotImplementedError

    def close(self) -> None:
        if self.started and not self.closed:
            self.closed = True
            self._finish(_exit_status())

    # the tracker's side
    def _where(self) -> dict[str, str]:
        raise NotImplementedError

    def _open(self) -> None:
        raise NotImplementedError

    def _last_step(self) -> int | None:
        raise NotImplementedError

    def _log_params(self) -> None:
        raise NotImplementedError

    def _log_metrics(self, values: dict[str, float], step: int) -> None:
        raise NotImplementedError

    def _finish(self, status: str) -> None:
        raise NotImplementedError

    def _write_claim(self, before: str | None) -> None:
        """Writes ``self.claim`` and, if not None, ``before`` (CLAIM_BEFORE_TAG) to the run."""
        raise NotImplementedError

    def _drop_claim_before(self) -> None:
        raise NotImplementedError

    def _write_training(self) -> None:
        """Writes ``self.training`` (TRAINING_TAG) to the run."""
        raise NotImplementedError


MLFLOW_ID = re.compile(r"[0-9a-f]{32}")
CLAIM = re.compile(r"[0-9a-f]{32}")
WANDB_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # also a path component of W&B's offline segments
FIELDS = {"mlflow": ("run_id", "tracking_uri", "experiment"), "wandb": ("run_id", "project", "mode")}
OPTIONAL_FIELDS = {"mlflow": ("claim",), "wandb": ("claim",)}  # absent from a run.json written before claims
RECORDED_PROJECT = {"mlflow": "experiment", "wandb": "project"}


def check_record(trackers: Any) -> None:
    """Checks run.json's ``trackers`` (``{name: {field: string}}``); ValueError names what was expected.

    Nothing in it becomes a path or a choice of tracker: the ids are matched against the trackers'
    own id formats, and a recorded MLflow tracking URI is only compared with the one the user's
    flags or environment give (see :func:`same_store`).
    """
    if not isinstance(trackers, dict):
        raise ValueError(f"trackers must be an object of {NAMES}, got {trackers!r}")
    for name, entry in trackers.items():
        if name not in FIELDS:
            raise ValueError(f"trackers: unknown tracker {name!r}; known: {NAMES}")
        allowed = {*FIELDS[name], *OPTIONAL_FIELDS[name]}
        if not isinstance(entry, dict) or not set(FIELDS[name]) <= set(entry) <= allowed:
            raise ValueError(
                f"trackers.{name} must be an object with keys {list(FIELDS[name])} (and optionally "
                f"{list(OPTIONAL_FIELDS[name])}), got {entry!r}"
            )
        for key, value in entry.items():
            if not isinstance(value, str) or not value or len(value) > 1000 or not value.isprintable():
                raise ValueError(f"trackers.{name}.{key} must be a non-empty printable string, got {value!r}")
        pattern = MLFLOW_ID if name == "mlflow" else WANDB_ID
        if not pattern.fullmatch(entry["run_id"]):
            raise ValueError(f"trackers.{name}.run_id must match {pattern.pattern}, got {entry['run_id']!r}")
        if "claim" in entry and not CLAIM.fullmatch(entry["claim"]):
            raise ValueError(f"trackers.{name}.claim must match {CLAIM.pattern}, got {entry['claim']!r}")
        if name == "wandb" and entry["mode"] not in WANDB_MODES:
            raise ValueError(f"trackers.wandb.mode must be one of {WANDB_MODES}, got {entry['mode']!r}")


