"""What a run writes: the JSON report, its Markdown tables and the PNG plots.

``write(out, stem, report)`` writes ``stem.json``, ``stem.md`` and one
``stem-<suite>.png`` per suite: env throughput against N on log-log axes (one
line per stack), the adapters as bars, and the trainers' learning curves.
"""

from __future__ import annotations

import json
import pathlib
import sys


def write(out: pathlib.Path, stem: str, report: dict) -> list[pathlib.Path]:
    """Writes the run's files under ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.json", out / f"{stem}.md"]
    paths[0].write_text(json.dumps(report, indent=1, default=float) + "\n")
    paths[1].write_text(markdown(report))
    plt = pyplot()
    if plt is not None:
        for name in report["suites"]:
            path = out / f"{stem}-{name}.png"
            PLOTS[name](plt, report, name, path)
            paths.append(path)
    return paths


# -- Markdown -----------------------------------------------------------------------------------


def markdown(report: dict) -> str:
    m, v, s = report["machine"], report["versions"], report["settings"]
    kind = " (quick smoke run: tiny sizes, not for comparison)" if s["quick"] else ""
    shown = ", ".join(f"{k} {x}" for k, x in v.items() if x and k not in ("python", "git_commit"))
    absent = ", ".join(k for k, x in v.items() if x is None)
    lines = [
        f"# gymjax benchmarks: {m['name']}, {m['jax_backend']}{kind}",
        "",
        f"Machine: {m['cpu']}, {m['cpu_count']} cores, {m['memory_gib']:.0f} GiB; JAX on {m['jax_backend']} "
        f"({', '.join(m['devices'])}). Load average (1, 5, 15 min) at start "
        f"{_loads(m['load_average_at_start'])}, at end {_loads(m.get('load_average_at_end', []))}. "
        f"Run took {report.get('wall_s', 0) / 60:.1f} min.",
        "",
        f"Versions: Python {v['python']}, {shown}; commit {v['git_commit']}."
        + (f" Not installed: {absent}." if absent else ""),
        "",
        f"Figures are medians of {s['timing']['repeats']} repeats (about {s['timing']['repeat_s']} s each) "
        "after a warm-up, with [min-max] over the repeats; compile time is apart. Ratios are ours / peer, "
        "both medians from this run. Each stack runs in its own process.",
        "",
        f"Memory: {report['memory_note']}",
    ]
    for name, suite in report["suites"].items():
        lines += ["", *SECTIONS[name](name, suite)]
    lines += ["", "## Skipped", ""]
    lines += [f"- {_where(e)}: {e['reason']}" for e in report["skipped"]] or ["- nothing"]
    lines += ["", "## Failed", ""]
    lines += [f"- {_where(e)}: {e['summary']} (the output's tail is in the JSON)" for e in report["failed"]]
    if not report["failed"]:
        lines.append("- nothing")
    return "\n".join(lines) + "\n"


def _loads(values: list[float]) -> str:
    return "/".join(f"{x:.1f}" for x in values) or "n/a"


def _where(entry: dict) -> str:
    n = f", N={entry['n']}" if entry.get("n") is not None else ""
    return f"{entry['suite']} / {entry['stack']}{n}"


def _sizes(suite: dict) -> list[int]:
    return sorted({int(n) for stack in suite["stacks"].values() for n in stack["sizes"]})


def _cell(record: dict | None, key: str = "steps_per_s") -> str:
    if record is None:
        return ""
    if "skipped" in record:
        return "skipped"
    if "failed" in record:
        return "failed"
    f = record[key]
    return f"{f['median']:,.0f} [{f['spread'][0]:,.0f}-{f['spread'][1]:,.0f}]"


def _name(name: str, stack: dict) -> str:
    return f"**{name}**" if stack["ours"] else name


def throughput_section(name: str, suite: dict) -> list[str]:
    sizes = _sizes(suite)
    lines = [
        f"## {name}: env steps/s",
        "",
        "gymjax stacks in bold. Cells: median [min-max]; compile: largest over N (first calls beyond two "
        "steady ones).",
        "",
        "| stack | " + " | ".join(f"N={n}" for n in sizes) + " | compile (s) |",
        "|---|" + "---|" * (len(sizes) + 1),
    ]
    for stack_name, stack in suite["stacks"].items():
        if stack["status"] == "skipped" and not stack["sizes"]:
            lines.append(f"| {_name(stack_name, stack)} | skipped: {stack['reason']} |" + " |" * len(sizes))
            continue
        cells = [_cell(stack["sizes"].get(str(n))) for n in sizes]
        compiles = [r["compile_s"] for r in stack["sizes"].values() if "compile_s" in r]
        compile_s = f"{max(compiles):.1f}" if compiles else ""
        lines.append(f"| {_name(stack_name, stack)} | " + " | ".join(cells) + f" | {compile_s} |")
    lines += ["", *_notes(suite)]
    lines += [
        "",
        f"### {name}: peak RSS (MiB) after each N",
        "",
        "| stack | " + " | ".join(f"N={n}" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for stack_name, stack in suite["stacks"].items():
        measured = {n: r for n, r in stack["sizes"].items() if "peak_rss_mib" in r}
        if measured:
            cells = [_memory(measured.get(str(n))) for n in sizes]
            lines.append(f"| {_name(stack_name, stack)} | " + " | ".join(cells) + " |")
    return lines + ["", *ratio_lines(name, suite, sizes)]


def _notes(suite: dict) -> list[str]:
    """What each stack is, one line each."""
    return ["Stacks:", ""] + [f"- {name}: {stack['note']}" for name, stack in suite["stacks"].items()]


def _memory(record: dict | None) -> str:
    if record is None:
        return ""
    text = f"{record['peak_rss_mib']:,.0f}"
    if "children_peak_rss_mib" in record:
        text += f" + {record['children_peak_rss_mib']:,.0f} in its processes"
    if "gpu_peak_mib" in record:
        text += f", GPU {record['gpu_peak_mib']:,.0f}"
    return text


def ratio_lines(name: str, suite: dict, sizes: list[int]) -> list[str]:
    """Ratios as rows (ours / peer) against N, ours / peer first, then gymjax's internal ones."""
    lines = []
    for kind, title in (("ours/peer", "ours / peer"), ("internal", "gymjax over gymjax (adapter cost)")):
        rows: dict[str, dict[int, float]] = {}
        for r in suite["ratios"]:
            if r["kind"] == kind:
                rows.setdefault(f"{r['ours']} / {r['peer']}", {})[r["n"]] = r["ratio"]
        if not rows:
            continue
        columns = [n for n in sizes if any(n in row for row in rows.values())]
        lines += [
            f"### {name}: ratios, {title}, same run",
            "",
            "| ratio | " + " | ".join(f"N={n}" for n in columns) + " |",
            "|---|" + "---|" * len(columns),
        ]
        for label, row in rows.items():
            lines.append(
                f"| {label} | " + " | ".join(f"{row[n]:.2f}" if n in row else "" for n in columns) + " |"
            )
        lines.append("")
    return lines


