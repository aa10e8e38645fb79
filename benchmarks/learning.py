"""Learning side by side: SB3 PPO and gymjax PPO on JaxAnt-v0 and Gymnasium's Ant-v5.

Four arms, several seeds each, every run in its own process:

- ``sb3_ant_v5``: SB3 PPO with rl-baselines3-zoo's Ant settings on Gymnasium's
  Ant-v5 (MuJoCo C), ``DummyVecEnv`` + ``Monitor``;
- ``sb3_jaxant``: the same SB3 PPO on JaxAnt-v0 through gymjax's ``SB3VecEnv``;
- ``gymjax_sb3``: gymjax's native PPO configured like that SB3 PPO, on the same
  JaxAnt-v0: its hyperparameters, standard GAE, SB3's policy (a normal with a
  state-independent log std, clipped to the bounds) and VecNormalize's reward
  normalization (``gymjax_sb3_tanh`` keeps gymjax's tanh-normal policy and no
  reward normalization, to show what those two change);
- ``gymjax_fast``: gymjax's PPO with its own defaults (256 envs) on JaxAnt-v0,
  to show the wall-clock gain.

JaxAnt-v0 runs on ``--backend`` (default ``"mujoco"``, the CPU fast path). With
one env, as rl-zoo uses, MJX steps at only ~70-230 steps/s on a 2-core CPU
(one core per run), so ``--backend mjx`` is for a GPU or a long night; the
``sb3_jaxant_mjx`` arm adds SB3 on MJX beside the others at any budget.

rl-baselines3-zoo's Ant PPO entry (``hyperparams/ppo.yml``, ``Ant-v3``) is
SB3's PPO defaults plus ``normalize: true`` (``VecNormalize`` of observations
and rewards), one env, 1M steps. All arms record the return of every training
episode (stochastic policy, raw reward) against env steps and wall time; the
report bins them, averages over seeds and shows the seed spread.

Writes ``benchmarks/results/learning.{json,md,png}``; every run's raw record is
kept under ``benchmarks/results/learning_runs/`` so a report can be remade
without rerunning (``--report-only``).

    python benchmarks/learning.py                          # 200k steps, seeds 0 1 2, 2 runs at once
    python benchmarks/learning.py --timesteps 20000 --seeds 0 --arms sb3_ant_v5 gymjax_sb3   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
import warnings

if __package__ in (None, ""):  # run as a file: make `benchmarks` importable from the repo root
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from benchmarks.report import pyplot  # noqa: E402
from benchmarks.suites.train import gymjax_ppo, sb3_ppo  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"

# arm: (label, JaxAnt-v0 backend; None = the --backend option)
ARMS = {
    "sb3_ant_v5": ("SB3 PPO, Gymnasium Ant-v5", None),
    "sb3_jaxant": ("SB3 PPO, JaxAnt-v0 via SB3VecEnv", None),
    "gymjax_sb3": ("gymjax PPO, SB3's settings and policy, JaxAnt-v0", None),
    "gymjax_sb3_tanh": ("gymjax PPO, SB3's settings, tanh-normal policy, no reward norm., JaxAnt-v0", None),
    "gymjax_fast": ("gymjax PPO defaults (256 envs), JaxAnt-v0", None),
    "sb3_jaxant_mjx": ("SB3 PPO, JaxAnt-v0 (MJX) via SB3VecEnv", "mjx"),
}
DEFAULT_ARMS = ["sb3_ant_v5", "sb3_jaxant", "gymjax_sb3", "gymjax_fast"]


def backend_of(arm: str, backend: str) -> str:
    return ARMS[arm][1] or backend


def label(arm: str, backend: str) -> str:
    text = ARMS[arm][0]
    return text if arm == "sb3_ant_v5" or ARMS[arm][1] else f"{text} (backend={backend!r})"

# rl-baselines3-zoo hyperparams/ppo.yml, Ant: SB3 PPO defaults, VecNormalize, one env.
SB3_SETTINGS = dict(n_steps=2048, batch_size=64, n_epochs=10, learning_rate=3e-4, gamma=0.99,
                    gae_lambda=0.95, clip_range=0.2, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5)
N_ENVS_SB3 = 1


# -- one run (in its own process) ----------------------------------------------------------


def run_sb3(arm: str, seed: int, timesteps: int, backend: str) -> dict:
    """The train suite's SB3 PPO run, with rl-zoo's Ant settings: VecNormalize, one env, a seed."""
    import gymnasium
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    if arm == "sb3_ant_v5":
        venv = DummyVecEnv([lambda: Monitor(gymnasium.make("Ant-v5")) for _ in range(N_ENVS_SB3)])
    else:
        from gymjax.wrappers.sb3 import SB3VecEnv

        venv = SB3VecEnv("JaxAnt-v0", num_envs=N_ENVS_SB3, backend=backend)
    venv = VecNormalize(venv, gamma=SB3_SETTINGS["gamma"])
    settings = {k: v for k, v in SB3_SETTINGS.items() if k != "n_steps"}
    run = sb3_ppo(timesteps, N_ENVS_SB3, env=venv, rollout=SB3_SETTINGS["n_steps"] * N_ENVS_SB3, seed=seed,
                  ppo_kwargs=settings)
    return {"episodes": run["episodes"], "sps": run["sps"], "wall_s": run["wall_s"], "compile_s": 0.0}


def gymjax_config(arm: str, seed: int, timesteps: int):
    from gymjax.trainers.ppo import PPOConfig

    if arm.startswith("gymjax_sb3"):
        s = SB3_SETTINGS
        like_sb3 = arm == "gymjax_sb3"
        return PPOConfig(
            num_timesteps=timesteps, num_envs=N_ENVS_SB3, unroll_length=s["n_steps"],
            num_minibatches=s["n_steps"] * N_ENVS_SB3 // s["batch_size"], update_epochs=s["n_epochs"],
            learning_rate=s["learning_rate"], gamma=s["gamma"], gae_lambda=s["gae_lambda"],
            clip_epsilon=s["clip_range"], entropy_cost=s["ent_coef"], value_loss_coef=s["vf_coef"],
            max_grad_norm=s["max_grad_norm"], gae_mode="standard", normalize_observations=True,
            policy_hidden_sizes=(64, 64), value_hidden_sizes=(64, 64), activation="tanh",
            policy_distribution="normal" if like_sb3 else "tanh_normal", log_std_init=0.0,
            normalize_rewards=like_sb3, num_evals=0, log_training_metrics=True,
            training_metrics_steps=5 * s["n_steps"], seed=seed,
        )
    return PPOConfig(num_timesteps=timesteps, num_evals=0, log_training_metrics=True,
                     training_metrics_steps=8192, seed=seed)


def run_gymjax(arm: str, seed: int, timesteps: int, backend: str) -> dict:
    """The train suite's gymjax PPO run, reporting the training episodes of every epoch."""
    import gymjax

    config = gymjax_config(arm, seed, timesteps)
    run = gymjax_ppo(gymjax.make("JaxAnt-v0", backend=backend), config)
    reports = [{"env_steps": int(c["env_steps"]), "wall_s": c["wall_s"], "return": float(c["train_return"]),
                "episodes": int(c["train_episodes"]), "sps": float(c["sps"]), "compile_s": c["compile_s"]}
               for c in run["curve"]]
    return {"reports": reports, "sps": run["sps"], "wall_s": reports[-1]["wall_s"], "compile_s": run["compile_s"],
            "config": config.to_dict()}


