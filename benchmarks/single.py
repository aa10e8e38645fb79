"""One env, as CleanRL, SB3's ``DummyVecEnv`` and rl-zoo step it: ``gymnasium.make(id)`` against Gymnasium's own.

    python -m benchmarks single                          # every id with a reference: about 6 min on 2 cores
    python -m benchmarks single --quick --out /tmp/one   # 2 rounds of 0.1 s: a smoke run

For every registered single-agent id with a reference (``gymjax.envs.spec(id).reference_id``: the
MuJoCo ``*-v5`` tasks and classic control; new ids are picked up), one process builds
``gymnasium.make(id)`` (ours) and ``gymnasium.make(reference_id)`` (theirs) once and times them in
alternation (:func:`benchmarks.common.interleaved`): one step a call, random actions, a reset when
an episode ends; medians of the rounds, the ratio ours / theirs (the median of the rounds' own
ratios), the load beside each row. On the tasks whose physics dominates (the 0.8 bars) both start
each episode at the same state, one of Gymnasium's env's resets (:func:`reference_starts`), and
play the same actions: the same contacts, so the same physics' cost (each pays one ``set_state`` an
episode, which the short episodes of the other tasks could not afford); and each round steps them
the same number of times (``paired``), so that they are timed over the same states: an episode's
step costs what its contacts cost, and one stack running ahead of the other through cheaper or
dearer states swung the ratio by a third between runs (HumanoidStandup 0.64 to 0.97).

For the MuJoCo tasks two more layers are timed in the same alternation, to split where one of our
steps goes (microseconds per step):

- physics: ``mujoco.mj_step(model, data, nstep=frame_skip)`` on the env's ``mj_model`` (plus
  ``mj_rnePostConstraint`` where the task reads ``cfrc_ext``), random controls, no Python around it;
- the host runtime: the ``Session`` a ``gymnasium.make(id)`` env steps (``step`` and ``fetch``: the
  compiled step on the packed state, its dispatch, the results brought to NumPy), a ``reset`` where
  the adapter's episodes end (termination, the registered time limit), without the Gymnasium
  adapter around it;
- the adapter: the whole ``gymnasium.make(id)`` step (the first figure, in microseconds).

The targets (issue 49): >= 0.5x Gymnasium on every MuJoCo task, >= 0.8x on Ant, Humanoid and
HumanoidStandup, whose physics dominate; classic control is reported without one.
"""

from __future__ import annotations

import argparse
import copy
import os
import pathlib
import statistics

import numpy as np
from tqdm import tqdm

from benchmarks import common

OURS, THEIRS, PHYSICS, HOST = "gymjax", "Gymnasium", "physics", "host runtime"
TARGETS = {"Ant-v5": 0.8, "Humanoid-v5": 0.8, "HumanoidStandup-v5": 0.8}  # the others on MuJoCo: 0.5
MUJOCO_TARGET = 0.5
RESET_PHYSICS_EVERY = 1000  # mj_steps' calls before the bare physics goes back to its reset state


def reference_ids() -> dict[str, str]:
    """Every registered id with a Gymnasium reference, and that reference."""
    import gymjax

    out = {}
    for env_id in gymjax.envs.registered_ids():
        ref = gymjax.envs.spec(env_id).reference_id
        if ref:
            out[env_id] = ref
    return out


def is_mujoco(reference: str) -> bool:
    import gymnasium

    entry = gymnasium.spec(reference).entry_point
    return isinstance(entry, str) and entry.startswith("gymnasium.envs.mujoco.")


def target(reference: str) -> float | None:
    return TARGETS.get(reference, MUJOCO_TARGET) if is_mujoco(reference) else None


# -- the stacks: one step per call ----------------------------------------------------------------


def gymnasium_env(env_id: str, seed: int = 0, starts: list | None = None, **options) -> common.Stepper:
    """``gymnasium.make(env_id, **options)`` stepped with random actions, reset when its episode ends;
    each episode put at the next of ``starts`` (``(qpos, qvel)``: :func:`reference_starts`) if given."""
    import gymnasium

    import gymjax  # noqa: F401  (registers the ids)

    env = gymnasium.make(env_id, **options)
    env.action_space.seed(seed)
    actions = [env.action_space.sample() for _ in range(64)]
    t = [0, 0]  # steps, episodes

    def start() -> None:
        if starts:
            env.unwrapped.set_state(*starts[t[1] % len(starts)])
        t[1] += 1

    env.reset(seed=seed)
    start()

    def step() -> None:
        t[0] += 1
        _, _, terminated, truncated, _ = env.step(actions[t[0] % len(actions)])
        if terminated or truncated:
            env.reset()
            start()

    return common.Stepper(step, 1, env.close)


