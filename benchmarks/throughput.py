"""Throughput: env steps/s of gymjax's stacks and the ecosystem's, at N envs.

    python -m benchmarks throughput                        # every stack, its group's sizes (~1 h on 2 cores)
    python -m benchmarks throughput --group adapters       # SB3 and PettingZoo adapters against their peers
    python -m benchmarks throughput --name throughput-ceiling --interleave --profile --sizes 256 \\
        --rounds 7 --round-seconds 0.6 --stacks "host pool" rollout "VectorEnv (mujoco)" \\
        "SB3VecEnv, JaxAnt-v0 (mujoco)" EnvPool
    python -m benchmarks throughput --quick --out /tmp/bench   # a smoke run (N=4, no MJX): never into results/

One table of stacks (:data:`STACKS`): gymjax's JaxAnt-v0 as the bare jitted step,
the Gymnasium VectorEnv, the torch bridge and the SB3 and PettingZoo adapters,
each on MJX and on the MuJoCo C engine; and the peers (Gymnasium's Ant-v5 sync
and async, EnvPool, Brax, SB3's own vector envs, MaMuJoCo) and two ceilings
(MuJoCo C alone through ``mujoco.rollout`` and through gymjax's host pool). A peer
that is not installed is reported skipped, never dropped.

Two ways to time, both :func:`benchmarks.common.interleaved` in a worker process:

- separately (the default): each stack in a process of its own, its sizes in
  increasing order, its peak RSS read after each N;
- ``--interleave``: at each N every chosen stack built in one process and timed
  in alternation, so that a change of load falls on all alike: the way to quote
  ratios on a shared machine.

``--profile`` adds where a VectorEnv step's time goes (:func:`profile`).
Ratios: every gymjax stack over each peer of its family, and the :data:`INTERNAL`
pairs (an adapter over what it wraps), at each N both measured in this run.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import json
import os
import pathlib
import resource
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
from tqdm import tqdm

from benchmarks import common

THREADS = os.cpu_count() or 1
GROUP_SIZES = {"env": (1, 16, 64, 256, 1024), "adapters": (16, 64)}
GPU_EXTRA = (4096,)  # on an accelerator the env group goes on to N=4096
QUICK_SIZES = (4,)
FULL = {"rounds": 5, "round_s": 1.5, "timeout_s": 2400.0}
QUICK = {"rounds": 2, "round_s": 0.05, "timeout_s": 300.0}

# Optional packages a stack may need, and how to get them (extras of pyproject.toml).
PEERS = {
    "brax": "extra 'bench'",
    "envpool": "extra 'bench'",
    "torch": "extras 'torch', 'dev'",
    "stable_baselines3": "extras 'sb3', 'dev'",
    "pettingzoo": "extras 'pettingzoo', 'dev'",
    "gymnasium_robotics": "extra 'dev' (MaMuJoCo)",
}


# -- builders: a common.Stepper at n envs (imports inside: the parent stays off JAX) ---------


def action_batches(space, n: int, count: int = 16, seed: int = 0, dtype=np.float32) -> np.ndarray:
    """``count`` batches of ``n`` uniform actions in the Box ``space``: ``[count, n, *shape]``."""
    return np.random.default_rng(seed).uniform(space.low, space.high, (count, n, *space.shape)).astype(dtype)


def action_cycle(space, n: int, count: int = 16, seed: int = 0, dtype=np.float32) -> Callable[[], np.ndarray]:
    """:func:`action_batches`, handed out in turn."""
    batches = action_batches(space, n, count, seed, dtype)
    i = [0]

    def next_batch() -> np.ndarray:
        i[0] = (i[0] + 1) % count
        return batches[i[0]]

    return next_batch


def jitted_rollout(env, n: int, action: Callable[[], np.ndarray], close=None) -> common.Stepper:
    """``jax.jit(jax.vmap(env.step))`` of a functional env (gymjax's or Brax's) from ``n`` resets,
    waiting for each step: no auto-reset, nothing converted."""
    import jax

    state = [jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))]
    step = jax.jit(jax.vmap(env.step))
    actions = [jax.device_put(action()) for _ in range(16)]  # on the device already: nothing copied per step

    def call() -> None:
        actions.append(actions.pop(0))
        state[0] = step(state[0], actions[0])
        jax.block_until_ready(state[0].obs)

    return common.Stepper(call, n, close)


def jax_raw_step(n: int, **options) -> common.Stepper:
    import gymjax

    env = gymjax.make("JaxAnt-v0", **options)
    return jitted_rollout(env, n, action_cycle(env.action_space, n), env.close)


def vector_env(n: int, env_id: str = "JaxAnt-v0", autoreset_mode: str = "same_step", **options) -> common.Stepper:
    """``gymnasium.make_vec(env_id)``: gymjax's VectorEnv, NumPy in and out, ``autoreset_mode``'s auto-reset."""
    import gymnasium

    import gymjax  # noqa: F401  (registers the ids)

    env = gymnasium.make_vec(env_id, num_envs=n, autoreset_mode=autoreset_mode, **options)
    env.reset(seed=0)
    action = action_cycle(env.single_action_space, n)
    return common.Stepper(lambda: env.step(action()), n, env.close)


def torch_vector_env(n: int, **options) -> common.Stepper:
    """gymjax's TorchVectorEnv: torch tensors in and out through DLPack."""
    import torch

    from gymjax.wrappers.torch import TorchVectorEnv

    torch.set_num_threads(1)  # the bridge runs no torch kernels; keep torch off the JAX cores
    env = TorchVectorEnv("JaxAnt-v0", n, **options)
    env.reset(seed=0)
    action = action_cycle(env.single_action_space, n)

    def step() -> None:
        # DLPack hands tensors over before the step has run (on a GPU): read one value to wait for it
        env.step(torch.from_numpy(action()))[0][0, 0].item()

    return common.Stepper(step, n, env.close)


