"""What every benchmark shares: the record, its writer, the process runner, interleaved timing.

- **The record**: :func:`new_record` opens one (the command that regenerates it,
  the commit, the machine, the versions, the load before), :func:`finish` closes
  it (the results, the summary the results page shows, the load after, the wall
  time). Every ``results/<stem>.json`` is one record.
- **The writer**: :func:`write` puts ``<stem>.json``, ``<stem>.md`` (the record's
  header and the module's Markdown) and ``<stem>.png`` in place, each by an
  atomic rename, so an interrupted run leaves the previous files whole.
- **The process runner**: :func:`run_process` runs a command in a process group
  of its own, with a timeout; on timeout, error or Ctrl-C the whole group is
  killed, so no worker outlives its benchmark.
- **Timing**: :func:`interleaved` times several stacks in alternation, round
  after round, so that a change of load on a shared machine falls on all of them
  alike; :func:`figure` reduces samples to a median and spread.

Nothing here imports JAX at module level: a parent that starts workers must
stay off the accelerator (on a GPU the first process to touch it preallocates
most of its memory) and must not have started JAX's threads before it forks.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from tqdm import tqdm

REPO = pathlib.Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
SCHEMA = 2

# Distributions whose versions every record holds (absent ones as null).
PACKAGES = (
    "gymjax", "jax", "jaxlib", "flax", "optax", "numpy", "mujoco", "mujoco-mjx", "gymnasium", "brax",
    "envpool", "torch", "stable-baselines3", "rl_zoo3", "pettingzoo", "matplotlib",
)  # fmt: skip


# -- figures and timing ---------------------------------------------------------------------------


def figure(samples: list[float]) -> dict:
    """A figure: the median of its samples, their spread (min, max) and the samples."""
    samples = [float(s) for s in samples]
    if not samples:
        return {"median": None, "spread": None, "samples": []}
    return {"median": statistics.median(samples), "spread": [min(samples), max(samples)], "samples": samples}


@dataclasses.dataclass
class Stepper:
    """One built stack: ``step()`` advances ``batch`` envs by one step; ``close()`` frees it."""

    step: Callable[[], Any]
    batch: int
    close: Callable[[], Any] | None = None
    rounds: int | None = None  # take part in the first ``rounds`` rounds only (a slow stack)


def interleaved(
    stacks: Mapping[str, Stepper], rounds: int, round_s: float, warmup_calls: int = 3, desc: str = "rounds",
    paired: Collection[str] = (),
) -> dict:
    """Env steps/s of each stack, timed in alternation: ``rounds`` rounds, each stack about ``round_s`` per round.

    Every stack is warmed up first (its first calls compile; their time is its
    ``compile_s``); a stack whose warm-up raises is left out, its error in
    ``failed``. The ``paired`` stacks (ones that play the same episodes) take the same number of
    calls a round, the fewest any of them would take, so that each round times them over the same
    states; on their own, the faster would run further ahead in each round and a step's cost that
    varies along an episode would bias the ratio. Returns ``{"stacks": {name: figure + calls_per_round, compile_s},
    "failed": {name: error}, "load_1min_rounds": [...]}``. Closes every stack.
    """
    calls, compile_s, failed = {}, {}, {}
    live = dict(stacks)
    for name, stack in list(live.items()):
        try:
            start = time.perf_counter()
            for _ in range(warmup_calls):
                stack.step()
            compile_s[name] = time.perf_counter() - start
            start = time.perf_counter()
            stack.step()
            took = time.perf_counter() - start
        except Exception as err:  # noqa: BLE001 - a stack that cannot step is reported; the others are measured
            failed[name] = one_line(err)
            _close(live.pop(name))
            continue
        calls[name] = max(1, int(round_s / max(took, 1e-6)))
    pair = [name for name in paired if name in calls]
    for name in pair:
        calls[name] = min(calls[other] for other in pair)
    samples: dict[str, list[float]] = {name: [] for name in live}
    loads = []
    try:
        for r in tqdm(range(rounds), desc=desc, unit="round", leave=False):
            for name, stack in live.items():
                if stack.rounds is not None and r >= stack.rounds:
                    continue
                start = time.perf_counter()
                for _ in range(calls[name]):
                    stack.step()
                samples[name].append(stack.batch * calls[name] / (time.perf_counter() - start))
            loads.append(os.getloadavg()[0])
    finally:
        for stack in live.values():
            _close(stack)
    return {
        "stacks": {
            name: {**figure(samples[name]), "calls_per_round": calls[name], "compile_s": compile_s[name]}
            for name in live
        },
        "failed": failed,
        "load_1min_rounds": loads,
    }


def build(builders: Mapping[str, Callable[[], Stepper]]) -> tuple[dict[str, Stepper], dict[str, str]]:
    """Each builder called: the stacks built, and the error of each that raised, in one line."""
    stacks, failed = {}, {}
    for name, make in builders.items():
        try:
            stacks[name] = make()
        except Exception as err:  # noqa: BLE001 - a stack that cannot be built is reported, others measured
            failed[name] = one_line(err)
    return stacks, failed


def _close(stack: Stepper) -> None:
    if stack.close is not None:
        stack.close()


def one_line(err: BaseException) -> str:
    """An exception in one line, with the file and line that raised it."""
    import traceback

    frames = traceback.extract_tb(err.__traceback__)
    where = f" ({pathlib.Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    text = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {text}{where}"


# -- the record -----------------------------------------------------------------------------------


def new_record(
    benchmark: str, argv: list[str], title: str, settings: dict, machine_name: str | None = None
) -> dict:
    """A record opened: ``python -m benchmarks <benchmark> <argv>`` regenerates it."""
    return {
        "schema": SCHEMA,
        "benchmark": benchmark,
        "title": title,
        "command": ["python", "-m", "benchmarks", benchmark, *argv],
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(machine_name),
        "versions": versions(),
        "settings": settings,
        "load_before": list(os.getloadavg()),
        "_started": time.perf_counter(),
    }


def finish(record: dict, results: dict, summary: list[str]) -> dict:
    """The record closed: its results, the summary lines the results page shows, the load after."""
    started = record.pop("_started", None)
    record |= {
        "results": results,
        "summary": summary,
        "load_after": list(os.getloadavg()),
        "wall_s": None if started is None else time.perf_counter() - started,
    }
    return record


def machine(name: str | None = None) -> dict:
    """The machine: CPU, cores, memory, and JAX's backend and devices (asked of a fresh process)."""
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    jax_info = describe_jax_elsewhere()
    cores = os.cpu_count() or 1
    default = f"{cores}-core {cpu}" if jax_info["jax_backend"] == "cpu" else jax_info["devices"][0]
    return {
        "name": name or default,
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": cores,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        **jax_info,
    }


