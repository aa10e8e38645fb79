"""Training: return on Gymnasium's env against env steps and wall time, time to a target, steps/s.

Each (task, arm, seed) trains alone in a process of its own (:func:`benchmarks.common.run_process`:
a timeout or a stall, the whole process group killed), for a budget of env steps (``--steps``;
default: the arm's own, a preset's ``num_timesteps`` or rl-zoo's ``n_timesteps``) and at most
``--minutes`` of wall time. It hands out snapshots (wall time since its launch, env steps, its
policy in a file; :mod:`benchmarks.arms`). When every run has trained, up to ``--points`` snapshots
of each, spread over its wall time, play ``--episodes`` deterministic episodes of Gymnasium's own
env: the curves. Evaluating apart keeps it out of the trainers' wall time and judges every arm on
the same env.

A task is a registered env id or a gymjax preset's name (``ant_hour``: JaxAnt-v0 with that
preset); the arms are :func:`benchmarks.arms.arms_for`'s table. The committed results:

    python -m benchmarks training --env cartpole pendulum inverted_pendulum --arms gymjax --seeds 0 1 2 --stem presets
    python -m benchmarks training --env ant --arms gymjax sb3 brax --minutes 15 --stem time_to_return
    python -m benchmarks training --env ant_hour --arms gymjax --minutes 60 --stem time_to_return_hour
    python -m benchmarks training --env JaxAnt-v0 --arms gymjax_defaults gymjax_sb3 gymjax_sb3_tanh sb3 sb3_jax \\
        --steps 150000 --seeds 0 1 2 --stem learning
    python -m benchmarks training --env ant --arms gymjax brax_gymjax sb3 sb3_jax --steps 300000 --stem ppo_train
    python -m benchmarks training --stem presets --report-only   # the report again, from the record

The last but one is the PPO training speed comparison (gymjax against Brax at the same settings
and SB3), its training steps/s column.

Brax 0.14.2 calls ``jax.device_put_replicated``, which JAX 0.10 removed, so the ``brax`` arm runs
under another interpreter (``--brax-python``, or ``$GYMJAX_BRAX_PYTHON``) whose venv pins an
older JAX; without one it is reported skipped. That venv, from the repository root:

    python -m venv .venv-brax && .venv-brax/bin/pip install "brax==0.14.2" "jax<0.10" "jaxlib<0.10" \\
        gymnasium imageio tqdm
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import math
import os
import pathlib
import sys
import time
import warnings

import numpy as np
from tqdm import tqdm

from benchmarks import arms as arms_table
from benchmarks import common

DEFAULT_ARMS = ["gymjax", "sb3"]
# Targets where Gymnasium's spec has no reward_threshold (Pendulum: the customary -200) or where
# this project's is lower (Ant: 4,000 within 15 minutes on a 2-core CPU; Gymnasium's is 6,000).
TARGETS = {"Pendulum-v1": -200.0, "Ant-v5": 4000.0}
RETURN_KIND = "mean return of {episodes} deterministic episodes of Gymnasium's env per snapshot"
RATE_KIND = "between the first and the last snapshot (the first epoch's compilation left out)"
GRID = 400  # points of the plotted curves
# A run writes a snapshot every few minutes at most (its first after compiling); half an hour without
# one is a hang, not load.
STALL_S = 1800.0
DIAGNOSTIC_POINTS = 100  # epochs of a run's losses kept in its record, evenly spaced
# The losses' panels under the returns (a row each pair): what a curve's fall shows first.
DIAGNOSTIC_PANELS = (("losses/approx_kl", "approx KL"), ("losses/clip_fraction", "clip fraction"),
                     ("losses/entropy", "entropy"), ("losses/value", "value loss"))


def target_of(reference_id: str) -> float | None:
    import gymnasium

    return TARGETS.get(reference_id, gymnasium.spec(reference_id).reward_threshold)


# -- the command line -----------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", nargs="+", metavar="TASK", help="registered env ids or gymjax preset names")
    p.add_argument(
        "--arms",
        nargs="+",
        default=DEFAULT_ARMS,
        help="arms of benchmarks.arms.arms_for (default: %(default)s)",
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--steps", type=int, help="env steps per run (default: each arm's own budget)")
    p.add_argument(
        "--minutes", type=float, help="wall-clock budget per run, imports and compilation included"
    )
    p.add_argument(
        "--target", type=float, help="the return to reach (default: per env, Gymnasium's or TARGETS)"
    )
    p.add_argument("--episodes", type=int, default=10, help="Gymnasium episodes per evaluated snapshot")
    p.add_argument(
        "--points", type=int, default=20, help="snapshots evaluated per run, spread over its wall time"
    )
    p.add_argument(
        "--engine", help="the JAX env's engine option (e.g. mujoco, mjx), for the arms that build it"
    )
    p.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE",
                   help="PPOConfig fields laid over the preset of the gymjax arms, to try other settings "
                        "(e.g. update_epochs=5 learning_rate=1e-3)")  # fmt: skip
    p.add_argument("--brax-python", default=os.environ.get("GYMJAX_BRAX_PYTHON"),
                   help="interpreter of a venv with Brax 0.14.2 and jax<0.10 "
                        "(default: $GYMJAX_BRAX_PYTHON)")  # fmt: skip
    p.add_argument(
        "--timeout", type=float,
        help="seconds per run before it is killed (default: --minutes' budget + 10 min; none for a budget of steps)",
    )
    p.add_argument(
        "--stall", type=float, default=STALL_S,
        help="seconds a run may go without a new snapshot (or a worker without a new evaluation) before it is "
             "killed (default: %(default)g)",
    )  # fmt: skip
    p.add_argument("--stem", default="training", help="results/<stem>.{json,md,png} (default: %(default)s)")
    p.add_argument("--out", type=pathlib.Path, default=common.RESULTS, help="results folder")
    p.add_argument(
        "--work", type=pathlib.Path, default=common.REPO / "runs" / "training", help="snapshots go here"
    )
    p.add_argument("--report-only", action="store_true", help="rewrite <stem>.md and .png from <stem>.json")


def check(args: argparse.Namespace) -> dict[str, dict[str, arms_table.Arm]]:
    """The arms of every task; SystemExit with the reason on a bad flag, before any work."""
    if args.report_only:
        return {}
    if not args.env:
        raise SystemExit("training: --env TASK... is required (env ids or preset names)")
    for flag in ("steps", "minutes", "episodes", "points", "timeout", "stall"):
        value = getattr(args, flag)
        if value is not None and value <= 0:
            raise SystemExit(f"training: --{flag} must be > 0, got {value}")
    if args.brax_python and not pathlib.Path(args.brax_python).is_file():
        raise SystemExit(f"training: --brax-python {args.brax_python} is not a file")
    kwargs = {"engine": args.engine} if args.engine else {}
    changes = {}
    for item in args.set:
        field, sep, text = item.partition("=")
        if not sep or not field:
            raise SystemExit(f"training: --set takes FIELD=VALUE (a PPOConfig field), got {item!r}")
        try:
            changes[field] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            changes[field] = text  # a string field: lr_schedule=linear
    tasks = {}
    for task in args.env:
        try:
            tasks[task] = arms_table.arms_for(task, kwargs, changes)
        except (ValueError, TypeError) as err:
            raise SystemExit(f"training: {err}") from None
        unknown = [a for a in args.arms if a not in tasks[task]]
        if unknown:
            raise SystemExit(f"training: no arm {unknown} for {task}; its arms: {list(tasks[task])}")
    return tasks


def main(args: argparse.Namespace, argv: list[str]) -> int:
    tasks = check(args)
    if args.report_only:
        record = json.loads((args.out / f"{args.stem}.json").read_text())
        record["summary"] = summary(record["results"])
    else:
        settings = {
            k: v for k, v in vars(args).items() if k not in ("out", "work", "brax_python", "report_only")
        }
        record = common.new_record("training", argv, title(settings), settings)
        results = run_all(args, tasks)
        common.finish(record, results, summary(results))
    paths = common.write(record, markdown(record), plot, args.stem, args.out)
    print("wrote " + ", ".join(map(str, paths)))
    return 0


def title(settings: dict) -> str:
    """``"Training: ant, 15 min, 1 seed"``: the tasks and the budget."""
    budget = [f"{settings['steps']:,} steps"] if settings.get("steps") else []
    budget += [f"{settings['minutes']:g} min"] if settings.get("minutes") else []
    seeds = len(settings["seeds"])
    return (
        f"Training: {', '.join(settings['env'])}, {', '.join(budget or ['own budgets'])}, "
        f"{seeds} seed{'s' * (seeds > 1)}"
    )


# -- the runner -----------------------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    """One (task, arm, seed): its folder and how to start its worker."""

    task: str
    arm: arms_table.Arm
    seed: int
    directory: pathlib.Path
    python: str


def run_all(args: argparse.Namespace, tasks: dict) -> dict:
    brax_skip = brax_missing(args.brax_python)
    budget_s = args.minutes * 60 if args.minutes else None
    timeout = run_timeout(args.timeout, budget_s)
    results: dict = {
        "episodes": args.episodes,
        "return_kind": RETURN_KIND.format(episodes=args.episodes),
        "tasks": {},
    }
    runs: list[Run] = []
    for task, table in tasks.items():
        arms = {name: table[name] for name in args.arms}
        first = next(iter(arms.values()))
        entry = results["tasks"][task] = {
            "env_id": first.env_id, "reference_id": first.reference_id,
            "target": args.target if args.target is not None else target_of(first.reference_id), "arms": {},
        }  # fmt: skip
        for name, arm in arms.items():
            skipped = arm.missing or (brax_skip if arm.kind == "brax" else None)
            entry["arms"][name] = {"label": arm.label, "kind": arm.kind, "settings": arm.settings, "skipped": skipped,
                                   "runs": []}  # fmt: skip
            if skipped is None:
                python = args.brax_python if arm.kind == "brax" else sys.executable
                runs += [
                    Run(task, arm, s, args.work / args.stem / f"{task}-{name}-seed{s}", python)
                    for s in args.seeds
                ]
    finished = []
    with tqdm(runs, desc="training", unit="run") as bar:
        for run in bar:
            finished.append(train(run, args, budget_s, timeout, bar))
            results["tasks"][run.task]["arms"][run.arm.name]["runs"].append(finished[-1])
    for run, done in zip(tqdm(runs, desc="evaluating", unit="run"), finished):
        if done["error"] is None:
            evaluate(run, done, timeout, args.stall)
    for entry in results["tasks"].values():
        for arm in entry["arms"].values():
            if arm["runs"] and arm["runs"][0].get("settings"):
                arm["settings"] = arm["runs"][0].pop("settings")
            for done in arm["runs"]:
                done.pop("settings", None)
    return results


def run_timeout(timeout: float | None, budget_s: float | None) -> float:
    """A run's wall-clock limit: ``--timeout``, else a time budget's own and 10 minutes, else none. A
    budget of env steps has no wall time of its own: under load (a study beside it) an hour's steps
    take two, and a fixed limit killed such runs with nothing to show; the stall limit ends a hang."""
    return timeout or (budget_s + 600 if budget_s else math.inf)


def brax_missing(python: str | None) -> str | None:
    """Why the brax arm cannot run (None: it can): no interpreter given, or Brax not importable there."""
    if not python:
        return (
            "no --brax-python: Brax 0.14.2 needs jax<0.10 in a venv of its own (see benchmarks/training.py)"
        )
    done = common.run_process([python, "-c", "import brax, gymjax"], timeout_s=300)
    return None if done.ok else f"{python} cannot import brax and gymjax: {done.error.splitlines()[-1]}"


def spec(run: Run, args: argparse.Namespace, budget_s: float | None) -> pathlib.Path:
    path = run.directory / "run.json"
    path.write_text(json.dumps({
        "arm": dataclasses.asdict(run.arm), "seed": run.seed, "steps": args.steps, "budget_s": budget_s,
        "dir": str(run.directory), "launched": time.time(), "episodes": args.episodes, "points": args.points,
    }))  # fmt: skip
    return path


def train(run: Run, args: argparse.Namespace, budget_s: float | None, timeout: float, bar: tqdm) -> dict:
    """Trains one run in its own process; its snapshots' clock starts at this launch."""
    import shutil

    shutil.rmtree(run.directory, ignore_errors=True)  # a rerun's snapshots must not mix with old ones
    run.directory.mkdir(parents=True)
    snapshots: list[dict] = []
    follow = common.follow_lines(run.directory / "snapshots.jsonl", snapshots)

    def poll() -> bool:
        if not follow():
            return False
        last = snapshots[-1]
        bar.set_postfix_str(
            f"{run.task} {run.arm.name} seed {run.seed}: {last['env_steps']:,} steps, {last['wall_s']:.0f} s"
        )
        return True

    load = os.getloadavg()[0]
    path = spec(run, args, budget_s)
    done = common.run_process([run.python, "-m", "benchmarks.arms", "train", str(path)], timeout, poll=poll,
                              stall_s=args.stall)  # fmt: skip
    settings_file = run.directory / "settings.json"
    result = {"seed": run.seed, "load_1min": [load, os.getloadavg()[0]], "snapshots": len(snapshots),
              "error": done.error,
              "settings": json.loads(settings_file.read_text()) if settings_file.exists() else None}  # fmt: skip
    if snapshots:
        first, last = snapshots[0], snapshots[-1]
        rate = (
            (last["env_steps"] - first["env_steps"]) / (last["wall_s"] - first["wall_s"])
            if len(snapshots) > 1
            else None
        )
        result |= {"wall_s": last["wall_s"], "env_steps": last["env_steps"], "steps_per_s": rate}
    epochs: list[dict] = []  # a gymjax arm's losses by epoch (benchmarks.arms.DIAGNOSTICS)
    common.read_new_lines(run.directory / "diagnostics.jsonl", 0, epochs.append)
    if epochs:
        kept = np.unique(np.linspace(0, len(epochs) - 1, min(len(epochs), DIAGNOSTIC_POINTS)).round().astype(int))
        result["diagnostics"] = [epochs[i] for i in kept]
    if done.error:
        tqdm.write(f"{run.task} {run.arm.name} seed {run.seed} failed: {done.error}")
    return result


