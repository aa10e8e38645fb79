"""PPO training throughput and learning on JaxAnt-v0: gymjax PPO against the raw env and Brax's PPO.

In one run, on the same JaxAnt-v0 and the same batch:

1. raw env: a jitted ``lax.scan`` of ``unroll_length`` steps of the auto-resetting
   training batch with random actions (the env half of a PPO iteration);
2. gymjax PPO (``gymjax.trainers.ppo.train``);
3. Brax 0.14.2's ``ppo.train`` on the same env through a thin adapter defined
   here, with the same hyperparameters (Brax's GAE, so ``gae_mode="brax"``).

Writes ``benchmarks/results/ppo_train.{json,md,png}``: steps/s (compile time
apart), the ratios, and return against env steps and against wall time.

    python benchmarks/ppo_train.py            # 300k steps each, fast solver, 256 envs
    python benchmarks/ppo_train.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import platform
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

import gymjax
from gymjax.core import State
from gymjax.trainers.ppo import PPOConfig, train
from gymjax.wrappers.training import wrap_for_training

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


def gymjax_ppo(env, config: PPOConfig) -> dict:
    curve = []
    start = time.perf_counter()

    def progress(step, metrics):
        curve.append({"env_steps": step, "wall_s": time.perf_counter() - start,
                      "eval_return": metrics.get("eval/episode_return"), "sps": metrics["sps"],
                      "compile_s": metrics.get("time/compile_s")})

    train(config, env, progress_fn=progress)
    compile_s = curve[0]["compile_s"]
    # Epoch 1's time excludes compilation (done ahead of time); every epoch is a measurement.
    rates = [c["sps"] for c in curve]
    return {"sps": float(np.median(rates)), "sps_all": rates, "compile_s": compile_s, "curve": curve}


# -- Brax ---------------------------------------------------------------------------------


def brax_adapter(env):
    """JaxAnt-v0 as a ``brax.envs.Env``: our state rides in ``pipeline_state`` and ``info``."""
    from brax.envs.base import Env as BraxEnv
    from brax.envs.base import State as BraxState

    class GymjaxInBrax(BraxEnv):
        def reset(self, rng):
            s = env.reset(rng)
            return BraxState(pipeline_state=s.env_state, obs=s.obs, reward=s.reward,
                             done=s.terminated.astype(jnp.float32), metrics={}, info={"gymjax": s.info})

        def step(self, state, action):
            inner = State(env_state=state.pipeline_state, obs=state.obs, reward=state.reward,
                          terminated=state.done > 0, truncated=jnp.bool_(False), info=state.info["gymjax"])
            nxt = env.step(inner, action)
            return state.replace(pipeline_state=nxt.env_state, obs=nxt.obs, reward=nxt.reward,
                                 done=nxt.terminated.astype(jnp.float32), info={**state.info, "gymjax": nxt.info})

        @property
        def observation_size(self):
            return env.observation_space.shape[0]

        @property
        def action_size(self):
            return env.action_space.shape[0]

        @property
        def backend(self):
            return "mjx"

    return GymjaxInBrax()


def _restore_jax_apis_brax_calls() -> None:
    """Brax 0.14.2 calls ``jax.device_put_replicated`` / ``device_put_sharded``, which JAX 0.10
    removed. Stacked host arrays are what ``pmap`` shards itself, so that is what these return."""
    import jax._src.deprecations  # noqa: F401

    def replicated(x, devices):
        return jax.tree.map(lambda a: jnp.stack([jnp.asarray(a)] * len(devices)), x)

    def sharded(shards, devices):
        return jax.tree.map(lambda *a: jnp.stack(a), *shards)

    jax.device_put_replicated = replicated
    jax.device_put_sharded = sharded


def brax_ppo(env, config: PPOConfig) -> dict:
    _restore_jax_apis_brax_calls()
    from brax.training.agents.ppo import networks as brax_networks
    from brax.training.agents.ppo import train as brax_train
    from flax import linen

    curve, times = [], [time.perf_counter()]

    def progress(step, metrics):
        now = time.perf_counter()
        curve.append({"env_steps": int(step), "wall_s": now - times[0],
                      "eval_return": float(metrics["eval/episode_reward"]),
                      "sps": float(metrics.get("training/sps", np.nan)),
                      "compile_s": None})

    network_factory = functools.partial(
        brax_networks.make_ppo_networks,
        policy_hidden_layer_sizes=config.policy_hidden_sizes,
        value_hidden_layer_sizes=config.value_hidden_sizes,
        activation=linen.tanh,
    )
    brax_train.train(
        environment=brax_adapter(env),
        num_timesteps=config.num_timesteps,
        num_envs=config.num_envs,
        episode_length=env.max_episode_steps,
        unroll_length=config.unroll_length,
        # one unroll per env per training step, split into num_minibatches, as gymjax does
        batch_size=config.num_envs // config.num_minibatches,
        num_minibatches=config.num_minibatches,
        num_updates_per_batch=config.update_epochs,
        learning_rate=config.learning_rate,
        entropy_cost=config.entropy_cost,
        discounting=config.gamma,
        gae_lambda=config.gae_lambda,
        clipping_epsilon=config.clip_epsilon,
        max_grad_norm=config.max_grad_norm,
        normalize_observations=config.normalize_observations,
        reward_scaling=config.reward_scaling,
        vf_loss_coefficient=2 * config.value_loss_coef,  # Brax multiplies by another 0.5
        num_evals=config.num_evals + 1,  # Brax's first eval is before training
        num_eval_envs=config.num_eval_envs,
        deterministic_eval=True,
        network_factory=network_factory,
        seed=config.seed,
        progress_fn=progress,
    )
    rates = [c["sps"] for c in curve[2:] if np.isfinite(c["sps"])]  # past the compiling steps
    return {"sps": float(np.median(rates)) if rates else None, "sps_all": rates, "curve": curve}


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
        args.timesteps, args.num_envs = 2 * 64 * 16, 64

    env = gymjax.make("JaxAnt-v0", solver=args.solver)
    config = PPOConfig(num_timesteps=args.timesteps, num_envs=args.num_envs, unroll_length=16,
                       num_minibatches=8, update_epochs=4, num_evals=6 if not args.quick else 2,
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
