"""The train suite: PPO training steps/s and learning curves, each trainer in its own process.

- gymjax PPO (``gymjax.trainers.ppo.train``) on JaxAnt-v0, backend "mujoco"
  and MJX with the fast solver;
- Brax 0.14.2's ``ppo.train`` on the same env (through :func:`brax_adapter`)
  with the same hyperparameters (Brax's GAE, so gymjax runs ``gae_mode="brax"``);
- SB3's PPO (its defaults, CPU) on JaxAnt-v0 through ``SB3VecEnv`` and on
  Gymnasium's Ant-v5 in a ``DummyVecEnv``.

Training steps/s is the median over epochs (gymjax, Brax: between evaluations;
SB3: per iteration), compile apart. Curves: return against env steps and wall
time; the JAX trainers' is the deterministic evaluation return, SB3's the
mean return of its last 100 training episodes (all it computes by itself).
"""

from __future__ import annotations

import dataclasses
import functools
import time

import numpy as np

from benchmarks.harness import Stack, config_stack, figure, peak_memory

NAME = "train"


@dataclasses.dataclass(frozen=True)
class Budget:
    """How much each trainer trains: full runs and ``--quick`` smoke runs."""

    jax_timesteps: int  # env steps for gymjax and Brax PPO
    jax_envs: int
    unroll_length: int
    num_minibatches: int
    update_epochs: int
    num_evals: int  # evaluations, so curve points and steps/s samples
    num_eval_envs: int
    episode_length: int | None  # None: the env's own (1000)
    sb3_timesteps: int
    sb3_envs: int
    sb3_rollout: int  # env steps per SB3 iteration, over all envs (SB3's default: 2048)


FULL = Budget(300_000, 256, 16, 8, 4, 6, 16, None, 100_000, 16, 2048)
QUICK = Budget(4 * 16 * 8, 16, 8, 4, 2, 4, 4, 100, 3 * 256, 4, 256)


def budget(quick: bool) -> Budget:
    return QUICK if quick else FULL


def default_sizes(quick: bool, backend: str) -> tuple[int, ...]:
    return ()  # every trainer has its own batch size (Stack.sizes)


def work(stack: Stack, spec: dict, emit) -> None:
    """Trains once, at the stack's batch size, and emits the record."""
    (n,) = spec["sizes"]
    start = time.perf_counter()
    run = stack.run(n, budget(spec["quick"]))
    record = {
        "n": n,
        "steps_per_s": figure(run["sps_all"]),
        "compile_s": run.get("compile_s"),
        "wall_s": time.perf_counter() - start,
        "env_steps": run["curve"][-1]["env_steps"] if run["curve"] else 0,
        "return_kind": run["return_kind"],
        "curve": [{k: c[k] for k in ("env_steps", "wall_s", "return")} for c in run["curve"]],
        "config": run["config"],
    }
    emit(record | peak_memory())


def ppo_config(n: int, b: Budget, **changes):
    from gymjax.trainers.ppo import PPOConfig

    return PPOConfig(
        num_timesteps=b.jax_timesteps,
        num_envs=n,
        unroll_length=b.unroll_length,
        num_minibatches=b.num_minibatches,
        update_epochs=b.update_epochs,
        num_evals=b.num_evals,
        num_eval_envs=b.num_eval_envs,
        episode_length=b.episode_length,
        **changes,
    )


# -- gymjax PPO ---------------------------------------------------------------------------------


TRAIN_METRICS = {"train_return": "train/episode_return", "train_episodes": "train/episodes"}


def gymjax_ppo(env, config) -> dict:
    """Trains gymjax PPO; ``sps_all`` has one figure per epoch (compile is done ahead of time)."""
    from gymjax.trainers.ppo import train

    curve = []
    start = time.perf_counter()

    def progress(step, metrics):
        curve.append(
            {
                "env_steps": step,
                "wall_s": time.perf_counter() - start,
                "eval_return": metrics.get("eval/episode_return"),
                "sps": metrics["sps"],
                "compile_s": metrics.get("time/compile_s"),
                # with log_training_metrics: the training episodes that ended in this epoch
                **{key: metrics[name] for key, name in TRAIN_METRICS.items() if name in metrics},
            }
        )

    train(config, env, progress_fn=progress, progress_bar=False)
    rates = [c["sps"] for c in curve]
    return {
        "sps": float(np.median(rates)),
        "sps_all": rates,
        "compile_s": curve[0]["compile_s"],
        "curve": curve,
    }


def gymjax_ppo_stack(n: int, b: Budget, **env_kwargs) -> dict:
    import gymjax

    env = gymjax.make("JaxAnt-v0", **env_kwargs)
    config = ppo_config(n, b, gae_mode="brax")
    run = gymjax_ppo(env, config)
    # an epoch without an evaluation has no point on the curve
    run["curve"] = [{**c, "return": c["eval_return"]} for c in run["curve"] if c["eval_return"] is not None]
    return {**run, "return_kind": "deterministic evaluation", "config": config.to_dict()}


