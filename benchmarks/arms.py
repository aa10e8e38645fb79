"""The training arms: what each trainer is, how it trains in its worker, how its policies play.

One table, built for any registered env id (or a gymjax preset's name) by :func:`arms_for`:

- ``gymjax``: gymjax PPO with the env's preset (``PPOConfig.preset``), PPOConfig's defaults
  where the env has none;
- ``gymjax_defaults``: gymjax PPO with PPOConfig's defaults;
- ``gymjax_sb3``: gymjax PPO configured like the ``sb3`` arm (rl-zoo's hyperparameters, standard
  GAE, SB3's state-independent normal policy, VecNormalize's reward normalization);
  ``gymjax_sb3_tanh`` keeps gymjax's tanh-normal policy and no reward normalization;
- ``sb3``: Stable-Baselines3's PPO with rl-baselines3-zoo's settings for the env (read from
  ``rl_zoo3/hyperparams/ppo.yml`` at run time) on Gymnasium's own env;
  ``sb3_jax``: the same on the JAX env through gymjax's ``SB3VecEnv``;
- ``brax``: Brax's ``ppo.train`` on the JAX env, with Brax's own settings where Brax publishes
  them (:data:`BRAX_SETTINGS`), else the ``gymjax`` arm's hyperparameters (Brax's GAE);
  ``brax_gymjax``: always the ``gymjax`` arm's, for training speed at equal settings.

A worker (``python -m benchmarks.arms train|evaluate RUN.json``, started by
:mod:`benchmarks.training`) trains one (arm, seed) and hands out snapshots: a pickled policy per
file and a JSON line ``{wall_s, env_steps, file}``, the clock counting from the parent's launch
of the process (imports and compilation included), the time spent saving taken off; a gymjax
arm's line adds ``eval_return``, the trainer's own evaluation of that policy, where it made one.
The evaluator then plays chosen snapshots on Gymnasium's env, apart from training; and the best
snapshot, the one a gymjax run directory keeps (:mod:`gymjax.trainers.store.best`: the first with the
highest ``eval_return``), into ``best.json``: its return is measured there, on Gymnasium's
episodes, never taken from the evaluation that chose it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib
import pickle
import sys
import time
from typing import Any

from benchmarks import common

KINDS = ("gymjax", "sb3", "brax")

# Brax's own Ant PPO settings (its training colab); Brax's default networks.
BRAX_SETTINGS = {
    "JaxAnt-v0": {
        "num_timesteps": 50_000_000, "num_envs": 4096, "batch_size": 2048, "num_minibatches": 32, "unroll_length": 5,
        "num_updates_per_batch": 4, "discounting": 0.97, "learning_rate": 3e-4, "entropy_cost": 1e-2,
        "reward_scaling": 10.0, "normalize_observations": True, "episode_length": 1000, "action_repeat": 1,
        "num_evals": 20, "num_eval_envs": 16,
    },
}  # fmt: skip
SNAPSHOT_GAP_S = 1.0  # SB3 offers a policy after every rollout; one kept per second at most


@dataclasses.dataclass(frozen=True)
class Arm:
    """One trainer with its settings, on one env.

    Attributes:
        name: the arm's key (``"gymjax"``, ``"sb3"``, ...).
        kind: which trainer: ``"gymjax"``, ``"sb3"`` or ``"brax"``.
        env_id: the registered gymjax id; SB3 arms train on its Gymnasium reference unless ``on_jax``.
        label: what reports call it.
        settings: a PPOConfig's fields (gymjax), rl-zoo's entry (sb3) or ``ppo.train``'s arguments (brax).
        on_jax: an SB3 arm on the JAX env (through ``SB3VecEnv``).
        env_kwargs: options of the JAX env (``engine``), for every arm that builds it.
        missing: why it cannot run on this install (an optional package absent), or None.
    """

    name: str
    kind: str
    env_id: str
    label: str
    settings: dict[str, Any]
    on_jax: bool = False
    env_kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    missing: str | None = None

    @property
    def reference_id(self) -> str:
        from gymjax.trainers.reference import reference_id

        return reference_id(self.env_id)


def task_of(name: str) -> tuple[str, str | None]:
    """``(env_id, preset)`` for a registered env id or a preset's short name (``"ant_hour"``)."""
    from gymjax import envs
    from gymjax.trainers.ppo import presets

    if name in presets.names():
        return presets.get(name).env_id, name
    envs.spec(name)  # names the registered ids if it is not one
    return name, presets.get(name).name if name in {p.env_id for p in presets.PRESETS} else None