def gymnasium_vector(n: int, mode: str) -> common.Stepper:
    """Gymnasium's Ant-v5 (MuJoCo C) in a ``SyncVectorEnv`` or ``AsyncVectorEnv`` (``mode``)."""
    import gymnasium

    env = gymnasium.make_vec("Ant-v5", num_envs=n, vectorization_mode=mode)
    env.reset(seed=0)
    action = action_cycle(env.single_action_space, n)
    return common.Stepper(lambda: env.step(action()), n, env.close)


def envpool_env(n: int, task: str = "Ant-v5", **options) -> common.Stepper:
    """EnvPool's ``task``: MuJoCo C stepped by C++ threads, Gymnasium API."""
    import envpool

    env = envpool.make_gymnasium(task, num_envs=n, **options)
    env.reset()
    action = action_cycle(env.action_space, n, dtype=np.float64)
    return common.Stepper(lambda: env.step(action()), n, env.close)


def mujoco_rollout(n: int) -> common.Stepper:
    """MuJoCo C alone: ``mujoco.rollout.Rollout`` on one thread per core steps N Ant states
    ``frame_skip`` substeps per call, JaxAnt-v0's model; the states evolve and never reset."""
    import mujoco
    from mujoco import rollout

    import gymjax

    env = gymjax.make("JaxAnt-v0", engine="mujoco")
    model = env.mj_model
    datas = [mujoco.MjData(model) for _ in range(THREADS)]
    mujoco.mj_forward(model, datas[0])
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.empty((n, mujoco.mj_stateSize(model, spec)))
    mujoco.mj_getState(model, datas[0], state[0], spec)
    state[:] = state[0]
    states = [state]
    action = action_cycle(env.action_space, n)
    pool = rollout.Rollout(nthread=THREADS)

    def step() -> None:
        # one action per env, held for the frame_skip substeps of a step: [n, frame_skip, nu]
        control = np.repeat(action()[:, None], env.frame_skip, axis=1)
        trajectory, _ = pool.rollout(model, datas, states[0], control)
        states[0] = trajectory[:, -1]

    return common.Stepper(step, n, pool.close)


def rollout_unsupported() -> str | None:
    import mujoco
    from mujoco import rollout

    if hasattr(rollout, "Rollout"):
        return None
    return f"mujoco {mujoco.__version__} has no mujoco.rollout.Rollout (the thread pool newer MuJoCo 3 has)"


def host_pool(n: int, env_id: str = "JaxAnt-v0") -> common.Stepper:
    """gymjax's MuJoCo C thread pool alone (``HostPhysics``, the env's model and fields): no JAX, no reset."""
    import jax

    import gymjax
    from gymjax.envs.mujoco.engine.callback import HostPhysics

    env = gymjax.make(env_id, engine="mujoco")
    physics = HostPhysics(env.mj_model, env.frame_skip, THREADS, env.data_fields, env.differenced_fields)
    qpos, qvel = jax.jit(jax.vmap(env.initial_state))(jax.random.split(jax.random.PRNGKey(0), n))
    state = [
        physics.split(physics.init(np.asarray(qpos, np.float32), np.asarray(qvel, np.float32), {})).state
    ]
    action = action_cycle(env.action_space, n)

    def step() -> None:
        # The states evolve, as in a VectorEnv: a fallen body's contacts cost more than its start.
        state[0] = physics.split(physics.step(state[0], action(), {})).state

    def close() -> None:
        physics.close()
        env.close()

    return common.Stepper(step, n, close)


def batch_ceiling(n: int, env_id: str = "JaxAnt-v0", episode: int = 50) -> common.Stepper:
    """MuJoCo's own batch engine stepped from NumPy, no JAX: ``mujoco.batch.Batch(model, nsim=n,
    nthread=cores)`` on the task's model, ``ctrl`` written and ``step(nstep=frame_skip)`` per call,
    the task's ``data_fields`` bound so that their copies out are paid.

    The states evolve from reset draws and all go back to them every ``episode`` calls, in one
    ``forward`` call. Left to evolve for a whole time limit, fallen bodies pile up contacts that an
    auto-resetting batch never meets (Humanoid ran at half its rate so); resetting a few envs on
    every call instead costs a batch call of its own each step (Ant lost a sixth)."""
    import jax
    from mujoco.batch import Batch

    import gymjax

    env = gymjax.make(env_id, engine="mujoco")
    batch = Batch(env.mj_model, nsim=n, nthread=THREADS)
    qpos, qvel = jax.jit(jax.vmap(env.initial_state))(jax.random.split(jax.random.PRNGKey(0), n))
    qpos, qvel = np.asarray(qpos, np.float64), np.asarray(qvel, np.float64)
    outputs = [batch.bind(name) for name in env.data_fields]  # registered: copied out after every step
    action = action_cycle(env.action_space, n, dtype=np.float64)
    calls = [0]

    def step() -> None:
        if calls[0] % episode == 0:
            batch.qpos[:], batch.qvel[:] = qpos, qvel
            batch.forward()
        calls[0] += 1
        batch.ctrl[:] = action()
        batch.step(nstep=env.frame_skip)

    def close() -> None:
        outputs.clear()
        env.close()

    return common.Stepper(step, n, close)


