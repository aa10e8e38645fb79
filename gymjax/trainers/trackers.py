"""Experiment trackers: hooks that send a run to MLflow or Weights & Biases.

Both are optional (``pip install 'gymjax[mlflow]'``, ``'gymjax[wandb]'``) and imported only when a
tracker is made; ``import gymjax`` and the trainer never import them. A tracker logs the params it
is given (the run's config), every epoch's metrics with the env step as the step, and the files
:meth:`Tracker.log_artifact` is handed (the run directory's learning curve and video)::

    ppo.train(config, "JaxCartPole-v0", hooks=[MLflowLogger(params=config.to_dict(), project="cartpole")])

Continuing a tracker run (``run_id=``, as ``gymjax train --resume`` does with the id run.json
records) never logs a step twice: a resumed trainer replays the epochs after its checkpoint bit
for bit, and a tracker cannot delete what it holds, so the steps up to the last one the tracker
already has are not sent again. That last step, not the checkpoint's, is the right bound: the
epochs between the two were logged before the kill, with the same training and evaluation values
(only wall-time metrics of those epochs keep the first run's values).

A run directory's tracker runs are tied to that directory (:func:`make`): every start of the
directory takes a new random *claim*, which run.json's ``trackers.<name>.claim`` and the tracker run
both hold (MLflow: its tag ``gymjax.claim``; W&B: its config key ``gymjax.claim``). A resume whose
run.json does not hold the run's current claim is refused in one line, before anything is logged:
its directory is a copy (``cp -r``) of one that has continued that tracker run since, or its
run.json was taken from another run. Continuing would mix two runs' points in one tracker run, and
the other run's own next points would never be logged (the tracker already holds their steps). The
first copy to continue keeps the tracker run, as a branch of a git repository keeps its name; the
other starts new ones with ``TrackerOptions(new_runs=...)`` (``gymjax train --resume
--new-tracker-run mlflow wandb``), which run.json then records. A claim names no path, so a moved or
remounted run directory continues its run. A run.json written before claims continues its run
unchecked unless that run has been claimed since. An offline W&B run's claim is read from its
offline segments under ``WANDB_DIR``: copies that log offline into different ``WANDB_DIR`` are
seen by no one until ``wandb sync`` merges them.

A claim tells a copy from a move, not one training from another: a run.json whose ``trackers``
section was copied from run r into an independent run y holds r's current claim. So a tracker run
is also tied to the *training* it records, the ``run_id`` that training's checkpoints carry (MLflow:
tag ``gymjax.training``; W&B: config key ``gymjax.training``), written as soon as the training has
one (a resume's checkpoint, else its first checkpoint). A resume whose checkpoints are of another
training, or that has none while the tracker run records one, is refused in one line before
anything is logged, with the same way out (``--new-tracker-run``). A copy of the directory carries
the same training, and stays the claim's to tell apart.

Where MLflow keeps artifacts is the store's choice, except for a ``sqlite:///`` store, whose
default (``./mlruns`` of whichever directory the process runs in) would scatter a run's files: an
experiment gymjax creates there keeps them beside the store, in ``<store file>-artifacts/<experiment>/``
(an experiment that exists already keeps its own location). A file store keeps them inside itself,
an MLflow server where it is configured to.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import pathlib
import re
import shutil
import struct
import sys
import time
import urllib.parse
import uuid
from collections.abc import Iterator, Mapping, Sequence
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
PROBE_TIMEOUT_S = 5.0  # an HTTP store silent this long is down (MLflow would retry it for minutes)
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
        ok = uri.startswith("sqlite:///") and _sqlite_path(uri) not in ("", ":memory:")
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


def _sqlite_path(uri: str) -> str:
    """The database file of a ``sqlite:///`` URI (relative to the working directory unless absolute)."""
    return urllib.parse.unquote(uri[len("sqlite:///"):].partition("?")[0])


def _import(module: str, cls: str):
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


# -- MLflow ---------------------------------------------------------------------------------