# -- Brax PPO -----------------------------------------------------------------------------------


def brax_adapter(env):
    """A gymjax env as a ``brax.envs.Env``: our state rides in ``pipeline_state`` and ``info``."""
    import jax.numpy as jnp
    from brax.envs.base import Env as BraxEnv
    from brax.envs.base import State as BraxState

    from gymjax.core import State

    class GymjaxInBrax(BraxEnv):
        def reset(self, rng):
            s = env.reset(rng)
            return BraxState(
                pipeline_state=s.env_state,
                obs=s.obs,
                reward=s.reward,
                done=s.terminated.astype(jnp.float32),
                metrics={},
                info={"gymjax": s.info},
            )

        def step(self, state, action):
            inner = State(
                env_state=state.pipeline_state,
                obs=state.obs,
                reward=state.reward,
                terminated=state.done > 0,
                truncated=jnp.bool_(False),
                info=state.info["gymjax"],
            )
            nxt = env.step(inner, action)
            return state.replace(
                pipeline_state=nxt.env_state,
                obs=nxt.obs,
                reward=nxt.reward,
                done=nxt.terminated.astype(jnp.float32),
                info={**state.info, "gymjax": nxt.info},
            )

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


def restore_jax_apis_brax_calls() -> None:
    """Brax 0.14.2 calls ``jax.device_put_replicated`` / ``device_put_sharded``, which JAX 0.10
    removed. Stacked host arrays are what ``pmap`` shards itself, so that is what these return."""
    import jax
    import jax.numpy as jnp

    def replicated(x, devices):
        return jax.tree.map(lambda a: jnp.stack([jnp.asarray(a)] * len(devices)), x)

    def sharded(shards, devices):
        return jax.tree.map(lambda *a: jnp.stack(a), *shards)

    jax.device_put_replicated = replicated
    jax.device_put_sharded = sharded


def brax_ppo(env, config) -> dict:
    """Brax's ``ppo.train`` on ``env`` with ``config``'s hyperparameters.

    Brax reports no compile time. Its first three progress reports are left
    out of ``sps_all``: the evaluation before training, and the first two
    training epochs, which both compile (the second traces again).
    """
    restore_jax_apis_brax_calls()
    from brax.training.agents.ppo import networks as brax_networks
    from brax.training.agents.ppo import train as brax_train
    from flax import linen

    curve, start = [], time.perf_counter()

    def progress(step, metrics):
        curve.append(
            {
                "env_steps": int(step),
                "wall_s": time.perf_counter() - start,
                "eval_return": float(metrics["eval/episode_reward"]),
                "sps": float(metrics.get("training/sps", np.nan)),
                "compile_s": None,
            }
        )

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
        episode_length=config.episode_length or env.max_episode_steps,
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
    rates = [c["sps"] for c in curve[3:] if np.isfinite(c["sps"])]  # past the compiling epochs
    return {"sps": float(np.median(rates)) if rates else None, "sps_all": rates, "curve": curve}


def brax_ppo_stack(n: int, b: Budget, **env_kwargs) -> dict:
    import gymjax

    config = ppo_config(n, b, gae_mode="brax")
    run = brax_ppo(gymjax.make("JaxAnt-v0", **env_kwargs), config)
    run["curve"] = [{**c, "return": c["eval_return"]} for c in run["curve"]]
    return {**run, "return_kind": "deterministic evaluation", "config": config.to_dict()}


# -- SB3 PPO ------------------------------------------------------------------------------------


