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

The package's rooms: :mod:`.space` (what a trial chooses), :mod:`.study` (what a study is, its
storage and workers), :mod:`.trial` (one trial and the loop that runs them), :mod:`.report` (the files
a study leaves). Optuna is imported by the functions that need it: ``pip install 'gymjax[tune]'``. From Python::

    setup = tune.make_setup("JaxCartPole-v0", PPOConfig.preset("cartpole"), minutes_per_trial=1)
    study = tune.open_study(setup, "sqlite:///tune.db")      # created, or continued
    tune.optimize(study, setup, n_trials=20)
    tune.write_report("runs/tune", study, setup)             # best_preset.json, trials.csv, plots
"""

from gymjax.trainers.ppo.preset_file import PresetFile, PresetFileError, read_preset_file  # noqa: F401
from gymjax.trainers.tune.report import REPORT_FILE, best_preset, check_out_dir, start_report, trials_csv, write_report  # noqa: F401 (the package's names)
from gymjax.trainers.tune.space import (  # noqa: F401 (the package's names)
    CLASSIC_SPACE,
    MUJOCO_SPACE,
    NOT_SEARCHED,
    PARAM_TYPES,
    SPACES,
    Param,
    SearchSpace,
    TuneError,
    from_optuna,
    parse_space,
    read_data_file,
    space_to_json,
    task_kind,
    to_optuna,
)
from gymjax.trainers.tune.study import (  # noqa: F401 (the package's names)
    DEFAULT_OBJECTIVE,
    EXTRA,
    HEARTBEAT_GRACE_S,
    HEARTBEAT_INTERVAL_S,
    OBJECTIVES,
    OPTUNA_TABLES,
    SETUP_ATTR,
    TuneSetup,
    default_study_name,
    fail_dead_trials,
    import_optuna,
    in_memory,
    make_pruner,
    make_sampler,
    make_setup,
    masked,
    open_storage,
    open_study,
    this_process,
)
from gymjax.trainers.tune.trial import (  # noqa: F401 (the package's names)
    COUNTED,
    TrialFailed,
    best_trial,
    counted_trials,
    describe,
    enqueue_base,
    one_line,
    optimize,
    run_trial,
    trial_seeds,
)
