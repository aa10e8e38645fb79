"""``gymjax train | eval | render``: PPO runs kept in a run directory.

Every :class:`PPOConfig` field is a ``gymjax train`` flag (``--num-envs``,
``--learning-rate``, ``--normalize-observations/--no-normalize-observations``,
``--policy-hidden-sizes 64,64``, ...), documented by the field's own help.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import typing
from typing import Any

import jax
import numpy as np

from gymjax import envs
from gymjax.trainers import artifacts
from gymjax.trainers.checkpoint import read_meta
from gymjax.trainers.loggers import ConsoleLogger, CSVLogger, JSONLLogger, TensorBoardLogger, drop_rows_after
from gymjax.trainers.ppo import PPOConfig, load_policy, train
from gymjax.trainers.ppo.acting import evaluate
from gymjax.wrappers.training import VmapWrapper, single_env_stack

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


def _config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(PPOConfig)}
    return {k: v for k, v in vars(args).items() if k in names}


def parse_env_kwargs(pairs: list[str]) -> dict[str, Any]:
    kwargs = {}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"--env-kwargs expects KEY=VALUE pairs, got {pair!r}")
        key, text = pair.split("=", 1)
        try:
            kwargs[key] = json.loads(text)
        except json.JSONDecodeError:
            kwargs[key] = text  # a bare word, e.g. solver=fast
    return kwargs


# -- the run directory -----------------------------------------------------------------


def _read_run(run_dir: pathlib.Path) -> dict[str, Any]:
    path = run_dir / RUN_FILE
    if not path.exists():
        raise SystemExit(f"{run_dir} is not a gymjax run directory (no {RUN_FILE}); train into it first")
    return json.loads(path.read_text())


def _time_limited(env_id: str, env_kwargs: dict[str, Any], config: PPOConfig):
    """The unbatched env a policy is evaluated/rendered on, time limit and action repeat included."""
    env = envs.make(env_id, **env_kwargs)
    episode_length = config.episode_length or env.max_episode_steps
    agent_steps = -(-episode_length // config.action_repeat)
    return single_env_stack(env, agent_steps, config.action_repeat, None), agent_steps


def train_command(args: argparse.Namespace) -> int:
    run_dir = pathlib.Path(args.run_dir)
    overrides = _config_overrides(args)
    if args.resume:
        run = _read_run(run_dir)
        if overrides or args.env_kwargs:
            raise SystemExit(f"--resume continues {run_dir} as configured in {RUN_FILE}; drop {sorted(overrides)}")
        config = PPOConfig.from_dict(run["config"])
        env_id, env_kwargs = run["env"], run["env_kwargs"]
        metrics_format = run["metrics_format"]
        restore = run_dir / CHECKPOINTS
    else:
        if (run_dir / RUN_FILE).exists():
            raise SystemExit(f"{run_dir} already holds a run; pass --resume to continue it or pick another --run-dir")
        env_id, env_kwargs = args.env, parse_env_kwargs(args.env_kwargs)
        metrics_format = args.metrics_format
        try:
            config = PPOConfig(**overrides)
        except ValueError as e:
            raise SystemExit(f"invalid config: {e}") from None
        run_dir.mkdir(parents=True, exist_ok=True)
        record = {"env": env_id, "env_kwargs": env_kwargs, "metrics_format": metrics_format, "config": config.to_dict()}
        (run_dir / RUN_FILE).write_text(json.dumps(record, indent=2) + "\n")
        restore = None

    metrics_path = run_dir / f"metrics.{metrics_format}"
    if restore is not None:
        dropped = drop_rows_after(metrics_path, read_meta(restore)["env_steps"])
        if dropped:
            print(f"resuming: {dropped} metric rows logged after the latest checkpoint will be replayed")
    hooks = [CSVLogger(metrics_path) if metrics_format == "csv" else JSONLLogger(metrics_path)]
    if not args.quiet:
        hooks.append(ConsoleLogger())
    if args.tensorboard:
        hooks.append(TensorBoardLogger(run_dir / "tensorboard"))
    env = envs.make(env_id, **env_kwargs)
    make_policy, params, _ = train(
        config,
        env,
        hooks=hooks,
        checkpoint_dir=run_dir / CHECKPOINTS,
        restore_checkpoint_path=restore,
        progress_bar=not args.quiet,
    )
    curve = artifacts.plot_learning_curve(
        artifacts.read_metrics(metrics_path), run_dir / "learning_curve.png", f"PPO on {env_id}"
    )
    print(f"learning curve: {curve}")
    if args.video:
        policy = make_policy(params, deterministic=True)
        video_env, steps = _time_limited(env_id, env_kwargs, config)
        path, total = artifacts.record_video(
            video_env, lambda obs: policy(obs)[0], run_dir / "policy.mp4", seed=config.seed, max_steps=steps
        )
        print(f"video: {path} (episode return {total:.1f})")
    return 0


def _saved_policy(args: argparse.Namespace, deterministic: bool = True):
    """A run directory's env id, latest policy, and its time-limited env."""
    run_dir = pathlib.Path(args.run_dir)
    run = _read_run(run_dir)
    policy = load_policy(run_dir / CHECKPOINTS, deterministic=deterministic)
    env, steps = _time_limited(run["env"], run["env_kwargs"], PPOConfig.from_dict(run["config"]))
    return run["env"], policy, env, steps


