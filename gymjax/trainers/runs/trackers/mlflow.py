"""The MLflow tracker: a run in a tracking store, and the store a start may use (never one run.json picks)."""

from __future__ import annotations

import os
import pathlib
import time
import urllib.parse
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

from gymjax.trainers.runs.trackers.base import (
    CLAIM_BEFORE_TAG,
    CLAIM_TAG,
    SAFE_FOLDER,
    TRAINING_TAG,
    Tracker,
    TrackerError,
    TrackerOptions,
    check_tracking_uri,
    import_tracker,
    sqlite_path,
)

PROBE_TIMEOUT_S = 5.0  # an HTTP store silent this long is down (MLflow would retry it for minutes)


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
        self.mlflow = import_tracker("mlflow", type(self).__name__)
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
        store = pathlib.Path(sqlite_path(self.tracking_uri)).resolve()
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


def tracking_uri(options: TrackerOptions) -> str:
    """The MLflow store a start uses: ``options``', else ``MLFLOW_TRACKING_URI``, else MLflow's default."""
    mlflow = import_tracker("mlflow", MLflowLogger.__name__)
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
