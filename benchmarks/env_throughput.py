"""Env steps/s of JaxAnt-v0 against Gymnasium's Ant-v5, in one run.

For each batch size N: the raw jitted batched step (accurate and fast solver
presets), gymjax's Gymnasium VectorEnv (NumPy out, same-step auto-reset), and
Gymnasium's Ant-v5 in a SyncVectorEnv (MuJoCo C). Figures are medians over
repeats after a warm-up; compile time is reported apart. Peers that are not
installed (Brax) are reported as skipped.

Writes benchmarks/results/env_throughput.{json,md,png}. Superseded by the
harness (``python -m benchmarks --suite env``), whose code it shares.

    python -m benchmarks.env_throughput            # N = 64, 256, 1024
    python -m benchmarks.env_throughput --quick    # N = 8, 16: a smoke run
"""

from __future__ import annotations

import argparse
import os
import pathlib
import resource
import statistics
import sys
import warnings

if __package__ in (None, ""):  # run as a file: make `benchmarks` importable from the repo root
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

os.environ.setdefault("MUJOCO_GL", "egl")

from tqdm import tqdm  # noqa: E402

from benchmarks.harness import environment, fixed_calls  # noqa: E402
from benchmarks.report import pyplot, save, write_results  # noqa: E402
from benchmarks.suites import env as env_suite  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
# Brax 0.14.2 ant, generalized backend, 256 envs, this CPU, as quoted in issue #2. That figure
# includes a compile: Brax's step traces again on its second call. `python -m benchmarks` times
# it after two calls and measures ~4,900 (results/bench-cpu.md); this script keeps the quote.
BRAX_CPU_REFERENCE = 770.0


def raw_step(n: int, solver: str | None, steps: int, repeats: int, **env_kwargs) -> dict:
    return fixed_calls(env_suite.jax_raw_step(n, solver=solver, **env_kwargs), steps, repeats)


def vector_env(n: int, solver: str | None, steps: int, repeats: int, **env_kwargs) -> dict:
    return fixed_calls(env_suite.vector_env(n, solver=solver, **env_kwargs), steps, repeats)


def gymnasium_sync(n: int, steps: int, repeats: int) -> dict:
    return {**fixed_calls(env_suite.gymnasium_vector(n, mode="sync"), steps, repeats), "compile_s": 0.0}


def brax_peer() -> dict:
    try:
        import brax  # noqa: F401
    except ImportError:
        return {"skipped": "brax is not installed (optional peer, extra 'bench')"}
    return {"skipped": "brax is installed but its harness lands with the benchmark issue"}


