"""The suite: what gymjax PPO reaches on each MuJoCo and classic-control task in a wall-clock budget,
beside the published.

    python -m benchmarks training --env half_cheetah hopper walker2d swimmer --arms gymjax \\
        --minutes 15 --seeds 0 --stem suite_15min
    python -m benchmarks training --env inverted_double_pendulum reacher --arms gymjax --minutes 5 \\
        --seeds 0 --stem suite_5min
    python -m benchmarks training --env half_cheetah hopper walker2d --arms sb3 --minutes 15 \\
        --seeds 0 --stem suite_sb3_15min
    python -m benchmarks suite --records suite_5min suite_15min suite_sb3_15min   # this table, from those

Each training record holds, per task, the curve of every seed: the return on Gymnasium's own
``*-v5`` env (10 deterministic episodes) of snapshots taken as the run goes, against wall time
from the process launch (compile included); a gymjax arm given ``--minutes`` and no step count
trains with gymjax's time budget (``train(budget=Minutes(m))``). This command reads those records and sets
each task's final return at its budget beside rl-baselines3-zoo's published results
(:data:`PUBLISHED`: one run each, on MuJoCo ``-v3`` and classic control's current versions, after the steps
shown) and the targets the suite is held to (:data:`TARGETS`). Records are read in the order given: a later
one adds seeds to an earlier one's runs of the same settings, or replaces runs of other settings (a preset retuned), and
the report lists what it replaced.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
from typing import Literal

from benchmarks import common
from benchmarks.training import show

# rl-baselines3-zoo's benchmark.md (one trained agent each, deterministic evaluation; MuJoCo -v3):
# reference id -> {algorithm: (mean return, std, training steps)}.
PUBLISHED = {
    "Ant-v5": {"PPO": (1327.2, 451.6, 1e6), "SAC": (4615.8, 1354.1, 1e6), "TD3": (5813.3, 589.8, 1e6)},
    "HalfCheetah-v5": {"PPO": (5819.1, 663.5, 1e6), "SAC": (9535.5, 100.5, 1e6), "TD3": (9655.7, 969.9, 1e6)},
    "Hopper-v5": {"PPO": (2410.4, 10.0, 1e6), "SAC": (2325.5, 1129.7, 1e6), "TD3": (3606.4, 4.0, 1e6)},
    "Walker2d-v5": {"PPO": (3478.8, 821.7, 1e6), "SAC": (3863.2, 254.3, 1e6), "TD3": (4717.8, 46.3, 1e6)},
    "Swimmer-v5": {"PPO": (281.6, 9.7, 1e6), "SAC": (345.6, 3.1, 1e6), "TD3": (359.1, 1.2, 1e6)},
    "Humanoid-v5": {"SAC": (6232.3, 279.9, 2e6), "TD3": (5566.7, 14.5, 2e6)},
    # classic control, the same env versions as Gymnasium's today
    "Acrobot-v1": {"PPO": (-73.5, 18.2, 1e6)},
    "MountainCar-v0": {"PPO": (-110.4, 19.5, 1e6)},
    "MountainCarContinuous-v0": {"PPO": (88.3, 2.6, 2e4), "SAC": (94.7, 1.1, 5e4), "TD3": (93.5, 0.1, 3e5)},
}
MUJOCO = [k for k in PUBLISHED if k.endswith("-v5")]
# The suite's targets, by budget in minutes: at 5 minutes InvertedDoublePendulum's and Reacher's
# (issue 25) and rl-zoo's PPO on classic control; at 15 and 60, the best rl-zoo reports for the task
# at 1M steps whatever the algorithm (issue 48: what a user compares a 15-minute run with; Humanoid's
# is SAC's at 2M, the only one published).
TARGETS = {
    5: {"InvertedDoublePendulum-v5": 9000.0, "Reacher-v5": -5.0,
        **{k: v["PPO"][0] for k, v in PUBLISHED.items() if k not in MUJOCO}},
    15: {k: max(x[0] for x in PUBLISHED[k].values()) for k in MUJOCO},
    60: {k: max(x[0] for x in PUBLISHED[k].values()) for k in MUJOCO},
}  # fmt: skip
# The budgets whose target the best snapshot may meet, labelled as such (issue 40: at 60 minutes "the
# best or the last snapshot"); shorter budgets are judged on the last snapshot alone.
BEST_COUNTS = {60}
# What else a row needs to be met (issue 48: "the best policy a budget buys, on every seed"):
WORST_SHARE = 0.8  # its worst seed within 20% of the target, not only its median at it
HOLD_SHARE = 0.9  # at an hour, every seed's last snapshot within 10% of the best it kept: no collapse
MIN_SEEDS = {15: 3, 60: 2}  # seeds a budget's row needs (one seed is luck)
# Seeds no study saw: a study's trials train the seeds from its base seed (0) up, so the suite's
# judged runs take theirs from here (python -m benchmarks training --seeds 1000 1001 1002).
HELD_OUT_FROM = 1000


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--records", nargs="+", required=True, metavar="STEM",
                   help="training records (results/<stem>.json) of gymjax runs with --minutes")  # fmt: skip
    p.add_argument("--out", type=pathlib.Path, help="output folder (default: benchmarks/results)")


# What identifies a run's settings across records: all but the seed and the steps a time budget chose.
_PER_RUN = ("seed", "num_timesteps", "n_timesteps")


def _records(pooled: dict, seeds) -> list[str]:
    """The records, in the order read, that the runs of ``seeds`` in ``pooled`` came from."""
    return list(dict.fromkeys(stem for seed, stem in pooled["record_of"].items() if seed in seeds))


def _signature(settings: dict | None, kind: str) -> dict:
    if kind == "gymjax":
        # A record written before a PPOConfig field existed trained at what is now its default (a new
        # field's default keeps the old behaviour), so it reads as that default, not as a change.
        from gymjax.trainers.ppo import PPOConfig

        settings = json.loads(json.dumps(PPOConfig().to_dict())) | (settings or {})
    return {k: v for k, v in (settings or {}).items() if k not in _PER_RUN}


def rows(records: dict[str, dict]) -> dict:
    """The suite from training records (stem -> record), in the order given: one row per (task, budget)
    with the gymjax arm's runs and the sb3 arm's (SB3 PPO with rl-zoo's settings, the same budget here).

    Runs of the same task, budget and arm with the same settings pool their seeds, so a record may add
    seeds to an earlier one; a later record with other settings replaces the earlier runs, which are
    kept in ``superseded`` with what changed and what they reached."""
    table: dict[tuple, dict] = {}
    superseded = []
    for stem, record in records.items():
        minutes = record["settings"].get("minutes")
        if not minutes:
            raise SystemExit(f"{record['command']}: not a run with --minutes; the suite is by wall-clock budget")
        for task, entry in record["results"]["tasks"].items():
            reference = entry["reference_id"]
            row = table.setdefault((reference, minutes), {
                "task": task, "reference_id": reference, "minutes": minutes,
                "target": TARGETS.get(int(minutes), {}).get(reference), "gymjax": None, "sb3": None,
            })  # fmt: skip
            for arm in entry["arms"].values():
                runs = [r for r in arm["runs"] if r.get("curve")]
                if arm["kind"] not in ("gymjax", "sb3") or not runs:
                    continue
                new = {"label": arm["label"], "settings": _signature(arm.get("settings"), arm["kind"]),
                       "runs": {r["seed"]: r for r in runs}, "record_of": {r["seed"]: stem for r in runs}}  # fmt: skip
                old = row[arm["kind"]]
                same = old is not None and old["settings"] == new["settings"]
                # replaced: all of the old runs where the settings changed, a seed run again where not
                replaced = {} if old is None else {s: r for s, r in old["runs"].items() if not same or s in new["runs"]}
                if replaced:
                    changed = {k: [old["settings"].get(k), new["settings"].get(k)]
                               for k in old["settings"].keys() | new["settings"].keys()
                               if old["settings"].get(k) != new["settings"].get(k)}  # fmt: skip
                    superseded.append({"reference_id": reference, "minutes": minutes, "kind": arm["kind"],
                                       "records": _records(old, replaced), "by": stem, "changed": changed,
                                       **_figures(replaced)})  # fmt: skip
                if same:  # more seeds of the same settings
                    old["runs"] |= new["runs"]
                    old["record_of"] |= new["record_of"]
                else:
                    row[arm["kind"]] = new
    for row in table.values():
        _set_aside_seen_seeds(row, superseded)
    out = []
    for row in table.values():
        for kind in ("gymjax", "sb3"):
            if row[kind] is not None:
                stems = _records(row[kind], row[kind]["runs"])
                notes = {s: records[s]["notes"][row["reference_id"]] for s in stems
                         if row["reference_id"] in records[s].get("notes", {})}  # fmt: skip
                row[kind] = {"label": row[kind]["label"], "records": stems, "notes": notes,
                             **_figures(row[kind]["runs"])}  # fmt: skip
        if row["gymjax"] is not None or row["sb3"] is not None:
            out.append(row)
    return {"rows": out, "superseded": superseded}


def _set_aside_seen_seeds(row: dict, superseded: list) -> None:
    """Once a row's gymjax runs hold the seeds its budget needs from the held-out ones, the runs on
    seeds a study may have seen leave it for ``superseded``: the row is judged on the held-out seeds
    alone, and a seed tuned on neither lifts nor sinks it."""
    g, minutes = row["gymjax"], int(row["minutes"])
    if g is None or minutes not in MIN_SEEDS:
        return
    seen = {s: r for s, r in g["runs"].items() if s < HELD_OUT_FROM}
    if not seen or len(g["runs"]) - len(seen) < MIN_SEEDS[minutes]:
        return
    superseded.append({"reference_id": row["reference_id"], "minutes": row["minutes"], "kind": "gymjax",
                       "records": _records(g, seen), "by": "the held-out seeds",
                       "changed": {"seeds": [sorted(seen), f"{HELD_OUT_FROM} and up"]}, **_figures(seen)})  # fmt: skip
    g["runs"] = {s: r for s, r in g["runs"].items() if s >= HELD_OUT_FROM}
    g["record_of"] = {s: stem for s, stem in g["record_of"].items() if s >= HELD_OUT_FROM}


def _figures(runs: dict[int, dict]) -> dict:
    runs = [runs[s] for s in sorted(runs)]
    return {
        "seeds": [r["seed"] for r in runs],
        "final": [r["curve"][-1]["return"] for r in runs],
        # the snapshot a run directory keeps (chosen by the trainer's evaluation, then played on fresh
        # Gymnasium episodes); a record from before it was kept: the curve's highest, chosen on the
        # very episodes it reports, so an optimistic figure
        "best": [r["best"]["return"] if r.get("best") else max(c["return"] for c in r["curve"]) for r in runs],
        # whether every run kept its best snapshot (then "best" is measured, not picked from the curve)
        "best_kept": bool(runs) and all(r.get("best") for r in runs),
        "env_steps": [r["env_steps"] for r in runs],
        "curves": [r["curve"] for r in runs],
    }


def _meets(median: float, target: float) -> bool:
    """Whether a median final return meets a target: higher is better on every task (Reacher's and
    the classic tasks' negative returns included)."""
    return median >= target


# What a row may lack that only more runs on held-out seeds can give, not better settings.
SEEDS_ONLY = {"seeds", "held out"}


def _judged(row: dict) -> tuple[Literal["last", "best"] | None, dict[str, str]]:
    """Which snapshot's median meets a row's target (``"last"``, or ``"best"`` where the budget lets a
    kept best count, :data:`BEST_COUNTS`; None for neither) and what the row still lacks: a phrase
    by kind (``median``, ``worst``, ``seeds``, ``held out``, ``hold``) that says by how much. A best
    picked from a curve never counts: it was chosen on the very episodes it reports."""
    g, target, minutes = row["gymjax"] or {}, row["target"], int(row["minutes"])
    finals = g.get("final", [])
    median = common.figure(finals)["median"]
    snapshot: Literal["last", "best"] | None = "last" if _meets(median, target) else None
    kept = g["best"] if g.get("best_kept") else None
    if snapshot is None and minutes in BEST_COUNTS and kept and _meets(common.figure(kept)["median"], target):
        snapshot = "best"
    lacks = {}
    if snapshot is None:
        lacks["median"] = f"the median {median:,.1f} is {_gap(median, target)} short of {_number(target)}"
    judged = kept if snapshot == "best" else finals
    floor = target - (1 - WORST_SHARE) * abs(target)
    if min(judged) < floor:
        lacks["worst"] = f"the worst seed's {min(judged):,.1f} is below {WORST_SHARE:g}x the target ({_number(floor)})"
    if len(finals) < MIN_SEEDS.get(minutes, 1):
        lacks["seeds"] = f"{len(finals)} seed(s) of the {MIN_SEEDS[minutes]} a {minutes}-minute row needs"
    seen = [s for s in g.get("seeds", []) if s < HELD_OUT_FROM]
    if minutes in MIN_SEEDS and seen:
        lacks["held out"] = (
            f"seed(s) {', '.join(map(str, seen))} may be a study's (held-out seeds start at {HELD_OUT_FROM})"
        )
    if minutes in BEST_COUNTS and kept:
        fell = [f"{s} ({last:,.1f} of {best:,.1f})" for s, last, best in zip(g["seeds"], finals, kept)
                if last < HOLD_SHARE * best]  # fmt: skip
        if fell:
            lacks["hold"] = f"seed(s) {', '.join(fell)} ended more than {1 - HOLD_SHARE:.0%} below the best they kept"
    return snapshot, lacks


def _met(row: dict) -> Literal["last", "best", False] | None:
    """Which snapshot meets a row's target with nothing lacking (:func:`_judged`): ``"last"`` or
    ``"best"``; False where something lacks; None without a target or a run."""
    if row["target"] is None or not (row["gymjax"] or {}).get("final"):
        return None
    snapshot, lacks = _judged(row)
    return False if lacks or snapshot is None else snapshot


def _gap(value: float, target: float) -> str:
    return f"{(target - value) / abs(target):.1%}"


def _number(x: float) -> str:
    """A published figure as published: whole above 100 (5,819), to a tenth below (-73.5, 0.1)."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:g}"


def _published(reference: str, algo: str) -> str:
    entry = PUBLISHED.get(reference, {}).get(algo)
    return "-" if entry is None else f"{_number(entry[0])} +- {_number(entry[1])} ({entry[2] / 1e6:g}M)"


def _thousands(steps: list[int]) -> str:
    return show([s / 1e3 for s in steps], ",.0f") + "k steps"


def table(results: dict) -> list[str]:
    lines = [
        (
            "| task | budget | seeds | gymjax PPO, final return | best snapshot | env steps | target | met "
            "| SB3 PPO here, same budget | rl-zoo PPO | rl-zoo SAC | rl-zoo TD3 |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["rows"]:
        g, sb3 = r["gymjax"] or _figures({}), r["sb3"]  # a row of SB3 alone: no gymjax figures
        met = {None: "-", "last": "yes", "best": "yes, best snapshot", False: "no"}[_met(r)]
        target = "-" if r["target"] is None else _number(r["target"])
        here = "-" if sb3 is None else f"{show(sb3['final'], ',.1f')} ({_thousands(sb3['env_steps'])})"
        lines.append(
            f"| {r['reference_id']} | {r['minutes']:g} min | {len(g['seeds'])} | {show(g['final'], ',.1f')} "
            f"| {show(g['best'], ',.1f')} | {show(g['env_steps'])} | {target} | {met} | {here} | "
            + " | ".join(_published(r["reference_id"], a) for a in ("PPO", "SAC", "TD3")) + " |"
        )
    return lines


def superseded(results: dict) -> list[str]:
    """A line for each set of runs a later record replaced: what changed, and what they had reached."""

    def change(key, values):
        return f"{key} {values[0]} -> {values[1]}"

    return [
        f"- {s['reference_id']}, {s['minutes']:g} min, {s['kind']}, {len(s['seeds'])} seed(s) in "
        f"{', '.join(s['records'])}: final {show(s['final'], ',.1f')}, best {show(s['best'], ',.1f')}; "
        f"replaced by {s['by']} "
        f"({'; '.join(change(k, v) for k, v in sorted(s['changed'].items())) or 'the same settings, run again'})"
        for s in results.get("superseded", [])
    ]


def summary(record: dict) -> list[str]:
    return [
        (
            "Return on Gymnasium's own env (`*-v5` for MuJoCo), 10 deterministic episodes, of the last snapshot "
            "of a run "
            "trained with gymjax's time budget (`--minutes`: compile, evaluations and checkpoints inside it), "
            "median [min to max] over seeds; the best snapshot beside it (the one the run kept by its own "
            "evaluation, on fresh episodes; in records from before runs kept one, the curve's highest, which is "
            "optimistic). Met: the median final return is at or above the target (rl-zoo's best algorithm at "
            f"15 and 60 minutes) and the worst seed at {WORST_SHARE:g}x it or above; at "
            f"{' and '.join(map(str, sorted(BEST_COUNTS)))} minutes the median "
            "best snapshot may meet it instead, where the runs kept one, and the column says so, and every "
            f"seed's last snapshot must be within {1 - HOLD_SHARE:.0%} of its best. A "
            + ", ".join(f"{m}-minute row needs {n} seeds" for m, n in sorted(MIN_SEEDS.items()))
            + f", all of them seeds no tuning study saw (from {HELD_OUT_FROM} on). "
            "SB3 PPO here: Stable-Baselines3's PPO "
            "with rl-zoo's settings for the task, on the same env, machine and wall-clock budget (its schedule "
            "is laid over rl-zoo's step count, so a budget ends it mid-schedule). rl-zoo's are its published "
            "single runs (MuJoCo `-v3`, classic control's current versions; mean +- std, after the steps shown)."
        ),
        "",
        *table(record["results"]),
    ]


def unmeasured(results: dict) -> list[str]:
    """A line for each target with no gymjax run of its budget yet, with what the shorter budgets
    reached (a budget's target met by a shorter run is met by that run's settings within it)."""
    reached = {(r["reference_id"], int(r["minutes"])): common.figure(r["gymjax"]["final"])["median"]
               for r in results["rows"] if r["gymjax"] is not None}  # fmt: skip
    lines = []
    for minutes, targets in sorted(TARGETS.items()):
        for reference, target in targets.items():
            if (reference, minutes) in reached:
                continue
            shorter = [(m, x) for (ref, m), x in sorted(reached.items()) if ref == reference and m < minutes]
            so_far = "; ".join(
                f"{m} min reached {x:,.1f}{', already past it' if _meets(x, target) else ''}" for m, x in shorter
            )
            lines.append(
                f"- {reference}, {minutes} min (target {_number(target)}): " + (so_far or "no run yet")
            )
    return lines


def missed(results: dict) -> list[str]:
    """A line for each row whose median final return misses its target: what it reached, and why
    (the notes kept with its records, :mod:`benchmarks.note`), or that no one has said why yet."""
    lines = []
    for r in results["rows"]:
        if _met(r) is not False:
            continue
        snapshot, lacks = _judged(r)
        why = " ".join(r["gymjax"]["notes"].values())
        if not why:  # a row short of seeds alone says what would close it; a shortfall needs a note
            why = "What remains is its runs on held-out seeds." if set(lacks) <= SEEDS_ONLY else "Not explained yet."
        lines.append(
            f"- {r['reference_id']}, {r['minutes']:g} min: {show(r['gymjax']['final'], ',.1f')} (best snapshot "
            f"{show(r['gymjax']['best'], ',.1f')}) against {_number(r['target'])}: {'; '.join(lacks.values())}. {why}"
        )
    return lines


def noted(results: dict) -> list[str]:
    """The notes of the rows' records (how a run was trained, what a curve shows) with their rows, but
    for those :func:`missed` gives as a miss's why."""
    return [
        f"- {r['reference_id']}, {r['minutes']:g} min, {kind}, {stem}: {text}"
        for r in results["rows"]
        for kind in ("gymjax", "sb3")
        if not (kind == "gymjax" and _met(r) is False)
        for stem, text in (r[kind] or {}).get("notes", {}).items()
    ]


def markdown(record: dict) -> list[str]:
    return [
        *summary(record),
        "",
        f"Records: {', '.join(f'[{s}]({s}.md)' for s in record['settings']['records'])} (settings, every curve).",
        *common.listed("Targets missed: why, and what would reach them", missed(record["results"])),
        *common.listed("Notes kept with the records", noted(record["results"])),
        *common.listed("Runs replaced by a later record", superseded(record["results"])),
        *common.listed("Targets with no run of their budget here yet", unmeasured(record["results"])),
    ]


def plot(record: dict, path: pathlib.Path) -> None:
    plt = common.pyplot()
    by_task: dict[str, list[dict]] = {}
    for r in record["results"]["rows"]:
        by_task.setdefault(r["reference_id"], []).append(r)
    cols = min(3, len(by_task))
    grid_rows = math.ceil(len(by_task) / cols)
    fig, axes = plt.subplots(grid_rows, cols, figsize=(4.6 * cols, 3.4 * grid_rows), squeeze=False)
    budgets = sorted({r["minutes"] for r in record["results"]["rows"]})  # a budget has one colour in every panel
    for ax, (reference, entries) in zip(axes.flat, by_task.items()):
        for r in entries:
            i = budgets.index(r["minutes"])
            for kind, color, name in (("gymjax", f"C{i}", "gymjax"), ("sb3", "dimgray", "SB3 here")):
                for j, curve in enumerate((r[kind] or {}).get("curves", [])):
                    ax.plot([c["wall_s"] / 60 for c in curve], [c["return"] for c in curve], color=color, marker=".",
                            ms=3, lw=1, label=f"{name}, {r['minutes']:g} min budget" if j == 0 else None)  # fmt: skip
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
    fig.suptitle("PPO within a wall-clock budget on a 2-core CPU, a line per seed (dashed: the budget's target)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.985))  # below the suptitle
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(args: argparse.Namespace, argv: list[str]) -> int:
    out = args.out or common.RESULTS
    records = {}
    for stem in args.records:
        path = common.RESULTS / f"{stem}.json"
        if not path.is_file():
            raise SystemExit(f"no record {path}: run `python -m benchmarks training ... --stem {stem}` first")
        records[stem] = json.loads(path.read_text())
    record = common.new_record("suite", argv, "The suite: gymjax PPO in a wall-clock budget against rl-zoo",
                               {"records": args.records})  # fmt: skip
    results = rows(records)
    common.finish(record, results, summary(record | {"results": results}))
    paths = common.write(record, markdown(record), plot, "suite", out)
    print("wrote " + ", ".join(map(str, paths)))
    return 0