def run_one(arm: str, seed: int, timesteps: int, backend: str, out: pathlib.Path) -> None:
    backend = backend_of(arm, backend)
    run = run_sb3 if arm.startswith("sb3") else run_gymjax
    record = run(arm, seed, timesteps, backend)
    record.update(arm=arm, seed=seed, timesteps=timesteps, backend=None if arm == "sb3_ant_v5" else backend)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record) + "\n")
    tmp.replace(out)


# -- the driver: runs in subprocesses, `jobs` at a time ----------------------------------------


def run_path(runs_dir: pathlib.Path, arm: str, seed: int, timesteps: int, backend: str) -> pathlib.Path:
    where = "c" if arm == "sb3_ant_v5" else backend_of(arm, backend)
    return runs_dir / f"{arm}-{where}-{timesteps}-seed{seed}.json"


def run_all(arms: list[str], seeds: list[int], timesteps: int, backend: str, jobs: int,
            runs_dir: pathlib.Path) -> None:
    todo = [(a, s) for s in seeds for a in arms]
    running: list[tuple[subprocess.Popen, str, pathlib.Path]] = []
    with tqdm(total=len(todo), desc="learning runs", unit="run") as bar:
        while todo or running:
            while todo and len(running) < jobs:
                arm, seed = todo.pop(0)
                path = run_path(runs_dir, arm, seed, timesteps, backend)
                log = path.with_suffix(".log")
                runs_dir.mkdir(parents=True, exist_ok=True)
                cmd = [sys.executable, __file__, "--one", arm, str(seed), "--timesteps", str(timesteps),
                       "--backend", backend, "--runs-dir", str(runs_dir)]
                running.append((subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT),
                                f"{arm} seed {seed}", log))
            time.sleep(2)
            for proc, name, log in list(running):
                if proc.poll() is not None:
                    running.remove((proc, name, log))
                    bar.update()
                    status = "done" if proc.returncode == 0 else f"FAILED (exit {proc.returncode}, see {log})"
                    tqdm.write(f"{name}: {status}")


