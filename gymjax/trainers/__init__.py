"""Trainers that run on gymjax envs, in three strata:

- the algorithm's tools: :mod:`.gae` (GAE, standard and Brax's, as one pure function), :mod:`.hooks`
  (the loop's hook points), :mod:`.loggers`, :mod:`.stopping` (Ctrl-C and SIGTERM at an epoch),
  :mod:`.distributed` (several processes), :mod:`.reference` (a policy on Gymnasium's own env);
  and :mod:`.store`, what any training saves (files, the writer lock, checkpoints, the best snapshot);
- the trainer: :mod:`.ppo`, PPO in JAX, whole epochs compiled;
- what is built on the trainer: :mod:`.runs` (the run directory ``gymjax train`` keeps: its record,
  lifecycle, artifacts and trackers) and :mod:`.tune` (``gymjax tune`` on Optuna).
"""

import importlib
import warnings

# Modules that moved into the strata above; `from gymjax.trainers import rundir` keeps working, with
# a DeprecationWarning naming the new place.
MOVED = {
    "rundir": "gymjax.trainers.runs",
    "artifacts": "gymjax.trainers.runs.artifacts",
    "trackers": "gymjax.trainers.runs.trackers",
    "checkpoint": "gymjax.trainers.store.checkpoint",
    "best": "gymjax.trainers.store.best",
    "files": "gymjax.trainers.store.files",
    "quiet": "gymjax.trainers.store.quiet",
}


def __getattr__(name: str):
    if name in MOVED:
        warnings.warn(f"gymjax.trainers.{name} moved to {MOVED[name]}; import it from there",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(MOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
