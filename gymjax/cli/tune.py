"""``gymjax tune``: PPO's hyperparameters searched with Optuna, under rl-baselines3-zoo's flag names.

This module parses flags and runs the worker processes of ``--n-jobs``; what a study, a trial and
the report are is :mod:`gymjax.trainers.tune`. ``--n-jobs J`` starts J processes of this same
command (``--worker K``), each asking the shared storage for trials as a process on another machine
would, while this one shows their progress and writes the report when they are done.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shlex
import signal
import subprocess
import sys
import time
from typing import Any

from tqdm import tqdm

from gymjax.cli import common, run
from gymjax.trainers import distributed
from gymjax.trainers import tune as tuning
from gymjax.trainers.ppo import PPOConfig, presets
from gymjax.trainers.store import files

POLL_S = 1.0  # how often the workers' progress is read from the storage


def tune_command(args: argparse.Namespace) -> int:
    try:
        return _tune(args)
    except tuning.TuneError as e:
        raise SystemExit(str(e)) from None


def _tune(args: argparse.Namespace) -> int:
    _check_flags(args)
    optuna = tuning.import_optuna()
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # each trial's line is ours (tuning.describe)
    setup = _setup(args)
    name = args.study_name or tuning.default_study_name(setup)
    if args.worker is None:
        tuning.check_out_dir(args.out, name, args.storage)
        _check_logs(args)
    else:
        distributed.stop_with_launcher()  # a worker never outlives the command that started it
    study = tuning.open_study(setup, args.storage, name, sampler=args.sampler, pruner=args.pruner,
                              n_startup_trials=args.n_startup_trials, say=_note)
    if args.enqueue_base and args.worker is None:
        added = tuning.enqueue_base(study, setup)
        _note("the base config's values are the study's next trial (the yardstick)" if added else
              "the base config's values are in the study already (the yardstick): not enqueued again")
    if args.worker is not None:
        n_trials = None if args.n_trials is None else _share(args.n_trials, args.n_jobs, args.worker)
        tuning.optimize(study, setup, n_trials=n_trials, max_total_trials=args.max_total_trials,
                        on_trial=lambda trial: _note(tuning.describe(trial)))
        return 0
    tuning.start_report(args.out, study, args.storage, setup)
    _note(f"study {study.study_name!r} in {tuning.masked(args.storage)}: {len(study.trials)} trials so far, "
          f"{tuning.counted_trials(study)} counted; tuning {', '.join(setup.space)} on {setup.env_id}")
    if args.n_jobs == 1:
        status = _in_process(args, study, setup)
    else:
        status = _with_workers(args, study, setup)
    interrupted = status in (130, 143)
    for line in tuning.write_report(args.out, study, setup, plots=not interrupted):
        print(line)
    if interrupted:
        again = "gymjax " + shlex.join(args.argv)
        where = (f"continue the study with: {again}" if args.storage else
                 "the study was in memory: its trials are in trials.csv (give --storage to continue a study)")
        print(f"interrupted: the trial in flight is marked failed, never counted; {where}")
    return status


def _check_flags(args: argparse.Namespace) -> None:
    """What the flags alone say is wrong, in one line."""
    if args.n_trials is None and args.max_total_trials is None:
        raise SystemExit("give --n-trials N (trials this command runs) or --max-total-trials N (trials the "
                         "study holds, failed ones not counted)")
    if args.timesteps_per_trial is not None and "num_timesteps" in vars(args):
        raise SystemExit("--timesteps-per-trial is the base config's --timesteps for tune; give one of them")
    if args.minutes_per_trial is not None and (args.timesteps_per_trial is not None or "num_timesteps" in vars(args)):
        raise SystemExit("--minutes-per-trial chooses each run's steps; drop --timesteps-per-trial (or train "
                         "each run a fixed number of steps without --minutes-per-trial)")
    if args.n_jobs > 1 and (args.storage is None or tuning.in_memory(args.storage)):
        held = "" if args.storage is None else f" (--storage {tuning.masked(args.storage)} is one)"
        raise SystemExit(f"--n-jobs {args.n_jobs} runs {args.n_jobs} processes on one study, which an "
                         f"in-memory study{held} cannot be: each would tune a database of its own; give "
                         "--storage a database on disk (sqlite:///tune.db on one machine, an RDB URL for several)")
    if args.preset is None and args.env is None:
        raise SystemExit(f"give --env ID or --preset NAME (presets: {presets.listing()})")


def _setup(args: argparse.Namespace) -> tuning.TuneSetup:
    try:
        env_id, preset = presets.resolve(args.preset, args.env, named=f"--preset {args.preset}",
                                         env_named=f"--env {args.env}")
    except ValueError as e:
        raise SystemExit(str(e)) from None
    overrides = run.config_overrides(args)
    if args.timesteps_per_trial is not None:
        overrides["num_timesteps"] = args.timesteps_per_trial
    try:
        base = PPOConfig.preset(args.preset, **overrides) if preset else PPOConfig(**overrides)
    except ValueError as e:
        raise SystemExit(f"invalid config: {e}") from None
    env_kwargs = common.env_kwargs_arg(args.env_kwargs)
    env = common.make_env(env_id, env_kwargs)
    space = None
    if args.search_space is not None:
        where = f"--search-space {args.search_space}"
        space = tuning.parse_space(tuning.read_data_file(args.search_space, "--search-space"), base, where)
    return tuning.make_setup(env_id, base, env_kwargs=env_kwargs, space=space,
                             minutes_per_trial=args.minutes_per_trial, seeds_per_trial=args.seeds_per_trial,
                             objective=args.objective, env=env)


def _log(args: argparse.Namespace, k: int) -> pathlib.Path:
    return args.out / f"worker-{k}.log"


def _check_logs(args: argparse.Namespace) -> None:
    """Refuses, before the study is opened, a worker log that is a link, not a regular file, or a file
    with another hard link: a log is written in place, and would write through it."""
    for k in range(args.n_jobs if args.n_jobs > 1 else 0):
        if os.path.lexists(_log(args, k)):
            try:
                os.close(files.open_in_place(_log(args, k), os.O_RDONLY | os.O_NONBLOCK))
            except OSError as e:
                raise SystemExit(f"--out: {e.strerror}") from None


def _share(n_trials: int, n_jobs: int, worker: int) -> int:
    """Worker ``worker``'s part of ``n_trials``: trials are time-budgeted, so equal parts end together."""
    return n_trials // n_jobs + (worker < n_trials % n_jobs)