def training_scan(n: int, env_id: str = "JaxAnt-v0", unroll: int = 32, **options) -> common.Stepper:
    """What the PPO trainer steps: ``jax.jit`` of a ``lax.scan`` over ``unroll`` steps of
    ``wrap_for_training(gymjax.make(env_id))`` (time limit, vmap, auto-reset), uniform random actions
    drawn inside the jit; one call is ``unroll * n`` env steps."""
    import jax

    import gymjax
    from gymjax.wrappers.training import wrap_for_training

    base = gymjax.make(env_id, **options)
    env = wrap_for_training(base)
    low, high = base.action_space.low, base.action_space.high

    def one(state, key):
        return env.step(state, jax.random.uniform(key, (n, *low.shape), minval=low, maxval=high)), None

    @jax.jit
    def rollout(state, key):
        key, use = jax.random.split(key)
        state, _ = jax.lax.scan(one, state, jax.random.split(use, unroll))
        return state, key

    carry = [(jax.jit(env.reset)(jax.random.split(jax.random.PRNGKey(0), n)), jax.random.PRNGKey(1))]

    def step() -> None:
        carry[0] = rollout(*carry[0])
        jax.block_until_ready(carry[0][0].obs)

    return common.Stepper(step, unroll * n, base.close)


def brax_ant(n: int, backend: str) -> common.Stepper:
    """``brax.envs.get_environment("ant", backend=...)``."""
    import gymnasium
    from brax import envs

    env = envs.get_environment("ant", backend=backend)
    space = gymnasium.spaces.Box(-1.0, 1.0, (env.action_size,), np.float32)  # Brax's actions lie in [-1, 1]
    return jitted_rollout(env, n, action_cycle(space, n))


def _sb3(env) -> common.Stepper:
    env.reset()
    action = action_cycle(env.action_space, env.num_envs)
    return common.Stepper(lambda: env.step(action()), env.num_envs, env.close)


def sb3_vec_env(n: int, **options) -> common.Stepper:
    """gymjax's SB3 ``VecEnv``: one jitted step for all ``n`` envs."""
    from gymjax.wrappers.sb3 import SB3VecEnv

    return _sb3(SB3VecEnv("JaxAnt-v0", n, **options))


def sb3_own(n: int, kind: str) -> common.Stepper:
    """SB3's ``DummyVecEnv`` or ``SubprocVecEnv`` (``kind``) of ``Monitor(gymnasium.make("Ant-v5"))``."""
    from stable_baselines3.common import vec_env

    return _sb3(getattr(vec_env, kind)([_monitored_ant] * n))


def _monitored_ant():
    import gymnasium
    from stable_baselines3.common.monitor import Monitor

    return Monitor(gymnasium.make("Ant-v5"))


def parallel_env(n: int, peer: bool = False, **options) -> common.Stepper:
    """One PettingZoo ``ParallelEnv`` (``n`` is 1) of Ant 2x4: gymjax's ``PettingZooEnv``, or with
    ``peer`` Gymnasium-Robotics' MaMuJoCo; reset when its episode has ended (``agents`` empty)."""
    if peer:
        from gymnasium_robotics import mamujoco_v1

        env = mamujoco_v1.parallel_env("Ant", "2x4")
    else:
        from gymjax.wrappers.pettingzoo import PettingZooEnv

        env = PettingZooEnv("JaxMultiAnt-v0", agent_conf="2x4", **options)
    env.reset(seed=0)
    actions = {a: action_cycle(env.action_space(a), 1)()[0] for a in env.possible_agents}

    def step() -> None:
        if not env.agents:
            env.reset()
        env.step(actions)

    return common.Stepper(step, 1, env.close)


def pettingzoo_vector(n: int) -> common.Stepper:
    """gymjax's ``PettingZooVectorEnv``: ``n`` JaxMultiAnt-v0 2x4 envs in one jitted step."""
    from gymjax.wrappers.pettingzoo import PettingZooVectorEnv

    env = PettingZooVectorEnv("JaxMultiAnt-v0", num_envs=n, agent_conf="2x4", engine="mujoco")
    env.reset(seed=0)
    cycles = {a: action_cycle(env.action_space(a), n) for a in env.possible_agents}
    return common.Stepper(lambda: env.step({a: c() for a, c in cycles.items()}), n, env.close)


# -- the stacks ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Stack:
    """One thing measured: a gymjax stack (``ours``) or a peer's; ratios pair those of one ``family``."""

    name: str
    build: Callable[[int], common.Stepper]
    family: str
    ours: bool = True
    group: str = "env"  # its default sizes: GROUP_SIZES
    needs: tuple[str, ...] = ()  # optional packages (keys of PEERS)
    unsupported: Callable[[], str | None] | None = None  # why this install cannot run it, or None
    note: str = ""
    sizes: tuple[int, ...] | None = None  # the only sizes it takes (a single env: (1,))
    max_n: int | None = None  # larger N skipped, for max_n_reason
    max_n_reason: str = ""
    cpu_sizes: tuple[int, ...] | None = None  # on a CPU backend only these, for cpu_reason
    cpu_reason: str = ""
    quick: bool = True  # in the quick run (MJX and Brax compile for minutes on a CPU: not)


