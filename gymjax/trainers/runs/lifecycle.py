"""A run's lifecycle in its directory: planned (every check made before anything is written), started
(the lock taken, ``run.json`` written), trained by :func:`gymjax.trainers.ppo.train` with the
directory's loggers, trackers and best snapshot, and closed (the learning curve and the video within
the budget). :func:`train` is what ``gymjax train`` runs, from Python."""


from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from gymjax.core import Env
from gymjax.trainers import distributed
from gymjax.trainers.hooks import Hook
from gymjax.trainers.loggers import ConsoleLogger, CSVLogger, JSONLLogger, TensorBoardLogger, drop_rows_after
from gymjax.trainers.ppo import PPOConfig, SavedMeta, budget, presets
from gymjax.trainers.ppo import train as ppo_train
from gymjax.trainers.ppo.inputs import check as ppo_check
from gymjax.trainers.ppo.train import time_budget
from gymjax.trainers.runs import artifacts, trackers
from gymjax.trainers.runs.directory import RUN_FILE, RunDirectory, RunDirectoryError, RunRecord, make_env
from gymjax.trainers.stopping import TrainingStopped
from gymjax.trainers.store import best, files
from gymjax.trainers.store import checkpoint as ckpt
from gymjax.wrappers.training import single_env_stack

NO_TRACKER_OPTIONS = trackers.TrackerOptions()  # the trackers' own defaults
# -- a run: planned, then trained ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a start will do, decided before anything is written."""

    directory: RunDirectory
    record: RunRecord
    env: Env
    restore: pathlib.Path | None  # the checkpoints to resume from
    resumed: bool
    video: bool  # this start's choice; a resume may turn off the recorded one
    tensorboard: bool  # a resume may turn it on
    tracker_names: tuple[str, ...] = ()  # the recorded ones, and any this start adds
    tracker_options: trackers.TrackerOptions = NO_TRACKER_OPTIONS
    notes: tuple[str, ...] = ()  # what the start will do, said once every check has passed


def plan_fresh(
    path: str | os.PathLike, record: RunRecord, loggers: Sequence[str] = (),
    tracker_options: trackers.TrackerOptions = NO_TRACKER_OPTIONS,
) -> Plan:
    """A new run; ``loggers``: trackers (``"mlflow"``, ``"wandb"``) to log it to too."""
    directory = RunDirectory(path)
    directory.check_links()
    directory.check_best()
    replaced = directory.check_fresh()
    env = make_env(record.env, record.env_kwargs)
    _check_trainable(record, env)
    return Plan(directory, record, env, None, resumed=False, video=record.video, tensorboard=record.tensorboard,
                tracker_names=_required(loggers, tracker_options), tracker_options=tracker_options,
                notes=(replaced,) if replaced else ())


def _check_trainable(record: RunRecord, env: Env) -> None:
    """The config checked with the env as the trainer will check it: a batch too large for memory,
    say, is refused in one line before anything is written."""
    try:
        ppo_check(record.config, env)
    except (TypeError, ValueError) as e:
        raise RunDirectoryError(f"cannot train {record.env}: {e}") from None


def _required(
    names: Sequence[str], options: trackers.TrackerOptions, recorded: dict[str, dict[str, str]] | None = None,
) -> tuple[str, ...]:
    """The trackers named, each once, refused in one line before anything is written when they cannot
    start as ``options`` say (:func:`gymjax.trainers.runs.trackers.check`)."""
    names = tuple(dict.fromkeys(names))
    for name in names:
        try:
            trackers.check(name, options, (recorded or {}).get(name))
        except trackers.TrackerError as e:
            raise RunDirectoryError(str(e)) from None
    return names