def train_section(name: str, suite: dict) -> list[str]:
    lines = [
        f"## {name}: PPO training steps/s",
        "",
        "Median [min-max] over epochs (gymjax, Brax: between evaluations; SB3: iterations after the first), "
        "compile apart (Brax reports none: its first three reports, which compile, are left out).",
        "",
        "| trainer | envs | training steps/s | compile (s) | env steps | wall (s) | final return (kind) |",
        "|---|---|---|---|---|---|---|",
    ]
    for stack_name, stack in suite["stacks"].items():
        measured = [r for r in stack["sizes"].values() if "steps_per_s" in r]
        if not measured:
            why = stack.get("reason") or next(
                (r.get("skipped") or r.get("failed") for r in stack["sizes"].values()), ""
            )
            lines.append(f"| {_name(stack_name, stack)} | | {stack['status']}: {why} | | | | |")
            continue
        r = measured[0]
        final = next((c["return"] for c in reversed(r["curve"]) if c["return"] is not None), None)
        final_text = "" if final is None else f"{final:,.1f} ({r['return_kind']})"
        compile_s = "" if r["compile_s"] is None else f"{r['compile_s']:.1f}"
        lines.append(
            f"| {_name(stack_name, stack)} | {r['n']} | {_cell(r)} | {compile_s} | {r['env_steps']:,} "
            f"| {r['wall_s']:.0f} | {final_text} |"
        )
    lines += ["", *_notes(suite)]
    rows = suite["ratios"]
    if rows:
        lines += [
            "",
            f"### {name}: ratios of training steps/s, same run",
            "",
            "| ratio | value |",
            "|---|---|",
        ]
        lines += [f"| {r['ours']} / {r['peer']} | {r['ratio']:.2f} |" for r in rows]
    return lines


SECTIONS = {"env": throughput_section, "adapters": throughput_section, "train": train_section}


# -- plots --------------------------------------------------------------------------------------


def pyplot():
    """``matplotlib.pyplot`` drawing to files, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot written", file=sys.stderr)
        return None
    return plt


def save(fig, path: pathlib.Path) -> None:
    """Writes ``fig`` to ``path`` and frees it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _title(report: dict, what: str) -> str:
    quick = " (quick)" if report["settings"]["quick"] else ""
    return f"{what}: {report['machine']['name']}, {report['machine']['jax_backend']}{quick}"


def _measured(stack: dict) -> dict[int, dict]:
    return {int(n): r for n, r in stack["sizes"].items() if "steps_per_s" in r}


