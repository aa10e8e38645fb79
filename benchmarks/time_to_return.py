"""Time to a walking Ant: return on Gymnasium's own Ant-v5 against wall time, per trainer.

Arms, each trained in a process of its own, one at a time (the machine's cores are the
trainer's alone), for a wall-clock budget:

- ``gymjax``: ``gymjax train --preset ant`` (15 minutes) or ``--preset ant_hour`` (60) as a
  user runs it, its evaluations included, on JaxAnt-v0 with the default engine (MuJoCo C on a CPU);
- ``sb3``: Stable-Baselines3's PPO with rl-baselines3-zoo's Ant settings (``hyperparams/ppo.yml``,
  ``Ant-v4``: SB3's defaults, ``normalize: true``, one env) on Gymnasium's Ant-v5;
- ``brax``: Brax's ``ppo.train`` with Brax's own Ant settings on the same JaxAnt-v0 env
  (through ``benchmarks.suites.train.brax_adapter``).

Every trainer hands out its policy as it goes (gymjax and Brax after each epoch, SB3 every
``SB3_SNAPSHOT_S`` seconds), stamped with the wall time since the process started (imports
and compilation included) and the env steps. After all training is done, each kept snapshot
plays ``EPISODES`` deterministic episodes of Gymnasium's Ant-v5 (float64 MuJoCo C, its own
1,000-step limit): that return is the curve. Evaluating apart keeps it out of the trainers'
wall time, and judges all three on the same env and episodes.

Writes ``benchmarks/results/time_to_return.{json,md,png}``; the snapshots stay in ``--work``.

    python -m benchmarks.time_to_return --minutes 15                  # gymjax, sb3, brax; seed 0
    python -m benchmarks.time_to_return --minutes 60 --arms gymjax    # the hour-long target
    python -m benchmarks.time_to_return --report-only                 # remake the report
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import pickle
import platform
import subprocess
import sys
import time

_PROCESS_START = time.perf_counter()  # a trainer's clock starts here, before its imports

if __package__ in (None, ""):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

os.environ.setdefault("MUJOCO_GL", "egl")

from benchmarks import learning  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
EPISODES = 10  # Ant-v5 episodes per snapshot, as the targets count them
SB3_SNAPSHOT_S = 60.0
MAX_POINTS = int(os.environ.get("TTR_MAX_POINTS", 30))  # snapshots evaluated per run, spread evenly over its wall time
TARGETS = ((15 * 60, 4000.0), (60 * 60, 5500.0))  # (wall seconds, Ant-v5 return) to reach
# gymjax's preset for each budget (minutes): each one's num_timesteps is sized for it, and its
# learning rate decays to 0 over them.
GYMJAX_PRESETS = {15.0: "ant", 60.0: "ant_hour"}

ARMS = {
    "gymjax": "gymjax PPO, JaxAnt-v0 (MuJoCo C)",
    "sb3": "SB3 PPO, rl-zoo Ant settings, Gymnasium Ant-v5",
    "brax": "Brax PPO, Brax's Ant settings, JaxAnt-v0 (MuJoCo C)",
}

# rl-baselines3-zoo's Ant PPO settings (SB3's defaults and VecNormalize, one env): the learning
# benchmark's, which cites its source.
SB3_SETTINGS = learning.SB3_SETTINGS

# Brax's Ant PPO settings (its training colab), the network Brax builds by default.
BRAX_SETTINGS = dict(num_envs=4096, batch_size=2048, num_minibatches=32, unroll_length=5, num_updates_per_batch=4,
                     discounting=0.97, learning_rate=3e-4, entropy_cost=1e-2, reward_scaling=10.0,
                     normalize_observations=True, episode_length=1000, action_repeat=1)


def elapsed() -> float:
    return time.perf_counter() - _PROCESS_START


# -- training, one arm in this process ---------------------------------------------------------


class Snapshots:
    """Policies as training hands them out, pickled one file each: ``(wall_s, env_steps, payload)``."""

    def __init__(self, directory: pathlib.Path):
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self.paused_s = 0.0  # time spent saving, taken off the clock

    def add(self, env_steps: int, payload) -> None:
        start = time.perf_counter()
        wall = elapsed() - self.paused_s
        print(f"[{self.directory.parent.name}] snapshot {self.count}: {int(env_steps):,} env steps, {wall:.0f} s",
              flush=True)
        with open(self.directory / f"{self.count:04d}.pkl", "wb") as f:
            pickle.dump({"wall_s": wall, "env_steps": int(env_steps), "payload": payload}, f)
        self.count += 1
        self.paused_s += time.perf_counter() - start


class OutOfTime(Exception):
    pass


def train_gymjax(snapshots: Snapshots, seed: int, budget_s: float) -> dict:
    import jax

    import gymjax
    from gymjax.trainers.ppo import PPOConfig, train

    # The preset sized for this budget, as `gymjax train --preset NAME` runs it.
    preset = GYMJAX_PRESETS[budget_s / 60]
    config = PPOConfig.preset(preset, seed=seed)

    def keep(env_steps, make_policy, params):
        snapshots.add(env_steps, jax.device_get(params))
        if elapsed() - snapshots.paused_s > budget_s:
            raise OutOfTime

    env = gymjax.make("JaxAnt-v0")
    try:
        train(config, env, policy_params_fn=keep, progress_bar=True)
    except OutOfTime:
        pass
    return {"config": config.to_dict(), "engine": env.engine, "preset": preset}


def train_sb3(snapshots: Snapshots, seed: int, budget_s: float) -> dict:
    import copy

    import gymnasium
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    torch.set_num_threads(1)  # SB3's MLPs gain nothing from more (benchmarks.suites.train.sb3_ppo)

    class Keep(BaseCallback):
        def __init__(self):
            super().__init__()
            self.last = -SB3_SNAPSHOT_S

        def _on_step(self) -> bool:
            now = elapsed() - snapshots.paused_s
            if now - self.last >= SB3_SNAPSHOT_S or now > budget_s:
                self.last = now
                norm = self.model.get_vec_normalize_env()
                snapshots.add(self.num_timesteps, {
                    "policy": copy.deepcopy(self.model.policy.state_dict()),
                    "obs_mean": norm.obs_rms.mean.copy(), "obs_var": norm.obs_rms.var.copy(),
                    "clip_obs": norm.clip_obs, "epsilon": norm.epsilon,
                })
            return now <= budget_s

    venv = VecNormalize(DummyVecEnv([lambda: Monitor(gymnasium.make("Ant-v5"))]), gamma=SB3_SETTINGS["gamma"])
    model = PPO("MlpPolicy", venv, seed=seed, device="cpu", verbose=0, **SB3_SETTINGS)
    model.learn(total_timesteps=10**9, callback=Keep(), progress_bar=True)
    return {"config": SB3_SETTINGS | {"n_envs": 1, "normalize": True}}


def train_brax(snapshots: Snapshots, seed: int, budget_s: float, steps_per_s: float = 9000.0) -> dict:
    import jax

    import gymjax
    from benchmarks.suites.train import brax_adapter, restore_jax_apis_brax_calls

    restore_jax_apis_brax_calls()
    from brax.training.agents.ppo import train as brax_train

    def keep(env_steps, make_policy, params):
        snapshots.add(env_steps, jax.device_get(params))
        if elapsed() - snapshots.paused_s > budget_s:
            raise OutOfTime

    env = gymjax.make("JaxAnt-v0")
    settings = dict(BRAX_SETTINGS, num_timesteps=int(steps_per_s * budget_s), num_evals=max(2, round(budget_s / 45)),
                    num_eval_envs=16, seed=seed)
    try:
        brax_train.train(environment=brax_adapter(env), policy_params_fn=keep, **settings)  # Brax's networks
    except OutOfTime:
        pass
    return {"config": settings, "engine": env.engine}


TRAINERS = {"gymjax": train_gymjax, "sb3": train_sb3, "brax": train_brax}


# -- evaluation of the snapshots on Ant-v5 ------------------------------------------------------


def _actor(arm: str, run: dict):
    """``payload -> act(obs batch) -> actions``, the deterministic policy of each arm."""
    import jax
    import numpy as np

    if arm == "gymjax":
        import gymjax
        from gymjax.trainers.ppo import PPOConfig
        from gymjax.trainers.ppo.networks import make_networks

        env = gymjax.make("JaxAnt-v0", engine="mujoco")
        networks = make_networks(env.observation_space.shape[0], env.action_space, PPOConfig.from_dict(run["config"]))
        act = jax.jit(lambda params, obs: networks.make_policy(params, deterministic=True)(obs, None)[0])
        return lambda payload: (lambda obs: np.asarray(act(payload, obs)))
    if arm == "brax":
        from benchmarks.suites.train import restore_jax_apis_brax_calls

        restore_jax_apis_brax_calls()
        import gymjax
        from brax.training.acme import running_statistics
        from brax.training.agents.ppo import networks as brax_networks

        env = gymjax.make("JaxAnt-v0", engine="mujoco")
        # as ppo.train builds them: Brax's default sizes, observations normalized by the saved statistics
        networks = brax_networks.make_ppo_networks(
            env.observation_space.shape[0], env.action_space.shape[0],
            preprocess_observations_fn=running_statistics.normalize,
        )
        make = brax_networks.make_inference_fn(networks)
        key = jax.random.PRNGKey(0)
        return lambda payload: (lambda obs, f=jax.jit(make(payload, deterministic=True)): np.asarray(f(obs, key)[0]))
    import gymnasium
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    model = PPO("MlpPolicy", DummyVecEnv([lambda: gymnasium.make("Ant-v5")]), device="cpu",
                **SB3_SETTINGS)

    def for_payload(p):
        model.policy.load_state_dict(p["policy"])

        def act(obs):
            normed = np.clip((obs - p["obs_mean"]) / np.sqrt(p["obs_var"] + p["epsilon"]), -p["clip_obs"], p["clip_obs"])
            with torch.no_grad():
                return model.predict(normed.astype(np.float32), deterministic=True)[0]

        return act

    return for_payload


def evaluate_run(arm: str, directory: pathlib.Path, run: dict) -> list[dict]:
    """The kept snapshots of one run, spread evenly over its wall time, each on Ant-v5."""
    import numpy as np
    from tqdm import tqdm

    from gymjax.trainers.reference import evaluate_on_reference

    files = sorted(directory.glob("*.pkl"))
    snaps = [pickle.loads(f.read_bytes()) for f in files]
    if not snaps:
        return []
    last = snaps[-1]["wall_s"]
    wanted = np.linspace(0, last, MAX_POINTS)
    chosen = sorted({min(range(len(snaps)), key=lambda i: abs(snaps[i]["wall_s"] - w)) for w in wanted})
    actor = _actor(arm, run)
    points = []
    for i in tqdm(chosen, desc=f"{directory.name} on Ant-v5", unit="policy"):
        s = snaps[i]
        result = evaluate_on_reference(actor(s["payload"]), "JaxAnt-v0", episodes=EPISODES, seed=10_000)
        points.append({"wall_s": s["wall_s"], "env_steps": s["env_steps"], "return": result["episode_return_mean"],
                       "return_std": result["episode_return_std"], "length": result["episode_length_mean"]})
    return points


# -- the driver ------------------------------------------------------------------------------


def run_dir(work: pathlib.Path, arm: str, seed: int, budget_s: float) -> pathlib.Path:
    """One directory per trained run: budgets differ in more than length (gymjax's rate decays over its budget)."""
    return work / f"{arm}-{seed}-{budget_s / 60:g}min"


def worker(arm: str, seed: int, budget_s: float, work: pathlib.Path) -> None:
    directory = run_dir(work, arm, seed, budget_s)
    snapshots = Snapshots(directory / "snapshots")
    info = TRAINERS[arm](snapshots, seed, budget_s)
    info |= {"arm": arm, "seed": seed, "budget_s": budget_s, "snapshots": snapshots.count,
             "wall_s": elapsed() - snapshots.paused_s}
    (directory / "run.json").write_text(json.dumps(info, indent=1, default=str))


def evaluator(arm: str, seed: int, budget_s: float, work: pathlib.Path) -> None:
    directory = run_dir(work, arm, seed, budget_s)
    run = json.loads((directory / "run.json").read_text())
    run["curve"] = evaluate_run(arm, directory / "snapshots", run)
    (directory / "curve.json").write_text(json.dumps(run, indent=1, default=str))


def _load() -> float:
    return os.getloadavg()[0]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=15.0, help="wall-clock budget per training run")
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--work", type=pathlib.Path, default=pathlib.Path("runs/time_to_return"),
                   help="where snapshots and per-run curves go")
    p.add_argument("--report-only", action="store_true", help="remake the report from --work's curves")
    p.add_argument("--worker", nargs=3, metavar=("ARM", "SEED", "BUDGET_S"), help=argparse.SUPPRESS)
    p.add_argument("--evaluate", nargs=3, metavar=("ARM", "SEED", "BUDGET_S"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if "gymjax" in args.arms and not (args.worker or args.evaluate or args.report_only) \
            and args.minutes not in GYMJAX_PRESETS:
        p.error(f"--minutes must be one of {sorted(GYMJAX_PRESETS)} for the gymjax arm (a preset is sized for "
                f"each), got {args.minutes:g}")
    if args.worker:
        return worker(args.worker[0], int(args.worker[1]), float(args.worker[2]), args.work)
    if args.evaluate:
        return evaluator(args.evaluate[0], int(args.evaluate[1]), float(args.evaluate[2]), args.work)
    if not args.report_only:
        runs = [(arm, seed) for arm in args.arms for seed in args.seeds]
        for arm, seed in runs:  # train everything first, then evaluate: no training shares the cores
            load = _load()
            print(f"== training {arm} seed {seed} for {args.minutes} min (load {load:.2f})", flush=True)
            cmd = [sys.executable, "-m", "benchmarks.time_to_return", "--work", str(args.work),
                   "--worker", arm, str(seed), str(args.minutes * 60)]
            subprocess.run(cmd, check=True)
            meta = run_dir(args.work, arm, seed, args.minutes * 60) / "run.json"
            meta.write_text(json.dumps(json.loads(meta.read_text()) | {"load_before": load, "load_after": _load()},
                                       indent=1))
        for arm, seed in runs:
            subprocess.run([sys.executable, "-m", "benchmarks.time_to_return", "--work", str(args.work),
                            "--evaluate", arm, str(seed), str(args.minutes * 60)], check=True)
    report(args.work)


# -- the report ---------------------------------------------------------------------------------


def label(run: dict) -> str:
    """The arm's name, with the preset a gymjax run used."""
    return ARMS[run["arm"]] + (f", preset {run['preset']}" if run.get("preset") else "")


def _at(curve: list[dict], wall_s: float) -> tuple[float, float] | None:
    """``(at, best)`` for a deadline: the return of the last policy handed out by ``wall_s`` (for a
    run whose budget is ``wall_s``, the policy it ends with), and the best of all handed out by then
    (what keeping every checkpoint and picking gives). None if no policy came by then."""
    by = [c["return"] for c in curve if c["wall_s"] <= wall_s]
    return (by[-1], max(by)) if by else None


def report(work: pathlib.Path) -> None:
    from benchmarks.harness import versions
    from benchmarks.report import pyplot

    runs = [json.loads(f.read_text()) for f in sorted(work.glob("*/curve.json"))]
    if not runs:
        raise SystemExit(f"no curves under {work}; train first")
    record = {
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()},
        "versions": versions(["gymjax", "jax", "mujoco", "gymnasium", "stable-baselines3", "torch", "brax"]),
        "episodes": EPISODES,
        "targets": TARGETS,
        "runs": runs,
    }
    (RESULTS / "time_to_return.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    (RESULTS / "time_to_return.md").write_text(markdown(record))
    plot(record, RESULTS / "time_to_return.png", pyplot())
    print(f"wrote {RESULTS / 'time_to_return.md'}")


def markdown(record: dict) -> str:
    lines = [
        "# Time to a walking Ant (2-core CPU)",
        "",
        "`python -m benchmarks.time_to_return`. Each trainer ran alone on the machine for its wall-clock "
        "budget; the clock starts with its process (imports and compilation included). Its policies, as it "
        f"handed them out, then each played {record['episodes']} deterministic episodes of Gymnasium's own "
        "Ant-v5 (float64 MuJoCo C, 1,000-step limit). Return = their mean. At T: the last policy handed out by "
        "T; for a run whose budget is T, the policy it ends with. A longer run's policy at T is not what a "
        "T-minute run gives: gymjax's learning rate decays over the run's budget (SB3's and Brax's are "
        "constant). Best by then: the best policy handed out by T, which keeping every checkpoint and picking "
        "would give. A policy that stands still "
        "scores about 1,000 (the healthy reward): every trainer's first policy does.",
        "",
        "| arm | seed | budget (min) | env steps | load before/after | " + " | ".join(
            f"Ant-v5 at {t // 60} min (target {r:,.0f}); best by then" for t, r in record["targets"]) + " | best |",
        "|---|---|---|---|---|" + "---|" * len(record["targets"]) + "---|",
    ]
    for run in record["runs"]:
        curve = run["curve"]
        cells = []
        for t, _ in record["targets"]:
            found = _at(curve, t)
            cells.append(f"**{found[0]:,.0f}**; {found[1]:,.0f}" if found and run["budget_s"] >= t
                         else "not run that long")
        best = max((c["return"] for c in curve), default=float("nan"))
        lines.append(
            f"| {label(run)} | {run['seed']} | {run['budget_s'] / 60:.0f} | {curve[-1]['env_steps']:,} | "
            f"{run.get('load_before', float('nan')):.2f} / {run.get('load_after', float('nan')):.2f} | "
            + " | ".join(cells) + f" | {best:,.0f} |"
        )
    lines += ["", "Settings:", ""]
    for run in record["runs"]:
        lines.append(f"- {label(run)} (seed {run['seed']}): `{json.dumps(run['config'], default=str)}`")
    return "\n".join(lines) + "\n"


def plot(record: dict, path: pathlib.Path, plt) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.2), sharey=True)
    colors = {"gymjax": "tab:blue", "sb3": "tab:orange", "brax": "tab:green"}
    for run in record["runs"]:
        curve = run["curve"]
        name = f"{label(run)}, seed {run['seed']}, {run['budget_s'] / 60:g}-min run"
        # one arm may have runs of two budgets: the longer ones dashed
        style = "-" if run["budget_s"] <= min(t for t, _ in record["targets"]) else "--"
        for ax, x in ((axes[0], "wall_s"), (axes[1], "env_steps")):
            xs = [c[x] / (60 if x == "wall_s" else 1) for c in curve]
            ax.plot(xs, [c["return"] for c in curve], marker="o", ms=3, color=colors[run["arm"]], label=name,
                    alpha=0.9, linestyle=style)
    for minutes, target in ((t / 60, r) for t, r in record["targets"]):
        axes[0].plot([minutes], [target], marker="*", ms=14, color="black", linestyle="none")
        axes[0].annotate(f"target {target:,.0f} by {minutes:.0f} min", (minutes, target),
                         textcoords="offset points", xytext=(6, -14), fontsize=8)  # below right: clear of the curves
    axes[0].set_xlabel("wall time (min), 2-core CPU")
    axes[1].set_xlabel("env steps")
    import matplotlib.ticker

    axes[1].xaxis.set_major_formatter(matplotlib.ticker.EngFormatter())
    axes[0].set_ylabel(f"Ant-v5 return ({record['episodes']} deterministic episodes)")
    for ax in axes:
        ax.grid(alpha=0.3)
    # under both panels: inside either, it hides the early curves
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=8)
    highest = max([r for _, r in record["targets"]] + [c["return"] for run in record["runs"] for c in run["curve"]])
    axes[0].set_ylim(top=highest * 1.12)  # room for the targets' labels
    fig.suptitle("Time to a walking Ant: every policy evaluated on Gymnasium's Ant-v5")
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
