"""Peak memory of N envs: gymjax's native MuJoCo engine against EnvPool, each alone in a process.

    python -m benchmarks memory                      # Humanoid at N = 4096 (about 2 minutes)
    python -m benchmarks memory --task Ant --num-envs 1024

Each stack runs in a fresh process: its imports, ``--steps`` batched steps of random actions with
auto-reset, then the process's peak resident set (``ru_maxrss``). The same process with the imports
alone (nothing built) is the baseline each figure is set against: what the envs themselves hold.
The native engine keeps one ``MjData`` per thread and the state rows; EnvPool one ``MjData`` per env.
Writes ``<out>/memory.{json,md}``.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys

from tqdm import tqdm

from benchmarks import common

STACKS = ("baseline gymjax", "gymjax", "baseline envpool", "envpool")

WORKER = """
import resource, sys, numpy as np
stack, task, n, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
if stack in ("gymjax", "baseline gymjax"):
    import gymnasium, gymjax, jax
    if stack == "gymjax":
        env = gymnasium.make_vec(f"Jax{task}-v0", num_envs=n)
else:
    import envpool
    if stack == "envpool":
        env = envpool.make_gymnasium(f"{task}-v5", num_envs=n, num_threads=0)
if not stack.startswith("baseline"):
    env.reset(seed=0)
    low, high = env.single_action_space.low, env.single_action_space.high
    for _ in range(steps):
        env.step(rng.uniform(low, high, (n, *low.shape)).astype(np.float32))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def peak_mib(stack: str, task: str, n: int, steps: int) -> float:
    out = subprocess.run([sys.executable, "-c", WORKER, stack, task, str(n), str(steps)], cwd=common.REPO,
                         capture_output=True, text=True, timeout=1800)
    if out.returncode:
        raise RuntimeError(f"{stack}: {out.stderr[-3000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", default="Humanoid", help="a MuJoCo task both stacks have (Jax<task>-v0, <task>-v5)")
    p.add_argument("--num-envs", type=int, default=4096)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--out", type=pathlib.Path, help="output folder (default: benchmarks/results)")


def main(args: argparse.Namespace, argv: list[str]) -> int:
    settings = {"task": args.task, "num_envs": args.num_envs, "steps": args.steps}
    record = common.new_record("memory", argv, f"Peak memory: {args.task} at N = {args.num_envs:,}", settings)
    rows = {}
    for stack in tqdm(STACKS, desc="memory", unit="stack"):
        rows[stack] = peak_mib(stack, args.task, args.num_envs, args.steps)
    common.finish(record, {"peak_mib": rows}, summary(record, rows))
    for path in common.write(record, markdown(record), stem="memory", out=args.out or common.RESULTS):
        print(f"wrote {path}")
    return 0


def summary(record: dict, rows: dict[str, float]) -> list[str]:
    ours, theirs = rows["gymjax"] - rows["baseline gymjax"], rows["envpool"] - rows["baseline envpool"]
    s = record["settings"]
    return [f"{s['task']} at N = {s['num_envs']:,}: the envs' own memory is gymjax's native engine {ours:,.0f} MiB, "
            f"EnvPool {theirs:,.0f} MiB ({ours / theirs:.2f}x)."]


def markdown(record: dict) -> list[str]:
    s, rows = record["settings"], record["results"]["peak_mib"]
    ours, theirs = rows["gymjax"] - rows["baseline gymjax"], rows["envpool"] - rows["baseline envpool"]
    return [
        f"Each stack alone in a fresh process: `gymnasium.make_vec('Jax{s['task']}-v0', {s['num_envs']})` on the "
        f"native MuJoCo engine, and `envpool.make_gymnasium('{s['task']}-v5', num_envs={s['num_envs']})`, "
        f"{s['steps']} steps of random actions; peak resident set (ru_maxrss), and the same process with its "
        "imports alone.",
        "",
        "| stack | peak RSS (MiB) | imports alone (MiB) | the envs (MiB) |",
        "|---|---|---|---|",
        f"| gymjax (native engine) | {rows['gymjax']:,.0f} | {rows['baseline gymjax']:,.0f} | {ours:,.0f} |",
        f"| EnvPool | {rows['envpool']:,.0f} | {rows['baseline envpool']:,.0f} | {theirs:,.0f} |",
        "",
        f"The envs' own memory: gymjax {ours / theirs:.2f}x EnvPool's.",
    ]