# -- report -------------------------------------------------------------------------------------


def load_runs(runs_dir: pathlib.Path, timesteps: int, backend: str) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {}
    for path in sorted(runs_dir.glob("*.json")):
        record = json.loads(path.read_text())
        if record["timesteps"] == timesteps and record["backend"] in (None, backend_of(record["arm"], backend)):
            runs.setdefault(record["arm"], []).append(record)
    return runs


def binned(record: dict, edges: np.ndarray) -> np.ndarray:
    """Mean training-episode return per bin of env steps (episode-weighted); NaN where no episode ended."""
    if "episodes" in record:  # SB3: one entry per episode
        steps = np.array([e["env_steps"] for e in record["episodes"]], float)
        returns = np.array([e["return"] for e in record["episodes"]], float)
        weights = np.ones_like(returns)
    else:  # gymjax: one mean per report, over the episodes that ended since the last one,
        # placed at the middle of that interval
        ends = np.array([r["env_steps"] for r in record["reports"]], float)
        steps = ends - np.diff(ends, prepend=0.0) / 2
        returns = np.array([r["return"] for r in record["reports"]], float)
        weights = np.array([r["episodes"] for r in record["reports"]], float)
        keep = weights > 0
        steps, returns, weights = steps[keep], returns[keep], weights[keep]
    which = np.clip(np.searchsorted(edges, steps, side="left") - 1, 0, len(edges) - 2)
    total = np.bincount(which, weights=returns * weights, minlength=len(edges) - 1)
    count = np.bincount(which, weights=weights, minlength=len(edges) - 1)
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1e-12), np.nan)


def wall_curve(record: dict) -> tuple[np.ndarray, np.ndarray]:
    points = record["episodes"] if "episodes" in record else [r for r in record["reports"] if r["episodes"] > 0]
    return np.array([p["wall_s"] for p in points]), np.array([p["return"] for p in points])


