"""The MuJoCo suite: what gymjax PPO reaches on each task in a wall-clock budget, beside the published.

    python -m benchmarks training --env half_cheetah hopper walker2d swimmer --arms gymjax \\
        --minutes 15 --seeds 0 --stem suite_15min
    python -m benchmarks training --env inverted_double_pendulum reacher --arms gymjax --minutes 5 \\
        --seeds 0 --stem suite_5min
    python -m benchmarks suite --records suite_5min suite_15min    # this table, from those records

Each training record holds, per task, the curve of every seed: the return on Gymnasium's own
``*-v5`` env (10 deterministic episodes) of snapshots taken as the run goes, against wall time
from the process launch (compile included); a gymjax arm given ``--minutes`` and no step count
trains with gymjax's time budget (``train(minutes=)``). This command reads those records and sets
each task's final return at its budget beside rl-baselines3-zoo's published results
(:data:`PUBLISHED`: one run each, on MuJoCo ``-v3``, after the steps shown) and the targets the
suite is held to (:data:`TARGETS`).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib

from benchmarks import common
from benchmarks.training import show

# rl-baselines3-zoo's benchmark.md (one trained agent each, deterministic evaluation, MuJoCo -v3):
# reference id -> {algorithm: (mean return, std, training steps)}.
PUBLISHED = {
    "Ant-v5": {"PPO": (1327.2, 451.6, 1e6), "SAC": (4615.8, 1354.1, 1e6), "TD3": (5813.3, 589.8, 1e6)},
    "HalfCheetah-v5": {"PPO": (5819.1, 663.5, 1e6), "SAC": (9535.5, 100.5, 1e6), "TD3": (9655.7, 969.9, 1e6)},
    "Hopper-v5": {"PPO": (2410.4, 10.0, 1e6), "SAC": (2325.5, 1129.7, 1e6), "TD3": (3606.4, 4.0, 1e6)},
    "Walker2d-v5": {"PPO": (3478.8, 821.7, 1e6), "SAC": (3863.2, 254.3, 1e6), "TD3": (4717.8, 46.3, 1e6)},
    "Swimmer-v5": {"PPO": (281.6, 9.7, 1e6), "SAC": (345.6, 3.1, 1e6), "TD3": (359.1, 1.2, 1e6)},
    "Humanoid-v5": {"SAC": (6232.3, 279.9, 2e6), "TD3": (5566.7, 14.5, 2e6)},
}
# The suite's targets, by budget in minutes (issue 25): at 15 minutes rl-zoo's PPO (Ant: 5,000,
# a median over 3 seeds), at 5 minutes InvertedDoublePendulum and Reacher, at 60 rl-zoo's best.
TARGETS = {
    5: {"InvertedDoublePendulum-v5": 9000.0, "Reacher-v5": -5.0},
    15: {"Ant-v5": 5000.0, **{k: v["PPO"][0] for k, v in PUBLISHED.items() if "PPO" in v and k != "Ant-v5"}},
    60: {k: max(x[0] for x in v.values()) for k, v in PUBLISHED.items()},
}


# Records measured before the gymjax arm trained with gymjax's time budget: their runs trained a
# preset's step budget, which ended inside the deadline.
STEP_BUDGETED = {
    "time_to_return": "preset ant (6M steps), which ended at 13.5 min, inside the 15 minutes",
    "time_to_return_hour": "preset ant_hour (24M steps), inside the 60 minutes",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--records", nargs="+", required=True, metavar="STEM",
                   help="training records (results/<stem>.json) of gymjax runs with --minutes")  # fmt: skip
    p.add_argument("--out", type=pathlib.Path, help="output folder (default: benchmarks/results)")


def rows(records: list[dict]) -> list[dict]:
    """One row per (task, budget): the gymjax arm's runs at that budget."""
    out = []
    for record in records:
        minutes = record["settings"].get("minutes")
        if not minutes:
            raise SystemExit(f"{record['command']}: not a run with --minutes; the suite is by wall-clock budget")
        for task, entry in record["results"]["tasks"].items():
            for arm in entry["arms"].values():
                runs = [r for r in arm["runs"] if r.get("curve")]
                if arm["kind"] != "gymjax" or not runs:
                    continue
                reference = entry["reference_id"]
                out.append({
                    "task": task, "reference_id": reference, "minutes": minutes, "label": arm["label"],
                    "seeds": [r["seed"] for r in runs],
                    "final": [r["curve"][-1]["return"] for r in runs],
                    "best": [max(c["return"] for c in r["curve"]) for r in runs],
                    "env_steps": [r["env_steps"] for r in runs],
                    "curves": [r["curve"] for r in runs],
                    "target": TARGETS.get(int(minutes), {}).get(reference),
                })  # fmt: skip
    return out