# One process per env: past 32 per core the box measures its scheduler, not the envs.
PROCESS_MAX_N = 32 * THREADS
PROCESSES = f"one process per env: above {PROCESS_MAX_N} on {THREADS} cores it would measure the scheduler"
# Observed on the 2-core CPU: at N=1024 an MJX step hung for good (every thread waiting in jaxlib's
# batched linear algebra, ParallelBatchMap).
MJX_CPU = {
    "cpu_sizes": (1, 16, 64, 256),
    "cpu_reason": "MJX at N=1024 on a CPU hung (all threads waiting in "
    "jaxlib's batched linear algebra, ParallelBatchMap); measured up to N=256 on CPU",
    "quick": False,
}
ENGINES = {
    "mjx accurate": ({"engine": "mjx", "solver": "accurate"}, "MJX, accurate solver preset", MJX_CPU),
    "mjx fast": ({"engine": "mjx", "solver": "fast"}, "MJX, fast solver preset", MJX_CPU),
    "mujoco": ({"engine": "mujoco"}, "MuJoCo C on a thread pool inside jit", {}),
}


def ours(name: str, build: Callable, engines: tuple[str, ...], note: str, **kwargs) -> list[Stack]:
    """gymjax's stack ``name`` on each of ``engines``, named ``name (engine)``."""
    out = []
    for engine in engines:
        options, words, rules = ENGINES[engine]
        out.append(
            Stack(
                f"{name} ({engine})",
                functools.partial(build, **options),
                note=f"{note}; {words}",
                **{**rules, **kwargs},
            )
        )
    return out


# fmt: off
ANT = {"family": "ant", "ours": False}
SB3 = {"family": "sb3", "group": "adapters", "needs": ("stable_baselines3", "torch")}
PZ = {"family": "pettingzoo", "group": "adapters", "needs": ("pettingzoo",), "sizes": (1,)}
STACKS = (
    *ours("JaxAnt-v0 raw step", jax_raw_step, ("mjx accurate", "mjx fast", "mujoco"), "jax.jit(jax.vmap(env.step))"
          " of the functional env (no auto-reset, nothing converted)", family="ant"),
    *ours("JaxAnt-v0 VectorEnv", vector_env, ("mjx accurate", "mujoco"),
          'gymnasium.make_vec("JaxAnt-v0"): NumPy in and out, same-step auto-reset', family="ant"),
    *ours("JaxAnt-v0 TorchVectorEnv", torch_vector_env, ("mjx accurate", "mujoco"),
          "gymjax.wrappers.torch.TorchVectorEnv: torch tensors via DLPack", family="ant", needs=("torch",)),
    Stack("Gymnasium Ant-v5 SyncVectorEnv", functools.partial(gymnasium_vector, mode="sync"), **ANT,
          note="MuJoCo C, one env after another in this process"),
    Stack("Gymnasium Ant-v5 AsyncVectorEnv", functools.partial(gymnasium_vector, mode="async"), **ANT,
          note="MuJoCo C, one process per env", max_n=PROCESS_MAX_N, max_n_reason=PROCESSES),
    Stack("EnvPool Ant-v5", envpool_env, **ANT, needs=("envpool",),
          note="MuJoCo C, C++ thread pool (envpool.make_gymnasium, its default threads)"),
    Stack("mujoco.rollout (MuJoCo C alone)", mujoco_rollout, **ANT, unsupported=rollout_unsupported,
          note=f"a ceiling: mujoco.rollout.Rollout, {THREADS} threads, 5 mj_step a call, JaxAnt-v0's model"),
    Stack("host pool (gymjax's MuJoCo C pool alone)", host_pool, **ANT,
          note=f"a ceiling: gymjax's HostPhysics, {THREADS} threads, an Ant-v5 step's whole work, no JAX"),
    *(Stack(f"Brax ant ({backend})", functools.partial(brax_ant, backend=backend), **ANT, needs=("brax",),
            note=f'brax.envs.get_environment("ant", backend="{backend}"), jitted vmapped step',
            cpu_sizes=(16, 256) if backend == "mjx" else (16, 256, 1024), quick=False,
            cpu_reason="Brax compiles each N for tens of seconds on CPU: a few sizes only")
      for backend in ("generalized", "positional", "spring", "mjx")),
    *ours("SB3VecEnv, JaxAnt-v0", sb3_vec_env, ("mujoco", "mjx accurate"), "gymjax.wrappers.sb3.SB3VecEnv", **SB3),
    Stack("SB3 DummyVecEnv, Ant-v5", functools.partial(sb3_own, kind="DummyVecEnv"), **{**SB3, "ours": False},
          note='DummyVecEnv of Monitor(gymnasium.make("Ant-v5")), one env after another'),
    Stack("SB3 SubprocVecEnv, Ant-v5", functools.partial(sb3_own, kind="SubprocVecEnv"),
          **{**SB3, "ours": False}, note='SubprocVecEnv of Monitor(gymnasium.make("Ant-v5")), one process per env',
          max_n=PROCESS_MAX_N, max_n_reason=PROCESSES),
    *ours("PettingZooEnv, JaxMultiAnt-v0 2x4", parallel_env, ("mujoco", "mjx accurate"),
          "gymjax.wrappers.pettingzoo.PettingZooEnv (a ParallelEnv, one env)", **PZ),
    Stack("MaMuJoCo Ant 2x4 ParallelEnv", functools.partial(parallel_env, peer=True),
          **{**PZ, "ours": False, "needs": ("pettingzoo", "gymnasium_robotics")},
          note='gymnasium_robotics.mamujoco_v1.parallel_env("Ant", "2x4"), MuJoCo C'),
    Stack("PettingZooVectorEnv, JaxMultiAnt-v0 2x4 (mujoco)", pettingzoo_vector, family="pettingzoo-batched",
          group="adapters", needs=("pettingzoo",), note="gymjax's batched multi-agent env (no peer: no ratio)"),
)
# fmt: on