def plot_throughput(plt, report: dict, name: str, path: pathlib.Path) -> None:
    """Env steps/s against N, log-log, one line per stack (gymjax solid, peers dashed)."""
    fig, ax = plt.subplots(figsize=(10, 5.5))
    colors = plt.get_cmap("tab20").colors  # one colour per stack (tab10 repeats past ten)
    for i, (stack_name, stack) in enumerate(report["suites"][name]["stacks"].items()):
        by_n = _measured(stack)
        if not by_n:
            continue
        sizes = sorted(by_n)
        median = [by_n[n]["steps_per_s"]["median"] for n in sizes]
        lo = [by_n[n]["steps_per_s"]["spread"][0] for n in sizes]
        hi = [by_n[n]["steps_per_s"]["spread"][1] for n in sizes]
        (line,) = ax.plot(
            sizes, median, marker="o", ms=4, ls="-" if stack["ours"] else "--", label=stack_name,
            color=colors[i % len(colors)],
        )
        ax.fill_between(sizes, lo, hi, color=line.get_color(), alpha=0.15)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("number of envs N")
    ax.set_ylabel("env steps / s (median, band: min-max)")
    ax.set_title(_title(report, f"{name} throughput"))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    save(fig, path)


def plot_bars(plt, report: dict, name: str, path: pathlib.Path) -> None:
    """Env steps/s as bars, grouped by N, with min-max error bars (log axis)."""
    stacks = {k: _measured(s) for k, s in report["suites"][name]["stacks"].items()}
    stacks = {k: v for k, v in stacks.items() if v}
    sizes = sorted({n for by_n in stacks.values() for n in by_n})
    fig, ax = plt.subplots(figsize=(10, 5))
    width = 0.8 / max(len(stacks), 1)
    for k, (stack_name, by_n) in enumerate(stacks.items()):
        xs = [sizes.index(n) + k * width for n in sorted(by_n)]
        med = [by_n[n]["steps_per_s"]["median"] for n in sorted(by_n)]
        err = [
            [m - by_n[n]["steps_per_s"]["spread"][0] for n, m in zip(sorted(by_n), med)],
            [by_n[n]["steps_per_s"]["spread"][1] - m for n, m in zip(sorted(by_n), med)],
        ]
        hatch = None if report["suites"][name]["stacks"][stack_name]["ours"] else "//"
        ax.bar(xs, med, width, yerr=err, capsize=2, hatch=hatch, label=stack_name)
    ax.set_xticks([i + width * (len(stacks) - 1) / 2 for i in range(len(sizes))], [f"N={n}" for n in sizes])
    ax.set_yscale("log")
    ax.set_ylabel("env steps / s (median, min-max)")
    ax.set_title(_title(report, f"{name} (hatched: peers)"))
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    save(fig, path)


def plot_curves(plt, report: dict, name: str, path: pathlib.Path) -> None:
    """Return against env steps and against wall time, and training steps/s."""
    fig, (steps_ax, wall_ax, sps_ax) = plt.subplots(1, 3, figsize=(15, 4.5))
    bars = {}
    for stack_name, stack in report["suites"][name]["stacks"].items():
        for r in _measured(stack).values():
            points = [c for c in r["curve"] if c["return"] is not None]
            style = {"marker": "o", "ms": 3, "ls": "-" if stack["ours"] else "--", "label": stack_name}
            steps_ax.plot([c["env_steps"] for c in points], [c["return"] for c in points], **style)
            wall_ax.plot([c["wall_s"] for c in points], [c["return"] for c in points], **style)
            bars[stack_name] = r["steps_per_s"]
    steps_ax.set_xlabel("env steps")
    wall_ax.set_xlabel("wall time, compile included (s)")
    steps_ax.set_ylabel("return (JAX trainers: evaluation; SB3: training episodes)")
    for ax in (steps_ax, wall_ax):
        ax.grid(alpha=0.3)
    steps_ax.legend(fontsize=7)
    names = list(bars)
    med = [bars[k]["median"] for k in names]
    err = [
        [m - bars[k]["spread"][0] for k, m in zip(names, med)],
        [bars[k]["spread"][1] - m for k, m in zip(names, med)],
    ]
    sps_ax.barh(range(len(names)), med, xerr=err, capsize=2)
    sps_ax.set_yticks(range(len(names)), names, fontsize=7)
    sps_ax.invert_yaxis()
    sps_ax.set_xlabel("training steps / s (median, min-max)")
    fig.suptitle(_title(report, "PPO on Ant"))
    save(fig, path)


PLOTS = {"env": plot_throughput, "adapters": plot_bars, "train": plot_curves}


# -- the single-purpose scripts' writer (vector_ceiling.py) -------------------------------------


def write_results(out: pathlib.Path, stem: str, report: dict, markdown, plot) -> None:
    """Writes ``out/stem.{json,md,png}`` with the given ``markdown`` and ``plot`` and prints the Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(report, indent=2))
    (out / f"{stem}.md").write_text(markdown(report))
    plot(report, out / f"{stem}.png")
    print(markdown(report))