def plan_resume(
    path: str | os.PathLike, num_timesteps: int | None = None, *, video: bool = True, tensorboard: bool = False,
    loggers: Sequence[str] = (), tracker_options: trackers.TrackerOptions = NO_TRACKER_OPTIONS,
) -> Plan:
    """The recorded run; trained to ``num_timesteps`` when that is more than it was set to. ``video=False``
    skips the recorded video this once; ``tensorboard=True`` adds TensorBoard scalars; the recorded
    tracker runs are continued, and ``loggers`` may add trackers (their runs start at this resume)."""
    directory = RunDirectory(path)
    directory.check_links()
    record = directory.read()
    directory.check_best()
    restore = directory.checkpoints if ckpt.step_dirs(directory.checkpoints) else None
    notes = [] if restore else [f"{directory.path} has no checkpoint yet: starting its recorded run from scratch"]
    if num_timesteps is not None and num_timesteps != record.config.num_timesteps:
        done = _saved_env_steps(directory.checkpoints) if restore else 0
        config, note = extended(record.config, num_timesteps, done)
        record = dataclasses.replace(record, config=config)
        notes.append(note)
    env = directory.recorded_env(record)
    _check_trainable(record, env)
    return Plan(directory, record, env, restore, True, record.video and video, record.tensorboard or tensorboard,
                _required([*record.trackers, *loggers, *tracker_options.new_runs], tracker_options, record.trackers),
                tracker_options, tuple(notes))


def _saved_env_steps(checkpoints: pathlib.Path) -> int:
    """The env steps of the newest checkpoint, its metadata checked as every reader checks it."""
    try:
        return SavedMeta.from_json(ckpt.read_meta(checkpoints)).env_steps
    except ckpt.CheckpointError as e:
        raise RunDirectoryError(f"{checkpoints}: {e}") from None


def extended(config: PPOConfig, num_timesteps: int, done: int) -> tuple[PPOConfig, str]:
    """``config`` trained to ``num_timesteps`` (the run has made ``done`` env steps): epochs of the same
    size, as many as the new budget needs; and the line that says so."""
    try:
        longer = config.replace(num_timesteps=num_timesteps, epoch_iterations=config.iterations_per_epoch)
    except ValueError as e:
        raise RunDirectoryError(f"invalid num_timesteps: {e}") from None
    if longer.total_env_steps <= done:
        raise RunDirectoryError(
            f"num_timesteps {num_timesteps:,} is not past the run's {done:,} env steps; pass a larger budget to "
            f"train longer"
        )
    schedule = ""
    if config.lr_schedule == "linear":
        schedule = (
            "; the linear learning-rate schedule is stretched to end at the new budget, so the learning rate "
            f"steps up at env step {done:,} and then decays to 0 at {longer.total_env_steps:,}"
        )
    return longer, (
        f"training to {longer.total_env_steps:,} env steps (was {config.total_env_steps:,}): "
        f"{longer.num_epochs} epochs of {longer.env_steps_per_epoch:,} steps in all{schedule}"
    )


def start(plan_fn: Callable[[], Plan]) -> tuple[Plan, files.DirectoryLock | None, bool]:
    """Plans in every process (read-only) and locks in process 0; if any refuses, all stop, with
    nothing written. Returns the plan, the lock (process 0's) and whether the directory is new."""
    refused, plan, lock, created = None, None, None, False
    try:
        plan = plan_fn()
        if distributed.is_primary():
            created = not plan.directory.path.exists()
            lock = plan.directory.lock()
            if not plan.resumed:  # again, under the lock: a run may have finished there since the plan
                plan.directory.check_fresh()
    except (RunDirectoryError, ckpt.CheckpointError) as e:
        refused = e
    if distributed.any_process(refused is not None):  # a second writer stops every process, not one
        if lock:
            lock.release()
            if created:
                shutil.rmtree(plan.directory.path, ignore_errors=True)
            lock = None
        raise refused or RunDirectoryError("another process refused to start (its output says why)")
    return plan, lock, created


