"""Peak memory of N envs: gymjax's native MuJoCo engine against EnvPool, each alone in a process.

    python -m benchmarks.memory                      # Humanoid at N = 4096 (about 2 minutes)
    python -m benchmarks.memory --task Ant --num-envs 1024

Each stack runs in a fresh process: its imports, ``--steps`` batched steps of random actions with
auto-reset, then the process's peak resident set (``ru_maxrss``). The same process with the imports
alone (nothing built) is the baseline each figure is set against: what the envs themselves hold.
The native engine keeps one ``MjData`` per thread and the state rows; EnvPool one ``MjData`` per env.
Writes ``benchmarks/results/memory.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
HERE = pathlib.Path(__file__).resolve().parent.parent

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
    out = subprocess.run([sys.executable, "-c", WORKER, stack, task, str(n), str(steps)], cwd=HERE,
                         capture_output=True, text=True, timeout=1800)
    if out.returncode:
        raise RuntimeError(f"{stack}: {out.stderr[-3000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="Humanoid")
    p.add_argument("--num-envs", type=int, default=4096)
    p.add_argument("--steps", type=int, default=50)
    args = p.parse_args()
    rows = {}
    for stack in ("baseline gymjax", "gymjax", "baseline envpool", "envpool"):
        rows[stack] = peak_mib(stack, args.task, args.num_envs, args.steps)
        print(stack, f"{rows[stack]:,.0f} MiB", flush=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True).stdout.strip()
    record = {"task": args.task, "num_envs": args.num_envs, "steps": args.steps, "peak_mib": rows, "commit": commit,
              "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count()}
    (RESULTS / "memory.json").write_text(json.dumps(record, indent=1))
    ours, theirs = rows["gymjax"] - rows["baseline gymjax"], rows["envpool"] - rows["baseline envpool"]
    lines = [
        f"# Peak memory: {args.task} at N = {args.num_envs:,}",
        "",
        f"Command: `python -m benchmarks.memory --task {args.task} --num-envs {args.num_envs} --steps {args.steps}` "
        f"({record['date']}, commit {commit[:10]}, {os.cpu_count()}-core CPU). Each stack alone in a fresh process: "
        f"`gymnasium.make_vec('Jax{args.task}-v0', {args.num_envs})` on the native MuJoCo engine, and "
        f"`envpool.make_gymnasium('{args.task}-v5', num_envs={args.num_envs})`, {args.steps} steps of random actions; "
        "peak resident set (ru_maxrss), and the same process with its imports alone.",
        "",
        "| stack | peak RSS (MiB) | imports alone (MiB) | the envs (MiB) |",
        "|---|---|---|---|",
        f"| gymjax (native engine) | {rows['gymjax']:,.0f} | {rows['baseline gymjax']:,.0f} | {ours:,.0f} |",
        f"| EnvPool | {rows['envpool']:,.0f} | {rows['baseline envpool']:,.0f} | {theirs:,.0f} |",
        "",
        f"The envs' own memory: gymjax {ours / theirs:.2f}x EnvPool's.",
    ]
    (RESULTS / "memory.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
