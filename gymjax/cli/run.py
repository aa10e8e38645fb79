"""``gymjax train | eval | render``: PPO runs kept in a run directory.

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
import shutil
import sys
import traceback
import typing
from typing import Any

import jax
import numpy as np

from gymjax.cli import common
from gymjax.core import Env
from gymjax.trainers import artifacts
from gymjax.trainers import checkpoint as ckpt
from gymjax.trainers import distributed
from gymjax.trainers.loggers import (
    ConsoleLogger,
    CSVLogger,
    JSONLLogger,
    TensorBoardLogger,
    drop_rows_after,
    read_rows,
    replace_text,
)
from gymjax.trainers import reference
from gymjax.trainers.ppo import PPOConfig, TrainingStopped, load_policy_and_meta, presets, train
from gymjax.trainers.ppo.acting import evaluate
from gymjax.wrappers.training import make_eval_env, single_env_stack

RUN_FILE = "run.json"
CHECKPOINTS = "checkpoints"


# -- config fields as flags ------------------------------------------------------------


def _parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated layer sizes like 64,64, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected positive layer sizes like 64,64, got {text!r}")
    return sizes


def _optional_int(text: str) -> int | None:
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'none', got {text!r}") from None


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
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
        else:  # int | None
            kwargs["type"], kwargs["metavar"] = _optional_int, "N|none"
        group.add_argument(flag, **kwargs)


def _preset_name(text: str) -> str:
    try:
        return presets.get(text).name
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(PPOConfig)}
    return {k: v for k, v in vars(args).items() if k in names}


# -- the run directory -----------------------------------------------------------------


def _read_run(run_dir: pathlib.Path) -> dict[str, Any]:
    path = run_dir / RUN_FILE
    if not path.exists():
        raise SystemExit(f"{run_dir} is not a gymjax run directory (no {RUN_FILE}); train into it first")
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise SystemExit(f"{path} is not valid JSON ({e}); it records the run's env and config") from None


def _logged_rows(run_dir: pathlib.Path) -> int:
    return sum(len(read_rows(run_dir / f"metrics.{fmt}")[1]) for fmt in ("csv", "jsonl"))


def _video_env(env: Env, config: PPOConfig) -> tuple[Env, int]:
    """One unbatched env as the policy was trained on it (action repeat, time limit), for a video;
    and that time limit in agent steps. Evaluation plays a batch instead: ``make_eval_env``."""
    steps = config.agent_episode_length(env)
    return single_env_stack(env, steps, config.action_repeat, None), steps


def _fresh_run(args: argparse.Namespace, run_dir: pathlib.Path, overrides: dict[str, Any]):
    """Checks a new run's env, config and directory; nothing is written yet."""
    checkpoints = run_dir / CHECKPOINTS
    saved = ckpt.step_dirs(checkpoints)
    if (run_dir / RUN_FILE).exists():
        if saved or _logged_rows(run_dir):
            raise SystemExit(f"{run_dir} already holds a run; pass --resume to continue it or pick another --run-dir")
        print(f"{run_dir}: replacing the run recorded in {RUN_FILE}, which never saved a checkpoint or a metric")
    elif saved:
        raise SystemExit(f"{checkpoints} holds checkpoints {saved} without a {RUN_FILE}: another run's; pick another --run-dir")
    preset = presets.get(args.preset) if args.preset else None
    if preset and args.env not in (None, preset.env_id):
        raise SystemExit(
            f"--preset {args.preset} is tuned for {preset.env_id}, not --env {args.env}; drop one of them "
            f"(presets: {presets.listing()})"
        )
    args.env = args.env or (preset.env_id if preset else common.DEFAULT_ENV)
    try:
        config = PPOConfig.preset(preset.name, **overrides) if preset else PPOConfig(**overrides)
    except ValueError as e:
        raise SystemExit(f"invalid config: {e}") from None
    env_kwargs, env = common.env_from_args(args)
    if config.reference_episodes:
        try:
            reference.reference_id(args.env)
        except ValueError as e:
            raise SystemExit(f"--reference-episodes {config.reference_episodes}: {e}") from None
    options = {"metrics_format": args.metrics_format, "tensorboard": args.tensorboard, "video": args.video}
    record = {
        "env": args.env,
        "env_kwargs": env_kwargs,
        **options,
        "preset": preset.name if preset else None,
        "config": config.to_dict(),
    }
    return env, config, record, None


