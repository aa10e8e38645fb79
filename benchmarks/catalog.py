"""Every Gymnasium MuJoCo v5 task of the registry: throughput against EnvPool and MuJoCo's batch engine.

    python -m benchmarks catalog                         # N = 16, 256: about 15 min on 2 cores
    python -m benchmarks catalog --mjx                   # and MJX with its deviation: about 45 min more
    python -m benchmarks catalog --quick --out /tmp/cat  # N = 16, 2 rounds: a smoke run

For each registered id whose reference is a Gymnasium MuJoCo ``*-v5`` (new ids are picked up):

1. Throughput, random actions, at N = 16 and 256. Per task and N the in-process stacks are built
   once and timed in alternation (:func:`benchmarks.common.interleaved`), medians of the rounds,
   the load average before and after each block and after each round:

   - gymjax VectorEnv: ``gymnasium.make_vec(id, num_envs=N, engine="mujoco")`` (the native
     engine inside jit, NumPy out, next-step auto-reset: make_vec's default, and EnvPool's);
   - gymjax in jit: ``jax.jit`` of a ``lax.scan`` over ``--unroll`` steps of
     ``wrap_for_training(gymjax.make(id, engine="mujoco"))``, random actions drawn inside the jit,
     auto-reset included: what the PPO trainer steps (:func:`benchmarks.throughput.training_scan`);
   - EnvPool: ``envpool.make_gymnasium("<Task>-v5", num_envs=N, num_threads=cores)``;
   - batch ceiling: MuJoCo's own ``mujoco.batch.Batch(model, nsim=N, nthread=cores)`` stepped
     from NumPy, the task's data fields bound, every state reset every 50 steps
     (:func:`benchmarks.throughput.batch_ceiling`): the physics with nothing around it;
   - MJX (``--mjx`` only): ``jax.jit(jax.vmap(gymjax.make(id, engine="mjx").step))``, no
     auto-reset, timed in fewer rounds, its compile time apart (and reported).

   Then EnvPool xla: EnvPool's ``env.xla()`` step in a jitted ``lax.scan``, in a process of its
   own with a timeout (:mod:`benchmarks.envpool_xla`: it needs float64 JAX, and it was reported
   to hang); a failure or a hang is the table's cell.

2. MJX deviation (``--mjx`` only): 16 states from a random-action rollout of Gymnasium's
   ``*-v5``, put on both engines with ``reset_to`` (Gymnasium's ``set_state``), then the same
   random actions for 100 steps on MJX and on the C engine: the largest relative error of obs
   and reward (``|mjx - c| / max(1, |c|)``) after 1 step and after 100 steps (or at the C run's
   termination, where each state stops), and whether the terminations agree.

The builders of the in-process stacks are :mod:`benchmarks.throughput`'s.
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import time

import gymnasium
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from tqdm import tqdm

import gymjax
from benchmarks import common, envpool_xla
from benchmarks.throughput import (
    THREADS,
    action_batches,
    action_cycle,
    batch_ceiling,
    envpool_env,
    training_scan,
    vector_env,
)  # fmt: skip

STACKS = ("gymjax VectorEnv", "gymjax in jit", "EnvPool", "EnvPool xla", "batch ceiling", "MJX")
QUICK_MJX = ("JaxInvertedPendulum-v0", "JaxReacher-v0")  # quick mode with --mjx compiles MJX for these only
DEVIATION_STATES = 16  # the MJX step compiled for N=16 serves the deviation too
# MJX at N=256 is skipped where one step would take longer than this (16 x its N=16 step), or
# where its N=16 compile took longer than --mjx-compile-cap: on 2 cores a second compile of
# Humanoid's MJX step alone costs minutes.
MJX_MAX_CALL_S = 3.0


def mujoco_ids() -> list[str]:
    """The registered single-agent ids whose reference is one of Gymnasium's MuJoCo ``*-v5``."""
    out = []
    for env_id in gymjax.envs.registered_ids():
        ref = gymjax.envs.spec(env_id).reference_id
        if ref and ref.endswith("-v5"):
            entry = gymnasium.spec(ref).entry_point
            if isinstance(entry, str) and entry.startswith("gymnasium.envs.mujoco."):
                out.append(env_id)
    return out


def envpool_task(reference: str) -> str | None:
    """EnvPool's name for Gymnasium's ``reference`` (the same ``*-v5``), or None without it."""
    try:
        import envpool
    except ImportError:
        return None
    return reference if reference in envpool.list_all_envs() else None