def evaluate(run: Run, result: dict, timeout: float, stall_s: float | None = None) -> None:
    """Plays the run's chosen snapshots on Gymnasium's env in a process of its own: ``result['curve']``."""
    curve: list[dict] = []
    path = run.directory / "run.json"
    done = common.run_process(
        [run.python, "-m", "benchmarks.arms", "evaluate", str(path)], timeout,
        poll=common.follow_lines(run.directory / "curve.jsonl", curve), stall_s=stall_s,
    )  # fmt: skip
    result["curve"] = [{k: c[k] for k in ("wall_s", "env_steps", "return", "return_std")} for c in curve]
    kept = run.directory / "best.json"  # a gymjax arm's best snapshot (benchmarks.arms.evaluate)
    if kept.exists():
        best = json.loads(kept.read_text())
        result["best"] = {k: best[k] for k in ("wall_s", "env_steps", "eval_return", "return", "return_std")}
    if done.error:
        result["error"] = f"evaluation: {done.error}"


# -- the report -----------------------------------------------------------------------------------


def show(values: list[float], fmt: str = ",.0f") -> str:
    """A median with its range over seeds: ``"4,905 [4,611 to 5,016]"``; ``"-"`` for none."""
    f = common.figure(values)
    if f["median"] is None:
        return "-"
    (low, high), median = f["spread"], f["median"]
    return f"{median:{fmt}}" if low == high else f"{median:{fmt}} [{low:{fmt}} to {high:{fmt}}]"