def _resumed_run(args: argparse.Namespace, run_dir: pathlib.Path, overrides: dict[str, Any]):
    """A recorded run's env and config, extended when ``--timesteps`` is given; nothing is written yet."""
    record = _read_run(run_dir)
    changed = sorted(set(overrides) - {"num_timesteps"})
    changed += ["--env-kwargs"] * bool(args.env_kwargs) + ["--preset"] * bool(args.preset)
    if changed:
        raise SystemExit(
            f"--resume continues {run_dir} as configured in {RUN_FILE}; only --timesteps may change "
            f"(to train longer): drop {changed}"
        )
    config = PPOConfig.from_dict(record["config"])
    checkpoints = run_dir / CHECKPOINTS
    restore = checkpoints if ckpt.step_dirs(checkpoints) else None
    if restore is None:
        print(f"{run_dir} has no checkpoint yet: starting its recorded run from scratch")
    if "num_timesteps" in overrides and overrides["num_timesteps"] != config.num_timesteps:
        config = _extended(config, overrides["num_timesteps"], ckpt.read_meta(checkpoints) if restore else None)
        record = {**record, "config": config.to_dict()}
    env = common.make_env(record["env"], record["env_kwargs"])
    return env, config, record, restore


def _extended(config: PPOConfig, num_timesteps: int, meta: dict[str, Any] | None) -> PPOConfig:
    """``config`` trained to ``num_timesteps``: epochs of the same size, as many as the new budget needs."""
    done = int(meta["env_steps"]) if meta else 0
    try:
        extended = config.replace(num_timesteps=num_timesteps, epoch_iterations=config.iterations_per_epoch)
    except ValueError as e:
        raise SystemExit(f"invalid --timesteps: {e}") from None
    if extended.total_env_steps <= done:
        raise SystemExit(
            f"--timesteps {num_timesteps:,} is not past the run's {done:,} env steps; pass a larger budget to "
            f"train longer"
        )
    schedule = ""
    if config.lr_schedule == "linear":
        schedule = (
            "; the linear learning-rate schedule is stretched to end at the new budget, so the learning rate "
            f"steps up at env step {done:,} and then decays to 0 at {extended.total_env_steps:,}"
        )
    print(
        f"training to {extended.total_env_steps:,} env steps (was {config.total_env_steps:,}): "
        f"{extended.num_epochs} epochs of {extended.env_steps_per_epoch:,} steps in all{schedule}"
    )
    return extended


def start_processes(args: argparse.Namespace) -> None:
    """Joins the other processes of a multi-process run; before anything else touches JAX."""
    if args.coordinator or args.distributed or os.environ.get("JAX_COORDINATOR_ADDRESS"):
        try:
            distributed.initialize(args.coordinator, args.num_processes, args.process_id, args.heartbeat_timeout)
        except ValueError as e:
            raise SystemExit(str(e)) from None


def train_command(args: argparse.Namespace) -> int:
    if args.local_processes:
        return distributed.launch_local(_without_launcher_flag(args.argv), args.local_processes)
    run_dir = common.check_run_dir(args.run_dir)
    overrides = _config_overrides(args)
    primary = distributed.is_primary()
    # All checks first: a start that fails here leaves nothing behind. Every process checks
    # (read-only); if one refuses, all stop.
    refused = None
    try:
        if args.resume:
            env, config, record, restore = _resumed_run(args, run_dir, overrides)
        else:
            env, config, record, restore = _fresh_run(args, run_dir, overrides)
    except SystemExit as e:
        refused = e
    if distributed.any_process(refused is not None):
        raise refused or SystemExit("another process refused to start (its output says why)")
    if not primary:
        return _train(args, run_dir, env, config, record, restore)
    created = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        lock = ckpt.DirectoryLock(run_dir, "run directory")
    except ckpt.DirectoryInUse as e:
        raise SystemExit(str(e)) from None
    try:
        replace_text(run_dir / RUN_FILE, json.dumps(record, indent=2) + "\n")  # never half-written
        return _train(args, run_dir, env, config, record, restore)
    except BaseException:
        if not args.resume and not ckpt.step_dirs(run_dir / CHECKPOINTS) and not _logged_rows(run_dir):
            _remove_unstarted(run_dir, created)
        raise
    finally:
        lock.release()


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