class MLflowLogger(Tracker):
    """A run in MLflow's tracking store ``tracking_uri`` (default: ``MLFLOW_TRACKING_URI``, else
    MLflow's own, ``sqlite:///mlflow.db`` in the working directory), in experiment ``project``.

    Offline, a local store works: ``sqlite:///path/mlflow.db`` (what ``gymjax[mlflow]`` installs
    SQLAlchemy for); MLflow's ``file:`` store is in maintenance mode and needs
    ``MLFLOW_ALLOW_FILE_STORE=true``. Which stores are accepted: :func:`check_tracking_uri`; where
    artifacts go: the module's docstring. An HTTP store is asked once, briefly, whether it answers,
    when the run starts.
    """

    name = "mlflow"
    STATUS: ClassVar[dict[str, str]] = {"finished": "FINISHED", "killed": "KILLED", "failed": "FAILED"}

    def __init__(self, params: Mapping[str, Any] | None = None, *, tracking_uri: str | None = None, **kwargs: Any):
        super().__init__(params, **kwargs)
        self.mlflow = _import("mlflow", type(self).__name__)
        from mlflow.tracking import MlflowClient

        self.tracking_uri = tracking_uri or self.mlflow.get_tracking_uri()
        try:
            check_tracking_uri(self.tracking_uri)
        except ValueError as e:
            raise TrackerError(str(e)) from None
        self.client = MlflowClient(tracking_uri=self.tracking_uri)

    def _where(self) -> dict[str, str]:
        return {"run_id": self.run_id, "tracking_uri": self.tracking_uri, "experiment": self.project}

    def _open(self) -> None:
        if urllib.parse.urlsplit(self.tracking_uri).scheme in ("http", "https"):
            _probe(self.tracking_uri)
        try:
            if self.run_id is not None:
                run = self.client.get_run(self.run_id)
                self._check_claim(run.data.tags.get(CLAIM_TAG), run.data.tags.get(CLAIM_BEFORE_TAG))
                self._check_training(run.data.tags.get(TRAINING_TAG))
                self.project = self.client.get_experiment(run.info.experiment_id).name
                self.client.update_run(self.run_id, status="RUNNING")
                self._take_claim()
                self.training_tied = bool(self.claim and run.data.tags.get(TRAINING_TAG))
                if self.claim and self.training and not self.training_tied:
                    self._write_training()
                    self.training_tied = True
                return
            experiment = self.client.get_experiment_by_name(self.project)
            experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(
                self.project, artifact_location=self._artifact_location())
            tags = dict(tag.partition("=")[::2] for tag in self.tags)
            if self.claim:
                tags[CLAIM_TAG] = self.claim
                if self.training:
                    tags[TRAINING_TAG] = self.training
                    self.training_tied = True
            run = self.client.create_run(experiment_id, run_name=self.run_name, tags=tags)
        except self.mlflow.exceptions.MlflowException as e:
            what = f"run {self.run_id}" if self.run_id else f"a run in experiment {self.project!r}"
            raise TrackerError(f"MLflow at {self.tracking_uri}: cannot open {what}: {e.message}") from None
        self.run_id = run.info.run_id

    def _artifact_location(self) -> str | None:
        """Where a new experiment keeps its runs' files: beside a sqlite store (see the module's
        docstring); None, the store's own choice, elsewhere."""
        if not self.tracking_uri.startswith("sqlite:"):
            return None
        store = pathlib.Path(_sqlite_path(self.tracking_uri)).resolve()
        folder = self.project if SAFE_FOLDER.fullmatch(self.project) else uuid.uuid4().hex
        return (store.with_name(f"{store.name}-artifacts") / folder).as_uri()

    def _write_claim(self, before: str | None) -> None:
        if before is not None:
            self.client.set_tag(self.run_id, CLAIM_BEFORE_TAG, before)
        self.client.set_tag(self.run_id, CLAIM_TAG, self.claim)

    def _drop_claim_before(self) -> None:
        self.client.delete_tag(self.run_id, CLAIM_BEFORE_TAG)

    def _write_training(self) -> None:
        self.client.set_tag(self.run_id, TRAINING_TAG, self.training)

    def _last_step(self) -> int | None:
        keys = self.client.get_run(self.run_id).data.metrics
        steps = [m.step for key in keys for m in self.client.get_metric_history(self.run_id, key)]
        return max(steps, default=None)

    def _log_params(self) -> None:
        from mlflow.entities import Param

        held = self.client.get_run(self.run_id).data.params
        params = {k: str(v) for k, v in self.params.items()}
        changed = sorted(k for k in params.keys() & held.keys() if params[k] != held[k])
        if changed:  # MLflow's params never change; a resume that trains longer says so here
            print(f"MLflow run {self.run_id} keeps its params {changed}; this start uses "
                  f"{', '.join(f'{k}={params[k]}' for k in changed)}")
        new = [Param(k, v) for k, v in params.items() if k not in held]
        for i in range(0, len(new), 100):  # MLflow takes at most 100 params a batch
            self.client.log_batch(self.run_id, params=new[i:i + 100])

    def _log_metrics(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, now, step) for k, v in values.items()])

    def log_artifact(self, path: str | os.PathLike) -> None:
        self.client.log_artifact(self.run_id, str(path))

    def _finish(self, status: str) -> None:
        self.client.set_terminated(self.run_id, self.STATUS[status])