def _planned(args: argparse.Namespace, study: Any) -> int | None:
    """The trials this command means to run, for the progress bar."""
    limits = [] if args.n_trials is None else [args.n_trials]
    if args.max_total_trials is not None:
        limits.append(max(0, args.max_total_trials - tuning.counted_trials(study)))
    return min(limits)


def _note(line: str) -> None:
    tqdm.write(line, file=sys.stderr)


def _in_process(args: argparse.Namespace, study: Any, setup: tuning.TuneSetup) -> int:
    with tqdm(total=_planned(args, study), unit="trial", desc="tune") as bar:
        def finished(trial):
            bar.update()
            _note(tuning.describe(trial, study))

        try:
            tuning.optimize(study, setup, n_trials=args.n_trials, max_total_trials=args.max_total_trials,
                            on_trial=finished, on_progress=bar.set_postfix_str)
        except KeyboardInterrupt as e:  # a signal: Optuna failed the trial in flight
            return getattr(e, "exit_code", 130)
    return 0


def _with_workers(args: argparse.Namespace, study: Any, setup: tuning.TuneSetup) -> int:
    """Starts ``--n-jobs`` workers on the study, shows their trials as they finish, and waits for them."""
    workers = {}
    for k in range(args.n_jobs):
        if args.n_trials is not None and _share(args.n_trials, args.n_jobs, k) == 0:
            continue
        # The study by its name: a default name is this process's choice, whatever the worker's would be.
        command = [sys.executable, "-m", "gymjax", *args.argv, "--study-name", study.study_name,
                   "--worker", str(k)]
        try:  # checked again as it is opened: the directory may have changed since _check_logs
            fd = files.open_in_place(_log(args, k), os.O_WRONLY | os.O_CREAT)
        except OSError as e:
            _stop(workers)
            raise SystemExit(f"--out: {e.strerror}") from None
        os.ftruncate(fd, 0)
        with os.fdopen(fd, "w") as out:
            workers[k] = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env={**os.environ, distributed.LAUNCHER_PID: str(os.getpid())})
    ours = {process.pid for process in workers.values()}
    seen: set[int] = set()
    stopped = _Forward(workers.values())
    bar = tqdm(total=_planned(args, study), unit="trial", desc=f"tune ({len(workers)} processes)")
    with stopped, bar:
        while True:
            done = all(process.poll() is not None for process in workers.values())
            for trial in study.get_trials(deepcopy=False):
                worker = trial.user_attrs.get("worker") or {}
                if trial.state.is_finished() and worker.get("pid") in ours and trial.number not in seen:
                    seen.add(trial.number)
                    bar.update()
                    _note(tuning.describe(trial, study))
            if done:
                break
            time.sleep(POLL_S)
    for number in tuning.fail_dead_trials(study):  # a worker killed mid-trial: now, not at the next start
        _note(f"trial {number}: FAIL (its process died mid-trial; not counted)")
    if stopped.signum is not None:
        return 128 + stopped.signum
    failed = [f"worker {k} exited with status {p.returncode} (its log: {_log(args, k)})"
              for k, p in workers.items() if p.returncode]
    for line in failed:
        print(line, file=sys.stderr)
    return 1 if failed else 0