def summarize(n: int, raw: dict) -> dict:
    per_step = raw["s_per_step"]
    sps = [n / s for s in per_step]
    return {
        "steps_per_s": statistics.median(sps),
        "spread": [min(sps), max(sps)],
        "compile_s": raw["compile_s"],
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--steps", type=int, default=20, help="batched steps per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="N = 8, 16, few steps (CI smoke run)")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.steps, args.repeats = [8, 16], 3, 2
    warnings.simplefilter("ignore")

    stacks = {
        "raw jitted step (accurate)": lambda n: raw_step(n, "accurate", args.steps, args.repeats),
        "raw jitted step (fast)": lambda n: raw_step(n, "fast", args.steps, args.repeats),
        "gymjax VectorEnv, NumPy (accurate)": lambda n: vector_env(n, "accurate", args.steps, args.repeats),
        "Gymnasium Ant-v5 SyncVectorEnv (MuJoCo C)": lambda n: gymnasium_sync(
            n, max(2, args.steps // 4), args.repeats
        ),
    }
    results: dict[str, dict] = {name: {} for name in stacks}
    jobs = [(name, n) for n in args.sizes for name in stacks]
    for name, n in tqdm(jobs, desc="benchmarks", unit="run"):
        results[name][str(n)] = summarize(n, stacks[name](n))
        tqdm.write(f"{name:45s} N={n:5d}: {results[name][str(n)]['steps_per_s']:9,.0f} steps/s")

    report = {
        "benchmark": "env_throughput",
        **environment(),
        "settings": {"sizes": args.sizes, "steps": args.steps, "repeats": args.repeats},
        "results": results,
        "peers": {"brax": brax_peer()},
        "ratios": ratios(results, args.sizes),
    }
    write_results(args.out, "env_throughput_quick" if args.quick else "env_throughput", report, markdown, plot)
    return 0


def ratios(results: dict, sizes: list[int]) -> dict:
    n = "256" if 256 in sizes else str(sizes[len(sizes) // 2])
    sps = {name: by_n[n]["steps_per_s"] for name, by_n in results.items()}
    raw, fast = sps["raw jitted step (accurate)"], sps["raw jitted step (fast)"]
    return {
        "at_N": int(n),
        "vector_env_over_raw": sps["gymjax VectorEnv, NumPy (accurate)"] / raw,
        "raw_accurate_over_brax_reference": raw / BRAX_CPU_REFERENCE,
        "raw_fast_over_brax_reference": fast / BRAX_CPU_REFERENCE,
        "raw_accurate_over_gymnasium_sync": raw / sps["Gymnasium Ant-v5 SyncVectorEnv (MuJoCo C)"],
        "brax_reference_note": f"Brax figure quoted ({BRAX_CPU_REFERENCE:.0f} steps/s), not measured in this run",
    }


def markdown(report: dict) -> str:
    sizes = report["settings"]["sizes"]
    lines = [
        "# JaxAnt-v0 env throughput (env steps/s, median of repeats)",
        "",
        f"Machine: {report['machine']['cpu']}, {report['machine']['cpu_count']} cores, "
        f"JAX {report['versions']['jax']} on {report['machine']['jax_backend']}.",
        "",
        "| stack | " + " | ".join(f"N={n}" for n in sizes) + " | compile (s) |",
        "|---|" + "---|" * (len(sizes) + 1),
    ]
    for name, by_n in report["results"].items():
        cells = [f"{by_n[str(n)]['steps_per_s']:,.0f}" for n in sizes]
        compile_s = max(by_n[str(n)]["compile_s"] for n in sizes)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {compile_s:.1f} |")
    r = report["ratios"]
    lines += [
        "",
        f"Ratios at N={r['at_N']} (same run): VectorEnv / raw step = {r['vector_env_over_raw']:.2f} "
        f"(target >= 0.9); raw accurate / Brax = {r['raw_accurate_over_brax_reference']:.2f} "
        f"(target >= 1.5); raw fast / Brax = {r['raw_fast_over_brax_reference']:.2f} (target >= 2.5); "
        f"raw accurate / Gymnasium sync = {r['raw_accurate_over_gymnasium_sync']:.2f}.",
        f"{r['brax_reference_note']}.",
        "",
        "Peers: " + ", ".join(f"{k}: {v.get('skipped', 'measured')}" for k, v in report["peers"].items()),
    ]
    return "\n".join(lines) + "\n"


def plot(report: dict, path: pathlib.Path) -> None:
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, by_n in report["results"].items():
        sizes = sorted(int(n) for n in by_n)
        sps = [by_n[str(n)]["steps_per_s"] for n in sizes]
        lo = [by_n[str(n)]["spread"][0] for n in sizes]
        hi = [by_n[str(n)]["spread"][1] for n in sizes]
        ax.plot(sizes, sps, marker="o", label=name)
        ax.fill_between(sizes, lo, hi, alpha=0.2)
    ax.axhline(BRAX_CPU_REFERENCE, color="gray", ls="--", label="Brax 0.14.2 ant, N=256 (quoted)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("number of envs N")
    ax.set_ylabel("env steps / s")
    ax.set_title(f"Ant throughput on {report['machine']['cpu_count']}-core {report['machine']['jax_backend']}")
    ax.legend(fontsize=8)
    save(fig, path)


if __name__ == "__main__":
    sys.exit(main())
