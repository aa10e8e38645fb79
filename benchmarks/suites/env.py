"""The env suite: env steps/s and peak memory of Ant at N envs, each stack in its own process.

gymjax's JaxAnt-v0 three ways (the bare jitted vmapped ``step``, the Gymnasium
VectorEnv with NumPy out, the torch bridge) against Gymnasium's Ant-v5 (sync
and async vector envs), EnvPool's Ant-v5, Brax's ant on each of its backends,
and MuJoCo C alone (``mujoco.rollout``): the ceiling for the "mujoco"
configuration. Random actions, drawn once per stack (seed 0), the same every step.

Each builder returns a :class:`~benchmarks.harness.Stepper` at ``n`` envs; the
harness times it. Nothing heavy is imported at module level (see harness).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from benchmarks.harness import Stack, Stepper, config_stack, measure_sizes

NAME = "env"
SIZES = (1, 16, 64, 256, 1024)
GPU_SIZES = SIZES + (4096,)
QUICK_SIZES = (1, 4)
BRAX_BACKENDS = ("generalized", "positional", "spring", "mjx")
BRAX_CPU_SIZES = (16, 256, 1024)
# One process per env: past 32 per core the box measures its scheduler, not the envs.
PROCESS_MAX_N = 32 * (os.cpu_count() or 1)

work = measure_sizes


def default_sizes(quick: bool, backend: str) -> tuple[int, ...]:
    if quick:
        return QUICK_SIZES
    return GPU_SIZES if backend == "gpu" else SIZES


def random_actions(space, n: int) -> np.ndarray:
    """``n`` samples of the single-env action ``space``, seeded: ``[n, *shape]``."""
    space.seed(0)
    return np.stack([space.sample() for _ in range(n)])


class JaxRollout:
    """Steps a jitted batched ``step(state, actions)`` from ``state``, waiting for each result."""

    def __init__(self, step, state, actions):
        self.step, self.state, self.actions = step, state, actions

    def __call__(self) -> None:
        import jax

        self.state = self.step(self.state, self.actions)
        jax.block_until_ready(self.state.obs)


# -- gymjax -------------------------------------------------------------------------------------


def jax_raw_step(n: int, env_id: str = "JaxAnt-v0", **env_kwargs) -> Stepper:
    """``jax.jit(jax.vmap(env.step))`` of the functional env: no auto-reset, no conversion."""
    import jax

    import gymjax

    env = gymjax.make(env_id, **env_kwargs)
    state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))
    actions = jax.numpy.asarray(random_actions(env.action_space, n))
    return Stepper(JaxRollout(jax.jit(jax.vmap(env.step)), state, actions))


def vector_env(n: int, env_id: str = "JaxAnt-v0", **env_kwargs) -> Stepper:
    """``gymnasium.make_vec(env_id)``: gymjax's VectorEnv, NumPy in and out, same-step auto-reset."""
    import gymnasium

    import gymjax  # noqa: F401  (registers the ids)

    env = gymnasium.make_vec(env_id, num_envs=n, autoreset_mode="same_step", **env_kwargs)  # as measured
    env.reset(seed=0)
    actions = random_actions(env.single_action_space, n)
    return Stepper(functools.partial(env.step, actions), env.close, env)


def torch_vector_env(n: int, env_id: str = "JaxAnt-v0", **env_kwargs) -> Stepper:
    """gymjax's TorchVectorEnv: torch tensors in and out through DLPack."""
    import torch

    from gymjax.wrappers.torch import TorchVectorEnv

    torch.set_num_threads(1)  # the bridge runs no torch kernels; keep torch off the JAX cores
    env = TorchVectorEnv(env_id, n, **env_kwargs)
    env.reset(seed=0)
    actions = torch.from_numpy(random_actions(env.single_action_space, n))
    if actions.dtype == torch.float64:
        actions = actions.float()

    def step() -> None:
        # DLPack hands tensors over before the step has run (on a GPU): read one value to wait for it
        env.step(actions)[0][0, 0].item()

    return Stepper(step, env.close, env)