def sb3_ppo(
    timesteps: int,
    n_envs: int,
    env=None,
    rollout: int = 2048,
    seed: int = 0,
    ppo_kwargs: dict | None = None,
) -> dict:
    """SB3's PPO (MlpPolicy on CPU; SB3's defaults unless ``ppo_kwargs``) on ``env``
    (default: Gymnasium's Ant-v5 in a DummyVecEnv).

    ``rollout`` env steps per iteration over all envs (SB3's default 2048).
    ``sps_all`` has one figure per iteration after the first (which warms up);
    ``episodes`` has every training episode's return and length as it ended.
    One torch thread: SB3's 64-unit MLPs gain nothing from more, and
    on a loaded 2-core box OpenMP's waiting threads made each update ~15x slower.
    """
    import gymnasium
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    class Clock(BaseCallback):
        """Notes the time, steps and recent training return at the start of each rollout."""

        def __init__(self):
            super().__init__()
            self.points: list[dict] = []
            self.episodes: list[dict] = []

        def _on_rollout_start(self) -> None:
            self.points.append(self.point())

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.episodes.append({"env_steps": self.num_timesteps, "time": time.perf_counter(),
                                          "return": float(info["episode"]["r"]), "length": int(info["episode"]["l"])})
            return True

        def point(self) -> dict:
            returns = [e["r"] for e in self.model.ep_info_buffer]
            return {
                "time": time.perf_counter(),
                "env_steps": self.model.num_timesteps,
                "return": float(np.mean(returns)) if returns else None,
            }

    torch.set_num_threads(1)
    if env is None:
        env = DummyVecEnv([lambda: Monitor(gymnasium.make("Ant-v5")) for _ in range(n_envs)])
    n_steps = rollout // n_envs
    model = PPO("MlpPolicy", env, n_steps=n_steps, seed=seed, device="cpu", verbose=0, **(ppo_kwargs or {}))
    clock = Clock()
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps, callback=clock)
    clock.points.append(clock.point())
    per_iteration = n_steps * n_envs
    times = [p["time"] for p in clock.points]
    rates = [per_iteration / (b - a) for a, b in zip(times[1:-1], times[2:])]  # the first iteration warms up
    env.close()
    curve = [
        {"env_steps": p["env_steps"], "wall_s": p["time"] - start, "return": p["return"]}
        for p in clock.points[1:]
    ]
    return {
        "sps": float(np.median(rates)),
        "sps_all": rates,
        "wall_s": time.perf_counter() - start,
        "n_envs": n_envs,
        "n_steps": n_steps,
        "timesteps": timesteps,
        "curve": curve,
        "episodes": [
            {"env_steps": e["env_steps"], "wall_s": e["time"] - start, "return": e["return"], "length": e["length"]}
            for e in clock.episodes
        ],
    }


def sb3_ppo_stack(n: int, b: Budget, jax_env: bool) -> dict:
    env = None
    if jax_env:
        from gymjax.wrappers.sb3 import SB3VecEnv

        env = SB3VecEnv("JaxAnt-v0", n, backend="mujoco")
    run = sb3_ppo(b.sb3_timesteps, n, env=env, rollout=b.sb3_rollout)
    config = {"n_envs": n, "n_steps": run["n_steps"], "total_timesteps": b.sb3_timesteps, "torch_threads": 1}
    return {
        **run,
        "compile_s": None,
        "return_kind": "mean of the last 100 training episodes",
        "config": config,
    }


# -- the stacks ---------------------------------------------------------------------------------

QUICK_MJX = "quick mode compiles no MJX training epoch (about a minute on CPU)"
JAX_SIZES, QUICK_JAX_SIZES = (FULL.jax_envs,), (QUICK.jax_envs,)
SB3_SIZES, QUICK_SB3_SIZES = (FULL.sb3_envs,), (QUICK.sb3_envs,)
BRAX = "brax.training.agents.ppo.train on JaxAnt-v0, the same config as gymjax PPO (Brax's GAE)"


def _jax_trainers(name, run, note, ours=True, needs=()):
    for config in ("mujoco", "mjx fast"):
        yield config_stack(
            name,
            run,
            config,
            note=note,
            mjx_quick_reason=QUICK_MJX,
            ours=ours,
            family="ppo",
            needs=needs,
            sizes=JAX_SIZES,
            quick_sizes=() if config != "mujoco" else QUICK_JAX_SIZES,
        )


STACKS = (
    *_jax_trainers("gymjax PPO, JaxAnt-v0", gymjax_ppo_stack, 'gymjax.trainers.ppo.train, gae_mode="brax"'),
    *_jax_trainers("Brax PPO, JaxAnt-v0", brax_ppo_stack, BRAX, ours=False, needs=("brax",)),
    Stack(
        "SB3 PPO, JaxAnt-v0 via SB3VecEnv (mujoco)",
        functools.partial(sb3_ppo_stack, jax_env=True),
        ours=True,
        family="ppo",
        needs=("stable_baselines3", "torch"),
        sizes=SB3_SIZES,
        quick_sizes=QUICK_SB3_SIZES,
        note='SB3 PPO defaults, one torch thread, on SB3VecEnv("JaxAnt-v0", backend="mujoco")',
    ),
    Stack(
        "SB3 PPO, Ant-v5 DummyVecEnv",
        functools.partial(sb3_ppo_stack, jax_env=False),
        ours=False,
        family="ppo",
        needs=("stable_baselines3", "torch"),
        sizes=SB3_SIZES,
        quick_sizes=QUICK_SB3_SIZES,
        note='SB3 PPO defaults, one torch thread, on DummyVecEnv of Monitor(gymnasium.make("Ant-v5"))',
    ),
)

INTERNAL_RATIOS = (("gymjax PPO, JaxAnt-v0 (mujoco)", "gymjax PPO, JaxAnt-v0 (mjx fast)"),)