_DESCRIBE = (
    "import jax, json; print(json.dumps({'jax_backend': jax.default_backend(), "
    "'devices': [f'{d.platform}:{d.device_kind}' for d in jax.devices()]}))"
)


def describe_jax_elsewhere() -> dict:
    """JAX's backend and devices, asked of a fresh process so this one never starts JAX."""
    done = run_process([sys.executable, "-c", _DESCRIBE], timeout_s=120)
    if not done.ok:
        raise RuntimeError(f"could not ask JAX for its devices: {done.error}")
    return json.loads(done.output.splitlines()[-1])


def versions(packages: tuple[str, ...] = PACKAGES) -> dict:
    """Python and every package in ``packages`` (None: absent)."""
    out: dict[str, Any] = {"python": sys.version.split()[0]}
    for name in packages:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def commit() -> str | None:
    """The checkout's commit, ``+changes`` when tracked files differ from it; None outside git."""
    try:
        git = ["git", "-C", str(REPO)]
        head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


# -- the writer -----------------------------------------------------------------------------------


def header(record: dict) -> list[str]:
    """The lines every Markdown result starts with: command, machine, load, versions."""
    m, v = record["machine"], record["versions"]
    wall = f", {record['wall_s'] / 60:.0f} min" if record.get("wall_s") else ""
    shown = ", ".join([f"Python {v['python']}", *(f"{k} {x}" for k, x in v.items() if x and k != "python")])
    return [
        f"Command: `{shlex.join(record['command'])}` ({record['created'][:10]}{wall}).",
        "",
        (
            f"Machine: {m['name']}; {m['cpu_count']} cores, {m['memory_gib']:.0f} GiB, JAX on {m['jax_backend']}. "
            f"Load average (1/5/15 min) before {loads(record['load_before'])}, after {loads(record['load_after'])}."
        ),
        "",
        f"Versions: {shown}; commit {record['commit']}.",
        # a result measured by a script since replaced, its record converted to this shape once
        *(
            [
                "",
                f"Measured by {record['measured_by']}; the command above is the one that would regenerate it.",
            ]
            if record.get("measured_by")
            else []
        ),
    ]


def loads(values: list[float] | None) -> str:
    return "/".join(f"{x:.1f}" for x in values) if values else "n/a"


def load_range(values: Iterable[float]) -> str:
    """The 1-minute load averages taken over a run's rounds, as ``"min-max"``."""
    values = list(values)
    return f"{min(values):.1f}-{max(values):.1f}" if values else "n/a"


def write(
    record: dict,
    markdown: list[str],
    plot: Callable[[dict, pathlib.Path], None] | None = None,
    stem: str | None = None,
    out: pathlib.Path = RESULTS,
) -> list[pathlib.Path]:
    """Writes ``<stem>.json``, ``<stem>.md`` (title, :func:`header`, ``markdown``) and, given ``plot``,
    ``<stem>.png``; each is put in place by an atomic rename. Returns their paths."""
    from gymjax.trainers.store import files

    stem = stem or record["benchmark"]
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.json", out / f"{stem}.md"]
    files.replace_text(paths[0], json.dumps(record, indent=1, default=float) + "\n")
    files.replace_text(
        paths[1], "\n".join([f"# {record['title']}", "", *header(record), "", *markdown]) + "\n"
    )
    if plot is not None:
        path = out / f"{stem}.png"
        with files.replaced(path) as tmp:
            plot(record, tmp)
        paths.append(path)
    return paths