def _stop(workers: dict[int, subprocess.Popen]) -> None:
    """Ends the workers already started (each fails its trial in flight) and waits for them."""
    for process in workers.values():
        process.send_signal(signal.SIGTERM)
    for process in workers.values():
        process.wait()


class _Forward:
    """While the workers run, a SIGINT or SIGTERM to this process is passed on to them: each fails its
    trial in flight and exits, and this one then writes the report. (A terminal's Ctrl-C reaches them
    too; a second signal stops a worker's trial at once, which fails it all the same.)"""

    def __init__(self, workers):
        self.workers = list(workers)
        self.signum: int | None = None

    def _handle(self, signum, frame):
        self.signum = signum
        for process in self.workers:
            if process.poll() is None:
                process.send_signal(signum)

    def __enter__(self):
        self.previous = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc):
        for s, handler in self.previous.items():
            signal.signal(s, handler)


def add_commands(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "tune",
        help="search PPO's hyperparameters with Optuna (rl-baselines3-zoo's flags)",
        description="Search PPO's hyperparameters with Optuna: each trial is a run of --minutes-per-trial "
        "minutes (or the config's --timesteps) that reports its evaluations' return, and may be pruned. "
        "Writes DIR/best_preset.json (for gymjax train --preset-file), DIR/trials.csv and Optuna's plots. "
        "Every PPOConfig flag of gymjax train sets the base config the trials change.",
    )
    common.add_env(p, default=None, default_help="the preset's")
    p.add_argument("--preset", type=run.preset_name, metavar="NAME",
                   help=f"start from a preset's config and env: {presets.listing()}")
    p.add_argument("--out", type=pathlib.Path, required=True, metavar="DIR", help="where the report goes")
    p.add_argument("--n-trials", type=common.nonnegative_int, metavar="N",
                   help="trials this command runs (0: write the report of the study as it stands)")
    p.add_argument("--max-total-trials", type=common.positive_int, metavar="N",
                   help="stop once the study holds N complete, pruned or running trials (all processes', "
                        "failed ones not counted): a continued tune runs only those left")
    p.add_argument("--seeds-per-trial", type=common.positive_int, default=1, metavar="K",
                   help="runs a trial makes, one a seed (the base --seed and the K-1 after it, the same for "
                        "every trial), its value the --objective of their returns (default: %(default)s)")
    p.add_argument("--objective", choices=tuple(tuning.OBJECTIVES), default=tuning.DEFAULT_OBJECTIVE,
                   help="how a trial's seeds make its value, and what the pruner sees mid-trial: the mean "
                        "keeps a failing seed's cost, the median hides one of 3 (default: %(default)s)")
    p.add_argument("--timesteps-per-trial", type=common.positive_int, metavar="N",
                   help="env steps each of a trial's runs trains: a fixed amount of work, so a loaded machine "
                        "does not bias the study (the same as --timesteps)")
    p.add_argument("--minutes-per-trial", type=run.minutes_arg, metavar="M",
                   help="the wall-clock budget of each of a trial's runs, compile and evaluations included "
                        "(default: each run trains --timesteps-per-trial steps)")
    p.add_argument("--enqueue-base", action="store_true",
                   help="make the base config's own values (the preset's) the study's next trial, the "
                        "yardstick the search must beat; once per study")
    p.add_argument("--n-jobs", type=common.positive_int, default=1, metavar="J",
                   help="worker processes sharing the trials (needs --storage; default: %(default)s)")
    p.add_argument("--sampler", choices=("tpe", "random"), default="tpe", help="default: %(default)s")
    p.add_argument("--pruner", choices=("median", "none"), default="median",
                   help="median: stop a trial whose return is below the median of the others' at the same "
                        "evaluation (default: %(default)s)")
    p.add_argument("--n-startup-trials", type=common.nonnegative_int, default=5, metavar="N",
                   help="trials sampled at random, and never pruned, before TPE and the pruner start "
                        "(default: %(default)s)")
    p.add_argument("--storage", metavar="URL",
                   help="Optuna's RDB storage, shared by processes and machines: sqlite:///tune.db, "
                        "postgresql://user@host/db, ... (default: in memory, lost when the command ends)")
    p.add_argument("--study-name", metavar="NAME",
                   help="the study in --storage, created or continued (default: gymjax-<env id>)")
    p.add_argument("--search-space", type=pathlib.Path, metavar="FILE",
                   help="JSON or YAML: {field: {type: float|int|categorical, low, high, log, choices}} "
                        "instead of the default for the kind of task (DIR/tune.json shows the one used)")
    p.add_argument("--worker", type=common.nonnegative_int, help=argparse.SUPPRESS)  # one of --n-jobs's
    run.add_config_flags(p)
    p.set_defaults(run=tune_command)