# -- peers --------------------------------------------------------------------------------------


def gymnasium_vector(n: int, mode: str) -> Stepper:
    """Gymnasium's Ant-v5 (MuJoCo C) in a ``SyncVectorEnv`` or ``AsyncVectorEnv`` (``mode``)."""
    import gymnasium

    env = gymnasium.make_vec("Ant-v5", num_envs=n, vectorization_mode=mode)
    env.reset(seed=0)
    actions = random_actions(env.single_action_space, n)
    return Stepper(functools.partial(env.step, actions), env.close, env)


def envpool_ant(n: int) -> Stepper:
    """EnvPool's Ant-v5: MuJoCo C stepped by C++ threads, Gymnasium API."""
    import envpool

    env = envpool.make_gymnasium("Ant-v5", num_envs=n)
    env.reset()
    actions = np.random.default_rng(0).uniform(-1, 1, (n, 8))
    return Stepper(functools.partial(env.step, actions), env.close, env)


def mujoco_rollout(n: int) -> Stepper:
    """MuJoCo C alone: ``mujoco.rollout.Rollout`` on one thread per core steps N Ant states
    ``frame_skip`` (5) substeps per call, JaxAnt-v0's own model; no JAX, no Python per env.

    As in ``vector_ceiling.py``, every env starts at the model's reference pose and never
    resets, and the states evolve from call to call (a fallen Ant's contacts cost more).
    """
    from mujoco import rollout

    import gymjax

    env = gymjax.make("JaxAnt-v0", backend="mujoco")
    model, threads = env.mj_model, os.cpu_count() or 1
    datas, state = rollout_start(model, n, threads)
    # one action per env, held for the frame_skip substeps of a step: [n, frame_skip, nu]
    control = np.repeat(random_actions(env.action_space, n)[:, None], env.frame_skip, axis=1)
    pool = rollout.Rollout(nthread=threads)
    states = [state]

    def step() -> None:
        trajectory, _ = pool.rollout(model, datas, states[0], control)
        states[0] = trajectory[:, -1]

    def close() -> None:
        pool.close()
        env.close()

    return Stepper(step, close)


def rollout_start(model, n: int, threads: int) -> tuple[list, np.ndarray]:
    """What ``mujoco.rollout`` needs to step ``n`` envs of ``model`` on ``threads`` threads: one
    ``MjData`` per thread, and ``n`` full-physics state vectors, all at the model's reference pose."""
    import mujoco

    datas = [mujoco.MjData(model) for _ in range(threads)]
    mujoco.mj_forward(model, datas[0])
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.empty((n, mujoco.mj_stateSize(model, spec)))
    mujoco.mj_getState(model, datas[0], state[0], spec)
    state[:] = state[0]
    return datas, state


def rollout_unsupported() -> str | None:
    """Why :func:`mujoco_rollout` cannot run on this install, or None when it can."""
    import mujoco
    from mujoco import rollout

    if hasattr(rollout, "Rollout"):
        return None
    return f"mujoco {mujoco.__version__} has no mujoco.rollout.Rollout (the thread pool newer MuJoCo 3 has)"


def brax_ant(n: int, backend: str) -> Stepper:
    """``brax.envs.get_environment("ant", backend=...)``, jitted vmapped ``step``, no auto-reset."""
    import jax
    from brax import envs

    env = envs.get_environment("ant", backend=backend)
    state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))
    actions = jax.numpy.asarray(
        np.random.default_rng(0).uniform(-1, 1, (n, env.action_size)), jax.numpy.float32
    )
    return Stepper(JaxRollout(jax.jit(jax.vmap(env.step)), state, actions))


# -- the stacks ---------------------------------------------------------------------------------

