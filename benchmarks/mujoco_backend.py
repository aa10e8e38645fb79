"""JaxAnt-v0 on the "mujoco" backend (MuJoCo C inside jit) against MJX, EnvPool and SB3, in one run.

At ``N`` envs (default 256), env steps/s of:

- gymjax's Gymnasium VectorEnv (``gymnasium.make_vec("JaxAnt-v0", backend=...)``,
  NumPy out, same-step auto-reset) for backend "mujoco" and "mjx" (fast and
  accurate solver presets), and the raw jitted vmapped ``step`` of each;
- EnvPool's Ant-v5 (``envpool.make_gymnasium``, MuJoCo C in C++ threads) at 16 and N envs;
- ``mujoco.rollout`` on all cores, stepping N Ant states 5 substeps at a time:
  the C engine with no Python or JAX around it, a ceiling for the C backend;

then training steps/s of gymjax's native PPO (``gymjax.trainers.ppo.train``)
on the "mujoco" backend against SB3's PPO on Gymnasium's Ant-v5 (DummyVecEnv).
Medians over repeats after a warm-up, compile time apart.

Writes benchmarks/results/mujoco_backend.{json,md,png}.

Superseded by the harness (``python -m benchmarks``), whose stacks it shares.

    python -m benchmarks.mujoco_backend           # N = 256, PPO 100k steps
    python -m benchmarks.mujoco_backend --quick   # a smoke run
"""

from __future__ import annotations

import argparse
import functools
import os
import pathlib
import sys
import warnings

if __package__ in (None, ""):  # run as a file: make `benchmarks` importable from the repo root
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from mujoco import rollout  # noqa: E402
from tqdm import tqdm  # noqa: E402

import gymjax  # noqa: E402
from benchmarks.env_throughput import raw_step, summarize, vector_env  # noqa: E402
from benchmarks.harness import environment, fixed_calls, time_calls  # noqa: E402
from benchmarks.report import pyplot, save, write_results  # noqa: E402
from benchmarks.suites import env as env_suite  # noqa: E402
from benchmarks.suites.train import gymjax_ppo, sb3_ppo  # noqa: E402
from gymjax.trainers.ppo import PPOConfig  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
# name: (solver, backend); the "mujoco" backend runs the model's own solver settings, as Ant-v5.
BACKENDS = {"mujoco": (None, "mujoco"), "mjx fast": ("fast", "mjx"), "mjx accurate": ("accurate", "mjx")}


def envpool_ant(n: int, steps: int, repeats: int) -> dict:
    try:
        import envpool  # noqa: F401
    except ImportError as err:
        return {"skipped": f"envpool not installed ({err})"}
    return {**fixed_calls(env_suite.envpool_ant(n), steps, repeats), "compile_s": 0.0}


def mujoco_rollout(n: int, steps: int, repeats: int) -> dict:
    """MuJoCo's own multi-threaded rollout: N states, 5 substeps (one Ant step) per call."""
    env = gymjax.make("JaxAnt-v0", backend="mujoco")
    model = env.mj_model
    nthread = os.cpu_count() or 1
    datas = [mujoco.MjData(model) for _ in range(nthread)]
    mujoco.mj_forward(model, datas[0])
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.empty((n, mujoco.mj_stateSize(model, spec)))
    mujoco.mj_getState(model, datas[0], state[0], spec)
    state[:] = state[0]
    control = np.random.default_rng(0).uniform(-1, 1, (n, env.frame_skip, model.nu))
    with rollout.Rollout(nthread=nthread) as pool:
        holder = [state]

        def once():
            states, _ = pool.rollout(model, datas, holder[0], control)
            holder[0] = states[:, -1]

        once()  # warm-up
        return {"compile_s": 0.0, "s_per_step": time_calls(once, steps, repeats)}


# -- training ---------------------------------------------------------------------------