def reference_starts(reference: str, seed: int = 0, n: int = 64) -> list:
    """``n`` episodes' first states ``(qpos, qvel)`` of Gymnasium's own env. Both stacks start their
    episodes there and play the same actions, so that they step the same bodies through the same
    contacts: a heavy task's step costs what its contacts cost, and on episodes of their own the two
    stacks' ratio swung by a fifth between runs (Humanoid 0.63 to 1.00)."""
    import gymnasium

    env = gymnasium.make(reference)
    env.reset(seed=seed)
    states = []
    for _ in range(n):
        env.reset()
        states.append((env.unwrapped.data.qpos.copy(), env.unwrapped.data.qvel.copy()))
    env.close()
    return states


def bare_physics(env_id: str, seed: int = 0) -> common.Stepper:
    """MuJoCo C alone on the env's model: ``mj_step`` ``frame_skip`` times (and ``mj_rnePostConstraint``
    where the task reads ``cfrc_ext``), random controls; back to the reset state every so often."""
    import mujoco

    import gymjax
    from gymjax.envs.mujoco.engine import POST_CONSTRAINT_FIELDS

    env = gymjax.make(env_id, engine="mujoco")
    model, data = env.mj_model, mujoco.MjData(env.mj_model)
    post = bool(POST_CONSTRAINT_FIELDS & set(env.data_fields))
    space = env.action_space
    controls = np.random.default_rng(seed).uniform(space.low, space.high, (64, *space.shape))
    t = [0]

    def step() -> None:
        if t[0] % RESET_PHYSICS_EVERY == 0:
            mujoco.mj_resetData(model, data)
        t[0] += 1
        data.ctrl[:] = controls[t[0] % len(controls)]
        mujoco.mj_step(model, data, nstep=env.frame_skip)
        if post:
            mujoco.mj_rnePostConstraint(model, data)

    return common.Stepper(step, 1, env.close)


def host_step(env_id: str, seed: int = 0, starts: list | None = None) -> common.Stepper:
    """The host runtime under ``gymnasium.make(id)``: its ``Session``'s ``step`` and ``fetch``, one
    step a call, a ``reset`` (and ``fetch_reset``) where the adapter's episode would end, each
    episode put at the next of ``starts`` if given."""
    import gymnasium

    from gymjax.wrappers.session import Session

    session = Session(env_id)
    limit = gymnasium.spec(env_id).max_episode_steps or 0
    space = copy.deepcopy(session.base.action_space)  # the actions gymnasium_env(env_id) plays
    space.seed(seed)
    actions = [space.sample() for _ in range(64)]
    t = [0, 0, 0]  # steps, steps into the episode, episodes

    def start() -> None:
        session.reset(seed if t[2] == 0 else None)
        session.fetch_reset()
        if starts:
            session.set_state(*starts[t[2] % len(starts)])
        t[2] += 1

    start()

    def step() -> None:
        t[0] += 1
        t[1] += 1
        session.step(actions[t[0] % len(actions)])
        out = session.fetch()
        if out.terminated or t[1] == limit:
            start()
            t[1] = 0

    return common.Stepper(step, 1, session.close)


# -- the run --------------------------------------------------------------------------------------