def _remove_unstarted(run_dir: pathlib.Path, created: bool) -> None:
    """Undoes a start that saved nothing, so the corrected command runs as if it were the first."""
    for name in (RUN_FILE, "metrics.csv", "metrics.jsonl"):
        (run_dir / name).unlink(missing_ok=True)
    if created:
        shutil.rmtree(run_dir, ignore_errors=True)


def _train(args, run_dir, env, config, record, restore) -> int:
    env_id = record["env"]
    metrics_path = run_dir / f"metrics.{record['metrics_format']}"
    primary = distributed.is_primary()
    hooks = []
    if primary:  # process 0 alone writes files
        if restore is None and args.resume:
            drop_rows_after(metrics_path, 0)  # the epochs logged before a kill that came before any save
        hooks.append(CSVLogger(metrics_path) if record["metrics_format"] == "csv" else JSONLLogger(metrics_path))
        if not args.quiet:
            hooks.append(ConsoleLogger())
        if record.get("tensorboard") or args.tensorboard:
            hooks.append(TensorBoardLogger(run_dir / "tensorboard"))
    resume_hint = f"gymjax train --run-dir {shlex.quote(str(run_dir))} --resume" + distributed.same_processes_flags()
    try:
        make_policy, params, _ = train(
            config,
            env,
            hooks=hooks,
            checkpoint_dir=run_dir / CHECKPOINTS,
            restore_checkpoint_path=restore,
            progress_bar=not args.quiet,
        )
    except TrainingStopped as e:
        if not primary:
            return e.exit_code
        _plot(run_dir, metrics_path, env_id)
        if e.checkpoint is None:
            print(f"stopped at epoch {e.epoch}, before any checkpoint; run the same command again to start over")
        else:
            print(f"stopped at epoch {e.epoch}, env step {e.env_steps:,}; resume with: {resume_hint}")
        return e.exit_code
    except KeyboardInterrupt:
        steps = ckpt.step_dirs(run_dir / CHECKPOINTS)
        where = f"the latest checkpoint is epoch {steps[-1]}" if steps else "no checkpoint was saved"
        print(f"stopped at once, without saving the epoch in flight; {where}; resume with: {resume_hint}")
        return 130
    except ckpt.CheckpointError as e:
        raise SystemExit(str(e)) from None
    except OSError as e:  # a metrics or TensorBoard write
        if ckpt.disk_error(e) is None:
            raise
        intact = ckpt.step_dirs(run_dir / CHECKPOINTS)
        raise SystemExit(
            f"could not write {e.filename or 'to ' + str(run_dir)}: {e.strerror}; intact checkpoints: "
            f"{', '.join(map(str, intact)) or 'none'}"
        ) from None
    except Exception as e:
        if jax.process_count() == 1:
            raise
        _process_failed(e, run_dir, resume_hint)
    if not primary:
        return 0
    _plot(run_dir, metrics_path, env_id)
    if record.get("video", True) and args.video:
        policy = make_policy(params, deterministic=True)
        video_env, steps = _video_env(env, config)
        path, total = artifacts.record_video(
            video_env, lambda obs: policy(obs)[0], run_dir / "policy.mp4", seed=config.seed, max_steps=steps
        )
        print(f"video: {path} (episode return {total:.1f})")
    return 0


# How a collective with a dead process fails, depending on which one was in flight.
PEER_FAILURES = ("Gloo", "heartbeat", "Barrier failed", "Connection reset", "coordination service", "NCCL")


def _process_failed(error: Exception, run_dir: pathlib.Path, resume_hint: str) -> None:
    """An error in one process of several: say so in one line (with the traceback unless another
    process died), then leave at once. The others cannot go on without this one, and JAX's own
    shutdown would wait for a dead process (a heartbeat timeout), then abort with a C++ trace."""
    text = str(error)
    peer = any(marker in text for marker in PEER_FAILURES)
    if not peer:
        traceback.print_exc()
    steps = ckpt.step_dirs(run_dir / CHECKPOINTS)
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


