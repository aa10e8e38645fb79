"""``gymjax train | eval | render``: PPO runs kept in a run directory.

This module parses flags; the run directory (its lifecycle, what it refuses, what it guarantees)
is :mod:`gymjax.trainers.runs`, which the Python API shares.

Every :class:`PPOConfig` field is a ``gymjax train`` flag (``--num-envs``,
``--learning-rate``, ``--normalize-observations/--no-normalize-observations``,
``--policy-hidden-sizes 64,64``, ...), documented by the field's own help.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import shlex
import sys
import time
import traceback
import typing
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from gymjax import program
from gymjax.cli import common
from gymjax.core import Env
from gymjax.trainers import distributed, reference, runs
from gymjax.trainers.ppo import PPOConfig, TrainingStopped, budget, load_policy_and_meta, preset_file, presets
from gymjax.trainers.ppo.acting import evaluate
from gymjax.trainers.runs import artifacts, trackers
from gymjax.trainers.store import best, files
from gymjax.trainers.store import checkpoint as ckpt
from gymjax.wrappers.training import make_eval_env

# -- config fields as flags ------------------------------------------------------------


def _parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated layer sizes like 64,64, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected positive layer sizes like 64,64, got {text!r}")
    return sizes


def _or_none(kind: type, expected: str) -> Callable[[str], Any]:
    """An argparse type: ``kind(text)``, or None for "none" (an optional config field)."""

    def parse(text: str) -> Any:
        if text.lower() == "none":
            return None
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected} or 'none', got {text!r}") from None

    return parse


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """A flag for every PPOConfig field (``train`` and ``tune`` take the same ones)."""
    hints = typing.get_type_hints(PPOConfig)
    group = parser.add_argument_group("PPO config (defaults: PPOConfig's)")
    for field in dataclasses.fields(PPOConfig):
        flag = "--timesteps" if field.name == "num_timesteps" else "--" + field.name.replace("_", "-")
        # SUPPRESS: only flags given on the command line reach the namespace, so
        # "--max-to-keep none" (None) is told apart from a flag left out.
        kwargs: dict[str, Any] = {"dest": field.name, "default": argparse.SUPPRESS, "help": field.metadata["help"]}
        kwargs["help"] += f" (default: {field.default})"
        hint = hints[field.name]
        if hint is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif field.name.endswith("_sizes"):
            kwargs["type"], kwargs["metavar"] = _parse_sizes, "N,N"
        elif typing.get_origin(hint) is typing.Literal:
            kwargs["choices"] = typing.get_args(hint)
        elif hint in (int, float):
            kwargs["type"] = hint
        elif hint == float | None:
            kwargs["type"], kwargs["metavar"] = _or_none(float, "a number"), "X|none"
        else:  # int | None
            kwargs["type"], kwargs["metavar"] = _or_none(int, "an integer"), "N|none"
        group.add_argument(flag, **kwargs)


def preset_name(text: str) -> str:
    """``--preset``'s argparse type, for ``train`` and ``tune``."""
    try:
        return presets.get(text).name
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _preset_file(text: str) -> preset_file.PresetFile:
    try:
        return preset_file.read_preset_file(text)
    except preset_file.PresetFileError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def minutes_arg(text: str) -> float:
    """A budget in minutes as argparse's type (``train --minutes``, ``tune --minutes-per-trial``)."""
    try:
        return budget.check_minutes(float(text))
    except budget.BudgetTooLong:
        raise argparse.ArgumentTypeError(f"expected a number of minutes up to {budget.MAX_MINUTES:,} (a week; "
                                         f"give --timesteps for a longer run), got {text!r}") from None
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of minutes > 0, got {text!r}") from None


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The PPOConfig fields the parsed flags of :func:`add_config_flags` name."""
    names = {f.name for f in dataclasses.fields(PPOConfig)}
    return {k: v for k, v in vars(args).items() if k in names}


# -- train: flags to a run directory (gymjax.trainers.runs keeps it) --------------------


def _fresh_plan(args: argparse.Namespace, overrides: dict[str, Any]) -> Callable[[], runs.Plan]:
    """A new run's record from the flags; refused in one line before anything is written."""
    if args.preset and args.preset_file:
        raise SystemExit("--preset and --preset-file each give the config to start from; drop one of them")
    flag = f"--preset {args.preset}" if args.preset else "--preset-file"
    try:
        env, preset = presets.resolve(args.preset or args.preset_file, args.env, named=flag,
                                      env_named=f"--env {args.env}")
    except ValueError as e:
        raise SystemExit(str(e)) from None
    env = env or common.DEFAULT_ENV
    try:
        config = PPOConfig(**{**(preset.settings if preset else {}), **overrides})
    except ValueError as e:
        raise SystemExit(f"invalid config: {e}") from None
    # A tuned preset's env options come with it; --env-kwargs replaces them.
    env_kwargs = common.env_kwargs_arg(args.env_kwargs) or getattr(preset, "env_kwargs", {})
    record = runs.new_record(
        env, config, env_kwargs=env_kwargs, preset=args.preset,
        metrics_format=_metrics_format(args), tensorboard=_tensorboard(args), video=args.video, minutes=args.minutes,
    )
    return lambda: runs.plan_fresh(args.run_dir, record, _trackers(args), _tracker_options(args))


