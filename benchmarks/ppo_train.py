"""PPO training throughput and learning on JaxAnt-v0: gymjax PPO against the raw env and Brax's PPO.

In one run, on the same JaxAnt-v0 and the same batch:

1. raw env: a jitted ``lax.scan`` of ``unroll_length`` steps of the auto-resetting
   training batch with random actions (the env half of a PPO iteration);
2. gymjax PPO (``gymjax.trainers.ppo.train``);
3. Brax 0.14.2's ``ppo.train`` on the same env through a thin adapter
   (``benchmarks.suites.train.brax_adapter``), with the same hyperparameters
   (Brax's GAE, so ``gae_mode="brax"``).

Writes ``benchmarks/results/ppo_train.{json,md,png}``: steps/s (compile time
apart), the ratios, and return against env steps and against wall time.

Superseded by the harness (``python -m benchmarks --suite train``), whose
trainers it runs.

    python -m benchmarks.ppo_train            # 300k steps each, fast solver, 256 envs
    python -m benchmarks.ppo_train --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import sys
import time

if __package__ in (None, ""):  # run as a file: make `benchmarks` importable from the repo root
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

import gymjax  # noqa: E402
from benchmarks.suites.train import brax_ppo, gymjax_ppo  # noqa: E402
from gymjax.trainers.ppo import PPOConfig  # noqa: E402
from gymjax.wrappers.training import wrap_for_training  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def raw_env_sps(env, config: PPOConfig, repeats: int = 3) -> dict:
    """Steps/s of the training batch alone: ``unroll_length`` random-action steps per call."""
    batch = wrap_for_training(env, episode_length=1000)
    low, high = env.action_space.low, env.action_space.high

    @jax.jit
    def unroll(state, key):
        def step(state, key):
            action = jax.random.uniform(key, (config.num_envs,) + low.shape, minval=low, maxval=high)
            return batch.step(state, action), None

        return jax.lax.scan(step, state, jax.random.split(key, config.unroll_length))[0]

    state = jax.jit(batch.reset)(jax.random.split(jax.random.PRNGKey(0), config.num_envs))
    start = time.perf_counter()
    state = jax.block_until_ready(unroll(state, jax.random.PRNGKey(1)))
    compile_s = time.perf_counter() - start
    rates = []
    for i in tqdm(range(repeats), desc="raw env", leave=False):
        start = time.perf_counter()
        state = jax.block_until_ready(unroll(state, jax.random.PRNGKey(2 + i)))
        rates.append(config.num_envs * config.unroll_length / (time.perf_counter() - start))
    return {"sps": float(np.median(rates)), "sps_all": rates, "compile_s": compile_s}


# -- report -----------------------------------------------------------------------------


def plot(results: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for name in ("gymjax_ppo", "brax_ppo"):
        run = results.get(name)
        if not run or "curve" not in run:
            continue
        pts = [c for c in run["curve"] if c["eval_return"] is not None]
        axes[0].plot([c["env_steps"] for c in pts], [c["eval_return"] for c in pts], marker="o", ms=3, label=name)
        axes[1].plot([c["wall_s"] for c in pts], [c["eval_return"] for c in pts], marker="o", ms=3, label=name)
    axes[0].set_xlabel("env steps")
    axes[1].set_xlabel("wall time incl. compile (s)")
    axes[0].set_ylabel("eval episode return")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"PPO on JaxAnt-v0 ({results['config']['num_envs']} envs), {results['machine']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def markdown(results: dict) -> str:
    raw = results["raw_env"]["sps"]
    lines = [
        f"# PPO training on JaxAnt-v0 ({results['machine']})",
        "",
        f"solver `{results['solver']}`, {results['config']['num_envs']} envs, unroll "
        f"{results['config']['unroll_length']}, {results['config']['num_timesteps']:,} steps per trainer; "
        "steps/s are medians over epochs, compile excluded.",
        "",
        "| what | steps/s | vs raw env | compile (s) | final eval return |",
        "|---|---|---|---|---|",
        f"| raw env (random actions) | {raw:,.0f} | 1.00 | {results['raw_env']['compile_s']:.1f} | |",
    ]
    for name in ("gymjax_ppo", "brax_ppo"):
        run = results.get(name)
        if not run or run.get("sps") is None:
            lines.append(f"| {name} | skipped: {run.get('skipped') if run else 'not run'} | | | |")
            continue
        final = run["curve"][-1]["eval_return"]
        compile_s = run.get("compile_s")
        lines.append(f"| {name} | {run['sps']:,.0f} | {run['sps'] / raw:.2f} | "
                     f"{'' if compile_s is None else f'{compile_s:.1f}'} | {final:.1f} |")
    if results.get("brax_ppo", {}).get("sps"):
        lines += ["", f"gymjax PPO / Brax PPO steps/s: {results['gymjax_ppo']['sps'] / results['brax_ppo']['sps']:.2f}"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=300_000)
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--solver", default="fast", help="JaxAnt-v0 solver preset (default: %(default)s)")
    parser.add_argument("--no-brax", action="store_true")
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    if args.quick:
        args.timesteps, args.num_envs = 3 * 64 * 16, 64  # 3 epochs: Brax compiles in its first two

    env = gymjax.make("JaxAnt-v0", solver=args.solver)
    config = PPOConfig(num_timesteps=args.timesteps, num_envs=args.num_envs, unroll_length=16,
                       num_minibatches=8, update_epochs=4, num_evals=6 if not args.quick else 3,
                       num_eval_envs=16, gae_mode="brax")
    results = {
        "machine": f"{platform.processor() or platform.machine()}, {jax.devices()[0].device_kind}",
        "jax": jax.__version__, "python": sys.version.split()[0], "solver": args.solver,
        "config": config.to_dict(),
    }
    results["raw_env"] = raw_env_sps(env, config)
    print(f"raw env: {results['raw_env']['sps']:,.0f} steps/s")
    results["gymjax_ppo"] = gymjax_ppo(env, config)
    print(f"gymjax PPO: {results['gymjax_ppo']['sps']:,.0f} steps/s")
    if args.no_brax:
        results["brax_ppo"] = {"skipped": "--no-brax"}
    else:
        try:
            results["brax_ppo"] = brax_ppo(env, config)
            print(f"Brax PPO: {results['brax_ppo']['sps']} steps/s")
        except ImportError as e:
            results["brax_ppo"] = {"skipped": f"brax not installed ({e})"}
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ppo_train.json").write_text(json.dumps(results, indent=2, default=float) + "\n")
    (out / "ppo_train.md").write_text(markdown(results))
    plot(results, out / "ppo_train.png")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