def run(
    plan_fn: Callable[[], Plan],
    *,
    hooks: Sequence[Hook] = (),
    console: bool = True,
    progress_bar: bool = True,
    started_at: float | None = None,
) -> tuple[Callable[..., Any], Any, dict[str, Any]]:
    """Starts the planned run (see :func:`start`), trains it, and writes the plot and the video.

    A fresh run with a time budget (``record.minutes``) first chooses its steps, counting from
    ``started_at`` (a ``time.time()``; None: now), and records them before training; and where
    the deadline stops it short of them, records that too.
    """
    started_at = time.time() if started_at is None else started_at
    plan, lock, created = start(plan_fn)
    directory, record = plan.directory, plan.record
    primary = distributed.is_primary()
    started: list[trackers.Tracker] = []
    deadline = None
    try:
        if record.minutes is not None and not plan.resumed:
            deadline = _time_budget(plan, started_at, progress_bar)
            record = dataclasses.replace(record, config=deadline.config)
            plan = dataclasses.replace(plan, record=record)
        loggers: list[Hook] = []
        starting = _Starting(plan, started)
        if deadline is not None and primary:
            deadline.on_grow = starting.grown  # a plan grown mid-run is in run.json before it trains
        if primary:  # process 0 alone writes files other than checkpoint shards
            # KeepBest first: it refuses another run's best before _Starting starts the trackers and
            # writes run.json. The trackers stay open past training, for the plot and the video.
            loggers = [best.KeepBest(directory.checkpoints), starting, *_loggers(plan, console), _Tracking(started)]
        try:
            make_policy, params, metrics = ppo_train(
                record.config, plan.env, hooks=[*loggers, *hooks], checkpoint_dir=directory.checkpoints,
                restore_checkpoint_path=plan.restore, progress_bar=progress_bar, budget=deadline,
            )
        except TrainingStopped:
            if primary:
                _attach(started, _plot(plan))
            raise
        if primary:
            if deadline is not None and deadline.stopped_at is not None:
                directory.write(dataclasses.replace(starting.record, deadline_stop=deadline.stopped_at))
            _attach(started, _plot(plan))
            if plan.video and "rgb_array" not in plan.env.metadata.get("render_modes", []):
                print(f"video: none, {plan.env!r} does not render")  # a gymnax env, say
            elif plan.video:
                until = None if deadline is None else started_at + deadline.budget_s
                _attach(started, _video(plan, make_policy, params, until))
            if deadline is not None and deadline.closing_s:  # the command's end, the plot and video done
                tqdm.write(deadline.outcome(), file=sys.stderr)
        return make_policy, params, metrics
    except BaseException:
        if primary and not plan.resumed and not ckpt.step_dirs(directory.checkpoints) and not directory.logged_rows():
            directory.remove_unstarted(created)
        raise
    finally:
        for tracker in started:
            tracker.close()  # finished, killed or failed: as the exception being handled says
        if lock:
            lock.release()


def _time_budget(plan: Plan, started_at: float, say: bool) -> budget.Deadline:
    """The deadline of the planned run, ``plan.record.minutes`` after ``started_at``, its steps chosen."""
    try:
        return time_budget(plan.record.config, plan.env, minutes=plan.record.minutes, started_at=started_at, say=say,
                           closing=_closing(plan))
    except ValueError as e:
        raise RunDirectoryError(str(e)) from None


class _Starting(Hook):
    """Starts the trackers (appending each to ``started``), writes run.json with their runs and says
    the plan's notes, when training is sure to start: the trainer calls ``before_training`` once the
    checkpoint, the config's changes and the hooks' states have passed its checks. A start refused
    before then leaves run.json as it was, byte for byte, and the tracker runs it names untouched
    (not reopened, not marked failed), and has said nothing it would not do."""

    def __init__(self, plan: Plan, started: list[trackers.Tracker]):
        self.plan, self.started, self.record = plan, started, plan.record

    def grown(self, config: PPOConfig) -> None:
        """A time budget's plan grown mid-run: recorded, so a resume continues the grown run."""
        self.record = dataclasses.replace(self.record, config=config)
        self.plan.directory.write(self.record)

    def before_training(self, progress, resumed):
        plan = self.plan
        _start_trackers(plan, self.started)
        self.record = dataclasses.replace(plan.record, trackers={t.name: t.record() for t in self.started})
        if plan.resumed and plan.restore is None:
            drop_rows_after(plan.directory.metrics(plan.record), 0)  # logged before a kill that came before any save
        plan.directory.write(self.record)
        for note in plan.notes:
            print(note)