def arms_for(
    task: str, env_kwargs: dict[str, Any] | None = None, changes: dict[str, Any] | None = None
) -> dict[str, Arm]:
    """Every arm for ``task`` (an env id or a preset name), by name; ``changes`` (PPOConfig fields) are
    laid over the preset of the arms that train with it (a trial of other settings)."""
    from gymjax.trainers.ppo import PPOConfig
    from gymjax.trainers.reference import reference_id

    env_id, preset = task_of(task)
    kw = dict(env_kwargs or {})
    config = (PPOConfig.preset(preset) if preset else PPOConfig()).replace(**(changes or {}))
    ours = (f"preset {preset}" if preset else "PPOConfig defaults") + "".join(
        f", {k}={v}" for k, v in (changes or {}).items()
    )
    # The arms with rl-zoo's settings need rl_zoo3 (extra 'bench'); without it they are reported skipped.
    zoo_missing = (
        None if _zoo_file() else "rl_zoo3 is not installed (extra 'bench'): its settings are read from it"
    )
    zoo_id, zoo = zoo_settings(reference_id(env_id)) if zoo_missing is None else ("rl-zoo", {})
    table = [
        Arm("gymjax", "gymjax", env_id, f"gymjax PPO, {ours}, {env_id}", config.to_dict(), env_kwargs=kw),
        Arm("gymjax_defaults", "gymjax", env_id, f"gymjax PPO defaults, {env_id}", PPOConfig().to_dict(),
            env_kwargs=kw),
        Arm("sb3", "sb3", env_id, f"SB3 PPO, rl-zoo {zoo_id} settings, Gymnasium {reference_id(env_id)}", zoo,
            missing=zoo_missing),
        Arm("sb3_jax", "sb3", env_id, f"SB3 PPO, rl-zoo {zoo_id} settings, {env_id} via SB3VecEnv", zoo, True, kw,
            missing=zoo_missing),
        Arm("brax", "brax", env_id, f"Brax PPO, {'Brax' if env_id in BRAX_SETTINGS else ours} settings, {env_id}",
            BRAX_SETTINGS.get(env_id) or brax_settings(config), env_kwargs=kw),
        Arm("brax_gymjax", "brax", env_id, f"Brax PPO, {ours} settings, {env_id}", brax_settings(config),
            env_kwargs=kw),
    ]  # fmt: skip
    try:
        like_sb3 = gymjax_like_sb3(zoo)
    except ValueError:
        like_sb3 = None  # rl-zoo's entry uses what gymjax PPO does not have (a clip-range schedule, ...)
    if like_sb3 is not None and zoo_missing is None:
        table += [
            Arm("gymjax_sb3", "gymjax", env_id, f"gymjax PPO, SB3's settings and policy, {env_id}", like_sb3,
                env_kwargs=kw),
            Arm("gymjax_sb3_tanh", "gymjax", env_id, f"gymjax PPO, SB3's settings, tanh-normal policy, no reward "
                f"norm., {env_id}", like_sb3 | {"policy_distribution": "tanh_normal", "normalize_rewards": False},
                env_kwargs=kw),
        ]  # fmt: skip
    return {arm.name: arm for arm in table}


# -- settings: rl-zoo's, and translations --------------------------------------------------------


def _zoo_file() -> pathlib.Path | None:
    """rl-zoo's PPO settings file, or None without rl_zoo3. Found, not imported: importing rl_zoo3
    patches Gymnasium's TimeLimit for the whole process (info["TimeLimit.truncated"])."""
    import importlib.util

    zoo = importlib.util.find_spec("rl_zoo3")
    return (
        None
        if zoo is None or zoo.origin is None
        else pathlib.Path(zoo.origin).parent / "hyperparams" / "ppo.yml"
    )