QUICK_MJX = "quick mode compiles MJX once (the raw step, fast solver, at N=4)"
RAW = "jax.jit(jax.vmap(env.step)) of the functional env (no auto-reset, nothing converted)"
VECTOR = 'gymnasium.make_vec("JaxAnt-v0"): NumPy in and out, same-step auto-reset'
TORCH = "gymjax.wrappers.torch.TorchVectorEnv: the VectorEnv's jitted step, torch tensors via DLPack"


def _ours(label: str, build, note: str, configs: tuple[str, ...], needs: tuple[str, ...] = ()):
    for config in configs:
        quick = {"quick_sizes": (4,)} if (build, config) == (jax_raw_step, "mjx fast") else {}
        yield config_stack(
            f"JaxAnt-v0 {label}",
            build,
            config,
            note=note,
            mjx_quick_reason=QUICK_MJX,
            family="ant",
            needs=needs,
            **quick,
        )


STACKS = (
    *_ours("raw step", jax_raw_step, RAW, ("mjx accurate", "mjx fast", "mujoco")),
    *_ours("VectorEnv", vector_env, VECTOR, ("mjx accurate", "mujoco")),
    *_ours("TorchVectorEnv", torch_vector_env, TORCH, ("mjx accurate", "mujoco"), needs=("torch",)),
    Stack(
        "Gymnasium Ant-v5 SyncVectorEnv",
        functools.partial(gymnasium_vector, mode="sync"),
        ours=False,
        family="ant",
        note="MuJoCo C, one env after another in this process",
    ),
    Stack(
        "Gymnasium Ant-v5 AsyncVectorEnv",
        functools.partial(gymnasium_vector, mode="async"),
        ours=False,
        family="ant",
        note="MuJoCo C, one process per env (shared-memory observations)",
        max_n=PROCESS_MAX_N,
        processes=True,
        max_n_reason=f"one process per env: above {PROCESS_MAX_N} on {os.cpu_count()} cores it would "
        "measure the scheduler, not the env",
    ),
    Stack(
        "EnvPool Ant-v5",
        envpool_ant,
        ours=False,
        family="ant",
        needs=("envpool",),
        note="MuJoCo C, C++ thread pool (envpool.make_gymnasium)",
    ),
    Stack(
        "mujoco.rollout (MuJoCo C alone)",
        mujoco_rollout,
        ours=False,
        family="ant",
        unsupported=rollout_unsupported,
        note=f"the ceiling for the mujoco configuration: mujoco.rollout.Rollout, {os.cpu_count()} threads, "
        "5 substeps a call, JaxAnt-v0's model; no JAX, no auto-reset, nothing converted",
    ),
    *(
        Stack(
            f"Brax ant ({backend})",
            functools.partial(brax_ant, backend=backend),
            ours=False,
            family="ant",
            needs=("brax",),
            note=f'brax.envs.get_environment("ant", backend="{backend}"), jitted vmapped step',
            cpu_sizes=BRAX_CPU_SIZES if backend != "mjx" else BRAX_CPU_SIZES[:-1],
            cpu_reason="Brax compiles each N for tens of seconds on CPU: measured at "
            f"N={', '.join(map(str, BRAX_CPU_SIZES))} only"
            + (" (its MJX backend not at 1024, where MJX hangs on CPU)" if backend == "mjx" else ""),
            quick_sizes=(4,) if backend == "spring" else (),
            quick_reason="quick mode compiles one Brax backend (spring, at N=4)",
        )
        for backend in BRAX_BACKENDS
    ),
)

# Within gymjax: what each adapter costs over what it wraps, same physics.
INTERNAL_RATIOS = tuple(
    (f"JaxAnt-v0 {outer} ({config})", f"JaxAnt-v0 {inner} ({config})")
    for config in ("mjx accurate", "mujoco")
    for outer, inner in (("VectorEnv", "raw step"), ("TorchVectorEnv", "VectorEnv"))
)