def reached(curve: list[dict], target: float | None) -> dict | None:
    """The first evaluated point whose return reaches ``target``."""
    return None if target is None else next((c for c in curve if c["return"] >= target), None)


def arm_row(arm: dict, target: float | None) -> str:
    if arm["skipped"]:
        return f"| {arm['label']} | skipped: {arm['skipped']} |" + " |" * 8  # a cell for each column
    runs = [r for r in arm["runs"] if r.get("curve")]
    hits = [reached(r["curve"], target) for r in runs]
    hit = [h for h in hits if h]
    return (
        f"| {arm['label']} | {len(runs)} | {show([r['env_steps'] for r in runs])} "
        f"| {show([r['wall_s'] for r in runs])} "
        f"| {show([r['steps_per_s'] for r in runs if r.get('steps_per_s')])} "
        f"| {show([r['curve'][-1]['return'] for r in runs], ',.1f')} "
        f"| {show([r['best']['return'] for r in runs if r.get('best')], ',.1f')} "
        f"| {show([h['wall_s'] for h in hit])} | {show([h['env_steps'] for h in hit])} | {len(hit)}/{len(runs)} |"
    )


def summary(results: dict) -> list[str]:
    """One table per task (median [min to max] over seeds) and the sentence saying how it was measured."""
    lines = []
    for task, entry in results["tasks"].items():
        target = entry["target"]
        lines += [
            (
                f"**{task}** ({entry['env_id']}; returns on Gymnasium's {entry['reference_id']}, target "
                f"{'none' if target is None else f'{target:,.0f}'}):"
            ),
            "",
            (
                "| arm | seeds | env steps | wall (s) | training steps/s | final return | best snapshot's return "
                "| time to target (s) | env steps to target | seeds reaching it |"
            ),
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [arm_row(arm, target) for arm in entry["arms"].values()] + [""]
        failed = [f"{a['label']} seed {r['seed']}: {r['error'].splitlines()[0]}"
                  for a in entry["arms"].values() for r in a["runs"] if r.get("error")]  # fmt: skip
        lines += [f"Failed: {'; '.join(failed)}.", ""] if failed else []
    lines.append(
        f"Return: {results['return_kind']}. Median over seeds, [min to max] beside it. Wall time from the "
        f"process launch, imports and compilation included; training steps/s {results.get('rate_kind', RATE_KIND)}; "
        "time to target: the first evaluated snapshot at or above it. Best snapshot (gymjax arms): the one "
        "a run directory keeps as its best policy, chosen by the trainer's own evaluation (eval/episode_return "
        "on the JAX env), its return measured on the same Gymnasium episodes as the final return's."
    )
    return lines


def markdown(record: dict) -> list[str]:
    lines = [*record["summary"], "", "## Settings", ""]  # a converted record's measured_by: in common.header
    for task, entry in record["results"]["tasks"].items():
        for name, arm in entry["arms"].items():
            lines.append(f"- {task}, {name} ({arm['label']}): `{json.dumps(arm['settings'], default=str)}`")
    lines += ["", "## Curves (each seed: wall s, env steps, return)", ""]
    for task, entry in record["results"]["tasks"].items():
        for arm in entry["arms"].values():
            for r in arm["runs"]:
                points = "; ".join(
                    f"{c['wall_s']:.0f} s, {c['env_steps']:,}, {c['return']:,.1f}" for c in r.get("curve", [])
                )
                lines.append(f"- {task}, {arm['label']}, seed {r['seed']}: {points}")
                if r.get("best"):
                    b = r["best"]
                    lines.append(f"  - best snapshot: {b['wall_s']:.0f} s, {b['env_steps']:,}, {b['return']:,.1f} "
                                 f"(the trainer's evaluation: {b['eval_return']:,.1f})")
                if r.get("diagnostics"):
                    tenth = r["diagnostics"][:: max(1, len(r["diagnostics"]) // 10)]
                    names = ", ".join(label for _, label in DIAGNOSTIC_PANELS)
                    points = "; ".join(f"{d['env_steps']:,}: " + ", ".join(
                        f"{d.get(k, float('nan')):.3g}" for k, _ in DIAGNOSTIC_PANELS) for d in tenth)  # fmt: skip
                    lines.append(f"  - losses by env steps ({names}): {points}")
    return lines


def band(runs: list[dict], x: str, grid: np.ndarray) -> tuple[np.ndarray, ...]:
    """Median, min and max over seeds of the return held at each ``grid`` value of ``x``.

    A seed holds the return of its latest evaluated snapshot (nothing before its first); the
    median is drawn only where every seed holds one, so a late-starting seed cannot pull it down.
    """
    held = []
    for r in runs:
        latest = np.searchsorted([c[x] for c in r["curve"]], grid, side="right") - 1
        held.append(
            np.where(latest >= 0, np.array([c["return"] for c in r["curve"]])[np.maximum(latest, 0)], np.nan)
        )
    held = np.array(held)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column no seed reaches stays NaN
        return np.median(held, 0), np.nanmin(held, 0), np.nanmax(held, 0)


def diagnosed(entry: dict) -> list[tuple[int, dict]]:
    """(arm index, run) of a task's runs that logged their losses."""
    arms = entry["arms"].values()
    return [(i, r) for i, arm in enumerate(arms) for r in arm["runs"] if r.get("diagnostics")]


def plot_diagnostics(axes, task: str, entry: dict) -> None:
    """Each seed's losses by env steps, a line each: two rows of two panels."""
    for ax, (key, label) in zip(axes.flat, DIAGNOSTIC_PANELS):
        for i, r in diagnosed(entry):
            points = [(d["env_steps"], d[key]) for d in r["diagnostics"] if key in d]
            ax.plot(*zip(*points), color=f"C{i}", lw=0.9, alpha=0.8, label=f"seed {r['seed']}")
            ax.annotate(f"{r['seed']}", points[-1], fontsize=7, color=f"C{i}")
        ax.set_yscale("log" if key in ("losses/approx_kl", "losses/value") else "linear")
        ax.set_title(f"{task}: {label}, each seed", fontsize=10)
        ax.set_xlabel("env steps")
        ax.grid(alpha=0.3)


def plot(record: dict, path: pathlib.Path) -> None:
    plt = common.pyplot()
    tasks = record["results"]["tasks"]
    extra = [task for task, entry in tasks.items() if diagnosed(entry)]
    fig, axes = plt.subplots(len(tasks) + 2 * len(extra), 2, figsize=(12, 3.8 * (len(tasks) + 2 * len(extra))),
                             squeeze=False)  # fmt: skip
    for n, task in enumerate(extra):
        plot_diagnostics(axes[len(tasks) + 2 * n : len(tasks) + 2 * n + 2], task, tasks[task])
    for row, (task, entry) in zip(axes, tasks.items()):
        for i, arm in enumerate(entry["arms"].values()):
            runs = [r for r in arm["runs"] if r.get("curve")]
            if not runs:
                continue
            for ax, x in zip(row, ("env_steps", "wall_s")):
                grid = np.linspace(0, max(c[x] for r in runs for c in r["curve"]), GRID)
                mid, lo, hi = band(runs, x, grid)
                ax.plot(
                    grid,
                    mid,
                    color=f"C{i}",
                    label=f"{arm['label']} ({len(runs)} seed{'s' * (len(runs) > 1)})",
                )
                ax.fill_between(grid, lo, hi, color=f"C{i}", alpha=0.2)
                ax.scatter(
                    [c[x] for r in runs for c in r["curve"]],
                    [c["return"] for r in runs for c in r["curve"]],
                    color=f"C{i}",
                    s=6,
                    alpha=0.6,
                )  # the evaluated snapshots themselves
        low, high = row[0].get_ylim()
        # a target far above the curves (a short run's) would flatten them: named in the title instead
        shown = entry["target"] is not None and entry["target"] <= high + (high - low)
        for ax, xlabel in zip(row, ("env steps", "wall time (s) from the process launch")):
            if shown:
                ax.axhline(entry["target"], color="gray", lw=0.8, ls="--")
            ax.set_xlabel(xlabel)
            ax.set_xlim(left=0)
            ax.grid(alpha=0.3)
        row[0].set_ylabel(f"{entry['reference_id']} return")
        target = (
            "dashed: target" if shown else "no target" if entry["target"] is None
            else f"target {entry['target']:,.0f} off the scale"
        )  # fmt: skip
        row[0].set_title(f"{task}: median over seeds, band min to max; {target}", fontsize=10)
    # one legend under the panels: inside one it hides the early curves
    labels = {label: handle for ax in axes[: len(tasks), 0] for handle, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(labels.values(), labels.keys(), loc="lower center", ncol=2, fontsize=8, frameon=False)
    legend_in = 0.2 * ((len(labels) + 1) // 2) + 0.15  # inches: a line per two arms, and a margin
    fig.set_figheight(fig.get_figheight() + legend_in)
    fig.tight_layout(rect=(0, legend_in / fig.get_figheight(), 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