class _Tracking(Hook):
    """The started trackers for the trainer, which closes its hooks when training ends; the run
    directory closes the trackers itself, after attaching the plot and the video."""

    def __init__(self, started: list[trackers.Tracker]):
        self.started = started  # filled by _Starting, which runs first

    def before_training(self, progress, resumed):
        for tracker in self.started:
            tracker.before_training(progress, resumed)

    def after_epoch(self, progress, metrics):
        for tracker in self.started:
            tracker.after_epoch(progress, metrics)

    def after_checkpoint(self, progress, path):
        # A training has its run_id on disk from its first checkpoint: from then on its tracker runs
        # record which training they hold (gymjax.trainers.runs.trackers), so another cannot continue them.
        untied = [t for t in self.started if t.claim and not t.training_tied]
        if untied:
            training = ckpt.read_meta(pathlib.Path(path).parent).get("run_id")
            for tracker in untied if training else ():
                tracker.bind_training(training)


def _start_trackers(plan: Plan, started: list[trackers.Tracker]) -> None:
    """Starts (or continues the recorded run of) each tracker, appending to ``started`` as it goes,
    so that the ones already open are closed if a later one fails. Each is tied to the training the
    directory continues: the run_id of the checkpoint the trainer restored (none in a fresh run)."""
    record = plan.record
    training = ckpt.read_meta(plan.restore).get("run_id") if plan.restore else None
    params = {"env": record.env, "preset": record.preset or "", "env_kwargs": json.dumps(record.env_kwargs),
              **record.config.to_dict()}
    options = plan.tracker_options
    if options.run_name is None:
        options = dataclasses.replace(options, run_name=plan.directory.path.resolve().name)
    for name in plan.tracker_names:
        try:
            tracker = trackers.make(name, params, options, record.trackers.get(name), training)
            started.append(tracker)
            tracker.start()
        except trackers.TrackerError as e:
            raise RunDirectoryError(str(e)) from None


def _attach(started: Sequence[trackers.Tracker], path: pathlib.Path | None) -> None:
    for tracker in started if path else ():
        tracker.log_artifact(path)


def _loggers(plan: Plan, console: bool) -> list[Hook]:
    record, metrics = plan.record, plan.directory.metrics(plan.record)
    loggers: list[Hook] = [CSVLogger(metrics) if record.metrics_format == "csv" else JSONLLogger(metrics)]
    if console:
        loggers.append(ConsoleLogger())
    if plan.tensorboard:
        loggers.append(TensorBoardLogger(plan.directory.path / "tensorboard"))
    return loggers


def _plot(plan: Plan) -> pathlib.Path | None:
    rows = artifacts.read_metrics(plan.directory.metrics(plan.record))
    if not rows:
        return None
    path = artifacts.plot_learning_curve(rows, plan.directory.path / "learning_curve.png", f"PPO on {plan.record.env}")
    print(f"learning curve: {path}")
    return pathlib.Path(path)


def video_env(env: Env, config: PPOConfig) -> tuple[Env, int]:
    """One unbatched env as the policy was trained on it (action repeat, time limit), for a video;
    and that time limit in agent steps. Evaluation plays a batch instead: ``make_eval_env``."""
    steps = config.agent_episode_length(env)
    return single_env_stack(env, steps, config.action_repeat, None), steps


def _closing(plan: Plan) -> budget.Closing:
    """Times the plot and video this run directory makes after training (a time budget keeps them in)."""

    def closing(make_policy, params) -> float:
        if not plan.video or "rgb_array" not in plan.env.metadata.get("render_modes", []):
            return artifacts.closing_seconds(None, None, 0)
        policy = make_policy(params, deterministic=True)
        env, steps = video_env(plan.env, plan.record.config)
        return artifacts.closing_seconds(env, lambda obs: policy(obs)[0], steps)

    return closing


def _video(plan: Plan, make_policy, params, until: float | None = None) -> pathlib.Path:
    policy = make_policy(params, deterministic=True)
    env, steps = video_env(plan.env, plan.record.config)
    path, total = artifacts.record_video(
        env, lambda obs: policy(obs)[0], plan.directory.path / "policy.mp4", seed=plan.record.config.seed,
        max_steps=steps, until=until,
    )
    print(f"video: {path} (episode return {total:.1f})")
    return pathlib.Path(path)


