"""Every Gymnasium MuJoCo v5 task of the registry: throughput against EnvPool, and MJX's deviation.

For each registered id whose reference is a Gymnasium MuJoCo ``*-v5`` (new ids are picked up):

1. Throughput, random actions, at N = 16 and 256, four stacks built once and timed in
   alternation (A, B, C, D, A, B, C, D, ...) in one process, medians of the rounds, the load
   average before and after each block and after each round:

   - gymjax VectorEnv: ``gymnasium.make_vec(id, num_envs=N, engine="mujoco")`` (MuJoCo C inside
     jit, NumPy out, same-step auto-reset);
   - EnvPool: ``envpool.make_gymnasium("<Task>-v5", num_envs=N, num_threads=cores)``;
   - host pool: gymjax's MuJoCo C thread pool alone (``HostPhysics.step`` on the task's model
     and fields, no JAX, no reset: the bound for any MuJoCo C stepper here);
   - MJX: ``jax.jit(jax.vmap(gymjax.make(id, engine="mjx").step))``, no auto-reset, timed in
     fewer rounds, its compile time apart (and reported).

2. MJX deviation: 16 states from a random-action rollout of Gymnasium's ``*-v5``, put on both
   engines with ``reset_to`` (Gymnasium's ``set_state``), then the same random actions for
   100 steps on MJX and on the C engine: the largest relative error of obs and reward
   (``|mjx - c| / max(1, |c|)``) after 1 step and after 100 steps (or at the C run's
   termination, where each state stops), and whether the terminations agree.

Writes benchmarks/results/catalog.{json,md,png}.

    python -m benchmarks.catalog            # N = 16, 256: about 25 min on 2 cores
    python -m benchmarks.catalog --quick    # N = 16, 2 rounds, MJX on two small tasks: a smoke run
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import statistics
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a file: make `benchmarks` importable from the repo root
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

import gymjax  # noqa: E402
from benchmarks.harness import machine, versions  # noqa: E402
from benchmarks.report import pyplot, save, write_results  # noqa: E402
from gymjax.envs.mujoco.host import HostPhysics  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
THREADS = os.cpu_count() or 1
STACKS = ("gymjax VectorEnv", "EnvPool", "host pool", "MJX")
QUICK_MJX = ("JaxInvertedPendulum-v0", "JaxReacher-v0")  # quick mode compiles MJX for these only
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


# -- the stacks ---------------------------------------------------------------------------------


class Stack:
    """A built stack: ``step()`` advances N envs by one step (and waits for it)."""

    def __init__(self, name: str, step, close=None, compile_s: float | None = None):
        self.name, self.step, self.close, self.compile_s = name, step, close, compile_s


def _actions(space: gymnasium.spaces.Box, n: int, count: int = 16, seed: int = 0) -> np.ndarray:
    """``count`` batches of ``n`` uniform actions in ``space``: ``[count, n, nu]`` float32."""
    rng = np.random.default_rng(seed)
    return rng.uniform(space.low, space.high, (count, n, *space.shape)).astype(np.float32)


def _cycle(batches):
    i = [0]

    def next_batch():
        i[0] = (i[0] + 1) % len(batches)
        return batches[i[0]]

    return next_batch


def _starts(env, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` reset draws (qpos, qvel) of ``env``, float32: its ``initial_state``, no physics."""
    keys = jax.random.split(jax.random.PRNGKey(seed), n)
    qpos, qvel = jax.jit(jax.vmap(env.initial_state))(keys)
    return np.asarray(qpos, np.float32), np.asarray(qvel, np.float32)


def vector_env(env_id: str, n: int) -> Stack:
    env = gymnasium.make_vec(env_id, num_envs=n, engine="mujoco", autoreset_mode="same_step")  # as measured
    env.reset(seed=0)
    action = _cycle(_actions(env.single_action_space, n))
    return Stack("gymjax VectorEnv", lambda: env.step(action()), env.close)


def envpool_env(task: str, n: int) -> Stack:
    import envpool

    env = envpool.make_gymnasium(task, num_envs=n, num_threads=THREADS)
    env.reset()
    action = _cycle(_actions(env.action_space, n).astype(np.float64))
    return Stack("EnvPool", lambda: env.step(action()), env.close)