LOGGERS = (*runs.METRICS_FORMATS, "tensorboard", *trackers.NAMES)


def _metrics_format(args: argparse.Namespace) -> str:
    """The metrics file's format: --metrics-format or a csv/jsonl --logger (csv when neither says)."""
    chosen = {*([args.metrics_format] if args.metrics_format else []),
              *(name for name in args.logger if name in runs.METRICS_FORMATS)}
    if len(chosen) > 1:
        raise SystemExit(f"one metrics file per run: pick one of {sorted(chosen)} (--logger / --metrics-format)")
    return chosen.pop() if chosen else "csv"


def _tensorboard(args: argparse.Namespace) -> bool:
    return args.tensorboard or "tensorboard" in args.logger


def _trackers(args: argparse.Namespace) -> list[str]:
    return [name for name in args.logger if name in trackers.NAMES]


def _tracker_options(args: argparse.Namespace) -> trackers.TrackerOptions:
    if args.new_tracker_run and not args.resume:
        raise SystemExit("--new-tracker-run goes with --resume (a fresh run's tracker runs are new anyway)")
    return trackers.TrackerOptions(
        project=args.tracker_project, run_name=args.tracker_run_name, tags=tuple(args.tracker_tags),
        mlflow_tracking_uri=args.mlflow_tracking_uri, wandb_mode=args.wandb_mode,
        new_runs=tuple(args.new_tracker_run),
    )


def _resume_plan(args: argparse.Namespace, overrides: dict[str, Any]) -> Callable[[], runs.Plan]:
    changed = sorted(set(overrides) - {"num_timesteps"})
    changed += ["--env-kwargs"] * bool(args.env_kwargs) + ["--preset"] * bool(args.preset)
    changed += ["--preset-file"] * bool(args.preset_file)
    changed += ["--minutes"] * (args.minutes is not None)  # a timed run continues the steps it chose
    if changed:
        raise SystemExit(
            f"--resume continues {args.run_dir} as configured in {runs.RUN_FILE}; only --timesteps may change "
            f"(to train longer): drop {changed}"
        )
    timesteps = overrides.get("num_timesteps")
    return lambda: runs.plan_resume(
        args.run_dir, timesteps, video=args.video, tensorboard=_tensorboard(args), loggers=_trackers(args),
        tracker_options=_tracker_options(args),
    )


def start_processes(args: argparse.Namespace) -> None:
    """Joins the other processes of a multi-process run; before anything else touches JAX."""
    if args.coordinator or args.distributed or os.environ.get("JAX_COORDINATOR_ADDRESS"):
        try:
            distributed.initialize(args.coordinator, args.num_processes, args.process_id, args.heartbeat_timeout)
        except ValueError as e:
            raise SystemExit(str(e)) from None


def _check_minutes_flags(args: argparse.Namespace) -> None:
    """--minutes chooses --timesteps, for one process: refused in one line with either."""
    if args.minutes is None:
        return
    if "num_timesteps" in vars(args):
        raise SystemExit("--minutes chooses --timesteps for the budget (and run.json records them); give one of them")
    several = [flag for flag, on in (("--local-processes", args.local_processes), ("--distributed", args.distributed),
                                     ("--coordinator", args.coordinator)) if on]
    if several:  # a process of a run started otherwise (JAX_COORDINATOR_ADDRESS) is refused by gymjax.trainers.runs
        raise SystemExit(
            f"--minutes times one process; drop {' '.join(several)} or give --timesteps "
            "(a one-process --minutes run prints the steps it chose)"
        )


def _started_at(args: argparse.Namespace) -> float:
    """When --minutes starts counting: at this process's start (its imports count) when it runs
    this command line, else now (main() called from Python)."""
    started = program.started_at() if args.argv == sys.argv[1:] else None
    return time.time() if started is None else started  # not Linux: from now