def train(
    run_dir: str | os.PathLike,
    env: str | None = None,
    config: PPOConfig | None = None,
    *,
    env_kwargs: dict[str, Any] | None = None,
    preset: str | None = None,
    resume: bool = False,
    num_timesteps: int | None = None,
    minutes: float | None = None,
    metrics_format: str = "csv",
    tensorboard: bool = False,
    video: bool = True,
    loggers: Sequence[str] = (),
    tracker_options: trackers.TrackerOptions = NO_TRACKER_OPTIONS,
    hooks: Sequence[Hook] = (),
    console: bool = True,
    progress_bar: bool = True,
) -> tuple[Callable[..., Any], Any, dict[str, Any]]:
    """PPO trained into a run directory, as ``gymjax train`` does; returns what ``ppo.train`` returns.

    A fresh run names ``env`` (a registered id; default: the preset's) and ``config`` (default: the
    preset's, else PPOConfig's). ``resume=True`` continues the run recorded in ``run_dir`` from its
    newest intact checkpoint, as recorded: only ``num_timesteps`` (to train longer) and
    ``video=False`` may be given, and ``tensorboard``/``loggers`` may add outputs.

    ``minutes`` (a fresh run, instead of ``num_timesteps``): train the env steps that end the run,
    compile, evaluations and checkpoints included, by that many minutes after this call, as
    measured on this machine first; run.json records them, so a resume continues them and
    ``num_timesteps=<those>`` replays the run. The plot and the video come after.

    ``loggers`` names trackers to log to as well, ``"mlflow"`` and ``"wandb"``, started as
    ``tracker_options`` say; run.json records their runs, which a resume continues. Other hooks
    (your own :class:`~gymjax.trainers.runs.trackers.MLflowLogger`, say) go in ``hooks``.

    Raises:
        RunDirectoryError: before anything is written, when the directory cannot be used as asked.
        TrainingStopped: on SIGINT/SIGTERM, after saving the epoch it stopped at.
    """
    started_at = time.time()  # a time budget counts from here
    if resume:
        given = [n for n, v in (("env", env), ("config", config), ("env_kwargs", env_kwargs), ("preset", preset),
                                ("minutes", minutes)) if v is not None] + ["metrics_format"] * (metrics_format != "csv")
        if given:
            raise RunDirectoryError(f"resume=True continues {run_dir} as recorded in {RUN_FILE}; drop {given}")
        plan_fn = lambda: plan_resume(run_dir, num_timesteps, video=video, tensorboard=tensorboard,
                                      loggers=loggers, tracker_options=tracker_options)
    else:
        record = new_record(env, config, env_kwargs=env_kwargs, preset=preset, metrics_format=metrics_format,
                            tensorboard=tensorboard, video=video, num_timesteps=num_timesteps, minutes=minutes)
        plan_fn = lambda: plan_fresh(run_dir, record, loggers, tracker_options)
    return run(plan_fn, hooks=hooks, console=console, progress_bar=progress_bar, started_at=started_at)


def new_record(
    env: str | None,
    config: PPOConfig | None,
    *,
    env_kwargs: dict[str, Any] | None = None,
    preset: str | None = None,
    num_timesteps: int | None = None,
    minutes: float | None = None,
    **outputs: Any,
) -> RunRecord:
    """A fresh run's record: the preset's env and config unless given (a preset's env and another
    ``env`` do not go together: its settings were tuned for its own). ``minutes``: the steps are
    chosen for that budget when the run starts (:func:`run`)."""
    if minutes is not None:
        if num_timesteps is not None:
            raise RunDirectoryError(
                f"minutes={minutes!r} chooses num_timesteps for the budget; give one of them, not both"
            )
        try:
            budget.check_budget(minutes)
        except ValueError as e:
            raise RunDirectoryError(str(e)) from None
    try:
        _, chosen = presets.resolve(preset or None, env, named=f"preset {preset}")
    except ValueError as e:
        raise RunDirectoryError(str(e)) from None
    if not chosen and env is None:
        raise RunDirectoryError(f"name an env (a registered id) or a preset ({presets.listing()})")
    if config is None:
        changes = {} if num_timesteps is None else {"num_timesteps": num_timesteps}
        config = PPOConfig.preset(chosen.name, **changes) if chosen else PPOConfig(**changes)
    elif num_timesteps is not None:
        config = config.replace(num_timesteps=num_timesteps)
    return RunRecord(
        env=env or chosen.env_id,
        env_kwargs=dict(env_kwargs or {}),
        config=config,
        preset=chosen.name if chosen else None,
        minutes=minutes,
        **outputs,
    )