def host_pool(env_id: str, n: int) -> Stack:
    env = gymjax.make(env_id, engine="mujoco")
    physics = HostPhysics(env.mj_model, env.frame_skip, None, env.data_fields, env.differenced_fields)
    qpos, qvel = _starts(env, n)
    state = [physics.split(physics.init(qpos, qvel, {})).state]
    action = _cycle(_actions(env.action_space, n))

    def step():
        # The states evolve and never reset (a fallen Humanoid's contacts cost more than its start).
        state[0] = physics.split(physics.step(state[0], action(), {})).state

    def close():
        physics.close()
        env.close()

    return Stack("host pool", step, close)


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
        chunks = [self.reset_to(jnp.asarray(qpos[i : i + k]), jnp.asarray(qvel[i : i + k]))
                  for i in range(0, len(qpos), k)]
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

    def stack(self, n: int) -> Stack:
        qpos, qvel = _starts(self.env, n)
        state = [self.start(qpos, qvel)]
        actions = [jnp.asarray(a) for a in _actions(self.env.action_space, n, count=8)]
        action = _cycle(actions)
        for _ in range(2):  # compile (if not yet) and clock one steady call
            state[0] = self.stepped(state[0], action())

        def step():
            state[0] = self.step(state[0], action())
            jax.block_until_ready(state[0].obs)

        return Stack("MJX", step, None, self.compile_s[n])

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


# -- throughput ---------------------------------------------------------------------------------


def _error(err: BaseException) -> str:
    """An exception in one line, with where it was raised."""
    import traceback

    where = traceback.extract_tb(err.__traceback__)[-1]
    text = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {text} ({pathlib.Path(where.filename).name}:{where.lineno})"


def interleaved(
    stacks: list[Stack], n: int, rounds: int, mjx_rounds: int, target_s: float, desc: str, failed: dict,
) -> dict:
    """Steps/s of each stack at ``n`` envs, timed in alternation; MJX in the first ``mjx_rounds`` rounds.

    A stack whose warm-up raises is left out, its error in ``failed``."""
    calls = {}
    for stack in list(stacks):  # warm up (compiles) and size the rounds
        try:
            for _ in range(1 if stack.name == "MJX" else 3):
                stack.step()
        except Exception as err:  # a stack that cannot step is reported, the others measured
            failed[stack.name] = _error(err)
            stacks.remove(stack)
            if stack.close is not None:
                stack.close()
            continue
        start = time.perf_counter()
        stack.step()
        took = time.perf_counter() - start
        calls[stack.name] = max(1 if stack.name == "MJX" else 3, int(target_s / max(took, 1e-6)))
    samples: dict[str, list[float]] = {s.name: [] for s in stacks}
    loads = []
    load_before = list(os.getloadavg())
    for r in tqdm(range(rounds), desc=desc, unit="round", leave=False):
        for stack in stacks:
            if stack.name == "MJX" and r >= mjx_rounds:
                continue
            count = calls[stack.name]
            start = time.perf_counter()
            for _ in range(count):
                stack.step()
            samples[stack.name].append(n * count / (time.perf_counter() - start))
        loads.append(os.getloadavg()[0])
    out = {
        "stacks": {
            s.name: {
                "median": statistics.median(samples[s.name]),
                "min": min(samples[s.name]),
                "max": max(samples[s.name]),
                "samples": samples[s.name],
                "calls_per_round": calls[s.name],
                **({"compile_s": s.compile_s} if s.compile_s is not None else {}),
            }
            for s in stacks
        },
        "load_before": load_before,
        "load_after": list(os.getloadavg()),
        "load_1min_rounds": loads,
    }
    return out


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
    actions = _actions(c_env.action_space, DEVIATION_STATES, count=steps, seed=seed + 1)
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


