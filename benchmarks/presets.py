"""What each PPO preset reaches here: return on the JAX env and on Gymnasium's own, and when.

Each preset trains once, alone on the machine, in a process of its own, exactly as
``gymjax train --preset NAME`` would (``PPOConfig.preset(name)``), with
``reference_episodes=10``: every evaluation also plays 10 deterministic episodes of the
Gymnasium env (``CartPole-v1``, ``Pendulum-v1``, ``InvertedPendulum-v5``, ``Ant-v5``). The clock
starts with the process (imports and compilation included); the reference evaluations' own time
is taken off it, since a user's run does not play them.

Writes ``benchmarks/results/presets.{json,md,png}``. The Ant preset's wall-clock race against
the peers is ``benchmarks/time_to_return.py``; by default it is left out here.

    python -m benchmarks.presets                       # cartpole, pendulum, inverted_pendulum
    python -m benchmarks.presets --presets ant         # the Ant preset's own budget (~15 min)
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

_PROCESS_START = time.perf_counter()

if __package__ in (None, ""):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

os.environ.setdefault("MUJOCO_GL", "egl")

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
REFERENCE_EPISODES = 10
# The return that counts as solved, for "time to solve": Gymnasium's reward_threshold where it
# has one (CartPole-v1 475, InvertedPendulum-v5 950), Pendulum's customary -200; Ant's are the
# targets of benchmarks.time_to_return for each preset's budget.
SOLVED = {"cartpole": 475.0, "inverted_pendulum": 950.0, "pendulum": -200.0, "ant": 4000.0, "ant_hour": 5500.0}
DEFAULT_PRESETS = ["cartpole", "pendulum", "inverted_pendulum"]


def run_one(name: str, seed: int) -> dict:
    """Trains preset ``name`` in this process; its evaluations against wall time and env steps."""
    from gymjax.trainers.ppo import PPOConfig, presets, train

    preset = presets.get(name)
    config = PPOConfig.preset(name, seed=seed, reference_episodes=REFERENCE_EPISODES)
    rows, reference_s = [], 0.0

    def progress(env_steps, metrics):
        nonlocal reference_s
        reference_s += metrics.get("time/reference_eval_s", 0.0)
        if "eval/episode_return" in metrics:
            rows.append({
                "env_steps": int(env_steps),
                "wall_s": time.perf_counter() - _PROCESS_START - reference_s,
                "eval_return": metrics["eval/episode_return"],
                "reference_return": metrics["reference/episode_return"],
                "reference_return_std": metrics["reference/episode_return_std"],
            })

    train(config, preset.env_id, progress_fn=progress, progress_bar=True)
    return {
        "preset": name,
        "env_id": preset.env_id,
        "seed": seed,
        "settings": preset.settings,
        "wall_s": time.perf_counter() - _PROCESS_START - reference_s,
        "curve": rows,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--presets", nargs="+", default=DEFAULT_PRESETS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--report-only", action="store_true")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--out", type=pathlib.Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        args.out.write_text(json.dumps(run_one(args.one, args.seed), default=str))
        return
    path = RESULTS / "presets.json"
    record = json.loads(path.read_text()) if path.exists() else {"runs": {}}
    if not args.report_only:
        from benchmarks.harness import versions

        tmp = pathlib.Path(os.environ.get("TMPDIR", "/tmp"))
        for name in args.presets:
            load = os.getloadavg()[0]
            out = tmp / f"preset-{name}.json"
            print(f"== preset {name} (load {load:.2f})", flush=True)
            subprocess.run([sys.executable, "-m", "benchmarks.presets", "--one", name, "--seed", str(args.seed),
                            "--out", str(out)], check=True)
            run = json.loads(out.read_text()) | {"load_before": load, "load_after": os.getloadavg()[0]}
            record["runs"][name] = run
        record["machine"] = {"cpu_count": os.cpu_count()}
        record["versions"] = versions(["gymjax", "jax", "mujoco", "gymnasium"])
        path.write_text(json.dumps(record, indent=1, default=str) + "\n")
    (RESULTS / "presets.md").write_text(markdown(record))
    plot(record, RESULTS / "presets.png")
    print(f"wrote {RESULTS / 'presets.md'}")


def _first(curve: list[dict], key: str, threshold: float) -> dict | None:
    return next((c for c in curve if c[key] >= threshold), None)


def markdown(record: dict) -> str:
    lines = [
        f"# PPO presets (CPU, {record.get('machine', {}).get('cpu_count')} cores)",
        "",
        "`python -m benchmarks.presets`: each `gymjax train --preset NAME` run once, alone on the machine. Wall "
        "time from the process start (imports and compilation included). Return: the JAX env's evaluation and "
        f"{REFERENCE_EPISODES} deterministic episodes of Gymnasium's own env, at each evaluation.",
        "",
        "| preset | env (Gymnasium's) | env steps | wall (s) | final return, JAX env | final return, Gymnasium's env "
        "| solved at (Gymnasium's env) |",
        "|---|---|---|---|---|---|---|",
    ]
    from gymjax import envs

    for name, run in record["runs"].items():
        curve = run["curve"]
        last = curve[-1]
        solved = _first(curve, "reference_return", SOLVED[name])
        when = (f"{solved['reference_return']:,.0f} >= {SOLVED[name]:,.0f} at {solved['wall_s']:.0f} s, "
                f"{solved['env_steps']:,} steps" if solved else f"not {SOLVED[name]:,.0f}")
        lines.append(
            f"| {name} | {run['env_id']} ({envs.spec(run['env_id']).reference_id}) | {last['env_steps']:,} | "
            f"{run['wall_s']:.0f} | {last['eval_return']:,.1f} | {last['reference_return']:,.1f} "
            f"+- {last['reference_return_std']:,.1f} | {when} |"
        )
    lines += ["", "Settings (the fields each preset changes from PPOConfig's defaults):", ""]
    for name, run in record["runs"].items():
        lines.append(f"- {name}: `{json.dumps(run['settings'], default=str)}`")
    return "\n".join(lines) + "\n"


def plot(record: dict, path: pathlib.Path) -> None:
    from benchmarks.report import pyplot
    from gymjax import envs

    plt = pyplot()
    runs = record["runs"]
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 3.6), squeeze=False)
    for ax, (name, run) in zip(axes[0], runs.items()):
        curve = run["curve"]
        t = [c["wall_s"] for c in curve]
        ax.plot(t, [c["eval_return"] for c in curve], marker="o", ms=3, label=f"{run['env_id']} (JAX)")
        reference_id = envs.spec(run["env_id"]).reference_id
        ax.plot(t, [c["reference_return"] for c in curve], marker="s", ms=3, label=f"{reference_id} (Gymnasium)")
        ax.axhline(SOLVED[name], color="gray", lw=0.8, ls="--")
        ax.set_title(f"--preset {name}")
        ax.set_xlim(left=0)  # the start (imports, compilation) is part of the wait
        ax.set_xlabel("wall time (s), imports and compile included")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("episode return")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