def _probe(uri: str) -> None:
    """Refuses an HTTP store that does not answer within PROBE_TIMEOUT_S: MLflow's client retries
    one for minutes, silently (its MLFLOW_HTTP_REQUEST_* settings are the user's, not gymjax's)."""
    import http.client
    import ssl
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=PROBE_TIMEOUT_S).close()
    except urllib.error.HTTPError:
        return  # it answers; a 401 or 404 (a proxy, a path prefix) is MLflow's to report
    except (OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", None) or e
        if isinstance(reason, ssl.SSLError):
            return  # it answers; certificates are MLflow's settings (MLFLOW_TRACKING_SERVER_CERT_PATH)
        raise TrackerError(
            f"MLflow at {uri} does not answer ({reason}) within {PROBE_TIMEOUT_S:g} s; start its server or pass "
            f"another --mlflow-tracking-uri"
        ) from None


# -- Weights & Biases ---------------------------------------------------------------------------


class WandbLogger(Tracker):
    """A W&B run in ``project``; ``mode`` ``online`` or ``offline`` (default: ``WANDB_MODE``, else
    W&B's own). Offline runs are written under ``WANDB_DIR`` (default ``./wandb``) for ``wandb sync``.

    Artifacts are the run's files (its Files tab), copied into the run's directory.
    """

    name = "wandb"
    EXIT_CODE: ClassVar[dict[str, int]] = {"finished": 0, "killed": 130, "failed": 1}

    def __init__(self, params: Mapping[str, Any] | None = None, *, mode: str | None = None, **kwargs: Any):
        super().__init__(params, **kwargs)
        if mode not in (None, *WANDB_MODES):
            raise ValueError(f"mode must be one of {WANDB_MODES} or None, got {mode!r}")
        self.wandb = _import("wandb", type(self).__name__)
        self.mode = mode
        self.run = None

    def _where(self) -> dict[str, str]:
        return {"run_id": self.run_id, "project": self.project, "mode": self.run.settings.mode}

    def _open(self) -> None:
        config = self._held_config() if self.run_id is not None and self.claim else None  # before wandb.init resumes it
        if config is not None:
            self._check_claim(config.get(CLAIM_TAG), config.get(CLAIM_BEFORE_TAG))
            self._check_training(config.get(TRAINING_TAG))
        try:
            self.run = self.wandb.init(
                project=self.project, name=self.run_name, tags=list(self.tags) or None, config=self.params,
                id=self.run_id, resume="allow" if self.run_id else None, mode=self.mode, reinit="create_new",
            )
        except (self.wandb.Error, ValueError) as e:
            raise TrackerError(f"W&B: cannot open a run in project {self.project!r}: {e}") from None
        self.run_id = self.run.id
        self._take_claim()
        self.training_tied = bool(self.claim and (config or {}).get(TRAINING_TAG))
        if self.claim and self.training and not self.training_tied:
            self._write_training()
            self.training_tied = True

    def _held_config(self) -> dict[str, Any] | None:
        """Run ``run_id``'s config as W&B holds it: from the server, or offline from the run's
        earlier offline segments (the ones under this process's ``WANDB_DIR``); None when disabled."""
        settings = self.wandb.setup().settings
        mode = self.mode or settings.mode
        if mode == "disabled":
            return None  # nothing is logged anywhere
        if mode not in ("offline", "dryrun"):
            try:
                return dict(self.wandb.Api().run(f"{self.project}/{self.run_id}").config)
            except (self.wandb.Error, ValueError) as e:
                raise TrackerError(f"W&B: cannot read run {self.run_id} of project {self.project!r}: {e}") from None
        config: dict[str, Any] = {}
        for path in offline_segments(settings.wandb_dir, self.run_id):
            for record in wandb_records(path):
                kind = record.WhichOneof("record_type")
                items = record.run.config.update if kind == "run" else record.config.update if kind == "config" else ()
                config.update((item.key, json.loads(item.value_json)) for item in items)
        return config

    def _write_claim(self, before: str | None) -> None:
        self.run.config.update({CLAIM_TAG: self.claim, CLAIM_BEFORE_TAG: before}, allow_val_change=True)

    def _drop_claim_before(self) -> None:
        self.run.config.update({CLAIM_BEFORE_TAG: None}, allow_val_change=True)

    def _write_training(self) -> None:
        self.run.config.update({TRAINING_TAG: self.training}, allow_val_change=True)

    def _last_step(self) -> int | None:
        if self.run.settings._offline:  # W&B cannot say offline: read this run's earlier offline segments
            here = pathlib.Path(self.run.settings.sync_dir).resolve()
            earlier = [
                p for p in offline_segments(self.run.settings.wandb_dir, self.run_id) if p.parent.resolve() != here
            ]
            return max((step for path in earlier for step, _ in wandb_history(path)), default=None)
        return self.run.starting_step - 1 if self.run.starting_step else None

    def _log_params(self) -> None:
        self.run.config.update(self.params, allow_val_change=True)  # a resume may train longer

    def _log_metrics(self, values: dict[str, float], step: int) -> None:
        self.run.log(values, step=step)

    def log_artifact(self, path: str | os.PathLike) -> None:
        # A copy, not W&B's default symbolic link to the run directory's file, which may be rewritten.
        copy = pathlib.Path(self.run.dir) / pathlib.Path(path).name
        shutil.copyfile(path, copy)
        self.run.save(str(copy), base_path=self.run.dir, policy="now")

    def _finish(self, status: str) -> None:
        offline, log = self.run.settings._offline, pathlib.Path(self.run.settings.sync_dir) / f"run-{self.run_id}.wandb"
        self.run.finish(exit_code=self.EXIT_CODE[status])
        if offline:  # W&B may write the log's end after finish() returns; a resume in this process reads it
            deadline = time.monotonic() + 10
            while not _ends(log) and time.monotonic() < deadline:
                time.sleep(0.05)


def _ends(log: pathlib.Path) -> bool:
    """Whether a ``.wandb`` log holds its run's exit record."""
    try:
        return any(record.WhichOneof("record_type") == "exit" for record in wandb_records(log))
    except (OSError, ValueError):
        return False


def offline_segments(wandb_dir: str | os.PathLike, run_id: str) -> list[pathlib.Path]:
    """The ``.wandb`` files of run ``run_id``'s offline segments under ``wandb_dir`` (one a start), oldest first."""
    if not WANDB_ID.fullmatch(run_id):  # a validated id has no glob or path characters
        raise ValueError(f"not a W&B run id: {run_id!r}")
    return sorted(pathlib.Path(p) for p in glob.glob(os.path.join(glob.escape(str(wandb_dir)),
                                                                  f"offline-run-*-{run_id}", f"run-{run_id}.wandb")))


def wandb_records(path: str | os.PathLike) -> Iterator[Any]:
    """The records (``wandb_internal_pb2.Record``) of a ``.wandb`` file, which W&B 0.31 has no Python reader for.

    Its framing is LevelDB's log: a 7-byte header (``:W&B``, magic, version), then 32 KiB blocks of
    chunks, each ``crc32c:u32 length:u16 type:u8`` (1 whole, 2 first, 3 middle, 4 last) and its
    bytes. A torn tail (a killed writer) ends the iteration.
    """
    from wandb.proto import wandb_internal_pb2

    data = pathlib.Path(path).read_bytes()
    if data[:4] != b":W&B":
        raise ValueError(f"{path} is not a W&B transaction log")
    pos, pending, block = 7, b"", 32768
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # too little room left in the block for a header: padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0 or len(chunk) < length:
            return
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def wandb_history(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(step, {metric: value})`` of each history row in a ``.wandb`` file."""
    for record in wandb_records(path):
        if record.WhichOneof("record_type") == "history":
            items = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            yield record.history.step.num, {k: v for k, v in items.items() if not k.startswith("_")}


# -- run.json's record of them ---------------------------------------------------------------

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


def check(name: str, options: TrackerOptions, recorded: dict[str, str] | None = None) -> None:
    """Refuses, in one line (TrackerError), a tracker that cannot start as asked, before anything is
    written: its library missing, an MLflow store it cannot use, a recorded run in another store."""
    require(name)
    if name == "mlflow":
        uri = tracking_uri(options)
        if recorded and name not in options.new_runs:
            same_store(recorded, uri)


def tracking_uri(options: TrackerOptions) -> str:
    """The MLflow store a start uses: ``options``', else ``MLFLOW_TRACKING_URI``, else MLflow's default."""
    mlflow = _import("mlflow", MLflowLogger.__name__)
    uri = options.mlflow_tracking_uri or mlflow.get_tracking_uri()
    try:
        check_tracking_uri(uri)
    except ValueError as e:
        source = "MLFLOW_TRACKING_URI" if os.environ.get("MLFLOW_TRACKING_URI") else "MLflow's default"
        raise TrackerError(f"{e} (from {source}; --mlflow-tracking-uri chooses another)") from None
    if uri.startswith("file:"):
        from mlflow.environment_variables import MLFLOW_ALLOW_FILE_STORE

        if not MLFLOW_ALLOW_FILE_STORE.get():
            raise TrackerError(
                f"MLflow tracking URI {uri!r}: MLflow's file store is in maintenance mode and refuses to open "
                f"unless MLFLOW_ALLOW_FILE_STORE=true; use a sqlite:///PATH store (`mlflow migrate-filestore` "
                f"converts one)"
            )
    return uri


def make(
    name: str, params: Mapping[str, Any], options: TrackerOptions, recorded: dict[str, str] | None,
    training: str | None = None,
) -> Tracker:
    """The tracker ``name`` for a run directory: a new tracker run, or the ``recorded`` one continued
    (unless ``options.new_runs`` names it). Its run is claimed by the directory and tied to
    ``training``, the run_id of the directory's checkpoints (None before any; see the module's docstring)."""
    check(name, options, recorded)  # before the client, which creates a sqlite store: a refusal leaves none behind
    continued = recorded if name not in options.new_runs else None
    kwargs = {"run_name": options.run_name, "tags": options.tags, "claim": uuid.uuid4().hex,
              "held_claim": continued.get("claim") if continued else None, "training": training}
    # A new run stays in the recorded experiment / project unless told otherwise.
    project = (recorded or {}).get(RECORDED_PROJECT[name]) if continued or not options.project else options.project
    if name == "mlflow":
        tracker: Tracker = MLflowLogger(params, tracking_uri=tracking_uri(options), project=project, **kwargs)
    else:
        # A resume keeps the recorded mode: an offline run must not go online because a flag was not repeated.
        tracker = WandbLogger(params, mode=options.wandb_mode or (recorded or {}).get("mode"), project=project,
                              **kwargs)
    tracker.run_id = continued["run_id"] if continued else None
    return tracker


def same_store(recorded: dict[str, str], tracking_uri: str) -> None:
    """Refuses to continue the recorded run in another store than the one the user chose: a run.json
    never picks the store (a ``sqlite:``/``file:`` URI is a path MLflow writes to)."""
    if recorded["tracking_uri"] != tracking_uri:
        raise TrackerError(
            f"run.json records MLflow run {recorded['run_id']} at {recorded['tracking_uri']}, but this start's "
            f"tracking URI is {tracking_uri}; to continue that run pass --mlflow-tracking-uri "
            f"{recorded['tracking_uri']} (or set MLFLOW_TRACKING_URI) if you trust it, or --new-tracker-run mlflow "
            f"for a new MLflow run in this start's store"
        )