def training(args) -> dict:
    env = gymjax.make("JaxAnt-v0", backend="mujoco")
    config = PPOConfig(num_timesteps=args.ppo_timesteps, num_envs=args.num_envs, unroll_length=16,
                       num_minibatches=8, update_epochs=4, num_evals=2, num_eval_envs=16)
    with tqdm(total=2, desc="training", unit="trainer") as bar:
        ours = gymjax_ppo(env, config)
        bar.update()
        tqdm.write(f"gymjax PPO, backend='mujoco': {ours['sps']:,.0f} steps/s")
        theirs = sb3_ppo(args.sb3_timesteps, args.sb3_envs, torch_threads=os.cpu_count() or 1)
        bar.update()
        tqdm.write(f"SB3 PPO, Ant-v5 DummyVecEnv: {theirs['sps']:,.0f} steps/s")
    return {
        "gymjax PPO (backend='mujoco')": {**ours, "config": config.to_dict()},
        "SB3 PPO (Ant-v5, DummyVecEnv)": theirs,
    }


# -- report -----------------------------------------------------------------------------


def ratios(results: dict, n: int, train: dict) -> dict:
    sps = {name: r["steps_per_s"] for name, r in results.items() if "steps_per_s" in r}
    ours = sps["VectorEnv mujoco"]
    pool = [v for k, v in sps.items() if k.startswith("EnvPool")]
    out = {
        "vector_mujoco_over_envpool_best": ours / max(pool) if pool else None,
        "vector_mujoco_over_envpool_16": ours / sps["EnvPool Ant-v5, 16 envs"] if pool else None,
        f"vector_mujoco_over_envpool_{n}": ours / sps[f"EnvPool Ant-v5, {n} envs"] if pool else None,
        "vector_mujoco_over_vector_mjx_fast": ours / sps["VectorEnv mjx fast"],
        "vector_mujoco_over_vector_mjx_accurate": ours / sps["VectorEnv mjx accurate"],
        "raw_mujoco_over_raw_mjx_fast": sps["raw step mujoco"] / sps["raw step mjx fast"],
        "vector_mujoco_over_mujoco_rollout": ours / sps["mujoco.rollout (no JAX)"],
    }
    ppo = [r["sps"] for r in train.values()]
    out["ppo_gymjax_mujoco_over_sb3"] = ppo[0] / ppo[1]
    return out


def markdown(report: dict) -> str:
    n = report["settings"]["num_envs"]
    lines = [
        f"# JaxAnt-v0, backend=\"mujoco\" (MuJoCo C inside jit) vs MJX, EnvPool, SB3 ({n} envs)",
        "",
        f"Machine: {report['machine']['cpu']}, {report['machine']['cpu_count']} cores, "
        f"JAX {report['versions']['jax']} on {report['machine']['jax_backend']}, MuJoCo "
        f"{report['versions']['mujoco']}. Env steps/s, median of {report['settings']['repeats']} repeats "
        "after a warm-up; compile apart.",
        "",
        "| stack | steps/s | spread | compile (s) |",
        "|---|---|---|---|",
    ]
    for name, r in report["results"].items():
        if "skipped" in r:
            lines.append(f"| {name} | skipped: {r['skipped']} | | |")
            continue
        lo, hi = r["spread"]
        lines.append(f"| {name} | {r['steps_per_s']:,.0f} | {lo:,.0f}-{hi:,.0f} | {r['compile_s']:.1f} |")
    lines += ["", "| trainer | training steps/s (median per iteration) |", "|---|---|"]
    for name, r in report["training"].items():
        lines.append(f"| {name} | {r['sps']:,.0f} |")
    r = report["ratios"]

    def fmt(x):
        return "n/a" if x is None else f"{x:.2f}"

    lines += [
        "",
        f"Ratios (same run): VectorEnv mujoco / best EnvPool = {fmt(r['vector_mujoco_over_envpool_best'])} "
        f"(target >= 1.0; / EnvPool 16 envs = {fmt(r['vector_mujoco_over_envpool_16'])}, "
        f"/ EnvPool {n} envs = {fmt(r[f'vector_mujoco_over_envpool_{n}'])}); "
        f"VectorEnv mujoco / VectorEnv mjx fast = {fmt(r['vector_mujoco_over_vector_mjx_fast'])} "
        "(target >= 4), "
        f"/ mjx accurate = {fmt(r['vector_mujoco_over_vector_mjx_accurate'])}; "
        f"raw mujoco / raw mjx fast = {fmt(r['raw_mujoco_over_raw_mjx_fast'])}; "
        f"VectorEnv mujoco / mujoco.rollout = {fmt(r['vector_mujoco_over_mujoco_rollout'])}; "
        f"gymjax PPO (mujoco) / SB3 PPO = {fmt(r['ppo_gymjax_mujoco_over_sb3'])}.",
    ]
    return "\n".join(lines) + "\n"