def stack_bars(
    ax, blocks: Mapping[str, dict], stacks: tuple[str, ...], colors: Mapping[str, str] | None = None
) -> None:
    """Grouped bars on ``ax``: per block of :func:`interleaved` (one per N), each stack's median with its
    min-max spread as the error bar; a stack missing from a block has no bar there."""
    width = 0.8 / len(stacks)
    for j, name in enumerate(stacks):
        xs, med, lo, hi = [], [], [], []
        for i, block in enumerate(blocks.values()):
            r = block["stacks"].get(name)
            if r:
                xs.append(i + (j - (len(stacks) - 1) / 2) * width)
                med.append(r["median"])
                lo.append(r["median"] - r["spread"][0])
                hi.append(r["spread"][1] - r["median"])
        color = {"color": colors[name]} if colors else {}
        ax.bar(xs, med, width, yerr=[lo, hi], label=name, capsize=2, **color)


def listed(heading: str, items: list[str]) -> list[str]:
    """A Markdown section of ``- item`` lines (what was skipped, what failed); "- nothing" when empty."""
    return ["", f"## {heading}", "", *(items or ["- nothing"])]


def pyplot():
    """matplotlib's pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# -- the process runner ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Finished:
    """How a process ended: its exit status (None: killed at the timeout, or when it stalled) and its output."""

    status: int | None
    output: str
    wall_s: float
    timeout_s: float
    stalled_s: float | None = None  # killed after this long without progress, rather than at the timeout

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def error(self) -> str | None:
        """None when it succeeded; else the status or timeout and the output's tail."""
        if self.ok:
            return None
        if self.status is not None:
            what = f"exit status {self.status}"
        elif self.stalled_s is not None:
            what = f"no progress for {self.stalled_s:g} s"
        else:
            what = f"timed out after {self.timeout_s:g} s"
        return f"{what}; output ends:\n{self.output[-2000:].strip() or '(no output)'}"


def run_process(
    argv: list[str],
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    poll: Callable[[], bool | None] | None = None,
    cwd: pathlib.Path = REPO,
    stall_s: float | None = None,
) -> Finished:
    """Runs ``argv`` in a process group of its own, stdout and stderr together, for at most ``timeout_s``
    (``math.inf``: no limit), and, given ``stall_s``, for at most that long since ``poll`` last
    returned True (progress: a record the worker appended).

    ``poll`` (if given) is called about twice a second while it runs (to read
    the records a worker appends). On timeout, on a stall, on any error here and on Ctrl-C
    the whole group is killed: the process and whatever it started.
    """
    start = time.monotonic()
    progressed, stalled = start, None
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=dict(env) if env is not None else worker_env(), stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        status: int | None = None
        try:
            while True:
                try:
                    status = proc.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    if poll is not None and poll():
                        progressed = now
                    if now - start > timeout_s:
                        break
                    if stall_s is not None and now - progressed > stall_s:
                        stalled = stall_s
                        break
        finally:
            if proc.poll() is None or status is None:
                _kill_group(proc)
        if poll is not None:
            poll()
        log.seek(0)
        output = log.read().decode(errors="replace")
    return Finished(status, output, time.monotonic() - start, timeout_s, stalled)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the group is gone already
    proc.wait()


def worker_env(jax_cache: str | os.PathLike | None = None, **extra: str) -> dict[str, str]:
    """This process's environment, the checkout importable, JAX's persistent compile cache set if given."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    if jax_cache:
        env |= {
            "JAX_COMPILATION_CACHE_DIR": str(jax_cache),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.5",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        }
    return env | extra


def read_new_lines(path: pathlib.Path, seen: int, on_record: Callable[[dict], None]) -> int:
    """Passes on the complete JSON lines of ``path`` past the first ``seen``; returns the new count."""
    if not path.exists():
        return seen
    complete = [line for line in path.read_text().splitlines(keepends=True) if line.endswith("\n")]
    for line in complete[seen:]:
        on_record(json.loads(line))
    return len(complete)


def follow_lines(path: pathlib.Path, records: list[dict]) -> Callable[[], bool]:
    """A ``poll`` for :func:`run_process`: appends to ``records`` (filled by it alone) the complete
    JSON lines ``path`` gained since the last call, and says whether there were any (progress, for
    ``stall_s``)."""

    def poll() -> bool:
        before = len(records)
        return read_new_lines(path, before, records.append) > before

    return poll


def append_line(path: str | os.PathLike, record: dict) -> None:
    """A worker's side of :func:`read_new_lines`: one JSON line, flushed at once."""
    with open(path, "a") as f:
        f.write(json.dumps(record, default=float) + "\n")
        f.flush()
        os.fsync(f.fileno())