BY_NAME = {s.name: s for s in STACKS}

# Within gymjax: what each adapter costs over what it wraps (same engine); and the ceiling's bound.
INTERNAL = (
    *(
        (f"JaxAnt-v0 {outer} ({engine})", f"JaxAnt-v0 {inner} ({engine})")
        for engine in ("mjx accurate", "mujoco")
        for outer, inner in (("VectorEnv", "raw step"), ("TorchVectorEnv", "VectorEnv"))
    ),
    ("SB3VecEnv, JaxAnt-v0 (mujoco)", "JaxAnt-v0 VectorEnv (mujoco)"),
    ("SB3VecEnv, JaxAnt-v0 (mujoco)", "SB3VecEnv, JaxAnt-v0 (mjx accurate)"),
    # EnvPool does the same MuJoCo work on the same cores: VectorEnv / EnvPool cannot beat this
    ("host pool (gymjax's MuJoCo C pool alone)", "EnvPool Ant-v5"),
)


def missing_peer(needs: tuple[str, ...], without: tuple[str, ...]) -> str | None:
    """Why a stack that needs ``needs`` cannot run here, or None when it can."""
    for name in needs:
        if name in without:
            return f"{name} treated as not installed (--without {name})"
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed (optional peer, {PEERS[name]})"
    return None


def plan_sizes(stack: Stack, sizes: list[int], quick: bool, backend: str) -> tuple[list[int], dict[int, str]]:
    """The sizes ``stack`` runs at among ``sizes`` (its own fixed ones instead, if it has them), and why
    each other is skipped."""
    run, skipped = [], {}
    for n in sorted(stack.sizes or sizes):
        if stack.max_n is not None and n > stack.max_n:
            skipped[n] = stack.max_n_reason
        elif backend == "cpu" and stack.cpu_sizes is not None and not quick and n not in stack.cpu_sizes:
            skipped[n] = stack.cpu_reason
        else:
            run.append(n)
    return run, skipped


# -- the worker: python -m benchmarks.throughput SPEC.json -------------------------------------


def worker(spec: dict) -> None:
    """Builds and times ``spec["plan"]`` ({stack: sizes}) N by N, every stack of one N in alternation;
    appends one record per N (and per profile) to ``spec["records"]``."""
    import warnings

    warnings.simplefilter("ignore")  # peers' deprecation notices would bury a failure's traceback
    plan = spec["plan"]
    for n in sorted({n for sizes in plan.values() for n in sizes}):
        steppers, failed, build_s = {}, {}, {}
        for name in (name for name, sizes in plan.items() if n in sizes):
            start = time.perf_counter()
            try:
                steppers[name] = BY_NAME[name].build(n)
            except Exception as err:  # noqa: BLE001 - a stack that cannot be built is reported, others measured
                failed[name] = common.one_line(err)
            build_s[name] = time.perf_counter() - start
        timed = common.interleaved(steppers, spec["rounds"], spec["round_s"], desc=f"N={n}")
        loads = timed["load_1min_rounds"]
        common.append_line(spec["records"], {
            "n": n, "failed": failed | timed["failed"], "peak_rss_mib": peak_rss_mib(),
            "stacks": {name: {"steps_per_s": common.figure(f["samples"]), "compile_s": f["compile_s"],
                              "calls_per_round": f["calls_per_round"], "build_s": build_s[name],
                              "load_1min": [min(loads), max(loads)]} for name, f in timed["stacks"].items()},
        })  # fmt: skip
        if spec.get("profile"):
            common.append_line(spec["records"], {"profile": n, **profile(n, spec["rounds"], spec["round_s"])})