def plot(report: dict, path: pathlib.Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    measured = {k: v for k, v in report["results"].items() if "steps_per_s" in v}
    names = list(measured)
    left.barh(names, [measured[k]["steps_per_s"] for k in names],
              color=["tab:green" if "mujoco" in k and "rollout" not in k else "tab:gray" for k in names])
    left.set_xscale("log")
    left.set_xlabel("env steps / s (log)")
    left.invert_yaxis()
    train = report["training"]
    right.bar(range(len(train)), [r["sps"] for r in train.values()], color=["tab:green", "tab:gray"])
    right.set_xticks(range(len(train)), ["gymjax PPO\n(mujoco)", "SB3 PPO\n(Ant-v5)"])
    right.set_ylabel("training steps / s")
    fig.suptitle(f"Ant on {report['machine']['cpu_count']}-core {report['machine']['jax_backend']}, "
                 f"{report['settings']['num_envs']} envs")
    save(fig, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20, help="batched steps per repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ppo-timesteps", type=int, default=100_000)
    parser.add_argument("--sb3-timesteps", type=int, default=8 * 2048)
    parser.add_argument("--sb3-envs", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="N = 16, few steps: a smoke run")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.num_envs, args.steps, args.repeats = 16, 3, 2
        args.ppo_timesteps, args.sb3_timesteps = 16 * 16 * 8, 4 * 2048
    warnings.simplefilter("ignore")
    n, steps, repeats = args.num_envs, args.steps, args.repeats
    mjx_steps = max(2, steps // 4)  # MJX is 4-6x slower here; fewer steps keep the run short

    stacks = {}
    for name, (solver, backend) in BACKENDS.items():
        k = steps if backend == "mujoco" else mjx_steps
        for label, measure in (("VectorEnv", vector_env), ("raw step", raw_step)):
            stacks[f"{label} {name}"] = functools.partial(measure, n, solver, k, repeats, backend=backend)
    for size in sorted({16, n}):
        # as many env steps per repeat as the N-env stacks take
        pool_steps = steps * n // size
        stacks[f"EnvPool Ant-v5, {size} envs"] = functools.partial(envpool_ant, size, pool_steps, repeats)
    stacks["mujoco.rollout (no JAX)"] = lambda: mujoco_rollout(n, steps, repeats)

    results = {}
    for name in tqdm(stacks, desc="env stacks", unit="stack"):
        raw = stacks[name]()
        size = int(name.split(", ")[1].split()[0]) if name.startswith("EnvPool") else n
        results[name] = raw if "skipped" in raw else summarize(size, raw)
        if "steps_per_s" in results[name]:
            tqdm.write(f"{name:40s} {results[name]['steps_per_s']:10,.0f} steps/s")
    train = training(args)
    report = {
        "benchmark": "mujoco_backend",
        **environment(),
        "settings": {"num_envs": n, "steps": steps, "mjx_steps": mjx_steps, "repeats": repeats,
                     "ppo_timesteps": args.ppo_timesteps, "sb3_timesteps": args.sb3_timesteps},
        "results": results,
        "training": train,
        "ratios": ratios(results, n, train),
    }
    stem = "mujoco_backend_quick" if args.quick else "mujoco_backend"
    write_results(args.out, stem, report, markdown, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