def _published(reference: str, algo: str) -> str:
    entry = PUBLISHED.get(reference, {}).get(algo)
    return "-" if entry is None else f"{entry[0]:,.0f} +- {entry[1]:,.0f} ({entry[2] / 1e6:g}M)"


def table(results: dict) -> list[str]:
    lines = [
        (
            "| task | budget | seeds | gymjax PPO, final return | best snapshot | env steps | target | met "
            "| rl-zoo PPO | rl-zoo SAC | rl-zoo TD3 |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["rows"]:
        median = common.figure(r["final"])["median"]
        met = "-" if r["target"] is None else ("yes" if median >= r["target"] else "no")
        target = "-" if r["target"] is None else f"{r['target']:,.0f}"
        lines.append(
            f"| {r['reference_id']} | {r['minutes']:g} min | {len(r['seeds'])} | {show(r['final'], ',.1f')} "
            f"| {show(r['best'], ',.1f')} | {show(r['env_steps'])} | {target} | {met} | "
            + " | ".join(_published(r["reference_id"], a) for a in ("PPO", "SAC", "TD3")) + " |"
        )
    return lines


def summary(record: dict) -> list[str]:
    return [
        (
            "Return on Gymnasium's own `*-v5` env, 10 deterministic episodes, of the last snapshot of a run "
            "trained with gymjax's time budget (`--minutes`: compile, evaluations and checkpoints inside it), "
            "median [min to max] over seeds; the best snapshot beside it. rl-zoo's are its published single runs "
            "(MuJoCo `-v3`, mean +- std, after the steps shown)."
        ),
        "",
        *table(record["results"]),
    ]


def markdown(record: dict) -> list[str]:
    missing = sorted(
        {ref for targets in TARGETS.values() for ref in targets}
        - {r["reference_id"] for r in record["results"]["rows"]}
    )
    return [
        *summary(record),
        "",
        f"Records: {', '.join(f'[{s}]({s}.md)' for s in record['settings']['records'])} (settings, every curve).",
        *[f"{stem}: trained {how}, before `--minutes` chose the steps." for stem, how in STEP_BUDGETED.items()
          if stem in record["settings"]["records"]],
        *common.listed("Tasks with a target and no run here yet", [f"- {m}" for m in missing]),
    ]


def plot(record: dict, path: pathlib.Path) -> None:
    plt = common.pyplot()
    by_task: dict[str, list[dict]] = {}
    for r in record["results"]["rows"]:
        by_task.setdefault(r["reference_id"], []).append(r)
    cols = min(3, len(by_task))
    grid_rows = math.ceil(len(by_task) / cols)
    fig, axes = plt.subplots(grid_rows, cols, figsize=(4.6 * cols, 3.4 * grid_rows), squeeze=False)
    for ax, (reference, entries) in zip(axes.flat, by_task.items()):
        for i, r in enumerate(entries):
            for j, curve in enumerate(r["curves"]):
                ax.plot([c["wall_s"] / 60 for c in curve], [c["return"] for c in curve], color=f"C{i}",
                        marker=".", ms=3, lw=1, label=f"{r['minutes']:g} min budget" if j == 0 else None)  # fmt: skip
            if r["target"] is not None:
                ax.axhline(r["target"], color=f"C{i}", lw=0.8, ls="--")
        for algo, style in (("PPO", ":"), ("TD3", "-.")):
            if algo in PUBLISHED.get(reference, {}):
                ax.axhline(PUBLISHED[reference][algo][0], color="gray", lw=0.8, ls=style, label=f"rl-zoo {algo}")
        ax.set_title(reference, fontsize=10)
        ax.set_xlabel("wall time (min) from the process launch")
        ax.set_ylabel("return")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(by_task):]:
        ax.axis("off")
    fig.suptitle("gymjax PPO within a wall-clock budget on a 2-core CPU (dashed: the budget's target)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(args: argparse.Namespace, argv: list[str]) -> int:
    out = args.out or common.RESULTS
    records = []
    for stem in args.records:
        path = common.RESULTS / f"{stem}.json"
        if not path.is_file():
            raise SystemExit(f"no record {path}: run `python -m benchmarks training ... --stem {stem}` first")
        records.append(json.loads(path.read_text()))
    record = common.new_record("suite", argv, "MuJoCo suite: gymjax PPO in a wall-clock budget against rl-zoo",
                               {"records": args.records})  # fmt: skip
    results = {"rows": rows(records)}
    common.finish(record, results, summary(record | {"results": results}))
    paths = common.write(record, markdown(record), plot, "suite", out)
    print("wrote " + ", ".join(map(str, paths)))
    return 0