def run_task(env_id: str, reference: str, args: argparse.Namespace) -> dict:
    mujoco = is_mujoco(reference)
    # Shared starts where the physics dominates (the 0.8 bars): elsewhere episodes last a few steps
    # and one set_state an episode, a compiled call of ours, would cost more than the noise it removes
    # (InvertedPendulum 0.57 -> 0.41 with them).
    starts = reference_starts(reference) if reference in TARGETS else None
    builders = {OURS: lambda: gymnasium_env(env_id, starts=starts),
                THEIRS: lambda: gymnasium_env(reference, starts=starts)}
    if mujoco:
        builders |= {PHYSICS: lambda: bare_physics(env_id), HOST: lambda: host_step(env_id, starts=starts)}
    stacks, failed = common.build(builders)
    load_before = list(os.getloadavg())
    # With shared starts the stacks around the physics play the same episodes: paired, they are
    # timed over the same steps in each round.
    paired = (OURS, THEIRS, HOST) if starts else ()
    block = common.interleaved(stacks, args.rounds, args.round_seconds, desc=_short(env_id), paired=paired)
    failed |= block.pop("failed")
    st = block["stacks"]
    # The median of each round's ratio: a round times the two stacks within a second of each other,
    # so that the machine's slower spells (this shared one's swing by half) fall on both.
    ratio = (statistics.median(o / t for o, t in zip(st[OURS]["samples"], st[THEIRS]["samples"], strict=True))
             if OURS in st and THEIRS in st else None)
    entry = {"reference": reference, "mujoco": mujoco, "target": target(reference), "ratio": ratio,
             **block, "failed": failed, "load_before": load_before, "load_after": list(os.getloadavg())}  # fmt: skip
    if mujoco:
        us = {name: 1e6 / st[name]["median"] for name in (PHYSICS, HOST, OURS, THEIRS) if name in st}
        entry["split_us"] = us
    return entry


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="2 rounds of 0.1 s: a smoke run (needs --out)")
    p.add_argument("--rounds", type=int, default=15, help="rounds (default 15)")
    p.add_argument("--round-seconds", type=float, default=0.25, help="seconds per stack per round (default 0.25)")
    p.add_argument("--ids", nargs="+", help="only these ids (default: every id with a reference)")
    p.add_argument("--out", type=pathlib.Path, help="output folder (default: benchmarks/results)")


def main(args: argparse.Namespace, argv: list[str]) -> int:
    known = reference_ids()
    ids = args.ids or list(known)
    unknown = sorted(set(ids) - set(known))
    if unknown:
        raise SystemExit(f"--ids {unknown}: not ids with a reference ({', '.join(known)})")
    if args.quick:
        if args.out is None:
            raise SystemExit("--quick is a smoke run: give --out (its files never go into benchmarks/results)")
        args.rounds, args.round_seconds = 2, 0.1
    settings = {"quick": args.quick, "rounds": args.rounds, "round_seconds": args.round_seconds}
    title = "One env: gymnasium.make of gymjax's id against Gymnasium's own"
    record = common.new_record("single", argv, title + (" (quick)" if args.quick else ""), settings)
    tasks = {env_id: run_task(env_id, known[env_id], args) for env_id in tqdm(ids, desc="ids", unit="id")}
    results = {"tasks": tasks}
    common.finish(record, results, summary(record | {"results": results}))
    paths = common.write(record, markdown(record), plot, "single", args.out or common.RESULTS)
    print("\n".join(summary(record)))
    print("wrote " + ", ".join(map(str, paths)))
    return 1 if any(e["failed"] for e in tasks.values()) else 0


# -- the report -----------------------------------------------------------------------------------


def _short(env_id: str) -> str:
    return env_id.removeprefix("Jax").removesuffix("-v0")


def _n(r: dict | None) -> str:
    return "-" if not r else f"{r['median']:,.0f}"


def _us(e: dict, name: str) -> str:
    x = e.get("split_us", {}).get(name)
    return "-" if x is None else f"{x:,.0f}"


def _met(e: dict) -> str:
    if e["target"] is None:
        return "-"
    if e["ratio"] is None:
        return f">= {e['target']:.1f}: not measured"
    return f">= {e['target']:.1f}: {'yes' if e['ratio'] >= e['target'] else 'no'}"


def table(results: dict) -> list[str]:
    lines = [
        "| id | reference | gymjax steps/s | Gymnasium steps/s | ours / theirs | target met | physics µs "
        "| host runtime µs | gymnasium.make step µs | Gymnasium's step µs | load 1 min before → after |",
        "|---" * 11 + "|",
    ]
    for env_id, e in results["tasks"].items():
        st = e["stacks"]
        ratio = "-" if e["ratio"] is None else f"{e['ratio']:.2f}"
        lines.append(
            f"| {_short(env_id)} | {e['reference']} | {_n(st.get(OURS))} | {_n(st.get(THEIRS))} | {ratio} "
            f"| {_met(e)} | {_us(e, PHYSICS)} | {_us(e, HOST)} | {_us(e, OURS)} | {_us(e, THEIRS)} "
            f"| {e['load_before'][0]:.1f} → {e['load_after'][0]:.1f} |"
        )
    return lines


def _round_loads(results: dict) -> str:
    return common.load_range(x for e in results["tasks"].values() for x in e["load_1min_rounds"])


def _heavy() -> str:
    """The tasks with their own bar (:data:`TARGETS`), by name."""
    return ", ".join(reference.removesuffix("-v5") for reference in TARGETS)