def peak_rss_mib() -> float:
    """This process's peak resident set so far (sizes run in increasing order: the peak up to this N)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


PROFILE = (
    "Three layers timed in alternation through public APIs: the physics alone (gymjax's host pool, no JAX), "
    "the functional stack's jitted step (`wrap_for_training`: vmap, time limit, auto-reset, the physics in a "
    "callback; what every adapter compiles) and the VectorEnv's `step`. Their differences are JAX's share and "
    "the adapter's; each is a difference of two timings, so the load's noise shows most there. The physics "
    "inside the jitted step is not clocked apart, so JAX's share holds the auto-reset's physics "
    "(`mj_kinematics` of the reset envs) and the difference of the physics' states between the layers."
)


def profile(n: int, rounds: int, round_s: float) -> dict[str, float]:
    """Where a VectorEnv step's time goes at ``n`` envs (engine "mujoco"), ms per step: see PROFILE."""
    import jax

    import gymjax
    from gymjax.wrappers.training import wrap_for_training

    base = gymjax.make("JaxAnt-v0", engine="mujoco")
    stack = wrap_for_training(base)
    state = [jax.jit(stack.reset)(jax.random.split(jax.random.PRNGKey(0), n))]
    step, action = jax.jit(stack.step), action_cycle(base.action_space, n)

    def jitted() -> None:
        state[0] = jax.block_until_ready(step(state[0], action()))

    layers = {
        "physics": host_pool(n),
        "jitted": common.Stepper(jitted, n, base.close),
        "vector": vector_env(n, engine="mujoco"),
    }
    timed = common.interleaved(layers, rounds, round_s, warmup_calls=5, desc=f"profile N={n}")
    ms = {k: n / f["median"] * 1e3 for k, f in timed["stacks"].items()}
    return {
        "physics alone (host pool)": ms["physics"],
        "jitted functional step": ms["jitted"],
        "VectorEnv.step": ms["vector"],
        "↳ JAX around the physics (jitted - physics)": ms["jitted"] - ms["physics"],
        "↳ adapter (VectorEnv - jitted)": ms["vector"] - ms["jitted"],
    }


# -- the parent ---------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    # fmt: off
    p.add_argument("--stacks", nargs="+", metavar="TEXT", help="only stacks whose name contains one of these")
    p.add_argument("--group", choices=sorted(GROUP_SIZES), help="only this group's stacks")
    p.add_argument("--sizes", type=int, nargs="+", help="N for every stack (default: its group's sizes)")
    p.add_argument("--interleave", action="store_true", help="time the stacks of each N in alternation, in one process")
    p.add_argument("--profile", action="store_true", help="where a VectorEnv step's time goes, at each N")
    p.add_argument("--quick", action="store_true", help="a smoke run: N=4, no MJX or Brax, short rounds (needs --out)")
    p.add_argument("--rounds", type=int,
                   help=f"timed rounds per figure (default {FULL['rounds']}; quick {QUICK['rounds']})")
    p.add_argument("--round-seconds", type=float, help=f"seconds per stack per round (default {FULL['round_s']})")
    p.add_argument("--without", nargs="+", default=[], choices=sorted(PEERS), metavar="PEER",
                   help="treat these peers as not installed, so they are reported skipped")
    p.add_argument("--timeout", type=float, help="seconds per worker process (default 2400; quick 300)")
    p.add_argument("--jax-cache", type=pathlib.Path, help="persistent JAX compile cache for the workers")
    p.add_argument("--name", default="throughput", help="the record's stem (default: %(default)s)")
    p.add_argument("--out", type=pathlib.Path, help="output folder (default: benchmarks/results)")
    p.add_argument("--machine-name", help="what to call this machine (default: its CPU or GPU)")
    # fmt: on


def chosen(args: argparse.Namespace) -> list[Stack]:
    picked = [
        s
        for s in STACKS
        if (not args.group or s.group == args.group)
        and (not args.stacks or any(t.lower() in s.name.lower() for t in args.stacks))
    ]
    if not picked:
        raise SystemExit(
            f"--stacks {args.stacks} --group {args.group} choose no stack; there are: " + ", ".join(BY_NAME)
        )
    return picked


def main(args: argparse.Namespace, argv: list[str]) -> int:
    stacks = chosen(args)  # bad flags fail here, before any work
    if args.quick and args.out is None:
        raise SystemExit("--quick is a smoke run: give --out (its files never go into benchmarks/results)")
    if min([args.rounds or 1, *(args.sizes or [1])]) < 1:
        raise SystemExit("--rounds and --sizes must be positive")
    if args.profile and not args.interleave:
        raise SystemExit("--profile times its layers in alternation: give --interleave too")
    base = QUICK if args.quick else FULL
    settings = {"stacks": [s.name for s in stacks], "sizes": args.sizes, "interleave": args.interleave,
                "profile": args.profile, "quick": args.quick, "without": sorted(args.without),
                "rounds": args.rounds or base["rounds"], "round_s": args.round_seconds or base["round_s"],
                "timeout_s": args.timeout or base["timeout_s"]}  # fmt: skip
    title = "Throughput: env steps/s against N" + (", stacks timed in alternation" if args.interleave else "")
    title += f" ({', '.join(args.stacks)})" if args.stacks else ""
    record = common.new_record("throughput", argv, title, settings, args.machine_name)
    results = measure(stacks, args, settings, record["machine"]["jax_backend"])
    common.finish(record, results, summary(record | {"results": results}))
    paths = common.write(record, markdown(record), plot, args.name, args.out or common.RESULTS)
    print("\n".join(markdown(record)))
    print("wrote " + ", ".join(map(str, paths)))
    return 1 if any(e["status"] in ("failed", "partial") for e in results["stacks"].values()) else 0


