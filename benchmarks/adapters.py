"""What the SB3 and torch adapters cost, in one run.

1. SB3: steps/s of :class:`~gymjax.wrappers.sb3.SB3VecEnv` over JaxAnt-v0 against
   SB3's ``DummyVecEnv`` of ``Monitor(gymnasium.make("Ant-v5"))`` envs (MuJoCo C),
   at the same numbers of envs.
2. Torch: time per step of :class:`~gymjax.wrappers.torch.TorchVectorEnv` against
   the NumPy :class:`~gymjax.wrappers.gymnasium.GymnasiumVectorEnv`, with the bare
   jitted batch step both run as the floor, on JaxAnt-v0 (the target: the bridge
   adds under 5%) and on JaxCartPole-v0 (an env that costs almost nothing, so
   what remains is the adapters' own overhead).

Stacks compared with each other are timed in alternation, repeat by repeat, so
that load from other processes on a shared machine falls on all of them alike.
Figures are medians over repeats after a warm-up; compile time is reported apart.
The run keeps JAX's compilation cache in a fresh temporary folder, so a program
already compiled in the run (the NumPy VectorEnv's and the SB3 adapter's are the
same at one N; the torch bridge's step, fed a device-committed action, is its own)
is loaded, not compiled again, and its "compile" column is that load.

Writes benchmarks/results/adapters.{json,md,png}. Superseded by the harness
(``python -m benchmarks --suite adapters``, and the torch bridge in ``--suite
env``), whose stack builders it uses.

    python -m benchmarks.adapters            # SB3 at N = 16, 64; torch at N = 256
    python -m benchmarks.adapters --quick    # N = 4 throughout: a smoke run (one Ant compile)
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
import warnings

if __package__ in (None, ""):  # run as a file: make `benchmarks` importable from the repo root
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

os.environ.setdefault("MUJOCO_GL", "egl")

import jax  # noqa: E402
import stable_baselines3  # noqa: E402
import torch  # noqa: E402
from tqdm import tqdm  # noqa: E402

from benchmarks.harness import Stepper, environment, time_calls  # noqa: E402
from benchmarks.report import pyplot, save, write_results  # noqa: E402
from benchmarks.suites.adapters import sb3_dummy, sb3_vec_env  # noqa: E402
from benchmarks.suites.env import random_actions, torch_vector_env, vector_env  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
TORCH_TARGET = 0.05  # the bridge may add at most 5% per step over the NumPy VectorEnv


def _warm(build) -> tuple[Stepper, float]:
    """Builds a stack and takes its first step; the seconds are compile (and build) time."""
    start = time.perf_counter()
    stack = build()
    stack.step()
    return stack, time.perf_counter() - start


def _alternate(steppers: dict, steps: dict, repeats: int, bar: tqdm) -> dict[str, list[float]]:
    """Seconds per step of each stack, one figure per repeat, stacks taken in turn."""
    out: dict[str, list[float]] = {name: [] for name in steppers}
    for _ in range(repeats):
        for name, step_once in steppers.items():
            out[name] += time_calls(step_once, steps[name], 1)
            bar.update(1)
    return out


def sb3_vs_dummy(n: int, steps: int, repeats: int, bar: tqdm) -> dict:
    ours, ours_compile = _warm(lambda: sb3_vec_env(n))
    bar.update(1)
    theirs, theirs_build = _warm(lambda: sb3_dummy(n))
    names = {"SB3VecEnv, JaxAnt-v0 (MJX)": ours, "DummyVecEnv + Monitor, Ant-v5 (MuJoCo C)": theirs}
    steppers = {name: stack.step for name, stack in names.items()}
    # MuJoCo C steps one env at a time: fewer batched steps give it a like wall time.
    counts = dict(zip(names, (steps, steps * 4)))
    timed = _alternate(steppers, counts, repeats, bar)
    compile_s = dict(zip(names, (ours_compile, theirs_build)))
    return {name: _summary(n, timed[name], compile_s[name]) for name in names}


def torch_vs_numpy(env_id: str, n: int, steps: int, repeats: int, bar: tqdm) -> dict:
    numpy_stack, numpy_compile = _warm(lambda: vector_env(n, env_id))
    bar.update(1)
    torch_stack, torch_compile = _warm(lambda: torch_vector_env(n, env_id))
    bar.update(1)
    # The floor: the NumPy env's own jitted batch step (auto-reset included), nothing
    # converted; reusing it costs no further compile.
    env = numpy_stack.env.unwrapped
    raw_actions = jax.numpy.asarray(random_actions(env.single_action_space, n))  # the stacks' own
    raw_state = [env.state]

    def raw_step():
        raw_state[0] = env._step(raw_state[0], raw_actions)
        jax.block_until_ready(raw_state[0].obs)

    steppers = {
        "jitted batch step (no adapter)": raw_step,
        "GymnasiumVectorEnv (NumPy)": numpy_stack.step,
        "TorchVectorEnv (DLPack)": torch_stack.step,
    }
    timed = _alternate(steppers, dict.fromkeys(steppers, steps), repeats, bar)
    compile_s = [0.0, numpy_compile, torch_compile]
    return {name: _summary(n, timed[name], c) for name, c in zip(steppers, compile_s)}


def _summary(n: int, per_step: list[float], compile_s: float) -> dict:
    return {
        "s_per_step": statistics.median(per_step),
        "steps_per_s": n / statistics.median(per_step),
        "spread_s_per_step": [min(per_step), max(per_step)],
        "compile_s": compile_s,
    }


def ratios(report: dict) -> dict:
    sb3 = {}
    for n, stacks in report["sb3"].items():
        ours, theirs = (s["steps_per_s"] for s in stacks.values())
        sb3[n] = ours / theirs
    bridge = {}
    for env_id, stacks in report["torch"].items():
        raw, numpy_step, torch_step = (s["s_per_step"] for s in stacks.values())
        bridge[env_id] = {
            "torch_over_numpy": torch_step / numpy_step,
            "torch_overhead_over_raw_us": (torch_step - raw) * 1e6,
            "numpy_overhead_over_raw_us": (numpy_step - raw) * 1e6,
            "meets_target": torch_step / numpy_step <= 1 + TORCH_TARGET,
        }
    return {"sb3_adapter_over_dummy_vec_env": sb3, "torch_bridge": bridge}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sb3-sizes", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--torch-size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=10, help="batched steps per repeat (Ant)")
    parser.add_argument("--cheap-steps", type=int, default=2000, help="batched steps per repeat (CartPole)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small sizes, few steps (a smoke run)")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.sb3_sizes, args.torch_size, args.steps, args.cheap_steps, args.repeats = [4], 4, 3, 200, 3
    warnings.simplefilter("ignore")
    cache = tempfile.mkdtemp(prefix="gymjax-adapters-cache-")
    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    torch.set_num_threads(1)  # the bridge runs no torch kernels; keep torch off the JAX cores

    total = len(args.sb3_sizes) * (1 + 2 * args.repeats) + 2 * (2 + 3 * args.repeats)
    report: dict = {"benchmark": "adapters", **environment()}
    report["versions"].update(torch=torch.__version__, stable_baselines3=stable_baselines3.__version__)
    report["settings"] = {k: v for k, v in vars(args).items() if k != "out"} | {"out": str(args.out)}
    report["sb3"], report["torch"] = {}, {}
    with tqdm(total=total, desc="adapters", unit="run") as bar:
        for n in args.sb3_sizes:
            report["sb3"][str(n)] = sb3_vs_dummy(n, args.steps, args.repeats, bar)
            for name, s in report["sb3"][str(n)].items():
                tqdm.write(f"SB3 N={n:4d} {name:42s} {s['steps_per_s']:9,.0f} steps/s")
        for env_id, steps in (("JaxAnt-v0", args.steps), ("JaxCartPole-v0", args.cheap_steps)):
            report["torch"][env_id] = torch_vs_numpy(env_id, args.torch_size, steps, args.repeats, bar)
            for name, s in report["torch"][env_id].items():
                tqdm.write(f"{env_id} N={args.torch_size} {name:32s} {s['s_per_step'] * 1e6:11,.1f} us/step")
    shutil.rmtree(cache, ignore_errors=True)
    report["ratios"] = ratios(report)
    write_results(args.out, "adapters_quick" if args.quick else "adapters", report, markdown, plot)
    return 0


def markdown(report: dict) -> str:
    machine, settings = report["machine"], report["settings"]
    r = report["ratios"]
    lines = [
        "# Adapter costs: SB3 VecEnv and torch (DLPack) bridge",
        "",
        f"Machine: {machine['cpu']}, {machine['cpu_count']} cores, JAX {report['versions']['jax']} "
        f"on {machine['jax_backend']}, torch {report['versions']['torch']}, "
        f"SB3 {report['versions']['stable_baselines3']}. Medians of {settings['repeats']} repeats, "
        "stacks timed in alternation; compile time apart. The spread of the repeats is in the "
        "JSON: on a shared, busy machine a single repeat can be several times slower.",
        "",
        "## SB3: env steps/s",
        "",
        "| stack | " + " | ".join(f"N={n}" for n in report["sb3"]) + " | compile / build (s) |",
        "|---|" + "---|" * (len(report["sb3"]) + 1),
    ]
    names = list(next(iter(report["sb3"].values())))
    for name in names:
        cells = [f"{by_n[name]['steps_per_s']:,.0f}" for by_n in report["sb3"].values()]
        compile_s = max(by_n[name]["compile_s"] for by_n in report["sb3"].values())
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {compile_s:.1f} |")
    lines += [
        "",
        "SB3VecEnv / DummyVecEnv: "
        + ", ".join(f"{ratio:.2f} at N={n}" for n, ratio in r["sb3_adapter_over_dummy_vec_env"].items())
        + ".",
        "",
        f"## Torch bridge: time per batched step, N={settings['torch_size']}",
        "",
        "| env | jitted step (floor) | NumPy VectorEnv | TorchVectorEnv | torch / NumPy | "
        "over the floor: NumPy, torch (us) |",
        "|---|---|---|---|---|---|",
    ]
    for env_id, stacks in report["torch"].items():
        raw, numpy_step, torch_step = (stack["s_per_step"] for stack in stacks.values())
        b = r["torch_bridge"][env_id]
        lines.append(
            f"| {env_id} | {_fmt(raw)} | {_fmt(numpy_step)} | {_fmt(torch_step)} | "
            f"{b['torch_over_numpy']:.3f} ({'meets' if b['meets_target'] else 'misses'} <= 1.05) | "
            f"{b['numpy_overhead_over_raw_us']:,.0f}, {b['torch_overhead_over_raw_us']:,.0f} |"
        )
    lines += [
        "",
        "torch / NumPy is the bridge's time per step over the NumPy VectorEnv's (target <= 1.05). "
        "On Ant the step itself dominates and both adapters are within the noise of the floor; "
        "CartPole's step is nearly free, so its row shows the adapters' own cost.",
    ]
    return "\n".join(lines) + "\n"


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:,.0f} us"


def plot(report: dict, path: pathlib.Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    sizes = list(report["sb3"])
    names = list(report["sb3"][sizes[0]])
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        left.bar(
            [i + k * width for i in range(len(sizes))],
            [report["sb3"][n][name]["steps_per_s"] for n in sizes],
            width,
            label=name,
        )
    left.set_xticks([i + width * (len(names) - 1) / 2 for i in range(len(sizes))], [f"N={n}" for n in sizes])
    left.set_ylabel("env steps / s")
    left.set_title("SB3 VecEnv over Ant")
    left.legend(fontsize=7)
    env_ids = list(report["torch"])
    stacks = list(report["torch"][env_ids[0]])
    width = 0.8 / len(stacks)
    for k, name in enumerate(stacks):
        # Relative to the NumPy VectorEnv, so that Ant and CartPole share one axis.
        values = [
            report["torch"][e][name]["s_per_step"] / report["torch"][e][stacks[1]]["s_per_step"] for e in env_ids
        ]
        right.bar([i + k * width for i in range(len(env_ids))], values, width, label=name)
    right.axhline(1 + TORCH_TARGET, color="gray", ls="--", label="NumPy + 5% (target)")
    right.set_xticks([i + width for i in range(len(env_ids))], env_ids)
    right.set_ylabel("time per step / NumPy VectorEnv's")
    right.set_title(f"torch bridge, N={report['settings']['torch_size']}")
    right.set_ylim(0, 1.45)  # headroom for the legend above the bars
    right.legend(fontsize=7, loc="upper center", ncol=2)
    save(fig, path)


if __name__ == "__main__":
    sys.exit(main())