def _plot(run_dir: pathlib.Path, metrics_path: pathlib.Path, env_id: str) -> None:
    rows = artifacts.read_metrics(metrics_path)
    if rows:
        curve = artifacts.plot_learning_curve(rows, run_dir / "learning_curve.png", f"PPO on {env_id}")
        print(f"learning curve: {curve}")


@dataclasses.dataclass(frozen=True)
class SavedPolicy:
    """A run directory's newest intact policy, with the env and config it was trained with."""

    env_id: str
    env: Env
    config: PPOConfig
    policy: Any
    meta: dict[str, Any]


def _saved_policy(run_dir: pathlib.Path, deterministic: bool = True) -> SavedPolicy:
    run = _read_run(common.check_run_dir(run_dir))
    env = common.make_env(run["env"], run["env_kwargs"])
    try:
        policy, meta = load_policy_and_meta(run_dir / CHECKPOINTS, deterministic=deterministic)
    except (FileNotFoundError, ckpt.CheckpointError) as e:
        raise SystemExit(f"{run_dir}: {e}") from None
    return SavedPolicy(run["env"], env, PPOConfig.from_dict(run["config"]), policy, meta)


def eval_command(args: argparse.Namespace) -> int:
    if args.reference and args.stochastic:
        raise SystemExit("--reference plays the policy's mode on Gymnasium's env; drop --stochastic")
    saved = _saved_policy(args.run_dir, deterministic=not args.stochastic)
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
    print(json.dumps(summary))
    return 0


def render_command(args: argparse.Namespace) -> int:
    if args.out is not None and args.out.suffix.lower() != ".mp4":
        raise SystemExit(f"--out {args.out}: expected a .mp4 path (the video is written with ffmpeg as MP4)")
    saved = _saved_policy(args.run_dir)
    env, steps = _video_env(saved.env, saved.config)
    out = args.out or args.run_dir / "policy.mp4"
    path, total = artifacts.record_video(env, saved.policy, out, seed=args.seed, max_steps=steps)
    print(f"video: {path} (episode return {total:.1f})")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "train",
        help="train PPO into a run directory",
        description="Train PPO. Writes DIR/run.json, DIR/checkpoints/, DIR/metrics.csv, "
        "DIR/learning_curve.png and DIR/policy.mp4.",
    )
    common.add_env(p, default=None, default_help=f"the preset's, else {common.DEFAULT_ENV}")
    common.add_run_dir(p)
    p.add_argument("--preset", type=_preset_name, metavar="NAME",
                   help=f"start from a tuned config: {presets.listing()}; the flags below override its fields")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its latest checkpoint")
    p.add_argument("--metrics-format", choices=("csv", "jsonl"), default="csv", help="metrics file format (default: csv)")
    p.add_argument("--tensorboard", action="store_true", help="also write TensorBoard scalars to DIR/tensorboard")
    p.add_argument("--video", action=argparse.BooleanOptionalAction, default=True, help="render the final policy")
    p.add_argument("--quiet", action="store_true", help="no progress bar or per-epoch lines")
    group = p.add_argument_group(
        "several processes (jax.distributed; see the README's 'Several processes and hosts')"
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
    _add_config_flags(p)  # --seed among them: the config's
    p.set_defaults(run=train_command, setup=start_processes)

    p = commands.add_parser("eval", help="evaluate a run directory's latest checkpoint; prints one JSON line")
    common.add_run_dir(p)
    p.add_argument("--episodes", type=common.positive_int, default=16,
                   help="episodes, played in parallel (default: %(default)s)")
    p.add_argument("--stochastic", action="store_true", help="sample actions instead of the policy's mode")
    p.add_argument("--reference", action="store_true",
                   help="also play the policy on Gymnasium's own env (Ant-v5 for JaxAnt-v0, CartPole-v1 for "
                        "JaxCartPole-v0, ...) and report it beside, under \"reference\"")
    common.add_seed(p)
    p.set_defaults(run=eval_command)

    p = commands.add_parser("render", help="render a run directory's latest policy to an mp4")
    common.add_run_dir(p)
    p.add_argument("--out", type=pathlib.Path, default=None, help="video path (default: DIR/policy.mp4)")
    common.add_seed(p)
    p.set_defaults(run=render_command)