def train_command(args: argparse.Namespace) -> int:
    started_at = _started_at(args)
    _check_minutes_flags(args)
    if args.local_processes:
        return distributed.launch_local(_without_launcher_flag(args.argv), args.local_processes)
    overrides = config_overrides(args)
    try:
        plan = (_resume_plan if args.resume else _fresh_plan)(args, overrides)
    except runs.RunDirectoryError as e:
        raise SystemExit(str(e)) from None
    checkpoints = args.run_dir / runs.CHECKPOINTS
    resume_hint = (
        f"gymjax train --run-dir {shlex.quote(str(args.run_dir))} --resume" + distributed.same_processes_flags()
    )
    try:
        runs.run(plan, console=not args.quiet, progress_bar=not args.quiet, started_at=started_at)
    except runs.RunDirectoryError as e:
        raise SystemExit(str(e)) from None
    except TrainingStopped as e:
        if e.checkpoint is None:
            print(f"stopped at epoch {e.epoch}, before any checkpoint; run the same command again to start over")
        else:
            print(f"stopped at epoch {e.epoch}, env step {e.env_steps:,}; resume with: {resume_hint}")
        return e.exit_code
    except KeyboardInterrupt:
        steps = ckpt.step_dirs(checkpoints)
        where = f"the latest checkpoint is epoch {steps[-1]}" if steps else "no checkpoint was saved"
        print(f"stopped at once, without saving the epoch in flight; {where}; resume with: {resume_hint}")
        return 130
    except (ckpt.CheckpointError, trackers.TrackerError) as e:
        raise SystemExit(str(e)) from None
    except OSError as e:  # a metrics, TensorBoard, plot or video write
        if ckpt.disk_error(e) is None and not isinstance(e, files.UnsafePath):
            raise
        intact = ckpt.step_dirs(checkpoints)
        raise SystemExit(
            f"could not write {e.filename or 'to ' + str(args.run_dir)}: {e.strerror}; intact checkpoints: "
            f"{', '.join(map(str, intact)) or 'none'}"
        ) from None
    except Exception as e:
        if jax.process_count() == 1:
            raise
        _process_failed(e, checkpoints, resume_hint)
    return 0