def _starts(env, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` reset draws (qpos, qvel) of ``env``, float32: its ``initial_state``, no physics."""
    keys = jax.random.split(jax.random.PRNGKey(seed), n)
    qpos, qvel = jax.jit(jax.vmap(env.initial_state))(keys)
    return np.asarray(qpos, np.float32), np.asarray(qvel, np.float32)


def _solver_name(solver: mujoco.mjtSolver) -> str:
    return {"PGS": "PGS", "CG": "CG", "NEWTON": "Newton"}.get(solver.name.removeprefix("mjSOL_"), solver.name)


class MJX:
    """One task's MJX env: its jitted batched ``reset_to`` and ``step`` (compiled once per N)."""

    def __init__(self, env_id: str):
        self.env = gymjax.make(env_id, engine="mjx")
        self.reset_to = jax.jit(jax.vmap(self.env.reset_to))
        self.step = jax.jit(jax.vmap(self.env.step))
        self.compile_s: dict[int, float] = {}
        self.call_s: dict[int, float] = {}

    def start(self, qpos: np.ndarray, qvel: np.ndarray):
        """States at ``(qpos, qvel)``: ``reset_to`` compiled for :data:`DEVIATION_STATES` envs only,
        larger batches put together from chunks of that size."""
        k = DEVIATION_STATES
        chunks = [
            self.reset_to(jnp.asarray(qpos[i : i + k]), jnp.asarray(qvel[i : i + k]))
            for i in range(0, len(qpos), k)
        ]
        return jax.tree.map(lambda *xs: jnp.concatenate(xs), *chunks) if len(chunks) > 1 else chunks[0]

    def stepped(self, state, action):
        """``step(state, action)``, waited for; the first call at a batch size clocks the compile."""
        n = len(action)
        start = time.perf_counter()
        out = self.step(state, action)
        jax.block_until_ready(out)
        took = time.perf_counter() - start
        if n not in self.compile_s:
            self.compile_s[n] = took  # less one steady call, below
        elif n not in self.call_s:
            self.call_s[n] = took
            self.compile_s[n] = max(0.0, self.compile_s[n] - took)
        return out

    def stack(self, n: int, rounds: int) -> common.Stepper:
        """The MJX stack at ``n`` envs, compiled (clocked apart), timed in the first ``rounds`` rounds."""
        qpos, qvel = _starts(self.env, n)
        state = [self.start(qpos, qvel)]
        action = action_cycle(self.env.action_space, n, count=8)
        for _ in range(2):  # compile (if not yet) and clock one steady call
            state[0] = self.stepped(state[0], jnp.asarray(action()))

        def step():
            state[0] = self.step(state[0], jnp.asarray(action()))
            jax.block_until_ready(state[0].obs)

        return common.Stepper(step, n, rounds=rounds)

    def solver(self) -> dict:
        """The constraint solver MJX runs, and the iterations."""
        from gymjax.envs.mujoco.base import MJX_SOLVER_FOR, SOLVER_PRESETS

        xml = self.env.mj_model.opt.solver
        used = MJX_SOLVER_FOR.get(mujoco.mjtSolver(xml), mujoco.mjtSolver(xml))
        preset = self.env.solver
        iterations = SOLVER_PRESETS.get(preset) if isinstance(preset, str) else tuple(preset)
        return {
            "solver": _solver_name(used),
            "xml_solver": _solver_name(mujoco.mjtSolver(xml)),
            "preset": preset,
            "iterations": list(iterations) if iterations else None,
        }

    def close(self) -> None:
        self.env.close()


# -- MJX's deviation ----------------------------------------------------------------------------


def reference_states(
    reference: str, count: int, every: int = 7, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` (qpos, qvel) from a random-action rollout of Gymnasium's ``reference``, one every
    ``every`` steps, resetting at each episode's end."""
    env = gymnasium.make(reference)
    env.action_space.seed(seed)
    env.reset(seed=seed)
    data = env.unwrapped.data
    qpos, qvel = [], []
    t = 0
    while len(qpos) < count:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        t += 1
        if terminated or truncated:
            env.reset()
        elif t % every == 0:
            qpos.append(data.qpos.copy())
            qvel.append(data.qvel.copy())
    env.close()
    return np.asarray(qpos, np.float32), np.asarray(qvel, np.float32)


def _relative(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``|a - b| / max(1, |b|)``, its largest over the last axis (a scalar per env for a reward);
    a NaN counts as an infinite error."""
    err = np.abs(a.astype(np.float64) - b) / np.maximum(1.0, np.abs(b))
    err = np.where(np.isfinite(err), err, np.inf)
    return err.max(axis=-1) if err.ndim > 1 else err


def deviation(env_id: str, mjx: MJX, steps: int, budget_s: float, seed: int = 0) -> dict:
    """MJX against the C engine from the same Gymnasium states, the same actions; MJX's steps
    (past the compiling one) stop after ``budget_s`` seconds, the steps run recorded."""
    reference = gymjax.envs.spec(env_id).reference_id
    qpos, qvel = reference_states(reference, DEVIATION_STATES, seed=seed)
    c_env = gymjax.make(env_id, engine="mujoco")
    c_reset, c_step = jax.jit(jax.vmap(c_env.reset_to)), jax.jit(jax.vmap(c_env.step))
    c_state = c_reset(jnp.asarray(qpos), jnp.asarray(qvel))
    m_state = mjx.start(qpos, qvel)
    actions = action_batches(c_env.action_space, DEVIATION_STATES, count=steps, seed=seed + 1)
    n = DEVIATION_STATES
    stopped_c = np.full(n, -1)  # the step at which the C run terminated (-1: it did not)
    stopped_m = np.full(n, -1)
    obs_err, reward_err = np.zeros((steps, n)), np.zeros((steps, n))
    compared = np.zeros((steps, n), bool)
    spent, capped = 0.0, None
    for t in range(steps):
        if spent > budget_s:
            capped = f"MJX's steps took {spent:.0f} s by step {t} (budget {budget_s:g} s): stopped there"
            break
        start = time.perf_counter()
        action = jnp.asarray(actions[t])
        c_state = c_step(c_state, action)
        m_state = mjx.stepped(m_state, action)
        spent += (time.perf_counter() - start) if t else 0.0
        alive = stopped_c < 0  # each state stops after the C run's termination
        compared[t] = alive
        obs_err[t] = _relative(np.asarray(m_state.obs), np.asarray(c_state.obs))
        reward_err[t] = _relative(np.asarray(m_state.reward), np.asarray(c_state.reward))
        c_term, m_term = np.asarray(c_state.terminated), np.asarray(m_state.terminated)
        stopped_m[alive & m_term & (stopped_m < 0)] = t
        stopped_c[alive & c_term] = t
        if not (stopped_c < 0).any():
            break
    c_env.close()
    last = np.array([compared[:, i].nonzero()[0].max() for i in range(n)])  # each state's last step
    final_obs = obs_err[last, np.arange(n)]
    final_reward = reward_err[last, np.arange(n)]
    # Terminations agree where both runs first terminated at the same step, or neither did (-1).
    agree = int((stopped_m == stopped_c).sum())
    return {
        "states": n,
        "steps": steps,
        "obs_1": float(obs_err[0].max()),
        "reward_1": float(reward_err[0].max()),
        "obs_final": float(final_obs.max()),
        "reward_final": float(final_reward.max()),
        "obs_final_median": float(np.median(final_obs)),
        "reward_final_median": float(np.median(final_reward)),
        "steps_compared": [int(x) + 1 for x in last],
        "c_terminated_at": [int(x) for x in stopped_c],
        "mjx_terminated_at": [int(x) for x in stopped_m],
        "terminations_agree_1": int((np.asarray(stopped_c == 0) == np.asarray(stopped_m == 0)).sum()),
        "terminations_agree": agree,
        **({"capped": capped} if capped else {}),
    }


# -- the run ------------------------------------------------------------------------------------


def run_task(env_id: str, args: argparse.Namespace, tasks: dict) -> None:
    spec = gymjax.envs.spec(env_id)
    task = envpool_task(spec.reference_id)
    entry: dict = {"reference": spec.reference_id, "envpool_task": task}
    entry |= {"throughput": {}, "skipped": {}, "failed": {}}
    tasks[env_id] = entry
    mjx = None
    if not args.mjx:
        entry["skipped"]["MJX"] = "not asked for (--mjx)"
    elif args.quick and env_id not in QUICK_MJX:
        entry["skipped"]["MJX"] = "quick mode compiles MJX for " + ", ".join(QUICK_MJX) + " only"
    else:
        mjx = MJX(env_id)
        entry["solver"] = mjx.solver()
        entry["deviation"] = deviation(env_id, mjx, args.deviation_steps, args.deviation_budget)
        if "capped" in entry["deviation"]:
            entry["skipped"]["MJX deviation"] = entry["deviation"]["capped"]
    if task is None:
        entry["skipped"]["EnvPool"] = "envpool is not installed, or has no " + spec.reference_id
    for n in args.sizes:
        builders = {
            # make_vec's default mode, which is EnvPool's too: an ended env resets at its next step.
            "gymjax VectorEnv": lambda n=n: vector_env(n, env_id, "next_step", engine="mujoco"),
            "gymjax in jit": lambda n=n: training_scan(n, env_id, args.unroll, engine="mujoco"),
        }
        if task is not None:
            builders["EnvPool"] = lambda n=n: envpool_env(n, task, num_threads=THREADS)
        builders["batch ceiling"] = lambda n=n: batch_ceiling(n, env_id)
        skip_mjx = mjx_cap(mjx, n, args.mjx_compile_cap) if mjx is not None else None
        if skip_mjx:
            entry["skipped"][f"MJX N={n}"] = skip_mjx
        elif mjx is not None:
            builders["MJX"] = lambda n=n: mjx.stack(n, args.mjx_rounds)
        stacks, failed = common.build(builders)
        load_before = list(os.getloadavg())
        block = common.interleaved(stacks, args.rounds, args.round_seconds, desc=f"{_short(env_id)} N={n}")
        if "MJX" in block["stacks"]:  # its compile came before the warm-up: clocked by MJX.stepped
            block["stacks"]["MJX"]["compile_s"] = mjx.compile_s[n]
        failed |= block.pop("failed")
        if task is not None:  # right after the others, in a process of its own: see benchmarks.envpool_xla
            xla = envpool_xla.measure(task, n, args.rounds, args.round_seconds, args.unroll, args.xla_timeout)
            if "failed" in xla:
                failed[envpool_xla.STACK] = xla["failed"]
            else:
                block["stacks"] |= xla["stacks"]
                block["envpool_xla_load_1min_rounds"] = xla["load_1min_rounds"]
        block["gymnasium_unit"] = gymnasium_unit(env_id, task, n, args.rounds * args.round_seconds, failed)
        entry["throughput"][str(n)] = block | {
            "load_before": load_before,
            "load_after": list(os.getloadavg()),
        }
        entry["failed"].update({f"{name} N={n}": why for name, why in failed.items()})
    if mjx is not None:
        mjx.close()
    jax.clear_caches()  # each task's compiled steps are done with: keep the process small


class _BatchedSpaces:
    """EnvPool's Gymnasium env with the faces of a Gymnasium ``VectorEnv`` that ``benchmark_vector_step``
    reads: its action space batched (EnvPool's is one env's) and next-step auto-reset, which EnvPool's is
    (an ended env's reset observation comes with the step after)."""

    def __init__(self, env, n: int):
        self.env, self.num_envs = env, n
        self.action_space = gymnasium.vector.utils.batch_space(env.action_space, n)
        self.metadata = {"autoreset_mode": gymnasium.vector.AutoresetMode.NEXT_STEP}

    def reset(self, seed=None):
        return self.env.reset()

    def step(self, actions):
        return self.env.step(actions)

    def close(self):
        self.env.close()


def gymnasium_unit(env_id: str, task: str | None, n: int, seconds: float, failed: dict) -> dict[str, float]:
    """Gymnasium 1.4's own measure of a vector env, ``gymnasium.utils.performance.benchmark_vector_step``
    (steps/s over ``seconds``, the envs a next-step reset spends not counted), on gymjax's
    ``make_vec(id, n)`` as a user makes it (its default next-step mode) and on EnvPool's, one after the
    other: a figure anyone can reproduce with Gymnasium alone, beside the interleaved ones."""
    from gymnasium.utils.performance import benchmark_vector_step

    makers = {"gymjax": lambda: gymnasium.make_vec(env_id, num_envs=n, engine="mujoco")}
    if task is not None:
        import envpool

        makers["EnvPool"] = lambda: _BatchedSpaces(envpool.make_gymnasium(task, num_envs=n, num_threads=THREADS), n)
    out = {}
    for name, make in makers.items():
        try:
            env = make()
            try:
                out[name] = benchmark_vector_step(env, target_duration=max(1, round(seconds)), seed=0)
            finally:
                env.close()
        except Exception as e:  # a peer's failure costs its figure, not the run
            failed[f"{name} (Gymnasium's unit)"] = f"{type(e).__name__}: {e}"
    return out


def mjx_cap(mjx: MJX, n: int, compile_cap: float) -> str | None:
    """Why MJX is not timed at ``n`` envs on this task (its steps too slow, or its compile), or None."""
    small = mjx.call_s.get(DEVIATION_STATES)
    if small is not None and small * n / DEVIATION_STATES > MJX_MAX_CALL_S and n == DEVIATION_STATES:
        return f"capped: one N={n} step took {small:.1f} s (> {MJX_MAX_CALL_S:g} s)"
    if n > DEVIATION_STATES:
        estimate = small * n / DEVIATION_STATES if small else None
        if estimate is not None and estimate > MJX_MAX_CALL_S:
            return (
                f"capped: one N={n} step would take ~{estimate:.1f} s "
                f"({n // DEVIATION_STATES} x the N={DEVIATION_STATES} step)"
            )
        if mjx.compile_s.get(DEVIATION_STATES, 0) > compile_cap:
            return (
                f"capped: the N={DEVIATION_STATES} step compiled in {mjx.compile_s[DEVIATION_STATES]:.0f} s "
                f"(> {compile_cap:g} s); a N={n} compile would take the run past its time budget on "
                f"{THREADS} cores"
            )
    return None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="N = 16, 2 rounds: a smoke run (needs --out)")
    p.add_argument(
        "--mjx", action="store_true", help="MJX too, and its deviation (on two tasks with --quick); slow on CPU"
    )
    p.add_argument("--unroll", type=int, default=32, help="steps per jitted scan of the in-jit stacks (default 32)")
    p.add_argument(
        "--xla-timeout", type=float, default=120.0, help="seconds for EnvPool xla's process per N (default 120)"
    )
    p.add_argument("--sizes", type=int, nargs="+", default=[16, 256], help="N (default: 16 256; quick: 16)")
    p.add_argument("--rounds", type=int, default=5, help="rounds of the C stacks (default 5)")
    p.add_argument("--mjx-rounds", type=int, default=3, help="rounds MJX takes part in (default 3)")
    p.add_argument(
        "--round-seconds", type=float, default=0.3, help="seconds per stack per round (default 0.3)"
    )
    p.add_argument("--deviation-steps", type=int, default=100)
    p.add_argument(
        "--mjx-compile-cap",
        type=float,
        default=90.0,
        help="no MJX above N=16 where its N=16 step compiled for longer (s)",
    )
    p.add_argument(
        "--deviation-budget",
        type=float,
        default=60.0,
        help="seconds of MJX steps per task's deviation run, at most (default 60)",
    )
    p.add_argument("--ids", nargs="+", help="only these ids (default: every MuJoCo v5 id)")
    p.add_argument("--out", type=pathlib.Path, help="output folder (default: benchmarks/results)")


def main(args: argparse.Namespace, argv: list[str]) -> int:
    ids = args.ids or mujoco_ids()
    unknown = sorted(set(ids) - set(mujoco_ids()))
    if unknown:
        raise SystemExit(f"--ids {unknown}: not MuJoCo v5 ids of the registry ({', '.join(mujoco_ids())})")
    if args.quick:
        if args.out is None:
            raise SystemExit(
                "--quick is a smoke run: give --out (its files never go into benchmarks/results)"
            )
        args.sizes, args.rounds, args.mjx_rounds, args.round_seconds = [16], 2, 2, 0.1
        args.deviation_steps = min(args.deviation_steps, 10)
    settings = {
        k: getattr(args, k)
        for k in (
            "quick",
            "mjx",
            "unroll",
            "xla_timeout",
            "sizes",
            "rounds",
            "mjx_rounds",
            "round_seconds",
            "deviation_steps",
            "mjx_compile_cap",
            "deviation_budget",
        )
    }
    settings |= {"threads": THREADS, "mjx_max_call_s": MJX_MAX_CALL_S}
    title = "Gymnasium MuJoCo v5 catalog: gymjax, EnvPool and MuJoCo's batch engine" + (" and MJX" if args.mjx else "")
    record = common.new_record("catalog", argv, title + (" (quick)" if args.quick else ""), settings)
    tasks: dict = {}
    for env_id in tqdm(ids, desc="tasks", unit="task"):
        run_task(env_id, args, tasks)
    results = {"tasks": tasks, "ratios": ratios(tasks)}
    common.finish(record, results, summary(record | {"results": results}))
    paths = common.write(record, markdown(record), plot, "catalog", args.out or common.RESULTS)
    print("wrote " + ", ".join(map(str, paths)))
    return 1 if any(e["failed"] for e in tasks.values()) else 0


# -- the report ---------------------------------------------------------------------------------


def _median(tasks: dict, env_id: str, n: str, stack: str) -> float | None:
    r = tasks[env_id]["throughput"].get(n, {}).get("stacks", {}).get(stack)
    return r["median"] if r else None


def ratios(tasks: dict) -> dict:
    """Per task and N: VectorEnv / EnvPool, in jit / batch ceiling, in jit / EnvPool xla,
    VectorEnv / batch ceiling, batch ceiling / EnvPool, MJX / VectorEnv."""
    out = {}
    for env_id, entry in tasks.items():
        out[env_id] = {}
        for n in entry["throughput"]:
            vec, jit, ep, xla, ceiling, mjx = (_median(tasks, env_id, n, s) for s in STACKS)
            div = lambda a, b: a / b if a and b else None
            out[env_id][n] = {
                "vector_envpool": div(vec, ep),
                "jit_ceiling": div(jit, ceiling),
                "jit_xla": div(jit, xla),
                "vector_ceiling": div(vec, ceiling),
                "ceiling_envpool": div(ceiling, ep),
                "mjx_vector": div(mjx, vec),
            }
    return out


def _n(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _r(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _e(x: float) -> str:
    return "inf (NaN)" if math.isinf(x) else f"{x:.1e}"


def _short(env_id: str) -> str:
    return env_id.removeprefix("Jax").removesuffix("-v0")


def _round_loads(results: dict) -> str:
    return common.load_range(
        x for e in results["tasks"].values() for b in e["throughput"].values() for x in b["load_1min_rounds"]
    )


def _cells(entry: dict, n: str, block: dict) -> dict[str, str]:
    """Each stack's cell at ``n``: its median, or why there is none."""
    st, cell = block["stacks"], {}
    for s in STACKS:
        why = entry["failed"].get(f"{s} N={n}")
        cell[s] = _n(st[s]["median"]) if s in st else f"failed: {why}" if why else "-"
    if "MJX" in st:
        cell["MJX"] += f" ({st['MJX']['compile_s']:.0f})"
    elif f"MJX N={n}" in entry["skipped"]:
        cell["MJX"] = "capped"
    elif "MJX" in entry["skipped"]:
        cell["MJX"] = "skipped"
    return cell


def throughput_table(results: dict) -> list[str]:
    with_mjx = any("deviation" in e for e in results["tasks"].values())
    shown = STACKS if with_mjx else STACKS[:-1]
    heads = [*(f"{s} (compile s)" if s == "MJX" else s for s in shown)]
    heads += ["VectorEnv / EnvPool", "in jit / ceiling", "in jit / EnvPool xla", "load 1 min before → after"]
    lines = ["| task | N | " + " | ".join(heads) + " |", "|---" * (len(heads) + 2) + "|"]
    for env_id, entry in results["tasks"].items():
        for n, block in entry["throughput"].items():
            r = results["ratios"][env_id][n]
            cell = _cells(entry, n, block)
            lines.append(
                f"| {_short(env_id)} | {n} | "
                + " | ".join(cell[s] for s in shown)
                + f" | {_r(r['vector_envpool'])} | {_r(r['jit_ceiling'])} | {_r(r['jit_xla'])} "
                f"| {block['load_before'][0]:.1f} → {block['load_after'][0]:.1f} |"
            )
    return lines


def deviation_table(results: dict) -> list[str]:
    steps = next((e["deviation"]["steps"] for e in results["tasks"].values() if "deviation" in e), 100)
    lines = [
        (
            f"| task | MJX solver (iterations, line search) | obs, 1 step | reward, 1 step | obs, {steps} steps "
            f"| reward, {steps} steps | median obs, {steps} steps | terminations agree | steps compared (min-max) |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for env_id, entry in results["tasks"].items():
        d = entry.get("deviation")
        if d is None:
            lines.append(f"| {_short(env_id)} | {entry['skipped'].get('MJX', 'not measured')} |" + " |" * 7)
            continue
        s = entry["solver"]
        solver = s["solver"] + (f" (XML: {s['xml_solver']})" if s["xml_solver"] != s["solver"] else "")
        solver += f", {s['preset']} {tuple(s['iterations'])}" if s["iterations"] else f", {s['preset']}"
        lines.append(
            f"| {_short(env_id)} | {solver} | {_e(d['obs_1'])} | {_e(d['reward_1'])} | {_e(d['obs_final'])} "
            f"| {_e(d['reward_final'])} | {_e(d['obs_final_median'])} | {d['terminations_agree']}/{d['states']} "
            f"| {min(d['steps_compared'])}-{max(d['steps_compared'])} |"
        )
    return lines


# Issue 42's bars: the VectorEnv against EnvPool at each N, and the in-jit stack against EnvPool's xla().
BARS = {"16": 0.8, "256": 1.0}


def gap_lines(results: dict, n: str, bar: float, xla: bool = False) -> list[str]:
    """Per task below ``bar`` x EnvPool at N=``n`` (the VectorEnv against EnvPool, or with ``xla`` the
    in-jit stack against EnvPool's ``xla()``): the gap split into its layers, ms per batch step.

    physics: the batch ceiling against EnvPool's whole step; call: the in-jit stack beyond the
    ceiling (JAX, the FFI call, observation, reward, auto-reset); adapter: the VectorEnv beyond the
    in-jit stack (dispatch, the host transfer, NumPy, info)."""
    lines = []
    ours, theirs = ("gymjax in jit", "EnvPool xla") if xla else ("gymjax VectorEnv", "EnvPool")
    for env_id in results["tasks"]:
        ms = {s: int(n) / v * 1e3 if v else None for s in STACKS for v in [_median(results["tasks"], env_id, n, s)]}
        if ms[ours] is None or ms[theirs] is None or ms["batch ceiling"] is None:
            continue
        ratio = ms[theirs] / ms[ours]
        if ratio >= bar:
            continue
        layers = {"physics": ms["batch ceiling"] - ms[theirs], "call": ms["gymjax in jit"] - ms["batch ceiling"]}
        if not xla:
            layers["adapter"] = ms["gymjax VectorEnv"] - ms["gymjax in jit"]
        largest = max(layers, key=layers.get)
        parts = ", ".join(f"{name} {value:+.2f}" for name, value in layers.items())
        lines.append(
            f"- **{_short(env_id)}** ({ours} / {theirs} {ratio:.2f}, bar {bar:g}): {ms[ours]:.2f} ms a {n}-env step "
            f"against {ms[theirs]:.2f}; the gap by layer, ms: {parts}. Largest: the {largest}."
        )
    against = "EnvPool's xla()" if xla else "EnvPool"
    return lines or [f"- none: {ours} is at or above {bar:g} x {against} at N={n} on every task it ran."]


def _gap_sections(record: dict) -> list[str]:
    results, lines = record["results"], []
    for n in map(str, record["settings"]["sizes"]):
        bar = BARS.get(n, 1.0)
        lines += ["", f"**VectorEnv against EnvPool, N={n}** (bar {bar:g}):", "", *gap_lines(results, n, bar)]
    for n in map(str, record["settings"]["sizes"]):
        lines += ["", f"**In jit against EnvPool's xla(), N={n}** (bar 1):", "", *gap_lines(results, n, 1.0, xla=True)]
    return lines


def summary(record: dict) -> list[str]:
    s, results = record["settings"], record["results"]
    mjx = f" (MJX in the first {s['mjx_rounds']})" if s["mjx"] else ""
    return [
        (
            f"Env steps/s, random actions; per task and N the in-process stacks are built once and timed in "
            f"alternation, {s['rounds']} rounds of about {s['round_seconds']:g} s{mjx}; medians. EnvPool xla is "
            f"timed right after, in a process of its own ({s['xla_timeout']:g} s at most). In-jit stacks: "
            f"{s['unroll']} steps per jitted scan. Load (1 min) over the rounds {_round_loads(results)}."
        ),
        "",
        *throughput_table(results),
    ]


STACK_NOTES = (
    'gymjax VectorEnv: `gymnasium.make_vec(id, N, engine="mujoco")` (the native engine: MuJoCo\'s batch '
    "engine through one XLA FFI call per batched step; next-step auto-reset, make_vec's default and "
    "EnvPool's; NumPy out). "
    "gymjax in jit: `jax.jit` of a `lax.scan` over {unroll} steps of "
    '`wrap_for_training(gymjax.make(id, engine="mujoco"))`, random actions drawn inside the jit, auto-reset '
    "included: what the PPO trainer steps. EnvPool: `envpool.make_gymnasium` of the same `*-v5` task, "
    "`num_threads` = cores. EnvPool xla: `env.xla()`'s `step` in a jitted `lax.scan` of {unroll} calls, random "
    "float64 actions drawn inside the jit, in a process of its own (EnvPool's MuJoCo actions need "
    "`jax_enable_x64`); its `async_reset` is answered by a `recv` before the scan, as EnvPool's protocol wants "
    "(without it the scan crashed here). Batch ceiling: `mujoco.batch.Batch(model, nsim=N, nthread=cores)` "
    "stepped from NumPy (`ctrl` written, `step(nstep=frame_skip)`), the task's data fields bound so their "
    "copies are paid, every state back to a reset draw every 50 steps (all at once, one `forward`); no JAX, no "
    "observation, no reward, no termination. It runs no "
    "`mj_rnePostConstraint` (the Python batch has no way to), which the tasks reading `cfrc_ext` (Ant, "
    "Humanoid, HumanoidStandup) pay on every step: for those it bounds from above by that much."
)


def gymnasium_unit_table(results: dict) -> list[str]:
    lines = ["| task | N | gymjax make_vec | EnvPool | gymjax / EnvPool |", "|---|---|---|---|---|"]
    for env_id, entry in results["tasks"].items():
        for n, block in entry["throughput"].items():
            unit = block.get("gymnasium_unit") or {}
            ours, theirs = unit.get("gymjax"), unit.get("EnvPool")
            ratio = ours / theirs if ours and theirs else None
            lines.append(f"| {_short(env_id)} | {n} | {_n(ours)} | {_n(theirs)} | {_r(ratio)} |")
    return lines


def markdown(record: dict) -> list[str]:
    results = record["results"]
    tasks = results["tasks"].items()
    skipped = [f"- {_short(i)}, {what}: {why}" for i, e in tasks for what, why in e["skipped"].items()]
    failed = [f"- {_short(i)}, {what}: `{why}`" for i, e in tasks for what, why in e["failed"].items()]
    mjx = [
        "",
        "## MJX deviation from MuJoCo C",
        "",
        (
            f"{DEVIATION_STATES} states from a random-action rollout of Gymnasium's `*-v5` (one every 7 steps), put on "
            'both engines with `reset_to`; then the same random actions on `engine="mjx"` (float32, solver preset '
            'as shown) and `engine="mujoco"` (Gymnasium\'s physics). Errors are the largest over the states of '
            "`|mjx - c| / max(1, |c|)` (over the observation's numbers for obs); after N steps means after N steps "
            "or at the step the C run terminated, where that state stops. Terminations agree where both runs first "
            "terminate at the same step, or neither does."
        ),
        "",
        *deviation_table(results),
    ]
    return [
        "## Throughput (env steps/s)",
        "",
        *summary(record),
        "",
        STACK_NOTES.format(unroll=record["settings"]["unroll"]),
        *(
            [" MJX: `jax.jit(jax.vmap(env.step))`, `engine=\"mjx\"`, no auto-reset; its compile (s) in brackets."]
            if record["settings"]["mjx"]
            else []
        ),
        "",
        *(
            [
                "## Gymnasium's own unit",
                "",
                "`gymnasium.utils.performance.benchmark_vector_step(env)` on `gymnasium.make_vec(id, N)` (gymjax, "
                "its default next-step mode) and on `envpool.make_gymnasium(task, num_envs=N)`, one after the other "
                "after the interleaved rounds, each for about as long as those rounds; random actions sampled by "
                "the action space, as Gymnasium's unit does. A figure anyone reproduces with Gymnasium alone; the "
                "interleaved table above is the one to compare stacks by.",
                "",
                *gymnasium_unit_table(results),
                "",
            ]
            if any("gymnasium_unit" in b for e in results["tasks"].values() for b in e["throughput"].values())
            else []
        ),
        "## Where the time goes",
        "",
        (
            "Where a stack is below its bar (issue 49's: the VectorEnv at 0.8 x EnvPool at N=16 and 1 x at "
            "N=256, the in-jit stack at 1 x EnvPool's xla() where it runs; the in-jit stack's other bar, within 10% "
            "of the batch ceiling at N=256, is the table's in jit / ceiling column), its gap to the peer split "
            "by layer from the medians "
            "above (ms per batch step = N / steps/s): **physics**, MuJoCo's batch engine alone (the batch "
            "ceiling) against the peer's whole step; **call**, the in-jit stack beyond the ceiling (JAX, the FFI "
            "call, observation, reward, auto-reset); **adapter**, the VectorEnv beyond the in-jit stack (dispatch, "
            "the host transfer, NumPy, info). The batch ceiling resets on its own schedule, so its states differ "
            "from the others' (more contacts or fewer): read it as the physics' cost, give or take that; a "
            "negative layer is that noise or a ceiling that pays copies the stack does not."
        ),
        *_gap_sections(record),
        *(mjx if record["settings"]["mjx"] else []),
        *common.listed("Skipped or capped", skipped),
        *common.listed("Failed", failed),
    ]


def plot(record: dict, path: pathlib.Path) -> None:
    plt = common.pyplot()
    results = record["results"]
    ids = list(results["tasks"])
    cols = 4
    rows = math.ceil((len(ids) + 1) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    colors = dict(zip(STACKS, ("tab:blue", "tab:cyan", "tab:orange", "tab:red", "tab:gray", "tab:green")))
    shown = STACKS if record["settings"]["mjx"] else STACKS[:-1]
    for ax, env_id in zip(axes.flat, ids):
        blocks = results["tasks"][env_id]["throughput"]
        common.stack_bars(ax, blocks, shown, colors)
        ax.set_yscale("log")
        missing = [f"N={n}" for n, block in blocks.items() if "MJX" not in block["stacks"]]
        if missing and record["settings"]["mjx"]:
            ax.text(
                0.02,
                0.97,
                f"MJX not measured at {', '.join(missing)}",
                transform=ax.transAxes,
                ha="left",
                va="top",
                fontsize=7,
                color="tab:green",
            )
        ax.set_xticks(range(len(blocks)), [f"N={n}" for n in blocks])
        ax.set_title(_short(env_id), fontsize=10)
        ax.grid(axis="y", alpha=0.3, which="both")
    for ax in list(axes.flat)[len(ids) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    list(axes.flat)[len(ids)].legend(
        handles, labels, loc="center", fontsize=9, title="env steps/s (median, min-max)"
    )
    fig.suptitle(
        f"Gymnasium MuJoCo v5 tasks, {record['machine']['name']}, 1-min load over the rounds "
        f"{_round_loads(results)}"
    )
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
