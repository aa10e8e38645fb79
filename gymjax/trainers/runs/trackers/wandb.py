"""The Weights & Biases tracker: an online or offline W&B run."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from gymjax.trainers.runs.trackers.base import (
    CLAIM_BEFORE_TAG,
    CLAIM_TAG,
    TRAINING_TAG,
    WANDB_MODES,
    Tracker,
    TrackerError,
    import_tracker,
)
from gymjax.trainers.runs.trackers.wandb_offline import log_ended, offline_segments, wandb_history, wandb_records

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
        self.wandb = import_tracker("wandb", type(self).__name__)
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
            while not log_ended(log) and time.monotonic() < deadline:
                time.sleep(0.05)


