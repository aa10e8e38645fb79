"""The ``gymjax`` command line.

- ``gymjax train``: trains PPO into a run directory (checkpoints, metrics,
  learning curve, video); ``--resume`` continues it.
- ``gymjax eval`` / ``gymjax render``: a run directory's latest checkpoint,
  evaluated or rendered to a video.
- ``gymjax crosscheck``: GAE and episode metrics computed by gymjax, SB3 and
  the torch agent on one rollout; exits non-zero on a mismatch.
- ``gymjax demo``: steps a vector env with random actions, prints throughput
  and writes a short video of one env.
- ``gymjax bench``: the benchmark harness (``python -m benchmarks``), from a
  source checkout; its options are the harness's (``gymjax bench --help``).
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import time

import gymnasium
import jax
import numpy as np
from tqdm import tqdm

import gymjax  # noqa: F401  (registers the ids)
from gymjax import crosscheck
from gymjax.cli import run as ppo_cli


def demo(args: argparse.Namespace) -> int:
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = gymnasium.make_vec(args.env, num_envs=args.num_envs, solver=args.solver)
    actions = np.random.default_rng(args.seed)

    start = time.perf_counter()
    env.reset(seed=args.seed)
    env.step(env.action_space.sample())
    compile_s = time.perf_counter() - start
    print(f"{args.env}: {args.num_envs} envs, solver={args.solver!r}; first reset+step (compile) {compile_s:.1f} s")

    batch = [env.action_space.sample() for _ in range(8)]
    start = time.perf_counter()
    episodes = 0
    for t in tqdm(range(args.steps), desc="stepping", unit="batch"):
        _, _, terminated, truncated, _ = env.step(batch[t % len(batch)])
        episodes += int(np.sum(terminated | truncated))
    elapsed = time.perf_counter() - start
    sps = args.steps * args.num_envs / elapsed
    print(f"{args.steps * args.num_envs} env steps in {elapsed:.2f} s: {sps:,.0f} steps/s ({episodes} episodes ended)")

    if args.video_steps > 0:
        path = out / f"{args.env}.mp4"
        write_video(args.env, path, args.video_steps, args.seed, actions)
        print(f"video: {path}")
    env.close()
    return 0


def write_video(env_id: str, path: pathlib.Path, steps: int, seed: int, rng: np.random.Generator) -> None:
    import imageio.v2 as imageio

    env = gymnasium.make(env_id, render_mode="rgb_array", width=320, height=240)
    env.reset(seed=seed)
    fps = env.metadata.get("render_fps", 20)
    with imageio.get_writer(path, fps=fps, macro_block_size=8) as writer:
        for _ in tqdm(range(steps), desc="rendering", unit="frame"):
            writer.append_data(env.render())
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
    env.close()


def benchmarks_root() -> pathlib.Path:
    """The source checkout gymjax runs from: ``benchmarks/`` sits beside the ``gymjax`` package there."""
    return pathlib.Path(gymjax.__file__).resolve().parent.parent


def bench(options: list[str]) -> int:
    """Runs ``python -m benchmarks`` with ``options`` in a process of its own.

    The harness is a tool beside the package, not part of it: nothing under
    ``gymjax/`` imports it, so the dependency runs one way.
    """
    root = benchmarks_root()
    if not (root / "benchmarks" / "__main__.py").is_file():
        raise SystemExit(
            f"gymjax bench: no benchmarks/ beside the gymjax package ({root}); the harness ships with the "
            "source, not the wheel. Run it from a source checkout: `pip install -e .` there, then "
            "`gymjax bench` or `python -m benchmarks`."
        )
    return subprocess.call([sys.executable, "-m", "benchmarks", *options], cwd=root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gymjax", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ppo_cli.add_commands(commands)
    crosscheck.add_command(commands)

    p = commands.add_parser("demo", help="step a vector env, print throughput, write a video")
    p.add_argument("--env", default="JaxAnt-v0", help="registered id (default: %(default)s)")
    p.add_argument("--num-envs", type=int, default=64, help="batch size (default: %(default)s)")
    p.add_argument("--steps", type=int, default=100, help="batched steps to time (default: %(default)s)")
    p.add_argument("--solver", default="accurate", help="MJX solver preset: accurate | fast | reference")
    p.add_argument("--video-steps", type=int, default=60, help="frames of video, 0 for none (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/demo", help="output folder (default: %(default)s)")
    p.set_defaults(run=demo)

    # listed for --help only: main() hands `bench ...` to the harness, which parses its own options
    commands.add_parser("bench", help="run the benchmark harness (python -m benchmarks; gymjax bench --help)")

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        return bench(argv[1:])
    args = parser.parse_args(argv)
    args.argv = argv
    if getattr(args, "local_processes", None):
        return args.run(args)  # a launcher: JAX runs in the processes it starts, not here
    if hasattr(args, "setup"):
        args.setup(args)  # jax.distributed must start before anything touches JAX
    print(f"JAX {jax.__version__} on {jax.devices()[0].platform}", file=sys.stderr)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