def measure(stacks: list[Stack], args: argparse.Namespace, settings: dict, backend: str) -> dict:
    """Plans every stack's sizes, runs the workers, and gathers their records into the results."""
    entries, plan = {}, {}
    for s in stacks:
        entry = {"ours": s.ours, "family": s.family, "note": s.note, "status": "ok", "sizes": {}}
        entries[s.name] = entry
        default = GROUP_SIZES[s.group] + (GPU_EXTRA if backend != "cpu" and s.group == "env" else ())
        reason = (
            missing_peer(s.needs, tuple(args.without))
            or (s.unsupported and s.unsupported())
            or (None if s.quick or not args.quick else "quick run: it compiles for minutes on a CPU")
        )
        to_run, skipped = plan_sizes(
            s, args.sizes or (QUICK_SIZES if args.quick else default), args.quick, backend
        )
        entry["sizes"] = {str(n): {"skipped": why} for n, why in skipped.items()}
        if reason or not to_run:
            entry |= {"status": "skipped", "reason": reason or "; ".join(sorted(set(skipped.values())))}
        else:
            plan[s.name] = to_run
    jobs = [plan] if args.interleave else [{name: sizes} for name, sizes in plan.items()]
    results = {"stacks": entries, "ratios": [], "profile": {}}
    env = common.worker_env(args.jax_cache)
    with tqdm(total=sum(len(v) for v in plan.values()), desc="throughput", unit="figure") as bar:
        for job in jobs:
            run_worker(job, settings, env, results, bar)
    pairs = [
        (a.name, b.name) for a in stacks if a.ours for b in stacks if not b.ours and b.family == a.family
    ]
    for a, b in [*pairs, *(p for p in INTERNAL if p[0] in entries and p[1] in entries)]:
        for n, x in medians(entries[a]).items():
            if n in medians(entries[b]):
                results["ratios"].append({"ours": a, "peer": b, "n": n, "ratio": x / medians(entries[b])[n]})
    results["sizes"] = sorted({int(n) for e in entries.values() for n in e["sizes"]})
    return results


def run_worker(job: dict, settings: dict, env: dict, results: dict, bar: tqdm) -> None:
    """One worker process over ``job`` ({stack: sizes}); what it did not measure is marked failed."""
    entries = results["stacks"]

    def on_record(record: dict) -> None:
        if "profile" in record:
            results["profile"][str(record.pop("profile"))] = record
            return
        for name, figure in record["stacks"].items():
            entries[name]["sizes"][str(record["n"])] = figure | {"peak_rss_mib": record["peak_rss_mib"]}
            f = figure["steps_per_s"]
            tqdm.write(
                f"{name:50s} N={record['n']:<5d} {f['median']:>11,.0f} steps/s "
                f"[{f['spread'][0]:,.0f}-{f['spread'][1]:,.0f}]"
            )
        for name, why in record["failed"].items():
            entries[name]["sizes"][str(record["n"])] = {"failed": why}
        bar.update(len(record["stacks"]) + len(record["failed"]))

    with tempfile.TemporaryDirectory(prefix="gymjax-throughput-") as tmp:
        records, seen = pathlib.Path(tmp) / "records.jsonl", [0]
        spec = pathlib.Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"plan": job, "records": str(records), **settings}))
        done = common.run_process(
            [sys.executable, "-m", "benchmarks.throughput", str(spec)], settings["timeout_s"], env,
            poll=lambda: seen.__setitem__(0, common.read_new_lines(records, seen[0], on_record)),
        )  # fmt: skip
    for name, sizes in job.items():
        missed = [n for n in sizes if str(n) not in entries[name]["sizes"]]
        failed = [n for n in sizes if "failed" in entries[name]["sizes"].get(str(n), {})]
        if missed or failed:
            why = done.error or entries[name]["sizes"][str(failed[0])]["failed"]
            entries[name] |= {
                "status": "failed" if len(missed + failed) == len(sizes) else "partial",
                "error": why,
            }
            for n in missed:
                entries[name]["sizes"][str(n)] = {"failed": why.splitlines()[-1]}
            bar.update(len(missed))
            tqdm.write(f"{name:50s} FAILED: {why.splitlines()[-1]}")


def medians(entry: dict) -> dict[int, float]:
    return {int(n): r["steps_per_s"]["median"] for n, r in entry["sizes"].items() if "steps_per_s" in r}


# -- the report ---------------------------------------------------------------------------------


# The stacks a user meets, on the C engine: their ratios (and the internal pairs) are the page's.
HEADLINE = (
    "JaxAnt-v0 VectorEnv (mujoco)",
    "JaxAnt-v0 TorchVectorEnv (mujoco)",
    "SB3VecEnv, JaxAnt-v0 (mujoco)",
    "PettingZooEnv, JaxMultiAnt-v0 2x4 (mujoco)",
)


def table(first: str, sizes: list, rows: dict[str, list[str]], last: str = "") -> list[str]:
    """A Markdown table: a row per label, a column per N (and ``last``, if named)."""
    extra = [last] if last else []
    lines = [f"| {first} | " + " | ".join([*(f"N={n}" for n in sizes), *extra]) + " |"]
    lines.append("|---" * (len(sizes) + 1 + len(extra)) + "|")
    return lines + [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows.items()]


def _cell(r: dict | None) -> str:
    if not r:
        return "-"
    if "steps_per_s" not in r:
        return "failed" if "failed" in r else "skipped"
    f = r["steps_per_s"]
    return f"{f['median']:,.0f} [{f['spread'][0]:,.0f}-{f['spread'][1]:,.0f}]"