def summary(record: dict) -> list[str]:
    s, results = record["settings"], record["results"]
    return [
        (
            f"Steps/s of one env, random actions, reset at each episode's end ({_heavy()}: both stacks start "
            f"each episode at the same state, drawn from Gymnasium's env, play the same actions, and step as "
            f"many times a round, over the same states); per id the stacks are built once "
            f"and timed in alternation, {s['rounds']} rounds of about {s['round_seconds']:g} s; medians, and "
            f"ours / theirs the median of the rounds' own ratios. "
            f"Load (1 min) over the rounds {_round_loads(results)}. Targets (issue 49): >= {MUJOCO_TARGET} x "
            f"Gymnasium on every MuJoCo task, >= {TARGETS['Ant-v5']} x on {_heavy()}."
        ),
        "",
        *table(results),
    ]


def markdown(record: dict) -> list[str]:
    results = record["results"]
    failed = [
        f"- {_short(i)}, {what}: `{why}`" for i, e in results["tasks"].items() for what, why in e["failed"].items()
    ]
    misses = [
        f"- **{_short(i)}** {e['ratio']:.2f} x (target {e['target']:.1f}): of our "
        f"{e['split_us'][OURS]:,.0f} µs a step, {e['split_us'][PHYSICS]:,.0f} µs are the physics, "
        f"{e['split_us'][HOST] - e['split_us'][PHYSICS]:+,.0f} µs the host runtime around it (dispatch, the FFI "
        f"call, the compiled step's own work, the fetch to NumPy, resets) and "
        f"{e['split_us'][OURS] - e['split_us'][HOST]:+,.0f} µs the adapter (Gymnasium's wrappers, the action "
        "check, the info dict); Gymnasium's whole step is "
        f"{e['split_us'][THEIRS]:,.0f} µs."
        for i, e in results["tasks"].items()
        if e["target"] is not None and e["ratio"] is not None and e["ratio"] < e["target"]
        and {OURS, THEIRS, PHYSICS, HOST} <= set(e.get("split_us", {}))
    ]
    return [
        "## Steps/s",
        "",
        *summary(record),
        "",
        (
            "gymjax: `gymnasium.make(id)` (its default engine), one `step` a call, NumPy in and out. Gymnasium: "
            "`gymnasium.make(reference_id)`. The split (MuJoCo tasks), µs per step: physics, `mujoco.mj_step(model, "
            "data, nstep=frame_skip)` on the env's `mj_model` (with `mj_rnePostConstraint` where the task reads "
            "`cfrc_ext`); host runtime, the `Session` under `gymnasium.make(id)` (step and fetch, resets where the "
            "adapter's episodes end), without the Gymnasium adapter; the `gymnasium.make` step, the first column's "
            "figure as µs. Each is its own median, so the differences carry the load's noise. The bare physics goes "
            f"back to its reset state only every {RESET_PHYSICS_EVERY} steps and runs no reset's work, where the "
            "other layers reset at every episode's end; where bodies fall and pile up contacts (Humanoid) the bare "
            "physics can cost more than the layers around it."
        ),
        "",
        "## Where a missed target's step goes",
        "",
        *(misses or ["- every MuJoCo task meets its target in this run."]),
        *common.listed("Failed", failed),
    ]


def plot(record: dict, path: pathlib.Path) -> None:
    plt = common.pyplot()
    tasks = record["results"]["tasks"]
    ids = [i for i, e in tasks.items() if e["ratio"] is not None]
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(ids) + 1.8))
    colors = []
    for i in ids:
        e = tasks[i]
        colors.append("tab:gray" if e["target"] is None else "tab:green" if e["ratio"] >= e["target"] else "tab:red")
    ax.barh([_short(i) for i in ids], [tasks[i]["ratio"] for i in ids], color=colors)
    ax.axvline(MUJOCO_TARGET, color="k", linestyle="--", linewidth=1,
               label=f"{MUJOCO_TARGET}: every MuJoCo task's target")
    heavy = max(TARGETS.values())
    ax.axvline(heavy, color="k", linestyle="-", linewidth=1, label=f"{heavy}: Ant, Humanoid, HumanoidStandup's target")
    ax.invert_yaxis()
    ax.set_xlabel("steps/s of gymnasium.make(id) / gymnasium.make(reference) (median); gray: no target")
    ax.set_title(
        f"One env against Gymnasium's own; {record['machine']['name']}, load (1 min) "
        f"{_round_loads(record['results'])}",
        fontsize=9,
    )
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