def _without_launcher_flag(argv: list[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--local-processes":
            skip = True
        elif not arg.startswith("--local-processes="):
            out.append(arg)
    return out


# How a collective with a dead process fails, depending on which one was in flight.
PEER_FAILURES = ("Gloo", "heartbeat", "Barrier failed", "Connection reset", "coordination service", "NCCL")


def _process_failed(error: Exception, checkpoints: pathlib.Path, resume_hint: str) -> None:
    """An error in one process of several: say so in one line (with the traceback unless another
    process died), then leave at once. The others cannot go on without this one, and JAX's own
    shutdown would wait for a dead process (a heartbeat timeout), then abort with a C++ trace."""
    text = str(error)
    peer = any(marker in text for marker in PEER_FAILURES)
    if not peer:
        traceback.print_exc()
    steps = ckpt.step_dirs(checkpoints)
    where = f"the last complete checkpoint is epoch {steps[-1]}" if steps else "no checkpoint was saved"
    reason = (text.strip().splitlines() or [type(error).__name__])[0][:200]
    cause = "another process probably died" if peer else "the other processes stop too"
    print(
        f"process {jax.process_index()} of {jax.process_count()}: {type(error).__name__}: {reason}; {cause}. "
        f"{where}; resume with: {resume_hint}",
        file=sys.stderr,
        flush=True,
    )
    sys.stdout.flush()
    os._exit(1)


@dataclasses.dataclass(frozen=True)
class SavedPolicy:
    """A run directory's newest intact policy, with the env and config it was trained with."""

    env_id: str
    env: Env
    config: PPOConfig
    policy: Any
    meta: dict[str, Any]


def _saved_policy(path: pathlib.Path, deterministic: bool = True, which: str = "last") -> SavedPolicy:
    """The run's last policy, or its best evaluated one (``which="best"``)."""
    try:
        directory = runs.RunDirectory(path)
        record = directory.read()
        env = directory.recorded_env(record)
        policy, meta = load_policy_and_meta(directory.checkpoints, deterministic=deterministic, policy=which)
        directory.check_policy_env(record, env, meta)
    except runs.RunDirectoryError as e:
        raise SystemExit(str(e)) from None
    except (FileNotFoundError, ckpt.CheckpointError) as e:
        raise SystemExit(f"{path}: {e}") from None
    return SavedPolicy(record.env, env, record.config, policy, meta)


def eval_command(args: argparse.Namespace) -> int:
    if args.reference and args.stochastic:
        raise SystemExit("--reference plays the policy's mode on Gymnasium's env; drop --stochastic")
    saved = _saved_policy(args.run_dir, deterministic=not args.stochastic, which=args.policy)
    if args.reference:
        try:
            reference.reference_id(saved.env_id)
        except ValueError as e:
            raise SystemExit(f"--reference: {e}") from None
    config = saved.config
    steps = config.agent_episode_length(saved.env)
    # The trainer's own evaluation env: batched, time-limited, each env one episode (no auto-reset).
    env = make_eval_env(saved.env, episode_length=steps, action_repeat=config.action_repeat)
    result = jax.jit(
        lambda key: evaluate(env, lambda obs, k: (saved.policy(obs, k), {}), key, args.episodes, steps)
    )(jax.random.PRNGKey(args.seed))
    returns = np.asarray(result.episode_return)
    summary = {
        "env": saved.env_id,
        "policy": args.policy,
        **({"chosen_by": saved.meta[best.BEST]} if args.policy == "best" else {}),
        "env_steps": saved.meta["env_steps"],
        "checkpoint_step": saved.meta["step"],
        "episodes": args.episodes,
        "episode_return_mean": float(returns.mean()),
        "episode_return_std": float(returns.std()),
        "episode_length_mean": float(np.mean(result.episode_length)),
    }
    if args.reference:  # the same policy on Gymnasium's own env, reported beside
        ref = reference.evaluate_on_reference(
            saved.policy, saved.env_id, saved.env.env_kwargs,
            episodes=args.episodes, seed=args.seed, action_repeat=config.action_repeat,
        )
        summary["reference"] = {k: v for k, v in ref.items() if k != "eval_s"}
    _say(json.dumps(summary))
    return 0


def _say(line: str) -> None:
    """Prints a command's result; output that cannot be written (a full disk under ``> file``) is an
    error, never a success."""
    try:
        print(line, flush=True)
    except OSError as e:
        raise SystemExit(f"could not write the output: {e.strerror or e}") from None


def render_command(args: argparse.Namespace) -> int:
    if args.out is not None and args.out.suffix.lower() != ".mp4":
        raise SystemExit(f"--out {args.out}: expected a .mp4 path (the video is written with ffmpeg as MP4)")
    saved = _saved_policy(args.run_dir, which=args.policy)
    env, steps = runs.video_env(saved.env, saved.config)
    # The best policy's video beside the last one's, never over it.
    out = args.out or args.run_dir / ("policy.mp4" if args.policy == "last" else f"policy_{args.policy}.mp4")
    try:
        path, total = artifacts.record_video(env, saved.policy, out, seed=args.seed, max_steps=steps)
    except OSError as e:
        raise SystemExit(f"could not write the video {out}: {e.strerror or e}") from None
    _say(f"video: {path} (episode return {total:.1f})")
    return 0


def _add_logger_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--logger", nargs="+", action="extend", choices=LOGGERS, default=[], metavar="NAME",
                   help=f"where metrics go, several allowed: {', '.join(LOGGERS)}. csv/jsonl pick the metrics "
                        "file (always written), tensorboard is --tensorboard; mlflow and wandb log the run "
                        "(config, metrics by env step, learning curve and video) to those trackers, "
                        "pip install 'gymjax[mlflow]' / 'gymjax[wandb]'; --resume continues their runs")
    group = p.add_argument_group("trackers (--logger mlflow / wandb; a resumed tracker run keeps its own)")
    group.add_argument("--tracker-project", metavar="NAME",
                       help=f"MLflow experiment / W&B project (default: {trackers.DEFAULT_PROJECT})")
    group.add_argument("--tracker-run-name", metavar="NAME", help="the tracker run's name (default: DIR's name)")
    group.add_argument("--tracker-tags", nargs="+", action=_Tags, default=(), metavar="TAG",
                       help="KEY=VALUE or plain tags, each key once; for MLflow a plain tag gets an empty value")
    group.add_argument("--mlflow-tracking-uri", type=_tracking_uri, metavar="URI",
                       help=f"MLflow's store: {trackers.TRACKING_URIS} (default: MLFLOW_TRACKING_URI, else "
                            "MLflow's sqlite:///mlflow.db here; a sqlite store keeps artifacts in <store>-artifacts/ "
                            "beside it); a resume must name the store run.json records")
    group.add_argument("--new-tracker-run", nargs="+", action="extend", choices=trackers.NAMES, default=[],
                       metavar="NAME", help="with --resume: log to new runs of these trackers (mlflow, wandb) "
                                            "instead of the ones run.json records, and record them")
    group.add_argument("--wandb-mode", choices=trackers.WANDB_MODES,
                       help="W&B online or offline, for `wandb sync` later (default: WANDB_MODE, else W&B's)")


class _Tags(argparse.Action):
    """--tracker-tags, repeatable, refused at parsing when a key is empty or given twice."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            setattr(namespace, self.dest, trackers.check_tags([*getattr(namespace, self.dest), *values]))
        except ValueError as e:
            parser.error(f"argument {option_string}: {e}")


def _tracking_uri(text: str) -> str:
    try:
        return trackers.check_tracking_uri(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _add_policy_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", choices=best.POLICIES, default="last",
                   help="the last checkpoint's policy, or the best evaluated one that training kept "
                        "(DIR/checkpoints/best; by the trainer's eval/episode_return) (default: %(default)s)")


def add_commands(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "train",
        help="train PPO into a run directory",
        description="Train PPO. Writes DIR/run.json, DIR/checkpoints/, DIR/metrics.csv, "
        "DIR/learning_curve.png and DIR/policy.mp4.",
    )
    common.add_env(p, default=None, default_help=f"the preset's, else {common.DEFAULT_ENV}")
    common.add_run_dir(p)
    p.add_argument("--preset", type=preset_name, metavar="NAME",
                   help=f"start from a tuned config: {presets.listing()}; the flags below override its fields")
    p.add_argument("--preset-file", type=_preset_file, metavar="FILE",
                   help="start from a preset file (JSON or YAML; gymjax tune writes DIR/best_preset.json), its env "
                        "and config; the flags below override its fields")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its latest checkpoint")
    p.add_argument("--minutes", type=minutes_arg, metavar="M",
                   help="instead of --timesteps: time this machine first, then train the most env steps that end by "
                        "M minutes after the command started (compile, evaluations and checkpoints included); "
                        "printed and recorded in run.json, so --resume continues them and --timesteps replays them")
    p.add_argument("--metrics-format", choices=runs.METRICS_FORMATS, default=None,
                   help="metrics file format (default: csv); the metrics file is always written")
    p.add_argument("--tensorboard", action="store_true", help="also write TensorBoard scalars to DIR/tensorboard")
    _add_logger_flags(p)
    p.add_argument("--video", action=argparse.BooleanOptionalAction, default=True, help="render the final policy")
    p.add_argument("--quiet", action="store_true", help="no progress bar or per-epoch lines")
    group = p.add_argument_group(
        "several processes (jax.distributed; see docs/design.md, 'Several devices and processes')"
    )
    group.add_argument("--local-processes", type=common.positive_int, metavar="N",
                       help="launch N processes of this command on this machine, connected on 127.0.0.1")
    group.add_argument("--distributed", action="store_true",
                       help="join a cluster run: jax.distributed.initialize() finds it (SLURM, Open MPI, "
                            "JAX_COORDINATOR_ADDRESS/JAX_NUM_PROCESSES/JAX_PROCESS_ID)")
    group.add_argument("--coordinator", metavar="HOST:PORT",
                       help="process 0's address, for an explicit start; process 0 listens there only")
    group.add_argument("--num-processes", type=common.positive_int, help="processes in the run, for an explicit start")
    group.add_argument("--process-id", type=common.nonnegative_int,
                       help="this process's index, 0 to N-1, for an explicit start")
    group.add_argument("--heartbeat-timeout", type=common.positive_int, default=30, metavar="S",
                       help="seconds before the others give up on a silent process (default: %(default)s)")
    add_config_flags(p)  # --seed among them: the config's
    p.set_defaults(run=train_command, setup=start_processes)

    p = commands.add_parser("eval", help="evaluate a run directory's last (or best) policy; prints one JSON line")
    common.add_run_dir(p)
    _add_policy_flag(p)
    p.add_argument("--episodes", type=common.positive_int, default=16,
                   help="episodes, played in parallel (default: %(default)s)")
    p.add_argument("--stochastic", action="store_true", help="sample actions instead of the policy's mode")
    p.add_argument("--reference", action="store_true",
                   help="also play the policy on Gymnasium's own env (Ant-v5 for JaxAnt-v0, CartPole-v1 for "
                        "JaxCartPole-v0, ...) and report it beside, under \"reference\"")
    common.add_seed(p)
    p.set_defaults(run=eval_command)

    p = commands.add_parser("render", help="render a run directory's last (or best) policy to an mp4")
    common.add_run_dir(p)
    _add_policy_flag(p)
    p.add_argument("--out", type=pathlib.Path, default=None,
                   help="video path (default: DIR/policy.mp4, DIR/policy_best.mp4 for --policy best)")
    common.add_seed(p)
    p.set_defaults(run=render_command)