def run_task(env_id: str, args, report: dict) -> None:
    spec = gymjax.envs.spec(env_id)
    task = envpool_task(spec.reference_id)
    entry: dict = {"reference": spec.reference_id, "envpool_task": task}
    entry |= {"throughput": {}, "skipped": {}, "failed": {}}
    report["tasks"][env_id] = entry
    with_mjx = not args.quick or env_id in QUICK_MJX
    mjx = MJX(env_id) if with_mjx else None
    if mjx is None:
        entry["skipped"]["MJX"] = "quick mode compiles MJX for " + ", ".join(QUICK_MJX) + " only"
    if mjx is not None:
        entry["solver"] = mjx.solver()
        entry["deviation"] = deviation(env_id, mjx, args.deviation_steps, args.deviation_budget)
        if "capped" in entry["deviation"]:
            entry["skipped"]["MJX deviation"] = entry["deviation"]["capped"]
    for n in args.sizes:
        builders = [("gymjax VectorEnv", lambda: vector_env(env_id, n))]
        if task is not None:
            builders.append(("EnvPool", lambda: envpool_env(task, n)))
        else:
            entry["skipped"]["EnvPool"] = "envpool is not installed, or has no " + spec.reference_id
        builders.append(("host pool", lambda: host_pool(env_id, n)))
        skip_mjx = None
        small = mjx.call_s.get(DEVIATION_STATES) if mjx is not None else None
        if small is not None and small * n / DEVIATION_STATES > MJX_MAX_CALL_S and n == DEVIATION_STATES:
            skip_mjx = f"capped: one N={n} step took {small:.1f} s (> {MJX_MAX_CALL_S:g} s)"
        elif mjx is not None and n > DEVIATION_STATES:
            estimate = small * n / DEVIATION_STATES if small else None
            if estimate is not None and estimate > MJX_MAX_CALL_S:
                skip_mjx = (f"capped: one N={n} step would take ~{estimate:.1f} s "
                            f"({n // DEVIATION_STATES} x the N={DEVIATION_STATES} step)")
            elif mjx.compile_s.get(DEVIATION_STATES, 0) > args.mjx_compile_cap:
                skip_mjx = (f"capped: the N={DEVIATION_STATES} step compiled in "
                            f"{mjx.compile_s[DEVIATION_STATES]:.0f} s (> {args.mjx_compile_cap:g} s); a "
                            f"N={n} compile would take the run past its time budget on {THREADS} cores")
        if skip_mjx:
            entry["skipped"][f"MJX N={n}"] = skip_mjx
        elif mjx is not None:
            builders.append(("MJX", lambda: mjx.stack(n)))
        stacks, failed = [], {}
        for name, build in builders:
            try:
                stacks.append(build())
            except Exception as err:
                failed[name] = _error(err)
        entry["throughput"][str(n)] = interleaved(
            stacks, n, args.rounds, args.mjx_rounds, args.target_s, f"{_short(env_id)} N={n}", failed,
        )
        entry["failed"].update({f"{name} N={n}": why for name, why in failed.items()})
        for stack in stacks:
            if stack.close is not None:
                stack.close()
    if mjx is not None:
        mjx.close()
    jax.clear_caches()  # each task's compiled steps are done with: keep the process small


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 16, 2 rounds, MJX on two tasks: a smoke run")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the C stacks (default 5)")
    parser.add_argument("--mjx-rounds", type=int, default=3, help="rounds MJX takes part in (default 3)")
    parser.add_argument("--target-s", type=float, default=0.3, help="seconds per stack per round")
    parser.add_argument("--deviation-steps", type=int, default=100)
    parser.add_argument("--mjx-compile-cap", type=float, default=90.0,
                        help="no MJX at N=256 where its N=16 step compiled for longer (s)")
    parser.add_argument("--deviation-budget", type=float, default=60.0,
                        help="seconds of MJX steps per task's deviation run, at most (default 60)")
    parser.add_argument("--ids", nargs="*", help="only these ids (default: every MuJoCo v5 id)")
    parser.add_argument("--report-only", action="store_true",
                        help="measure nothing: remake the ratios, Markdown and plot from the JSON in --out")
    parser.add_argument("--note", help="a sentence for the report's header (how the run went)")
    parser.add_argument("--resume", help="a partial report (written to the temp folder after each task) whose "
                        "tasks are kept, not run again")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    command = ["python", "-m", "benchmarks.catalog", *(argv if argv is not None else sys.argv[1:])]
    if args.quick:
        args.sizes, args.rounds, args.mjx_rounds, args.target_s = (16,), 2, 2, 0.1
        args.deviation_steps = min(args.deviation_steps, 10)
    else:
        args.sizes = (16, 256)
    stem = "catalog" + ("-quick" if args.quick else "")
    if args.report_only:
        report = json.loads((pathlib.Path(args.out) / f"{stem}.json").read_text())
        report["ratios"] = ratios(report)
        write_results(pathlib.Path(args.out), stem, report, markdown, plot)
        return
    ids = args.ids or mujoco_ids()
    earlier = json.loads(pathlib.Path(args.resume).read_text()) if args.resume else None
    if args.note:
        command = [a for a in command if a != "--note" and a != args.note]
    if earlier:  # the command that gives the whole report is the one without --resume and --ids
        command = [a for a in command if a != "--resume" and a != args.resume]
        if args.ids:
            command = command[: command.index("--ids")] + command[command.index("--ids") + 1 + len(args.ids):]
    started = time.time()
    report = {
        "command": command,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": machine(),
        "versions": versions(),
        "threads": THREADS,
        "quick": args.quick,
        "sizes": list(args.sizes),
        "rounds": args.rounds,
        "mjx_rounds": args.mjx_rounds,
        "target_s": args.target_s,
        "mjx_max_call_s": MJX_MAX_CALL_S,
        "mjx_compile_cap_s": args.mjx_compile_cap,
        "tasks": {},
        **({"note": args.note} if args.note else {}),
    }
    if earlier:
        report["tasks"] = earlier["tasks"]
        report["machine"]["load_average_at_start"] = earlier["machine"]["load_average_at_start"]
        before = earlier.get("resumed", [])
        report["resumed"] = [*([before] if isinstance(before, dict) else before),
                             {"created": earlier["created"], "wall_s": earlier["wall_s"], "tasks": list(earlier["tasks"])}]
        started -= earlier["wall_s"]
        ids = [i for i in ids if i not in earlier["tasks"]]
    stem = "catalog" + ("-quick" if args.quick else "")
    out = pathlib.Path(args.out)
    for env_id in tqdm(ids, desc="tasks", unit="task"):
        run_task(env_id, args, report)
        report["wall_s"] = time.time() - started
        report["machine"]["load_average_at_end"] = list(os.getloadavg())
        # What is done so far, should a later task crash the run.
        (pathlib.Path(tempfile.gettempdir()) / f"{stem}.partial.json").write_text(json.dumps(report, indent=1))
    order = mujoco_ids()
    report["tasks"] = dict(sorted(report["tasks"].items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 0))
    report["ratios"] = ratios(report)
    write_results(out, stem, report, markdown, plot)