def eval_command(args: argparse.Namespace) -> int:
    env_id, policy, env, steps = _saved_policy(args, deterministic=not args.stochastic)
    result = jax.jit(
        lambda key: evaluate(VmapWrapper(env), lambda obs, k: (policy(obs, k), {}), key, args.episodes, steps)
    )(jax.random.PRNGKey(args.seed))
    returns = np.asarray(result.episode_return)
    summary = {
        "env": env_id,
        "env_steps": read_meta(pathlib.Path(args.run_dir) / CHECKPOINTS)["env_steps"],
        "episodes": args.episodes,
        "episode_return_mean": float(returns.mean()),
        "episode_return_std": float(returns.std()),
        "episode_length_mean": float(np.mean(result.episode_length)),
    }
    print(json.dumps(summary))
    return 0


def render_command(args: argparse.Namespace) -> int:
    _, policy, env, steps = _saved_policy(args)
    out = pathlib.Path(args.out) if args.out else pathlib.Path(args.run_dir) / "policy.mp4"
    path, total = artifacts.record_video(env, policy, out, seed=args.seed, max_steps=steps)
    print(f"video: {path} (episode return {total:.1f})")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "train",
        help="train PPO into a run directory",
        description="Train PPO. Writes DIR/run.json, DIR/checkpoints/, DIR/metrics.csv, "
        "DIR/learning_curve.png and DIR/policy.mp4.",
    )
    p.add_argument("--env", default="JaxAnt-v0", help="registered id (default: %(default)s)")
    p.add_argument("--env-kwargs", nargs="*", default=[], metavar="KEY=VALUE", help="env options, e.g. solver=fast")
    p.add_argument("--run-dir", required=True, help="the run directory")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its latest checkpoint")
    p.add_argument("--metrics-format", choices=("csv", "jsonl"), default="csv", help="metrics file format (default: csv)")
    p.add_argument("--tensorboard", action="store_true", help="also write TensorBoard scalars to DIR/tensorboard")
    p.add_argument("--video", action=argparse.BooleanOptionalAction, default=True, help="render the final policy")
    p.add_argument("--quiet", action="store_true", help="no progress bar or per-epoch lines")
    _add_config_flags(p)
    p.set_defaults(run=train_command)

    p = commands.add_parser("eval", help="evaluate a run directory's latest checkpoint")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--episodes", type=int, default=16, help="episodes, played in parallel (default: %(default)s)")
    p.add_argument("--stochastic", action="store_true", help="sample actions instead of the policy's mode")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=eval_command)

    p = commands.add_parser("render", help="render a run directory's latest policy to an mp4")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--out", default=None, help="video path (default: DIR/policy.mp4)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=render_command)