def summarize(runs: dict[str, list[dict]], timesteps: int, bins: int, backend: str) -> dict:
    warnings.filterwarnings("ignore", message="(All-NaN slice|Mean of empty slice)")
    edges = np.linspace(0, timesteps, bins + 1)
    summary: dict = {"bin_edges": edges.tolist(), "arms": {}}
    tail = max(1, bins // 5)  # the last fifth of training
    for arm, records in runs.items():
        curves = np.array([binned(r, edges) for r in records])
        final = [float(np.nanmean(c[-tail:])) for c in curves]
        summary["arms"][arm] = {
            "label": label(arm, backend),
            "seeds": [r["seed"] for r in records],
            "curve_mean": np.nanmean(curves, axis=0).tolist(),
            "curve_min": np.nanmin(curves, axis=0).tolist(),
            "curve_max": np.nanmax(curves, axis=0).tolist(),
            "final_return_per_seed": final,
            "sps_per_seed": [r["sps"] for r in records],
            "sps": float(np.median([r["sps"] for r in records])),
            "wall_s_per_seed": [r["wall_s"] for r in records],
            "compile_s": float(np.median([r["compile_s"] or 0.0 for r in records])),
        }
    summary["comparisons"] = [compare(summary["arms"], a, b) for a, b in
                              [("sb3_jaxant", "sb3_ant_v5"), ("sb3_jaxant_mjx", "sb3_ant_v5"),
                               ("gymjax_sb3", "sb3_jaxant"), ("gymjax_sb3_tanh", "sb3_jaxant"),
                               ("gymjax_fast", "sb3_jaxant")]
                              if a in summary["arms"] and b in summary["arms"]]
    return summary


def compare(arms: dict, a: str, b: str) -> dict:
    """Whether two arms' curves overlap within their seed spread, bin by bin and at the end."""
    A, B = arms[a], arms[b]
    lo_a, hi_a, lo_b, hi_b = (np.array(A["curve_min"]), np.array(A["curve_max"]),
                              np.array(B["curve_min"]), np.array(B["curve_max"]))
    valid = np.isfinite(lo_a) & np.isfinite(lo_b)
    overlap = (lo_a <= hi_b) & (lo_b <= hi_a)
    fa, fb = np.array(A["final_return_per_seed"]), np.array(B["final_return_per_seed"])
    spread = max(np.ptp(fa), np.ptp(fb))
    return {
        "arms": [a, b],
        "bins_overlapping": int(overlap[valid].sum()),
        "bins": int(valid.sum()),
        "final_mean": [float(fa.mean()), float(fb.mean())],
        "final_diff": float(fa.mean() - fb.mean()),
        "final_seed_spread": float(spread),
        "final_within_spread": bool(abs(fa.mean() - fb.mean()) <= spread),
        "sps_ratio": A["sps"] / B["sps"],
        "wall_ratio": float(np.median(B["wall_s_per_seed"]) / np.median(A["wall_s_per_seed"])),
    }


def markdown(report: dict) -> str:
    s = report["summary"]
    lines = [
        f"# Learning side by side on Ant ({report['machine']})",
        "",
        f"{report['timesteps']:,} env steps per run, JaxAnt-v0 backend `{report['backend']}` unless named, "
        f"seeds {report['seeds']}, {report['jobs']} runs at a time on "
        f"{report['cpu_count']} cores (wall times include that sharing). Return = mean return of the training "
        "episodes (stochastic policy, raw reward) that ended in each bin; final = the last fifth of training.",
        "",
        "SB3 settings (rl-baselines3-zoo Ant = SB3 defaults + VecNormalize, 1 env): "
        + ", ".join(f"{k}={v}" for k, v in SB3_SETTINGS.items()) + ".",
        "",
        "| arm | seeds | final return per seed | mean | training steps/s | wall per run (s) | compile (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for arm, a in s["arms"].items():
        lines.append(f"| {a['label']} | {len(a['seeds'])} | {', '.join(f'{x:.0f}' for x in a['final_return_per_seed'])}"
                     f" | {np.mean(a['final_return_per_seed']):.0f} | {a['sps']:,.0f} | "
                     f"{np.median(a['wall_s_per_seed']):.0f} | {a['compile_s']:.0f} |")
    lines += ["", "| comparison | bins whose seed ranges overlap | final mean diff | larger seed spread | "
              "within spread | steps/s ratio | wall-clock ratio |", "|---|---|---|---|---|---|---|"]
    for c in s["comparisons"]:
        a, b = c["arms"]
        lines.append(f"| {a} vs {b} | {c['bins_overlapping']}/{c['bins']} | {c['final_diff']:+.0f} | "
                     f"{c['final_seed_spread']:.0f} | {'yes' if c['final_within_spread'] else 'no'} | "
                     f"{c['sps_ratio']:.2f} | {c['wall_ratio']:.2f} |")
    return "\n".join(lines) + "\n"


def plot(report: dict, runs: dict[str, list[dict]], path: pathlib.Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    import matplotlib.ticker

    s = report["summary"]
    edges = np.array(s["bin_edges"])
    mids = (edges[:-1] + edges[1:]) / 2
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.5), sharey=True)
    for i, (arm, a) in enumerate(s["arms"].items()):
        color = f"C{i}"
        axes[0].plot(mids, a["curve_mean"], color=color, label=f"{a['label']} ({len(a['seeds'])} seeds)")
        axes[0].fill_between(mids, a["curve_min"], a["curve_max"], color=color, alpha=0.2)
        for record in runs[arm]:
            wall, ret = wall_curve(record)
            if len(ret) > 5:  # a running mean keeps per-episode SB3 points readable
                k = max(1, len(ret) // 20)
                ret = np.convolve(ret, np.ones(k) / k, mode="valid")
                wall = wall[k - 1:]
            axes[1].plot(wall, ret, color=color, alpha=0.7)
    axes[0].set_xlabel("env steps")
    axes[1].set_xlabel("wall time incl. compile (s), log scale")
    axes[1].set_xscale("log")
    axes[1].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[0].set_ylabel("training episode return")
    axes[0].set_title("mean over seeds, band = min..max")
    axes[1].set_title("each seed")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=8)
    fig.suptitle(f"PPO on Ant: SB3 vs gymjax, JaxAnt-v0 vs Ant-v5 ({report['machine']})")
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=200_000, help="env steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=DEFAULT_ARMS)
    parser.add_argument("--backend", choices=["mujoco", "mjx"], default="mujoco", help="JaxAnt-v0 backend")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (each run uses about one core)")
    parser.add_argument("--bins", type=int, default=20, help="env-step bins for the curves")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS)
    parser.add_argument("--runs-dir", type=pathlib.Path, default=None, help="default: OUT/learning_runs")
    parser.add_argument("--report-only", action="store_true", help="remake the report from saved runs")
    parser.add_argument("--one", nargs=2, metavar=("ARM", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    runs_dir = args.runs_dir or args.out / "learning_runs"

    if args.one:
        arm, seed = args.one
        if arm not in ARMS:
            parser.error(f"unknown arm {arm!r}; expected one of {list(ARMS)}")
        path = run_path(runs_dir, arm, int(seed), args.timesteps, args.backend)
        run_one(arm, int(seed), args.timesteps, args.backend, path)
        return 0
    if not args.report_only:
        run_all(args.arms, args.seeds, args.timesteps, args.backend, args.jobs, runs_dir)
    runs = load_runs(runs_dir, args.timesteps, args.backend)
    if not runs:
        print(f"no finished runs of {args.timesteps} steps under {runs_dir}", file=sys.stderr)
        return 1
    import platform

    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, CPU",
        "cpu_count": os.cpu_count(), "timesteps": args.timesteps, "seeds": sorted({r['seed'] for rs in runs.values() for r in rs}),
        "jobs": args.jobs, "sb3_settings": SB3_SETTINGS,
        "backend": args.backend, "summary": summarize(runs, args.timesteps, args.bins, args.backend),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "learning.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "learning.md").write_text(markdown(report))
    plot(report, runs, args.out / "learning.png")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