def steps_table(results: dict) -> list[str]:
    sizes, rows = [str(n) for n in results["sizes"]], {}
    for name, e in results["stacks"].items():
        if e["status"] != "skipped":
            compiled = [f"{r['compile_s']:.1f}" for r in e["sizes"].values() if "compile_s" in r]
            cells = [_cell(e["sizes"].get(n)) for n in sizes]
            rows[f"**{name}**" if e["ours"] else name] = [*cells, compiled[0] if compiled else "-"]
    return table("stack", sizes, rows, "compile (s)")


def ratio_table(results: dict, headline: bool = False) -> list[str]:
    """Ours / peer at each N; with ``headline`` only the :data:`HEADLINE` stacks' and the internal pairs."""
    chosen = [
        r
        for r in results["ratios"]
        if not headline or r["ours"] in HEADLINE or (r["ours"], r["peer"]) in INTERNAL
    ]
    if not chosen:
        return ["No ratio: no two stacks of one family measured."]
    sizes, cells = sorted({r["n"] for r in chosen}), {}
    for r in chosen:
        cells.setdefault(f"{r['ours']} / {r['peer']}", {})[r["n"]] = f"{r['ratio']:.2f}"
    return table("ours / peer", sizes, {k: [v.get(n, "-") for n in sizes] for k, v in cells.items()})


def _loads(results: dict) -> str:
    return common.load_range(
        x for e in results["stacks"].values() for r in e["sizes"].values() for x in r.get("load_1min", [])
    )


def summary(record: dict) -> list[str]:
    results, s = record["results"], record["settings"]
    how = "in alternation in one process" if s["interleave"] else "each in a process of its own"
    sentence = (
        f"Env steps/s, medians of {s['rounds']} rounds [min-max], stacks timed {how}; gymjax's in bold. "
        f"Load average (1 min) over the rounds {_loads(results)}. Ratios: gymjax's adapters on the C engine "
        "over each peer, and each adapter over what it wraps (every ratio is in the report)."
    )
    return [
        sentence,
        "",
        *steps_table(results),
        "",
        *ratio_table(results, headline=True),
    ]  # fmt: skip


def markdown(record: dict) -> list[str]:
    results, stacks = record["results"], record["results"]["stacks"]
    sizes = [str(n) for n in results["sizes"]]
    lines = ["## Env steps/s", "", *summary(record)]
    if ratio_table(results) != ratio_table(results, headline=True):
        lines += ["", "## Every ratio", "", *ratio_table(results)]
    if not record["settings"]["interleave"]:
        rss = {name: [f"{e['sizes'][n]['peak_rss_mib']:,.0f}" if "peak_rss_mib" in e["sizes"].get(n, {}) else "-"
                      for n in sizes] for name, e in stacks.items() if e["status"] != "skipped"}  # fmt: skip
        lines += [
            "",
            "## Peak RSS (MiB) of each stack's process, after each N",
            "",
            *table("stack", sizes, rss),
        ]
    if results.get("profile"):
        profile_sizes = list(results["profile"])
        ms = {key: [f"{results['profile'][n][key]:.2f}" for n in profile_sizes]
              for key in results["profile"][profile_sizes[0]]}  # fmt: skip
        lines += ["", "## Where a VectorEnv step's time goes (ms per step)", "", PROFILE, ""]
        lines += table("", profile_sizes, ms)
    lines += ["", "## Stacks", "", *(f"- **{n}** ({e['family']}): {e['note']}" for n, e in stacks.items())]
    skipped = [f"- {name}: {e['reason']}" for name, e in stacks.items() if e["status"] == "skipped"]
    skipped += [f"- {name}, N={n}: {r['skipped']}" for name, e in stacks.items() if e["status"] != "skipped"
                for n, r in e["sizes"].items() if "skipped" in r]  # fmt: skip
    failed = [f"- {name}: {e['error'].splitlines()[-1]}" for name, e in stacks.items() if "error" in e]
    return lines + common.listed("Skipped", skipped) + common.listed("Failed", failed)


def plot(record: dict, path: pathlib.Path) -> None:
    plt = common.pyplot()
    results = record["results"]
    fig, ax = plt.subplots(figsize=(9, 5.5))
    measured = {name: medians(e) for name, e in results["stacks"].items() if medians(e)}
    if len(results["sizes"]) == 1:  # one N: bars
        names = list(measured)
        ax.barh(
            names,
            [next(iter(m.values())) for m in measured.values()],
            color=["tab:blue" if results["stacks"][n]["ours"] else "tab:gray" for n in names],
        )
        ax.set_xlabel(f"env steps/s at N={results['sizes'][0]} (median)")
        ax.invert_yaxis()
    else:
        for name, m in measured.items():
            ax.plot(
                list(m),
                list(m.values()),
                marker="o",
                label=name,
                linestyle="-" if results["stacks"][name]["ours"] else "--",
            )
        ax.set(xscale="log", yscale="log", xlabel="N (envs)", ylabel="env steps/s (median)")
        ax.legend(fontsize=6, ncol=2)
    ax.set_title(f"{record['machine']['name']}; load (1 min) {_loads(results)}", fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)


if __name__ == "__main__":
    worker(json.loads(pathlib.Path(sys.argv[1]).read_text()))
