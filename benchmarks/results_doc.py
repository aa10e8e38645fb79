"""``benchmarks/results/README.md``: every committed result on one page, generated from its JSON.

    python -m benchmarks.results_doc            # rewrites benchmarks/results/README.md
    python -m benchmarks.results_doc --check    # exit status 1 if the page is not what the JSON gives

One section per current result: the command that regenerates it, the machine,
load and versions it ran with, its key tables and its plots. The tables are cut
from the Markdown that result's own script writes, computed here afresh from the
committed JSON, so the page cannot disagree with the JSON (``tests/test_bench.py``
checks that the committed page is exactly what this module writes). The results
of the scripts the harness replaced are listed at the end, as history.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import re
import sys
from collections.abc import Callable

from benchmarks import catalog, clients, distributed, learning, presets, report, time_to_return, vector_ceiling

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
PAGE = RESULTS / "README.md"

# Results of the scripts the harness replaced (gone from benchmarks/, see git history): what replaced each.
HISTORY = {
    "env_throughput": "the harness's env suite",
    "adapters": "the harness's adapters suite (the torch bridge: its env suite)",
    "ppo_train": "the harness's train suite",
    "mujoco_backend": "the harness's env suite (the mujoco.rollout ceiling included), train suite and "
    "vector_ceiling",
}
HISTORY_NOTE = (
    "`env_throughput`'s Brax ratios divide by a quoted 770 steps/s that timed Brax's retrace on its second "
    "call; the harness times Brax after it (the env suite above). Quote none of these figures."
)


# -- cutting the scripts' Markdown ----------------------------------------------------------------


def table(markdown: str, after: str) -> list[str]:
    """The first table at or after the first line starting with ``after`` (a heading, or a table's header)."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(after))
    rows: list[str] = []
    for line in lines[start:]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return rows


def line_starting(markdown: str, prefix: str) -> str:
    return next(line for line in markdown.splitlines() if line.startswith(prefix))


def versions_line(versions: dict) -> str:
    """The installed versions a run recorded (absent packages left out)."""
    shown = ", ".join(f"{k} {v}" for k, v in versions.items() if v and k != "git_commit")
    commit = f"; commit {versions['git_commit']}" if versions.get("git_commit") else ""
    return f"Versions: {shown}{commit}."


def shell(args: list[str]) -> str:
    """A command line as one would type it: arguments with spaces or quotes in double quotes."""
    return " ".join(f'"{a}"' if re.search(r"[^\w./=,-]", a) else a for a in args)


def loads(values: list[float]) -> str:
    return "/".join(f"{x:.1f}" for x in values)


# -- one function per result: JSON in, the section's body out --------------------------------------


def harness_section(r: dict) -> list[str]:
    m = r["machine"]
    text = report.markdown(r)
    lines = [
        f"Command: `{shell(r['command'])}` ({r['created'][:10]}, {r['wall_s'] / 60:.0f} min).",
        "",
        f"Machine: {m['name']}; {m['cpu']}, {m['cpu_count']} cores, JAX on {m['jax_backend']}. Load "
        f"average (1/5/15 min) at start {loads(m['load_average_at_start'])}, "
        f"at end {loads(m['load_average_at_end'])}.",
        "",
        versions_line(r["versions"]),
    ]
    for suite in r["suites"]:
        lines += ["", f"**{suite}** suite, median [min-max], gymjax stacks in bold:", ""]
        lines += [*table(text, f"## {suite}: "), "", f"![{suite}](bench-cpu-{suite}.png)"]
    return lines


def vector_ceiling_section(r: dict) -> list[str]:
    m = r["machine"]
    text = vector_ceiling.markdown(r)
    return [
        f"Command: `python -m benchmarks.vector_ceiling --repeats {r['repeats']}`.",
        "",
        f"Machine: {m['name']}, {r['threads']} threads, JAX on {m['jax_backend']}. "
        + line_starting(text, "Load average (1 min) over the rounds")
        + ".",
        "",
        versions_line(r["versions"]),
        "",
        "Env steps/s, stacks timed in alternation, median [min-max]:",
        "",
        *table(text, "# JaxAnt-v0 vector env"),
        "",
        "Ratios of the medians against the targets:",
        "",
        *table(text, "## Ratios (medians)"),
        "",
        "![vector_ceiling](vector_ceiling.png)",
    ]


def catalog_section(r: dict) -> list[str]:
    m = r["machine"]
    text = catalog.markdown(r)
    stand_in = [line for line in text.splitlines() if line.startswith("† ")]
    return [
        f"Command: `{shell(r['command'])}` ({r['created'][:10]}, {r['wall_s'] / 60:.0f} min).",
        "",
        f"Machine: {m['cpu_count']}-core CPU ({m['cpu']}), shared; JAX on {m['jax_backend']}. Load average "
        f"(1/5/15 min) at start {loads(m['load_average_at_start'])}, at end {loads(m['load_average_at_end'])}, "
        f"1 min over the timed rounds {catalog._round_loads(r)}."
        + (f" Not all in one process: {r['note']}" if r.get("note") else ""),
        "",
        versions_line(r["versions"]),
        "",
        "Env steps/s, stacks timed in alternation per task and N (medians), MJX's compile (s) in brackets:",
        "",
        *table(text, "## Throughput"),
        *(["", *stand_in] if stand_in else []),
        "",
        "MJX against MuJoCo C from the same states, the same actions: largest relative error "
        "`|mjx - c| / max(1, |c|)`:",
        "",
        *table(text, "## MJX deviation"),
        "",
        "Where the time goes, and what was skipped or failed: [catalog.md](catalog.md).",
        "",
        "![catalog](catalog.png)",
    ]


def clients_section(r: dict) -> list[str]:
    text = clients.markdown(r)
    return [
        "Command: `python -m benchmarks.clients` (CleanRL from PyPI, or a checkout named by `CLEANRL_DIR`).",
        "",
        f"Machine: {r['cpus']} CPUs; load average (1/5/15 min) at start {loads(r['loadavg_start'])}.",
        "",
        versions_line(r["versions"]),
        "",
        next(line for line in text.splitlines() if re.match(r"\d+ pass, ", line)),  # the cases' counts
        "",
        "One env through `gymnasium.make`, steps/s (medians of interleaved rounds):",
        "",
        *table(text, "## One env through"),
        "",
        "Every case, with the first line of each failure: [clients.md](clients.md).",
    ]


def learning_section(r: dict) -> list[str]:
    text = learning.markdown(r)
    command = (
        f"python -m benchmarks.learning --timesteps {r['timesteps']} "
        f"--seeds {' '.join(map(str, r['seeds']))} --arms {' '.join(r['summary']['arms'])} "
        f"--backend {r['backend']} --jobs {r['jobs']}"
    )
    return [
        f"Command: `{command}` (`--report-only` remakes the report from `learning_runs/`).",
        "",
        f"Machine: {r['machine']}, {r['jobs']} runs at a time. Load, versions: not recorded by its script.",
        "",
        *table(text, "| arm |"),
        "",
        *table(text, "| comparison |"),
        "",
        "![learning](learning.png)",
    ]


def distributed_section(r: dict) -> list[str]:
    m = r["machine"]
    text = distributed.report(r)
    runs = len(next(iter(r["train"].values()))["1 process"])
    return [
        f"Command: `python -m benchmarks.distributed --repeats {runs}`.",
        "",
        f"Machine: {m['cpus']} CPU cores; load average (1/5/15 min) at start "
        f"{loads(m['load_average_at_start'])}, at end {loads(m['load_average_at_end'])}. "
        "Versions: not recorded by its script.",
        "",
        *table(text, "# PPO across processes"),
        "",
        "![distributed](distributed.png)",
    ]


def time_to_return_section(r: dict) -> list[str]:
    text = time_to_return.markdown(r)
    budgets = {}
    for run in r["runs"]:
        budgets.setdefault(run["budget_s"] / 60, []).append(run["arm"])
    commands = "; ".join(
        f"`python -m benchmarks.time_to_return --minutes {minutes:g} --arms {' '.join(dict.fromkeys(arms))}`"
        for minutes, arms in budgets.items()
    )
    return [
        f"Commands, one after the other: {commands}.",
        "",
        f"Machine: {r['machine']['cpu_count']} CPU cores; load average beside each run. "
        + versions_line(r["versions"]),
        "",
        *table(text, "| arm |"),
        "",
        "![time to return](time_to_return.png)",
    ]


def presets_section(r: dict) -> list[str]:
    text = presets.markdown(r)
    return [
        f"Command: `python -m benchmarks.presets --presets {' '.join(r['runs'])}`.",
        "",
        f"Machine: {r['machine']['cpu_count']} CPU cores. " + versions_line(r["versions"]),
        "",
        *table(text, "| preset |"),
        "",
        "![presets](presets.png)",
    ]


@dataclasses.dataclass(frozen=True)
class Result:
    """A current result: ``results/<stem>.json``, and how its section reads."""

    stem: str
    title: str
    what: str  # one sentence: what it measures
    section: Callable[[dict], list[str]]  # the JSON in, the section's body out


SHOWN = (
    Result(
        "time_to_return",
        "Time to a walking Ant: gymjax, SB3 and Brax PPO, judged on Ant-v5",
        "Each trainer alone on the machine for a wall-clock budget; its policies, as it went, each scored "
        "on Gymnasium's own Ant-v5.",
        time_to_return_section,
    ),
    Result(
        "presets",
        "The PPO presets",
        "`gymjax train --preset NAME` for the small envs: return on the JAX env and on Gymnasium's, and "
        "when it was reached.",
        presets_section,
    ),
    Result(
        "bench-cpu",
        "The harness: env, adapters and PPO training throughput",
        "Every stack in its own process, medians of repeats after a warm-up, compile apart; ratios are "
        "ours / peer from the same run.",
        harness_section,
    ),
    Result(
        "vector_ceiling",
        "The C backend's vector env against MuJoCo C alone and EnvPool",
        'JaxAnt-v0 on `engine="mujoco"` through each adapter, beside gymjax\'s host pool, '
        "`mujoco.rollout` (no JAX) and EnvPool, timed in alternation in one process.",
        vector_ceiling_section,
    ),
    Result(
        "catalog",
        "Every Gymnasium MuJoCo v5 task: the C engine against EnvPool, and MJX's deviation",
        'Each MuJoCo id on `engine="mujoco"` through the Gymnasium VectorEnv, beside EnvPool\'s same `*-v5`, '
        "gymjax's host pool (no JAX) and MJX, timed in alternation; then MJX against MuJoCo C over 100 steps.",
        catalog_section,
    ),
    Result(
        "clients",
        "Third-party clients on gymjax envs",
        "Unmodified client code (Gymnasium, SB3, rl-zoo3, torchrl, CleanRL, PettingZoo), each case in a "
        "fresh process.",
        clients_section,
    ),
    Result(
        "learning",
        "Learning side by side: SB3 PPO and gymjax PPO on Ant",
        "Return of the training episodes against env steps, several seeds per arm.",
        learning_section,
    ),
    Result(
        "distributed",
        "PPO across processes",
        "1 process against 2 processes x 1 device on this machine, the all-reduce's cost, and an estimate "
        "for 8 and 64 GPUs.",
        distributed_section,
    ),
)


def page(results: pathlib.Path = RESULTS) -> str:
    """The page, from the JSON under ``results``."""
    lines = [
        "# Benchmark results",
        "",
        "Generated by `python -m benchmarks.results_doc` from the JSON files in this folder; do not edit it "
        "by hand. `tests/test_bench.py` fails when a JSON changes and this page was not regenerated. Each "
        "section links the full Markdown its script writes.",
        "",
        *(f"- [{result.title}](#{result.stem})" for result in SHOWN),
        "- [History](#history)",
    ]
    for result in SHOWN:
        stem = result.stem
        lines += [
            "",
            f'<a id="{stem}"></a>',
            "",
            f"## {result.title}",
            "",
            f"{result.what} Full report: [{stem}.md]({stem}.md); data: [{stem}.json]({stem}.json).",
            "",
            *result.section(json.loads((results / f"{stem}.json").read_text())),
        ]
    lines += [
        "",
        '<a id="history"></a>',
        "",
        "## History",
        "",
        "Results of single-purpose scripts the harness replaced; the scripts are gone, their files stay.",
        "",
    ]
    for stem, successor in HISTORY.items():
        files = ", ".join(f"[{stem}.{ext}]({stem}.{ext})" for ext in ("md", "json", "png"))
        lines.append(f"- `benchmarks/{stem}.py`: {files}; replaced by {successor}.")
    lines += ["", HISTORY_NOTE]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit status 1 if it differs")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        if PAGE.read_text() != text:
            print(f"{PAGE} is stale: run python -m benchmarks.results_doc", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
