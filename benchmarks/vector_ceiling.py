"""JaxAnt-v0's vector env on the C backend against the C physics ceiling and EnvPool, interleaved.

In one process, for each batch size N, every stack is built once and then timed
in alternation (A, B, C, ..., A, B, C, ...) so that load drift on a shared
machine hits all of them alike; figures are medians of the repeats, with the
load average beside them. Random actions, ``engine="mujoco"``, same threads:

- ceiling, host pool: gymjax's own MuJoCo C thread pool (``HostPhysics.step``)
  stepping N states, no JAX at all;
- ceiling, ``mujoco.rollout``: MuJoCo's multi-threaded rollout, 5 substeps a call;
- gymjax ``GymnasiumVectorEnv`` (NumPy out, same-step auto-reset);
- gymjax ``TorchVectorEnv`` (torch tensors through DLPack) and ``SB3VecEnv``;
- EnvPool's Ant-v5 (``envpool.make_gymnasium``), if installed.

Then, at each N, where a VectorEnv step's time goes (:func:`profile`): MuJoCo's
stepping, the auto-reset's physics, JAX around them, and the adapter. Every
gymjax stack is reached through public APIs only (the adapters' constructors,
``gymjax.make``, ``wrap_for_training``, ``HostPhysics``), so the script keeps
working while the adapters' insides change.

Writes benchmarks/results/vector_ceiling.{json,md,png}.

    python -m benchmarks.vector_ceiling            # N = 16, 256, 1024
    python -m benchmarks.vector_ceiling --quick    # N = 16, 64, few repeats: a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import statistics
import sys
import time

if __package__ in (None, ""):  # run as a file: make `benchmarks` importable from the repo root
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

os.environ.setdefault("MUJOCO_GL", "egl")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from mujoco import rollout  # noqa: E402
from tqdm import tqdm  # noqa: E402

import gymjax  # noqa: E402
from benchmarks.harness import environment  # noqa: E402
from benchmarks.report import pyplot, save, write_results  # noqa: E402
from benchmarks.suites.env import rollout_start  # noqa: E402
from gymjax.envs.mujoco.host import HostPhysics  # noqa: E402
from gymjax.wrappers.training import wrap_for_training  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
THREADS = os.cpu_count() or 1
TARGETS = {"pool": 0.8, "rollout": 0.8, "envpool": 1.3, "torch": 0.95, "sb3": 0.9}


class Stack:
    """A built stack: ``step()`` advances N envs once."""

    def __init__(self, name: str, step, close=None):
        self.name, self.step, self.close = name, step, close


def _actions(n: int, count: int = 64) -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, (count, n, 8)).astype(np.float32)


def _cycle(actions: np.ndarray):
    i = [0]

    def next_action():
        i[0] = (i[0] + 1) % len(actions)
        return actions[i[0]]

    return next_action


def host_pool(n: int) -> Stack:
    env = gymjax.make("JaxAnt-v0", engine="mujoco")
    physics = HostPhysics(env.mj_model, env.frame_skip, THREADS, env.data_fields, env.differenced_fields)
    start = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))
    state = [np.asarray(start.env_state.state)]
    action = _cycle(_actions(n))

    def step():
        # The states evolve, as in the VectorEnv: a falling Ant's contacts cost more than its start.
        words = physics.step(state[0], action(), {})
        state[0] = physics.split(words).state

    def close():
        physics.close()
        env.close()

    return Stack("ceiling: gymjax host pool", step, close)


def mujoco_rollout(n: int) -> Stack:
    env = gymjax.make("JaxAnt-v0", engine="mujoco")
    model = env.mj_model
    datas, state = rollout_start(model, n, THREADS)
    controls = np.random.default_rng(0).uniform(-1, 1, (8, n, env.frame_skip, model.nu))
    pool = rollout.Rollout(nthread=THREADS)
    holder, i = [state], [0]

    def step():
        i[0] = (i[0] + 1) % len(controls)
        states, _ = pool.rollout(model, datas, holder[0], controls[i[0]])
        holder[0] = states[:, -1]

    return Stack("ceiling: mujoco.rollout", step, pool.close)


def vector_env(n: int) -> Stack:
    from gymjax.wrappers.gymnasium import GymnasiumVectorEnv

    env = GymnasiumVectorEnv("JaxAnt-v0", n, engine="mujoco", autoreset_mode="same_step")
    env.reset(seed=0)
    action = _cycle(_actions(n))
    return Stack("gymjax VectorEnv", lambda: env.step(action()), env.close)


def torch_vector_env(n: int) -> Stack:
    import torch

    from gymjax.wrappers.torch import TorchVectorEnv

    env = TorchVectorEnv("JaxAnt-v0", n, engine="mujoco")
    env.reset(seed=0)
    actions = torch.from_numpy(_actions(n))
    i = [0]

    def step():
        i[0] = (i[0] + 1) % len(actions)
        out = env.step(actions[i[0]])
        out[0].sum().item()  # the consumer waits for the step, as an agent reading obs does

    return Stack("gymjax TorchVectorEnv", step, env.close)


def sb3_vec_env(n: int) -> Stack:
    from gymjax.wrappers.sb3 import SB3VecEnv

    env = SB3VecEnv("JaxAnt-v0", n, engine="mujoco")
    env.reset()
    action = _cycle(_actions(n))
    return Stack("gymjax SB3VecEnv", lambda: env.step(action()), env.close)


def envpool_ant(n: int) -> Stack | None:
    try:
        import envpool
    except ImportError:
        return None
    env = envpool.make_gymnasium("Ant-v5", num_envs=n)
    env.reset()
    action = _cycle(_actions(n).astype(np.float64))
    return Stack("EnvPool Ant-v5", lambda: env.step(action()), env.close)


BUILDERS = (host_pool, mujoco_rollout, vector_env, torch_vector_env, sb3_vec_env, envpool_ant)


def interleaved(n: int, repeats: int, target_s: float) -> dict[str, dict]:
    """Steps/s of every stack at ``n`` envs, timed in alternation; medians and spreads."""
    stacks = [s for s in (build(n) for build in BUILDERS) if s is not None]
    calls = {}
    for stack in stacks:  # warm up (compiles) and size the repeats
        for _ in range(3):
            stack.step()
        start = time.perf_counter()
        stack.step()
        calls[stack.name] = max(3, int(target_s / max(time.perf_counter() - start, 1e-6)))
    samples: dict[str, list[float]] = {s.name: [] for s in stacks}
    loads = []
    for _ in tqdm(range(repeats), desc=f"N={n}", unit="round", leave=False):
        for stack in stacks:
            count = calls[stack.name]
            start = time.perf_counter()
            for _ in range(count):
                stack.step()
            samples[stack.name].append(n * count / (time.perf_counter() - start))
        loads.append(os.getloadavg()[0])
    for stack in stacks:
        if stack.close is not None:
            stack.close()
    return {
        name: {"median": statistics.median(v), "min": min(v), "max": max(v), "samples": v, "load_1min": loads}
        for name, v in samples.items()
    }


@contextlib.contextmanager
def _host_clock():
    """Seconds spent inside ``HostPhysics.step`` and ``.init`` (the auto-reset's physics) while open.

    The physics is called from inside the jitted step, so this is the one way to split
    a step's time between MuJoCo and JAX without reaching into an adapter.
    """
    spent = {"step": 0.0, "init": 0.0, "resets": 0}
    originals = {name: getattr(HostPhysics, name) for name in ("step", "init")}

    def clocked(name):
        original = originals[name]

        def call(self, *args):
            start = time.perf_counter()
            try:
                return original(self, *args)
            finally:
                spent[name] += time.perf_counter() - start
                spent["resets"] += name == "init"

        return call

    for name in originals:
        setattr(HostPhysics, name, clocked(name))
    try:
        yield spent
    finally:
        for name, original in originals.items():
            setattr(HostPhysics, name, original)


def profile(n: int, steps: int, repeats: int) -> dict[str, float]:
    """Where a VectorEnv step's time goes at ``n`` envs: medians over ``repeats`` of ``steps`` steps, in ms.

    Three things are timed in alternation: the physics alone (a :class:`HostPhysics` of
    the env's model, its states evolving), the functional stack's jitted step
    (``wrap_for_training``: vmap, time limit, auto-reset; what every adapter compiles) and
    the Gymnasium VectorEnv's ``step``. Inside the last two, the time spent in the host
    physics is clocked, which splits each step into MuJoCo's stepping, the auto-reset's
    physics, JAX around them (observation, reward, auto-reset, the callbacks' own cost),
    and the adapter (the VectorEnv's time outside the physics less the jitted stack's:
    action checks, the packed transfer to NumPy, the info dicts). Only public APIs: this keeps working whatever an adapter's
    insides become.
    """
    from gymjax.wrappers.gymnasium import GymnasiumVectorEnv

    base = gymjax.make("JaxAnt-v0", backend="mujoco")
    stack = wrap_for_training(base)
    jitted_step = jax.jit(stack.step)
    jitted_state = [jax.jit(stack.reset)(jax.random.split(jax.random.PRNGKey(0), n))]
    physics = HostPhysics(base.mj_model, base.frame_skip, THREADS, base.data_fields, base.differenced_fields)
    physics_state = [np.array(jitted_state[0].env_state.state)]
    vector = GymnasiumVectorEnv("JaxAnt-v0", n, backend="mujoco", autoreset_mode="same_step")
    vector.reset(seed=0)
    action = _cycle(_actions(n))

    def physics_alone():
        physics_state[0] = np.array(physics.split(physics.step(physics_state[0], action(), {})).state)

    def jitted():
        jitted_state[0] = jax.block_until_ready(jitted_step(jitted_state[0], action()))

    def vector_step():
        vector.step(action())

    layers = {"physics": physics_alone, "jitted": jitted, "vector": vector_step}
    for fn in layers.values():  # compile, and let the Ants fall into contact
        for _ in range(5):
            fn()
    rows: dict[str, list[float]] = {}
    for _ in range(repeats):
        took, inside = {}, {}
        for name, fn in layers.items():
            with _host_clock() as spent:
                start = time.perf_counter()
                for _ in range(steps):
                    fn()
                took[name] = (time.perf_counter() - start) / steps * 1e3
            inside[name] = {k: v / steps * (1e3 if k != "resets" else 1) for k, v in spent.items()}
        v, j = inside["vector"], inside["jitted"]
        # Each stack's time outside the host physics, from the same timing as its total: the
        # differences between two stacks' totals would carry the load's swings on the physics.
        rest = took["vector"] - v["step"] - v["init"]
        jax_side = took["jitted"] - j["step"] - j["init"]
        row = {
            "physics alone (HostPhysics.step)": took["physics"],
            "VectorEnv.step": took["vector"],
            "↳ MuJoCo stepping (HostPhysics.step)": v["step"],
            "↳ auto-reset's physics (HostPhysics.init)": v["init"],
            "↳ the rest (JAX, callbacks, adapter)": rest,
            "  ↳ JAX around the physics (the jitted stack's rest)": jax_side,
            "  ↳ adapter (VectorEnv's rest - the jitted stack's)": rest - jax_side,
            "steps with an auto-reset (fraction)": v["resets"],
        }
        for key, value in row.items():
            rows.setdefault(key, []).append(value)
    vector.close()
    physics.close()
    base.close()
    return {key: statistics.median(values) for key, values in rows.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 16, 64 and 2 repeats: a smoke run")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    sizes = (16, 64) if args.quick else (16, 256, 1024)
    repeats = 2 if args.quick else args.repeats
    target_s = 0.15 if args.quick else 0.6
    report = {**environment(), "threads": THREADS, "sizes": list(sizes), "repeats": repeats, "results": {}}
    for n in tqdm(sizes, desc="batch sizes", unit="N"):
        report["results"][str(n)] = interleaved(n, repeats, target_s)
    report["profile"] = {}
    for n in tqdm(sizes, desc="profile", unit="N"):
        steps = max(2, (1 if args.quick else 4) * 1024 // n)
        report["profile"][str(n)] = profile(n, steps, repeats=3 if args.quick else 5)
    report["ratios"] = ratios(report)
    stem = "vector_ceiling" + ("-quick" if args.quick else "")
    write_results(pathlib.Path(args.out), stem, report, markdown, plot)


def ratios(report: dict) -> dict[str, dict[str, float | None]]:
    out = {}
    for n, stacks in report["results"].items():
        med = {name: r["median"] for name, r in stacks.items()}
        vec = med["gymjax VectorEnv"]
        out[n] = {
            "pool": vec / med["ceiling: gymjax host pool"],
            "rollout": vec / med["ceiling: mujoco.rollout"],
            "envpool": vec / med["EnvPool Ant-v5"] if "EnvPool Ant-v5" in med else None,
            # The bound on the one above: the same MuJoCo work on the same cores, with no JAX at all.
            "pool_envpool": med["ceiling: gymjax host pool"] / med["EnvPool Ant-v5"] if "EnvPool Ant-v5" in med else None,
            "torch": med["gymjax TorchVectorEnv"] / vec,
            "sb3": med["gymjax SB3VecEnv"] / vec,
        }
    return out


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# JaxAnt-v0 vector env (C backend) vs the C physics ceiling and EnvPool",
        "",
        f"Machine: {m.get('name')}, {report['threads']} threads, JAX {report['versions'].get('jax')}. "
        f"Random actions; stacks timed in alternation, {report['repeats']} rounds; medians of env steps/s "
        "(min-max in brackets). Produced by `python -m benchmarks.vector_ceiling`.",
        "",
    ]
    names = list(next(iter(report["results"].values())))
    lines += ["| stack | " + " | ".join(f"N={n}" for n in report["results"]) + " |"]
    lines += ["|---" * (1 + len(report["results"])) + "|"]
    for name in names:
        cells = []
        for stacks in report["results"].values():
            r = stacks.get(name)
            cells.append(f"{r['median']:,.0f} [{r['min']:,.0f}-{r['max']:,.0f}]" if r else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Load average (1 min) over the rounds: " + "; ".join(
        f"N={n}: {min(s[names[0]]['load_1min']):.2f}-{max(s[names[0]]['load_1min']):.2f}"
        for n, s in report["results"].items()
    ), ""]
    lines += ["## Ratios (medians) against the targets", "",
              "The host pool does exactly an Ant-v5 step's work (5 `mj_step` and `mj_rnePostConstraint`, "
              "which fills `cfrc_ext`) on the same threads; `mujoco.rollout` does the 5 `mj_step` only, so it "
              "is a ceiling with less work in it. EnvPool's Ant-v5 does the full step in C++ threads (built with "
              "its defaults: `num_threads=0`, which EnvPool takes as one thread per core up to the batch size). "
              "As EnvPool does the same MuJoCo work on the same cores, VectorEnv / EnvPool cannot exceed host "
              "pool / EnvPool, shown beside it. The machine is shared: the load average (1 min, over the "
              "rounds) is beside each row.", "",
              "| N | VectorEnv / host pool (>= 0.8) | VectorEnv / rollout (>= 0.8) | VectorEnv / EnvPool (>= 1.3) "
              "| host pool / EnvPool (bound) | torch / VectorEnv (>= 0.95) | SB3 / VectorEnv (>= 0.9) | load (1 min) |",
              "|---|---|---|---|---|---|---|---|"]
    for n, r in report["ratios"].items():
        def cell(key):
            v = r[key]
            return "-" if v is None else f"{v:.2f} ({'meets' if v >= TARGETS[key] else 'misses'})"
        loads = report["results"][n][names[0]]["load_1min"]
        bound = "-" if r.get("pool_envpool") is None else f"{r['pool_envpool']:.2f}"
        lines.append(f"| {n} | {cell('pool')} | {cell('rollout')} | {cell('envpool')} | {bound} | {cell('torch')} "
                     f"| {cell('sb3')} | {min(loads):.2f}-{max(loads):.2f} |")
    lines += ["", *profile_lines(report), ""]
    return "\n".join(lines)


def profile_lines(report: dict) -> list[str]:
    sizes = list(report["profile"])
    first = report["profile"][sizes[0]]
    lines = [
        "## Where the time goes",
        "",
        "ms per step, medians of the profile's rounds (physics alone, the functional stack's jitted "
        "step and the VectorEnv timed in alternation; time inside `HostPhysics.step`/`.init` clocked "
        "from within the jitted step). The ↳ rows split the VectorEnv step: its physics, and the rest "
        "of the same timing, split in turn by the jitted stack's own rest (the adapter row is a "
        "difference of two small timings, so the load's noise shows most there).",
        "",
        "| | " + " | ".join(f"N={n}" for n in sizes) + " |",
        "|---" * (1 + len(sizes)) + "|",
    ]
    for key in first:
        cells = [f"{report['profile'][n][key]:.2f}" for n in sizes]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Reading it: MuJoCo's own stepping is most of a step. Auto-reset resets the whole batch "
        "(then keeps the ended envs' resets) whenever one env ended, which with random actions is "
        "about one step in ten at N=16 and nearly every step from N=256; its physics is "
        "`mj_kinematics` with the state written in NumPy. The JAX row holds the observation, reward, "
        "time limit and auto-reset arithmetic (the reset of all N envs included: their random draws, "
        "observations and the selection of the ended ones) and the `pure_callback`s' own cost (JAX "
        "device-puts each argument before the call: ~0.1 ms a call); the adapter row the action "
        "check, the packed transfer to NumPy and the info dicts. At small N these fixed costs are "
        "what keeps the VectorEnv from the ceiling.",
    ]
    return lines


def plot(report: dict, path: pathlib.Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    sizes = list(report["results"])
    names = list(report["results"][sizes[0]])
    fig, ax = plt.subplots(figsize=(9, 5))
    width = 0.8 / len(names)
    for j, name in enumerate(names):
        med = [report["results"][n][name]["median"] for n in sizes]
        lo = [m - report["results"][n][name]["min"] for n, m in zip(sizes, med)]
        hi = [report["results"][n][name]["max"] - m for n, m in zip(sizes, med)]
        xs = np.arange(len(sizes)) + (j - (len(names) - 1) / 2) * width
        ax.bar(xs, med, width, yerr=[lo, hi], label=name, capsize=2)
    loads = [report["results"][n][names[0]]["load_1min"] for n in sizes]
    ax.set_xticks(np.arange(len(sizes)), [f"N={n}\nload {min(v):.1f}-{max(v):.1f}" for n, v in zip(sizes, loads)])
    ax.set_ylabel("env steps / s (median, min-max)")
    ax.set_title(f"JaxAnt-v0, engine='mujoco', {report['threads']} threads: stacks interleaved")
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    ax.grid(axis="y", alpha=0.3)
    save(fig, path)


if __name__ == "__main__":
    main()
