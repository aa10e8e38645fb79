"""``python -m benchmarks``: runs the suites and writes one report.

    python -m benchmarks                         # every suite, full sizes (about an hour on 2 CPU cores)
    python -m benchmarks --suite env --sizes 64 256
    python -m benchmarks --suite all --quick     # a smoke run: tiny sizes, a couple of minutes

Writes ``<out>/bench-<platform>[-<suite>][-quick].{json,md}`` and a PNG per
suite (``...-env.png``, ``...-adapters.png``, ``...-train.png``); ``--out``
defaults to ``benchmarks/results``, where quick runs' files are ignored by git.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import pathlib
import sys
import time

from tqdm import tqdm

from benchmarks import harness, report
from benchmarks.suites import SUITES

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
FULL_TIMING = harness.Timing(repeats=5, repeat_s=1.5, warmup_s=1.0)
QUICK_TIMING = harness.Timing(repeats=2, repeat_s=0.05, warmup_s=0.02)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--suite", choices=[*SUITES, "all"], default="all", help="what to run (default: %(default)s)"
    )
    p.add_argument(
        "--quick", action="store_true", help="smoke-run sizes: N of 1 and 4, tiny training budgets"
    )
    p.add_argument(
        "--out", type=pathlib.Path, default=RESULTS, help="output folder (default: benchmarks/results)"
    )
    p.add_argument(
        "--sizes", type=int, nargs="+", help="N for the env and adapters suites (default: per suite)"
    )
    p.add_argument("--repeats", type=int, help="timed repeats per figure (default: 5; quick: 2)")
    p.add_argument(
        "--repeat-seconds", type=float, help="aim for this long per repeat (default: 1.5; quick: 0.05)"
    )
    p.add_argument("--stacks", nargs="+", metavar="TEXT", help="only stacks whose name contains one of these")
    p.add_argument(
        "--without",
        nargs="+",
        default=[],
        choices=sorted(harness.PEERS),
        metavar="PEER",
        help=f"treat these peers as not installed, so they are reported skipped ({', '.join(harness.PEERS)})",
    )
    p.add_argument(
        "--timeout",
        type=float,
        help="seconds per stack before it counts as failed (default: 2400; quick: 300)",
    )
    p.add_argument(
        "--jax-cache",
        help="persistent JAX compile cache for the workers (compile figures become cache loads)",
    )
    p.add_argument(
        "--machine-name", help="what to call this machine in the report (default: CPU or GPU model)"
    )
    return p


def settings(args: argparse.Namespace) -> dict:
    timing = QUICK_TIMING if args.quick else FULL_TIMING
    if args.repeats:
        timing = harness.Timing(args.repeats, timing.repeat_s, timing.warmup_s)
    if args.repeat_seconds:
        timing = harness.Timing(timing.repeats, args.repeat_seconds, timing.warmup_s)
    return {
        "suite": args.suite,
        "quick": args.quick,
        "sizes": args.sizes,
        "stacks": args.stacks,
        "without": sorted(args.without),
        "timing": dataclasses.asdict(timing),
        "timeout_s": args.timeout or (300.0 if args.quick else 2400.0),
        "jax_cache": str(pathlib.Path(args.jax_cache).resolve()) if args.jax_cache else None,
    }


def run(args: argparse.Namespace, command: list[str]) -> dict:
    """Runs the chosen suites stack by stack, each in its own process; returns the report.

    ``command`` is the command line, for the record.
    """
    started = time.perf_counter()
    jax_info = harness.describe_jax_elsewhere()  # this process stays off the accelerator
    backend = jax_info["jax_backend"]
    config = settings(args)
    out = {
        "schema": 1,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "settings": config,
        "machine": harness.machine(args.machine_name, jax_info),
        "versions": harness.versions(),
        "memory_note": harness.MEMORY_NOTE,
        "suites": {},
        "skipped": [],
        "failed": [],
    }
    names = list(SUITES) if args.suite == "all" else [args.suite]
    jobs = []
    for name in names:
        suite = SUITES[name]
        sizes = list(args.sizes or suite.default_sizes(args.quick, backend))
        section = {"sizes": sizes, "stacks": {}, "ratios": []}
        out["suites"][name] = section
        for stack in suite.STACKS:
            if args.stacks and not any(t.lower() in stack.name.lower() for t in args.stacks):
                continue
            entry = {
                "ours": stack.ours,
                "family": stack.family,
                "note": stack.note,
                "status": "ok",
                "sizes": {},
            }
            section["stacks"][stack.name] = entry
            reason = harness.missing_peer(stack.needs, tuple(args.without)) or stack.unsupported()
            if reason:
                entry |= {"status": "skipped", "reason": reason}
                out["skipped"].append({"suite": name, "stack": stack.name, "n": None, "reason": reason})
                continue
            to_run, skipped = harness.plan_sizes(stack, sizes, args.quick, backend)
            entry["sizes"] = {str(n): {"skipped": why} for n, why in skipped.items()}
            if to_run:
                jobs.append((name, stack, entry, to_run))
                out["skipped"] += [
                    {"suite": name, "stack": stack.name, "n": n, "reason": why} for n, why in skipped.items()
                ]
            else:
                reason = "; ".join(sorted(set(skipped.values())))
                entry |= {"status": "skipped", "reason": reason}
                out["skipped"].append({"suite": name, "stack": stack.name, "n": None, "reason": reason})

    with tqdm(total=sum(len(job[3]) for job in jobs), desc="benchmarks", unit="figure") as bar:
        for name, stack, entry, to_run in jobs:
            bar.set_postfix_str(f"{name}: {stack.name}"[:60])
            measure_isolated(name, stack, entry, to_run, config, out, bar)

    for name in names:
        suite, section = SUITES[name], out["suites"][name]
        if not section["stacks"]:  # --stacks chose none of this suite's
            del out["suites"][name]
            continue
        stacks = tuple(s for s in suite.STACKS if s.name in section["stacks"])
        for entry in section["stacks"].values():
            entry["sizes"] = dict(sorted(entry["sizes"].items(), key=lambda item: int(item[0])))
        section["ratios"] = harness.ratios(
            section["stacks"], stacks, suite.INTERNAL_RATIOS, same_n=name != "train"
        )
    out["machine"]["load_average_at_end"] = list(os.getloadavg())
    out["wall_s"] = time.perf_counter() - started
    return out


def measure_isolated(
    name: str, stack: harness.Stack, entry: dict, sizes: list[int], config: dict, out: dict, bar: tqdm
) -> None:
    """Measures one stack in a worker process; a crash or timeout marks what it did not measure as failed."""

    def on_record(record: dict) -> None:
        entry["sizes"][str(record["n"])] = record
        bar.update()
        f = record["steps_per_s"]
        tqdm.write(
            f"{name:8s} {stack.name:52s} N={record['n']:<5d} {f['median']:>11,.0f} steps/s "
            f"[{f['spread'][0]:,.0f}-{f['spread'][1]:,.0f}]"
        )

    spec = {
        "suite": name,
        "stack": stack.name,
        "sizes": sizes,
        "quick": config["quick"],
        "timing": config["timing"],
    }
    error = harness.run_isolated(spec, config["timeout_s"], config["jax_cache"], on_record)
    if error is None:
        return
    missed = [n for n in sizes if str(n) not in entry["sizes"]]
    if not missed:  # every figure is in: it failed on its way out (a hang closing a pool, say)
        entry["exit_error"] = error
        tqdm.write(f"{name:8s} {stack.name:52s} measured, but its process did not exit cleanly")
        return
    entry |= {"status": "failed" if len(missed) == len(sizes) else "partial", "error": error}
    summary = f"{error.split(';')[0]}: {error.splitlines()[-1]}"  # status, and the output's last line
    for n in missed:
        entry["sizes"][str(n)] = {"failed": summary}
        bar.update()
    out["failed"].append(
        {"suite": name, "stack": stack.name, "n": missed[0], "summary": summary, "error": error}
    )
    tqdm.write(f"{name:8s} {stack.name:52s} FAILED at N={missed[0]}: {summary}")


def stem(args: argparse.Namespace, backend: str) -> str:
    suite = "" if args.suite == "all" else f"-{args.suite}"
    return f"bench-{backend}{suite}{'-quick' if args.quick else ''}"


def main(argv: list[str] | None = None) -> int:
    """Runs the harness on ``argv`` and writes the files; exit status 1 if a stack failed."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    result = run(args, ["python", "-m", "benchmarks", *argv])
    paths = report.write(args.out, stem(args, result["machine"]["jax_backend"]), result)
    print(report.markdown(result))
    print("wrote " + ", ".join(str(p) for p in paths))
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
