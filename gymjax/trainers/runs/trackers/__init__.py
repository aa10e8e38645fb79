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

The package's rooms: :mod:`.base` (what every tracker shares and run.json's record of them),
:mod:`.mlflow`, :mod:`.wandb`, and :mod:`.wandb_offline` (a reader of W&B's private offline log
format, fenced and guarded by version); this module makes a run directory's trackers (:func:`make`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from gymjax.trainers.runs.trackers.base import (  # noqa: F401 (the package's names)
    CLAIM,
    CLAIM_BEFORE_TAG,
    CLAIM_TAG,
    DATABASES,
    DEFAULT_PROJECT,
    FIELDS,
    MLFLOW_ID,
    NAMES,
    OPTIONAL_FIELDS,
    RECORDED_PROJECT,
    SAFE_FOLDER,
    TITLES,
    TRACKING_URIS,
    TRAINING_TAG,
    WANDB_ID,
    WANDB_MODES,
    Tracker,
    TrackerError,
    TrackerOptions,
    check_record,
    check_tags,
    check_tracking_uri,
    require,
)
from gymjax.trainers.runs.trackers.mlflow import PROBE_TIMEOUT_S, MLflowLogger, same_store, tracking_uri  # noqa: F401
from gymjax.trainers.runs.trackers.wandb import WandbLogger
from gymjax.trainers.runs.trackers.wandb_offline import offline_segments, wandb_history, wandb_records  # noqa: F401


def check(name: str, options: TrackerOptions, recorded: dict[str, str] | None = None) -> None:
    """Refuses, in one line (TrackerError), a tracker that cannot start as asked, before anything is
    written: its library missing, an MLflow store it cannot use, a recorded run in another store."""
    require(name)
    if name == "mlflow":
        uri = tracking_uri(options)
        if recorded and name not in options.new_runs:
            same_store(recorded, uri)



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