# -- the report ---------------------------------------------------------------------------------


def _median(report: dict, env_id: str, n: str, stack: str) -> float | None:
    r = report["tasks"][env_id]["throughput"].get(n, {}).get("stacks", {}).get(stack)
    return r["median"] if r else None


def ratios(report: dict) -> dict:
    """Per task and N: VectorEnv / EnvPool, VectorEnv / host pool, host pool / EnvPool, MJX / VectorEnv."""
    out = {}
    for env_id, entry in report["tasks"].items():
        out[env_id] = {}
        for n in entry["throughput"]:
            vec, ep, pool, mjx = (_median(report, env_id, n, s) for s in STACKS)
            div = lambda a, b: a / b if a and b else None  # noqa: E731
            out[env_id][n] = {
                "vector_envpool": div(vec, ep),
                "vector_pool": div(vec, pool),
                "pool_envpool": div(pool, ep),
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


def _loads(values: list[float]) -> str:
    return "/".join(f"{x:.1f}" for x in values)


def _round_loads(report: dict) -> str:
    loads = [x for e in report["tasks"].values() for b in e["throughput"].values() for x in b["load_1min_rounds"]]
    return f"{min(loads):.1f}-{max(loads):.1f}" if loads else "n/a"


def throughput_table(report: dict) -> list[str]:
    lines = [
        "| task | N | gymjax VectorEnv | EnvPool | host pool | MJX (compile s) | VectorEnv / EnvPool "
        "| VectorEnv / host pool | load 1 min before → after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for env_id, entry in report["tasks"].items():
        for n, block in entry["throughput"].items():
            st = block["stacks"]
            r = report["ratios"][env_id][n]
            cell = {s: _n(st[s]["median"]) if s in st else "-" for s in STACKS}
            if "MJX" in st:
                cell["MJX"] += f" ({st['MJX']['compile_s']:.0f})"
            for s in STACKS:
                if f"{s} N={n}" in entry.get("failed", {}) and s not in st:
                    cell[s] = "failed"
            if "MJX" in st:
                pass
            elif f"MJX N={n}" in entry["skipped"]:
                cell["MJX"] = "capped"
            elif "MJX" in entry["skipped"]:
                cell["MJX"] = "skipped"
            lines.append(
                f"| {_short(env_id)} | {n} | " + " | ".join(cell[s] for s in STACKS)
                + f" | {_r(r['vector_envpool'])} | {_r(r['vector_pool'])} "
                f"| {block['load_before'][0]:.1f} → {block['load_after'][0]:.1f} |"
            )
    return lines


def deviation_table(report: dict) -> list[str]:
    steps = report.get("deviation_steps") or next(
        (e["deviation"]["steps"] for e in report["tasks"].values() if "deviation" in e), 100
    )
    lines = [
        f"| task | MJX solver (iterations, line search) | obs, 1 step | reward, 1 step | obs, {steps} steps "
        f"| reward, {steps} steps | median obs, {steps} steps | terminations agree | steps compared (min-max) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for env_id, entry in report["tasks"].items():
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


def gap_lines(report: dict) -> list[str]:
    """Per task where the VectorEnv is below EnvPool at the largest N: where the gap lies."""
    n = str(max(report["sizes"]))
    lines = []
    for env_id in report["tasks"]:
        r = report["ratios"][env_id].get(n)
        if r and r["vector_envpool"] is None and r["pool_envpool"] is not None:
            lines.append(
                f"- **{_short(env_id)}**: no VectorEnv figure (it failed, see Failed); the host pool alone runs "
                f"at {r['pool_envpool']:.2f} x EnvPool, the bound on what a VectorEnv could reach."
            )
        if not r or r["vector_envpool"] is None or r["vector_envpool"] >= 1:
            continue
        vec, ep, pool = (_median(report, env_id, n, s) for s in STACKS[:3])
        per = {k: int(n) / v * 1e3 for k, v in (("vec", vec), ("pool", pool), ("ep", ep))}  # ms per batch step
        outside = per["vec"] - per["pool"]
        physics_gap = per["pool"] - per["ep"]
        where = ("mostly the physics itself: the host pool alone is already below EnvPool"
                 if physics_gap > outside else
                 "mostly outside the physics: JAX around the callback, the auto-reset and the adapter")
        if outside < 0:  # the never-reset states cost the pool more than the VectorEnv's whole step
            where = ("not split by the host pool here: its states never reset (fallen bodies in contact) and cost "
                     "more than the VectorEnv's whole step, so it bounds nothing for this task")
        lines.append(
            f"- **{_short(env_id)}** (VectorEnv / EnvPool {r['vector_envpool']:.2f}): a {n}-env step takes "
            f"{per['vec']:.2f} ms in the VectorEnv, {per['pool']:.2f} ms in the host pool and {per['ep']:.2f} ms "
            f"in EnvPool. The gap is {where} (host pool / EnvPool {r['pool_envpool']:.2f}; "
            f"{outside:+.2f} ms outside the physics)."
        )
    if not lines:
        lines = [f"- gymjax's VectorEnv is at or above EnvPool at N={n} for every task."]
    return lines


def markdown(report: dict) -> str:
    m, v = report["machine"], report["versions"]
    quick = " (quick smoke run: not for comparison)" if report["quick"] else ""
    tasks = report["tasks"].items()
    skipped = [f"- {_short(i)}, {what}: {why}" for i, e in tasks for what, why in e["skipped"].items()]
    failed = [f"- {_short(i)}, {what}: `{why}`" for i, e in tasks for what, why in e["failed"].items()]
    lines = [
        f"# Gymnasium MuJoCo v5 catalog: gymjax, EnvPool, the host pool and MJX{quick}",
        "",
        f"Machine: {m['cpu_count']}-core CPU ({m['cpu']}); JAX on "
        f"{m['jax_backend']}, {report['threads']} threads for every C stack. Load average (1/5/15 min) at start "
        f"{_loads(m['load_average_at_start'])}, at end {_loads(m['load_average_at_end'])}, 1 min over the timed "
        f"rounds {_round_loads(report)}; run took "
        f"{report['wall_s'] / 60:.0f} min. Reproduce: `{' '.join(report['command'])}`."
        + (f" {report['note']}" if report.get("note") else ""),
        "",
        f"Versions: gymjax {v.get('gymjax')}, jax {v.get('jax')}, mujoco {v.get('mujoco')}, mujoco-mjx "
        f"{v.get('mujoco-mjx')}, gymnasium {v.get('gymnasium')}, envpool {v.get('envpool')}; commit "
        f"{v.get('git_commit')}.",
        "",
        "## Throughput (env steps/s)",
        "",
        f"Random actions. Per task and N, the stacks are built once and timed in alternation, "
        f"{report['rounds']} rounds of about {report['target_s']:g} s each (MJX in the first "
        f"{report['mjx_rounds']}); medians. gymjax VectorEnv: `gymnasium.make_vec(id, N, engine=\"mujoco\")` "
        "(same-step auto-reset, NumPy out). EnvPool: the same `*-v5` task, `num_threads` = cores. Host pool: "
        "gymjax's MuJoCo C thread pool alone (`HostPhysics.step`, the task's fields, no JAX, states never "
        "reset), the bound for any MuJoCo C stepper here. MJX: `jax.jit(jax.vmap(env.step))`, "
        "`engine=\"mjx\"`, no auto-reset; its compile (s) in brackets, not in the figure.",
        "",
        *throughput_table(report),
        "",
        "## Where the time goes",
        "",
        f"Tasks where gymjax's VectorEnv is below EnvPool at N={max(report['sizes'])}, from the medians above "
        "(ms per batch step = N / steps/s). The host pool runs no resets, so its states drift (fallen bodies, "
        "more contacts or fewer) where the other two reset: read it as the physics' cost, give or take that.",
        "",
        *gap_lines(report),
        "",
        "## MJX deviation from MuJoCo C",
        "",
        f"{DEVIATION_STATES} states from a random-action rollout of Gymnasium's `*-v5` (one every 7 steps), put on "
        "both engines with `reset_to`; then the same random actions on `engine=\"mjx\"` (float32, solver preset "
        "as shown) and `engine=\"mujoco\"` (Gymnasium's physics). Errors are the largest over the states of "
        "`|mjx - c| / max(1, |c|)` (over the observation's numbers for obs); after N steps means after N steps "
        "or at the step the C run terminated, where that state stops. Terminations agree where both runs first "
        "terminate at the same step, or neither does.",
        "",
        *deviation_table(report),
        "",
        "## Skipped or capped",
        "",
        *(skipped or ["- nothing"]),
        "",
        "## Failed",
        "",
        *(failed or ["- nothing"]),
        "",
    ]
    return "\n".join(lines)


def plot(report: dict, path: pathlib.Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    ids = list(report["tasks"])
    cols = 4
    rows = math.ceil((len(ids) + 1) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    colors = dict(zip(STACKS, ("tab:blue", "tab:orange", "tab:gray", "tab:green")))
    width = 0.8 / len(STACKS)
    for ax, env_id in zip(axes.flat, ids):
        sizes = list(report["tasks"][env_id]["throughput"])
        for j, name in enumerate(STACKS):
            xs, med, lo, hi = [], [], [], []
            for i, n in enumerate(sizes):
                r = report["tasks"][env_id]["throughput"][n]["stacks"].get(name)
                if r:
                    xs.append(i + (j - (len(STACKS) - 1) / 2) * width)
                    med.append(r["median"])
                    lo.append(r["median"] - r["min"])
                    hi.append(r["max"] - r["median"])
            ax.bar(xs, med, width, yerr=[lo, hi], color=colors[name], label=name, capsize=2)
        ax.set_yscale("log")
        missing = [f"N={n}" for n in sizes if "MJX" not in report["tasks"][env_id]["throughput"][n]["stacks"]]
        if missing:
            ax.text(0.02, 0.97, f"MJX not measured at {', '.join(missing)}", transform=ax.transAxes,
                    ha="left", va="top", fontsize=7, color="tab:green")
        ax.set_xticks(range(len(sizes)), [f"N={n}" for n in sizes])
        ax.set_title(_short(env_id), fontsize=10)
        ax.grid(axis="y", alpha=0.3, which="both")
    for ax in list(axes.flat)[len(ids):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    legend_ax = list(axes.flat)[len(ids)]
    legend_ax.legend(handles, labels, loc="center", fontsize=9, title="env steps/s (median, min-max)")
    m = report["machine"]
    fig.suptitle(f"Gymnasium MuJoCo v5 tasks, {m['cpu_count']}-core CPU, 1-min load over the rounds "
                 f"{_round_loads(report)}" + (" (quick)" if report["quick"] else ""))
    save(fig, path)


if __name__ == "__main__":
    main()