def zoo_settings(reference_id: str) -> tuple[str, dict]:
    """rl-baselines3-zoo's PPO entry for ``reference_id``: ``(zoo's id, entry)``; the id itself, or the
    same env at the highest version the zoo lists (its MuJoCo entries are ``-v4``); ``{}`` if none."""
    import yaml

    path = _zoo_file()
    if path is None:
        raise ModuleNotFoundError(
            "rl_zoo3 is not installed: SB3 arms read rl-baselines3-zoo's settings (extra 'bench')"
        )
    table = yaml.safe_load(path.read_text())
    if reference_id in table:
        return reference_id, table[reference_id]
    base = reference_id.rsplit("-v", 1)[0]
    same = [k for k in table if k.rsplit("-v", 1)[0] == base and k.rsplit("-v", 1)[-1].isdigit()]
    if not same:
        return "(none: SB3 defaults)", {}
    best = max(same, key=lambda k: int(k.rsplit("-v", 1)[1]))
    return best, table[best]


def sb3_kwargs(zoo: dict) -> tuple[dict, int, int, dict | None]:
    """rl-zoo's entry as SB3 takes it: ``(PPO kwargs, n_envs, n_timesteps, VecNormalize kwargs or None)``,
    its ``lin_`` schedules and string ``policy_kwargs`` read as rl-zoo reads them."""
    from stable_baselines3.common.utils import LinearSchedule
    from torch import nn  # rl-zoo's policy_kwargs strings name nn.*

    h = dict(zoo)
    unsupported = sorted(set(h) & {"env_wrapper", "frame_stack", "callback", "vec_env_wrapper"})
    if unsupported:
        raise ValueError(f"rl-zoo's entry uses {unsupported}, which this benchmark does not build")
    n_envs, n_timesteps = int(h.pop("n_envs", 1)), int(h.pop("n_timesteps", 1_000_000))
    normalize = h.pop("normalize", False)
    if isinstance(normalize, str):
        normalize = _zoo_expression(normalize, nn)  # e.g. "{'norm_obs': True, 'norm_reward': False}"
    h.pop("policy", None)
    for key in ("learning_rate", "clip_range"):
        if isinstance(h.get(key), str) and h[key].startswith("lin_"):
            # rl-zoo's linear_schedule: the value times the progress remaining, 1 down to 0 (rl_zoo3
            # itself is not imported: it patches Gymnasium's TimeLimit for the whole process)
            h[key] = LinearSchedule(float(h[key][4:]), 0.0, 1.0)
    if isinstance(h.get("policy_kwargs"), str):
        h["policy_kwargs"] = _zoo_expression(h["policy_kwargs"], nn)
    norm = (normalize if isinstance(normalize, dict) else {}) if normalize else None
    return h, n_envs, n_timesteps, norm


