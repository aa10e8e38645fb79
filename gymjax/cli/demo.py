"""``gymjax demo``: a vector env stepped with random actions; its throughput, and a short video of one env."""

from __future__ import annotations

import argparse
import pathlib
import time
from typing import Any

import gymnasium
import numpy as np
from tqdm import tqdm

from gymjax.cli import common
from gymjax.trainers.runs import artifacts

# Random actions drawn once and cycled: sampling a fresh batch every step would time NumPy, not the env.
ACTION_BATCHES = 8


def demo_command(args: argparse.Namespace) -> int:
    env_kwargs, _ = common.env_from_args(args)  # a wrong option fails here, before anything compiles
    env = gymnasium.make_vec(args.env, num_envs=args.num_envs, **env_kwargs)
    env.action_space.seed(args.seed)

    start = time.perf_counter()
    env.reset(seed=args.seed)
    env.step(env.action_space.sample())
    compile_s = time.perf_counter() - start
    print(f"{args.env}: {args.num_envs} envs, options {env_kwargs}; first reset+step (compile) {compile_s:.1f} s")

    batch = [env.action_space.sample() for _ in range(ACTION_BATCHES)]
    start = time.perf_counter()
    episodes = 0
    for t in tqdm(range(args.steps), desc="stepping", unit="batch"):
        _, _, terminated, truncated, _ = env.step(batch[t % len(batch)])
        episodes += int(np.sum(terminated | truncated))
    elapsed = time.perf_counter() - start
    sps = args.steps * args.num_envs / elapsed
    print(f"{args.steps * args.num_envs} env steps in {elapsed:.2f} s: {sps:,.0f} steps/s ({episodes} episodes ended)")
    env.close()

    if args.video_steps > 0:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"{args.env}.mp4"
        write_video(args.env, env_kwargs, path, args.video_steps, args.seed)
        print(f"video: {path}")
    return 0


def write_video(env_id: str, env_kwargs: dict[str, Any], path: pathlib.Path, steps: int, seed: int) -> None:
    """``steps`` frames of one env under random actions, reset whenever an episode ends; a video that
    cannot be written whole (a full disk) is a one-line error and leaves ``path`` as it was."""
    env = gymnasium.make(env_id, render_mode="rgb_array", width=320, height=240, **env_kwargs)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    try:
        with artifacts.video_writer(path, env.metadata.get("render_fps", 20)) as append:
            for _ in tqdm(range(steps), desc="rendering", unit="frame"):
                append(env.render())
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                if terminated or truncated:
                    env.reset()
    except OSError as e:
        raise SystemExit(f"could not write the video {path}: {e.strerror or e}") from None
    finally:
        env.close()


def add_commands(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("demo", help="step a vector env, print throughput, write a video",
                            description=__doc__)
    common.add_env(p)
    p.add_argument("--num-envs", type=common.positive_int, default=64, help="batch size (default: %(default)s)")
    p.add_argument("--steps", type=common.positive_int, default=100,
                   help="batched steps to time (default: %(default)s)")
    p.add_argument("--video-steps", type=common.nonnegative_int, default=60,
                   help="frames of video, 0 for none (default: %(default)s)")
    common.add_seed(p)
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/demo"),
                   help="folder the video is written to (default: %(default)s)")
    p.set_defaults(run=demo_command)
