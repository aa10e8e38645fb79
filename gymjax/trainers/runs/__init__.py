"""The run product: a training run's directory and what it holds beyond the checkpoints.

- :mod:`.directory`: ``run.json``'s schema (:class:`RunRecord`) and the directory's checks
  (:class:`RunDirectory`), what it guarantees to those who share it;
- :mod:`.lifecycle`: a run planned, started, trained and closed in its directory (:func:`train`, what
  ``gymjax train`` runs);
- :mod:`.artifacts`: the learning curve and the video;
- :mod:`.trackers`: MLflow and W&B, a module each.

What any training saves, run directory or not (files never written through a link, the writer
lock, checkpoints, the best snapshot), is :mod:`gymjax.trainers.store`, a layer below the trainer;
this package is the layer above it. From Python::

    from gymjax.trainers import runs
    runs.train("runs/cp", "JaxCartPole-v0", PPOConfig.preset("cartpole"))
    runs.train("runs/cp", resume=True)
"""

from gymjax.trainers.runs.directory import (  # noqa: F401 (the package's names)
    CHECKPOINTS,
    METRICS_FORMATS,
    RUN_FILE,
    RunDirectory,
    RunDirectoryError,
    RunRecord,
    make_env,
)
from gymjax.trainers.runs.lifecycle import (  # noqa: F401
    NO_TRACKER_OPTIONS,
    Plan,
    extended,
    new_record,
    plan_fresh,
    plan_resume,
    run,
    start,
    train,
    video_env,
)