def _zoo_expression(text: str, nn) -> Any:
    """One of rl-zoo's Python-valued settings (``dict(net_arch=[64, 64], activation_fn=nn.Tanh)``),
    read without executing it: literals, ``dict(...)`` calls and ``nn.<Module>`` names only."""
    import ast

    def value(node: ast.AST) -> Any:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "dict"
            and not node.args
        ):
            return {k.arg: value(k.value) for k in node.keywords}
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "nn":
            return getattr(nn, node.attr)
        if isinstance(node, ast.Dict):
            return {value(k): value(v) for k, v in zip(node.keys, node.values, strict=True)}
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [value(x) for x in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        return ast.literal_eval(node)  # refuses anything else (a call, a name) with a ValueError

    return value(ast.parse(text, mode="eval").body)


def gymjax_like_sb3(zoo: dict) -> dict:
    """A PPOConfig (as a dict) that trains as SB3's PPO with rl-zoo's entry ``zoo`` does: its
    hyperparameters (SB3's defaults where the entry has none), standard GAE, SB3's policy (a normal
    with a state-independent log std, clipped to the bounds), VecNormalize's normalizations."""
    from gymjax.trainers.ppo import PPOConfig

    h = {"n_envs": 1, "n_steps": 2048, "batch_size": 64, "n_epochs": 10, "learning_rate": 3e-4, "gamma": 0.99,
         "gae_lambda": 0.95, "clip_range": 0.2, "ent_coef": 0.0, "vf_coef": 0.5,
         "max_grad_norm": 0.5} | zoo  # fmt: skip
    other = sorted(set(h) - {*PPO_FIELDS, "n_envs", "n_steps", "batch_size", "n_epochs", "n_timesteps", "normalize",
                             "policy"})  # fmt: skip
    if other or isinstance(h["clip_range"], str) or h.get("normalize", False) not in (True, False):
        raise ValueError(f"rl-zoo's entry {zoo} has settings gymjax PPO does not express: {other}")
    lr, schedule = h["learning_rate"], "constant"
    if isinstance(lr, str):
        lr, schedule = float(lr.removeprefix("lin_")), "linear"
    norm = bool(h.get("normalize", False))
    return PPOConfig(
        num_timesteps=int(h.get("n_timesteps", 1_000_000)), num_envs=h["n_envs"], unroll_length=h["n_steps"],
        num_minibatches=h["n_steps"] * h["n_envs"] // h["batch_size"], update_epochs=h["n_epochs"],
        learning_rate=lr, lr_schedule=schedule, gamma=h["gamma"], gae_lambda=h["gae_lambda"],
        clip_epsilon=h["clip_range"], entropy_cost=h["ent_coef"], value_loss_coef=h["vf_coef"],
        max_grad_norm=h["max_grad_norm"], gae_mode="standard", normalize_observations=norm, normalize_rewards=norm,
        policy_hidden_sizes=(64, 64), value_hidden_sizes=(64, 64), activation="tanh",
        policy_distribution="normal", log_std_init=0.0,
    ).to_dict()  # fmt: skip


PPO_FIELDS = ("learning_rate", "gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef", "max_grad_norm")


def brax_settings(config) -> dict:
    """A PPOConfig's hyperparameters as Brax's ``ppo.train`` arguments (Brax's GAE)."""
    return {
        "num_timesteps": config.num_timesteps, "num_envs": config.num_envs,
        "episode_length": config.episode_length or 1000, "unroll_length": config.unroll_length,
        "batch_size": config.num_envs // config.num_minibatches,  # one unroll per env per step, as gymjax
        "num_minibatches": config.num_minibatches, "num_updates_per_batch": config.update_epochs,
        "learning_rate": config.learning_rate, "entropy_cost": config.entropy_cost, "discounting": config.gamma,
        "gae_lambda": config.gae_lambda, "clipping_epsilon": config.clip_epsilon,
        "max_grad_norm": config.max_grad_norm, "normalize_observations": config.normalize_observations,
        "reward_scaling": config.reward_scaling,
        "vf_loss_coefficient": 2 * config.value_loss_coef,  # Brax multiplies by another 0.5
        "num_evals": max(2, config.num_evals + 1), "num_eval_envs": config.num_eval_envs,
        "network": {"policy_hidden_layer_sizes": list(config.policy_hidden_sizes),
                    "value_hidden_layer_sizes": list(config.value_hidden_sizes), "activation": config.activation},
    }  # fmt: skip


# -- the worker's side: snapshots -----------------------------------------------------------------


class Snapshots:
    """Policies handed out as training goes: ``NNNN.pkl`` each, and a line in ``snapshots.jsonl``."""

    def __init__(self, run: dict):
        self.directory = pathlib.Path(run["dir"])
        self.launched, self.budget_s = run["launched"], run["budget_s"]
        self.count, self.paused_s, self.last_wall = 0, 0.0, None

    def elapsed(self) -> float:
        """Seconds since the parent launched this process, less the time spent saving."""
        return time.time() - self.launched - self.paused_s

    def out_of_time(self) -> bool:
        return self.budget_s is not None and self.elapsed() > self.budget_s

    def add(self, env_steps: int, payload: Any, eval_return: float | None = None) -> None:
        start = time.perf_counter()
        self.last_wall = wall = self.elapsed()
        name = f"{self.count:04d}.pkl"
        with open(self.directory / name, "wb") as f:
            pickle.dump(payload, f)
        line = {"wall_s": wall, "env_steps": int(env_steps), "file": name}
        common.append_line(self.directory / "snapshots.jsonl", line | (
            {} if eval_return is None else {"eval_return": eval_return}))  # fmt: skip
        self.count += 1
        self.paused_s += time.perf_counter() - start


DIAGNOSTICS = ("losses/approx_kl", "losses/clip_fraction", "losses/entropy", "losses/value")


def train_gymjax(arm: Arm, run: dict, snaps: Snapshots) -> dict:
    import jax

    import gymjax
    from gymjax.trainers.hooks import Hook, StopTraining
    from gymjax.trainers.ppo import Minutes, PPOConfig, train
    from gymjax.trainers.store.best import METRIC

    evaluated = {}  # env steps -> the trainer's evaluation of the policy then, for its snapshot

    class Deadline(Hook):
        def after_eval(self, progress, metrics):
            evaluated[progress.env_steps] = metrics[METRIC]

        def after_epoch(self, progress, metrics):
            # What explains a curve (issue 48: why a run falls late): the update's size and the losses.
            common.append_line(snaps.directory / "diagnostics.jsonl", {"env_steps": progress.env_steps} | {
                k: float(metrics[k]) for k in DIAGNOSTICS if k in metrics})  # fmt: skip
            if snaps.out_of_time():
                raise StopTraining(f"wall-clock budget of {run['budget_s']:g} s spent")

    config = PPOConfig.from_dict(arm.settings | {"seed": run["seed"]} | (
        {"num_timesteps": run["steps"]} if run["steps"] else {}))  # fmt: skip
    # A wall-clock budget without a step count is gymjax's own time budget (``train(budget=Minutes(m))``): the
    # run's steps are chosen on this machine and its schedule laid over them, counted from the
    # launch; the deadline hook stays as the harness's limit for every arm.
    timed = (
        {"budget": Minutes(run["budget_s"] / 60, run["launched"])} if run["budget_s"] and not run["steps"] else {}
    )
    _, _, metrics = train(config, gymjax.make(arm.env_id, **arm.env_kwargs), hooks=[Deadline()], progress_bar=True,
                          policy_params_fn=lambda steps, _, params: snaps.add(
                              steps, jax.device_get(params), evaluated.pop(steps, None)),
                          **timed)  # fmt: skip
    # A timed run's settings: the steps it chose, which replay it (``--steps``).
    return config.to_dict() | ({"num_timesteps": int(metrics["env_steps"])} if timed else {})


def train_sb3(arm: Arm, run: dict, snaps: Snapshots) -> dict:
    import copy

    import gymnasium
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    # SB3's small MLPs gain nothing from more threads; on a loaded 2-core machine OpenMP's waiting
    # threads made each update ~15x slower.
    torch.set_num_threads(1)
    kwargs, n_envs, n_timesteps, norm = sb3_kwargs(arm.settings)

    def payload(model) -> dict:
        vec_norm = model.get_vec_normalize_env()
        stats = (
            {
                "obs_mean": vec_norm.obs_rms.mean.copy(),
                "obs_var": vec_norm.obs_rms.var.copy(),
                "clip_obs": vec_norm.clip_obs,
                "epsilon": vec_norm.epsilon,
            }
            if vec_norm and vec_norm.norm_obs
            else {}
        )
        return {"policy": copy.deepcopy(model.policy.state_dict()), **stats}  # fmt: skip

    class Keep(BaseCallback):
        def _on_rollout_end(self) -> None:
            if snaps.last_wall is None or snaps.elapsed() - snaps.last_wall >= SNAPSHOT_GAP_S:
                snaps.add(self.num_timesteps, payload(self.model))

        def _on_step(self) -> bool:
            return not snaps.out_of_time()

    if arm.on_jax:
        from gymjax.wrappers.sb3 import SB3VecEnv

        venv = SB3VecEnv(arm.env_id, num_envs=n_envs, **arm.env_kwargs)
    else:
        venv = DummyVecEnv([lambda: Monitor(gymnasium.make(arm.reference_id))] * n_envs)
    if norm is not None:
        venv = VecNormalize(venv, gamma=kwargs.get("gamma", 0.99), **norm)
    model = PPO(
        arm.settings.get("policy", "MlpPolicy"), venv, seed=run["seed"], device="cpu", verbose=0, **kwargs
    )
    model.learn(total_timesteps=run["steps"] or n_timesteps, callback=Keep(), progress_bar=True)
    snaps.add(model.num_timesteps, payload(model))
    return {"n_envs": n_envs, "n_timesteps": run["steps"] or n_timesteps, **arm.settings}


class OutOfTime(Exception):
    """Raised from Brax's ``policy_params_fn`` (Brax has no other way to stop) when the budget is spent."""


def brax_adapter(env):
    """A gymjax env as a ``brax.envs.Env``: its state rides in ``pipeline_state`` and ``info``."""
    import jax.numpy as jnp
    from brax.envs.base import Env as BraxEnv
    from brax.envs.base import State as BraxState

    from gymjax.core import State

    class GymjaxInBrax(BraxEnv):
        def reset(self, rng):
            s = env.reset(rng)
            return BraxState(pipeline_state=s.env_state, obs=s.obs, reward=s.reward,
                             done=s.terminated.astype(jnp.float32), metrics={}, info={"gymjax": s.info})  # fmt: skip

        def step(self, state, action):
            inner = State(env_state=state.pipeline_state, obs=state.obs, reward=state.reward,
                          terminated=state.done > 0, truncated=jnp.bool_(False), info=state.info["gymjax"])  # fmt: skip
            nxt = env.step(inner, action)
            return state.replace(pipeline_state=nxt.env_state, obs=nxt.obs, reward=nxt.reward,
                                 done=nxt.terminated.astype(jnp.float32),
                                 info={**state.info, "gymjax": nxt.info})  # fmt: skip

        observation_size = property(lambda self: env.observation_space.shape[0])
        action_size = property(lambda self: env.action_space.shape[0])
        backend = property(lambda self: "mjx")

    return GymjaxInBrax()


def brax_networks(settings: dict, obs_size: int, action_size: int):
    """Brax's PPO networks as ``ppo.train`` builds them from ``settings``' network entry."""
    from brax.training.acme import running_statistics
    from brax.training.agents.ppo import networks
    from flax import linen

    net = dict(settings.get("network", {}))
    if "activation" in net:
        net["activation"] = getattr(linen, net["activation"])
    factory = functools.partial(networks.make_ppo_networks, **net)
    return factory, factory(obs_size, action_size, preprocess_observations_fn=running_statistics.normalize)


def train_brax(arm: Arm, run: dict, snaps: Snapshots) -> dict:
    import jax
    from brax.training.agents.ppo import train as brax_train

    import gymjax

    def keep(env_steps, make_policy, params):
        snaps.add(env_steps, jax.device_get(params))
        if snaps.out_of_time():
            raise OutOfTime

    env = gymjax.make(arm.env_id, **arm.env_kwargs)
    settings = (
        arm.settings | {"seed": run["seed"]} | ({"num_timesteps": run["steps"]} if run["steps"] else {})
    )
    factory, _ = brax_networks(settings, env.observation_space.shape[0], env.action_space.shape[0])
    try:
        brax_train.train(environment=brax_adapter(env), policy_params_fn=keep, network_factory=factory,
                         **{k: v for k, v in settings.items() if k != "network"})  # fmt: skip
    except OutOfTime:
        pass
    return settings


TRAINERS = {"gymjax": train_gymjax, "sb3": train_sb3, "brax": train_brax}


# -- the evaluator's side: each arm's deterministic policy ----------------------------------------


def actor(arm: Arm, settings: dict):
    """``payload -> act(obs batch) -> actions``: the arm's deterministic policy for a snapshot."""
    import jax
    import numpy as np

    import gymjax

    env = gymjax.make(arm.env_id, **arm.env_kwargs)
    if arm.kind == "gymjax":
        from gymjax.trainers.ppo import PPOConfig
        from gymjax.trainers.ppo.networks import make_networks

        networks = make_networks(
            env.observation_space.shape[0], env.action_space, PPOConfig.from_dict(settings)
        )
        act = jax.jit(lambda params, obs: networks.make_policy(params, deterministic=True)(obs, None)[0])
        return lambda payload: lambda obs: np.asarray(act(payload, obs))
    if arm.kind == "brax":
        from brax.training.agents.ppo import networks

        _, nets = brax_networks(settings, env.observation_space.shape[0], env.action_space.shape[0])
        make, key = networks.make_inference_fn(nets), jax.random.PRNGKey(0)

        def for_params(params):
            policy = jax.jit(make(params, deterministic=True))
            return lambda obs: np.asarray(policy(obs, key)[0])

        return for_params
    import gymnasium
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    kwargs, *_ = sb3_kwargs(arm.settings)
    model = PPO(arm.settings.get("policy", "MlpPolicy"), DummyVecEnv([lambda: gymnasium.make(arm.reference_id)]),
                device="cpu", **kwargs)  # fmt: skip

    def for_payload(p):
        model.policy.load_state_dict(p["policy"])

        def act(obs):
            if "obs_mean" in p:  # VecNormalize's observation normalization, with its statistics then
                obs = np.clip(
                    (obs - p["obs_mean"]) / np.sqrt(p["obs_var"] + p["epsilon"]),
                    -p["clip_obs"],
                    p["clip_obs"],
                )
            with torch.no_grad():
                return model.predict(obs.astype(np.float32), deterministic=True)[0]

        return act

    return for_payload


def chosen(snapshots: list[dict], points: int) -> list[int]:
    """Indices of at most ``points`` snapshots spread evenly over the run's wall time, the last included."""
    import numpy as np

    if not snapshots:
        return []
    walls = np.array([s["wall_s"] for s in snapshots])
    wanted = np.linspace(walls[0], walls[-1], points)
    return sorted({int(np.abs(walls - w).argmin()) for w in wanted} | {len(snapshots) - 1})


def evaluate(arm: Arm, run: dict) -> None:
    """Plays the chosen snapshots of a trained run on Gymnasium's env; one line each in ``curve.jsonl``."""
    from gymjax.trainers.reference import evaluate_on_reference

    directory = pathlib.Path(run["dir"])
    snapshots: list[dict] = []
    common.read_new_lines(directory / "snapshots.jsonl", 0, snapshots.append)
    settings = json.loads((directory / "settings.json").read_text())
    play = actor(arm, settings)

    def on_reference(s: dict) -> dict:
        payload = pickle.loads((directory / s["file"]).read_bytes())
        # The same episodes for every snapshot (one seed), so that two snapshots compare as policies.
        result = evaluate_on_reference(
            play(payload), arm.env_id, arm.env_kwargs, episodes=run["episodes"], seed=10_000
        )
        return {
            "wall_s": s["wall_s"], "env_steps": s["env_steps"], "return": result["episode_return_mean"],
            "return_std": result["episode_return_std"], "length": result["episode_length_mean"],
            "env": result["reference_env"],
        }  # fmt: skip

    for i in chosen(snapshots, run["points"]):
        common.append_line(directory / "curve.jsonl", on_reference(snapshots[i]))
    judged = [s for s in snapshots if "eval_return" in s]
    if judged:
        top = max(s["eval_return"] for s in judged)
        kept = next(s for s in judged if s["eval_return"] == top)  # the first: a tie does not replace it
        (directory / "best.json").write_text(json.dumps(on_reference(kept) | {"eval_return": top}))


def main(argv: list[str]) -> int:
    """``train RUN.json`` or ``evaluate RUN.json``: one (arm, seed), in this process."""
    what, path = argv
    run = json.loads(pathlib.Path(path).read_text())
    arm = Arm(**run["arm"])
    if what == "train":
        settings = TRAINERS[arm.kind](arm, run, Snapshots(run))
        (pathlib.Path(run["dir"]) / "settings.json").write_text(json.dumps(settings, default=str))
    else:
        evaluate(arm, run)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
