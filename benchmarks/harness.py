"""What every benchmark shares: timing, figures, memory, the machine, optional peers, isolation.

- Timing: :func:`measure` warms a stack up, times its compile apart, picks how
  many calls make one repeat (about ``Timing.repeat_s`` seconds) and returns
  one figure per repeat; :func:`figure` reduces them to a median and spread.
- Memory: :func:`peak_memory` reads the process's peak RSS (and JAX's device
  peak where the backend reports one).
- The machine and the versions of every package involved: :func:`machine`,
  :func:`versions`.
- Peers: :data:`PEERS` names the optional packages and where they come from;
  :func:`missing_peer` says why a stack cannot run, so that it is reported as
  skipped, never dropped.
- Isolation: :func:`run_isolated` runs one stack in its own process (see
  ``benchmarks/worker.py``), reads its results as they come, and turns a crash
  or a timeout into a failure with the log's tail.

Nothing here imports JAX, torch or a peer at module level: a worker that
measures Gymnasium's ``AsyncVectorEnv`` forks, and must not have started JAX's
threads first.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

REPO = pathlib.Path(__file__).resolve().parent.parent

# Optional packages a stack may need, and how to get them (extras of pyproject.toml).
PEERS = {
    "brax": "extra 'bench'",
    "envpool": "extra 'bench'",
    "torch": "extras 'torch', 'dev'",
    "stable_baselines3": "extras 'sb3', 'dev'",
    "pettingzoo": "extras 'pettingzoo', 'dev'",
    "gymnasium_robotics": "extra 'dev' (MaMuJoCo)",
}

# Distributions whose versions every result records (absent ones as null).
PACKAGES = (
    "gymjax",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "numpy",
    "mujoco",
    "mujoco-mjx",
    "gymnasium",
    "brax",
    "envpool",
    "torch",
    "stable-baselines3",
    "pettingzoo",
    "gymnasium-robotics",
    "matplotlib",
    "tqdm",
)

MEMORY_NOTE = (
    "peak_rss_mib: the largest resident set (ru_maxrss) of the process that measured the stack, "
    "read after measuring that N. Each stack runs in a process of its own and its sizes in "
    "increasing order, so the figure at N is the peak over the sizes up to N (interpreter, imports "
    "and compiles included). children_peak_rss_mib, for stacks that start processes (async and "
    "subprocess vector envs), is the sum of the peaks (VmHWM) of its live descendant processes, read "
    "before closing them. gpu_peak_mib is JAX's device peak_bytes_in_use where the backend reports it."
)


# -- timing ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Timing:
    """How long to measure: the same for every stack of a run."""

    repeats: int = 5  # timed repeats; figures are their median
    repeat_s: float = 1.5  # aim for this many seconds per repeat
    warmup_s: float = 1.0  # untimed calls after the compiling ones, at least this long
    max_calls: int = 100_000  # calls per repeat, at most


@dataclasses.dataclass(frozen=True)
class Stepper:
    """One built stack: ``step()`` advances it by one (batched) step.

    ``env`` is the object stepped, for callers that need more than ``step``;
    ``close()`` frees it (its processes and threads) after the measurement.
    """

    step: Callable[[], Any]
    close: Callable[[], Any] | None = None
    env: Any = None


def time_calls(call: Callable[[], Any], calls: int, repeats: int) -> list[float]:
    """Seconds per call, one figure per repeat of ``calls`` calls."""
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        out.append((time.perf_counter() - start) / calls)
    return out


def measure(stepper: Stepper, batch: int, timing: Timing) -> dict:
    """Env steps/s of ``stepper`` (``batch`` env steps per call), its compile time apart.

    The first two calls compile: JAX traces a step again when the state it
    returns differs in type from the one it was given (Brax's does). Their
    time beyond two steady calls is ``compile_s``. Warm-up calls follow until
    ``timing.warmup_s`` has passed; the steady call time they give sets the
    calls per repeat.
    """
    first = []
    for _ in range(2):
        start = time.perf_counter()
        stepper.step()
        first.append(time.perf_counter() - start)
    warm: list[float] = []
    while not warm or sum(warm) < timing.warmup_s:
        warm += time_calls(stepper.step, 1, 1)
    steady = statistics.median(warm)
    calls = int(min(timing.max_calls, max(1, round(timing.repeat_s / max(steady, 1e-9)))))
    per_call = time_calls(stepper.step, calls, timing.repeats)
    return {
        "steps_per_s": figure([batch / s for s in per_call]),
        "compile_s": max(0.0, sum(first) - 2 * steady),
        "calls_per_repeat": calls,
    }


def figure(samples: list[float]) -> dict:
    """A figure: the median of its repeats, their spread (min, max) and quartiles."""
    samples = [float(s) for s in samples]
    if not samples:
        return {"median": None, "spread": None, "iqr": None, "samples": []}
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive") if len(samples) > 1 else samples * 3
    return {
        "median": statistics.median(samples),
        "spread": [min(samples), max(samples)],
        "iqr": [q1, q3],
        "samples": samples,
    }


def measure_sizes(stack: Stack, spec: dict, emit: Callable[[dict], None]) -> None:
    """The throughput suites' work in a worker: for each N in ``spec["sizes"]`` (increasing),
    build the stack, measure it, close it, and emit the record with the peak memory so far."""
    timing = Timing(**spec["timing"])
    for n in spec["sizes"]:
        start = time.perf_counter()
        stepper = stack.run(n)
        build_s = time.perf_counter() - start
        record = {"n": n, "build_s": build_s, **measure(stepper, n, timing)}
        record |= peak_memory(children=stack.processes)  # before close: the children are still there
        if stepper.close is not None:
            stepper.close()
        emit(record)


# -- memory ------------------------------------------------------------------------------------


def peak_memory(children: bool = False) -> dict:
    """Peak RSS of this process in MiB (see :data:`MEMORY_NOTE`), its descendants' and JAX's device peak."""
    out = {"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if children:
        out["children_peak_rss_mib"] = _descendants_peak_mib()
    jax = sys.modules.get("jax")  # only where the stack itself imported JAX
    if jax is not None and jax.default_backend() != "cpu":
        stats = jax.devices()[0].memory_stats() or {}
        if "peak_bytes_in_use" in stats:
            out["gpu_peak_mib"] = stats["peak_bytes_in_use"] / 2**20
    return out


def _descendants_peak_mib() -> float | None:
    """The sum of the peak RSS (``VmHWM``) of this process's live descendants; None off Linux.

    Multiprocessing's forkserver and spawn contexts start workers that are not
    our children in ``wait``'s sense, so ``RUSAGE_CHILDREN`` would miss them.
    """
    proc = pathlib.Path("/proc")
    if not proc.is_dir():
        return None
    children: dict[int, list[int]] = {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children.setdefault(ppid, []).append(int(stat.parent.name))
    total_kib, todo = 0, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            status = (proc / str(pid) / "status").read_text()
        except OSError:
            continue
        total_kib += sum(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    return total_kib / 1024


# -- the machine and versions ------------------------------------------------------------------


def describe_jax() -> dict:
    """JAX's backend and devices, as this process sees them."""
    import jax

    devices = jax.devices()
    return {
        "jax_backend": jax.default_backend(),
        "devices": [f"{d.platform}:{d.device_kind}" for d in devices],
    }


def describe_jax_elsewhere() -> dict:
    """:func:`describe_jax` asked of a fresh process, so that the caller never starts JAX itself:
    on a GPU the first process to touch it preallocates most of its memory, which the workers need."""
    command = [sys.executable, "-m", "benchmarks.worker", "--describe"]
    env = _worker_env(jax_cache=None)
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def machine(name: str | None = None, jax_info: dict | None = None) -> dict:
    """The machine a run measured on; ``name`` is what a person calls it, ``jax_info``
    :func:`describe_jax`'s answer (default: asked in this process)."""
    jax_info = jax_info or describe_jax()
    cpu_model = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = os.cpu_count() or 1
    accelerator = jax_info["devices"][0].split(":", 1)[1]
    default_name = f"{cores}-core {cpu_model}" if jax_info["jax_backend"] == "cpu" else accelerator
    return {
        "name": name or default_name,
        "platform": platform.platform(),
        "cpu": cpu_model,
        "cpu_count": cores,
        "memory_gib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
        **jax_info,
        "load_average_at_start": list(os.getloadavg()),
    }


def versions(packages: tuple[str, ...] = PACKAGES) -> dict:
    """Python, the source checkout's commit, and every package in ``packages`` (None: absent)."""
    out: dict[str, Any] = {"python": sys.version.split()[0], "git_commit": _git_commit()}
    for name in packages:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _git_commit() -> str | None:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
        )
    except OSError:
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def environment() -> dict:
    """``machine`` and ``versions`` under those keys: the header of ``vector_ceiling.py``'s report."""
    return {"machine": machine(), "versions": versions()}


# -- stacks and peers --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Stack:
    """One thing a suite measures: a gymjax stack (``ours``) or a peer's.

    ``run`` is called in the worker process: for the throughput suites
    ``run(n) -> Stepper`` builds the stack at ``n`` envs, for the train suite
    ``run(quick) -> dict`` trains and returns the record. Ratios are taken
    between ``ours`` stacks and peers of the same ``family``.
    """

    name: str
    run: Callable[..., Any]
    ours: bool
    family: str
    needs: tuple[str, ...] = ()  # optional packages (keys of PEERS)
    unsupported: Callable[[], str | None] = lambda: None  # why it cannot run on this install, or None
    note: str = ""  # what it is, in the report
    sizes: tuple[int, ...] | None = None  # the only sizes it takes (a single env: (1,))
    max_n: int | None = None  # larger sizes are skipped, with max_n_reason
    max_n_reason: str = ""
    cpu_sizes: tuple[int, ...] | None = None  # on a CPU backend, only these sizes (cpu_reason)
    cpu_reason: str = ""
    quick_sizes: tuple[int, ...] | None = None  # in --quick mode: only these ((): none), quick_reason
    quick_reason: str = ""
    processes: bool = False  # it starts processes of its own (children's peak RSS is recorded)


# gymjax's physics configurations: the env options of each, and what it is in words.
CONFIGS = {
    "mjx accurate": ({"backend": "mjx", "solver": "accurate"}, "MJX, accurate solver preset"),
    "mjx fast": ({"backend": "mjx", "solver": "fast"}, "MJX, fast solver preset"),
    "mujoco": ({"backend": "mujoco"}, 'backend="mujoco": MuJoCo C on a thread pool inside jit'),
}


# Observed on the 2-core CPU: at N=1024 an MJX step hung for good (every thread waiting,
# the batched linear algebra of MJX's solver inside jaxlib's ParallelBatchMap).
MJX_CPU_SIZES = (1, 16, 64, 256)
MJX_CPU_REASON = ("MJX at N=1024 on a CPU hung (all threads waiting in jaxlib's batched linear algebra, "
                  "ParallelBatchMap) in this harness's first full run; measured up to N=256 on CPU")


def config_stack(
    name: str, build: Callable[..., Any], config: str, *, note: str, mjx_quick_reason: str, **kwargs: Any
) -> Stack:
    """A stack of JaxAnt-v0 in one of :data:`CONFIGS`: ``build(..., **options)``, named ``name (config)``.

    MJX compiles for tens of seconds on a CPU, so an MJX configuration is left
    out of quick runs (``mjx_quick_reason``) unless ``quick_sizes`` says otherwise.
    """
    options, words = CONFIGS[config]
    if config != "mujoco":
        kwargs.setdefault("quick_sizes", ())
        kwargs.setdefault("quick_reason", mjx_quick_reason)
        kwargs.setdefault("cpu_sizes", MJX_CPU_SIZES)
        kwargs.setdefault("cpu_reason", MJX_CPU_REASON)
    kwargs.setdefault("ours", True)
    return Stack(f"{name} ({config})", functools.partial(build, **options), note=f"{note}; {words}", **kwargs)


def missing_peer(needs: tuple[str, ...], without: tuple[str, ...]) -> str | None:
    """Why a stack that needs ``needs`` cannot run here, or None when it can."""
    for name in needs:
        if name in without:
            return f"{name} treated as not installed (--without {name})"
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed (optional peer, {PEERS[name]})"
    return None


def plan_sizes(stack: Stack, sizes: list[int], quick: bool, backend: str) -> tuple[list[int], dict[int, str]]:
    """The sizes ``stack`` runs at, and the reason for each size it skips.

    A stack with fixed ``sizes`` (a single env, a trainer's batch) runs at
    those, or at its ``quick_sizes`` in quick mode (``()``: not at all); any
    other runs at the suite's ``sizes``, narrowed by ``quick_sizes`` in quick
    mode or ``cpu_sizes`` on a CPU backend. ``max_n`` applies to all.
    """
    allowed, reason = None, ""
    if quick and stack.quick_sizes is not None:
        allowed, reason = stack.quick_sizes, stack.quick_reason
    elif backend == "cpu" and stack.cpu_sizes is not None:
        allowed, reason = stack.cpu_sizes, stack.cpu_reason
    wanted = sizes
    if stack.sizes is not None:
        wanted = stack.sizes
        if quick and stack.quick_sizes:
            wanted, allowed = stack.quick_sizes, None
    run, skipped = [], {}
    for n in sorted(wanted):
        if stack.max_n is not None and n > stack.max_n:
            skipped[n] = stack.max_n_reason
        elif allowed is not None and n not in allowed:
            skipped[n] = reason
        else:
            run.append(n)
    return run, skipped


# -- isolation ---------------------------------------------------------------------------------


def run_isolated(
    spec: dict, timeout_s: float, jax_cache: str | None, on_record: Callable[[dict], None]
) -> str | None:
    """Runs ``python -m benchmarks.worker`` on ``spec`` in a process group of its own.

    Each record the worker writes is passed to ``on_record`` as it arrives.
    Returns None when the worker exited cleanly, else the failure: exit status
    or timeout, and the tail of its output.
    """
    with tempfile.TemporaryDirectory(prefix="gymjax-bench-") as tmp:
        records, log = pathlib.Path(tmp) / "records.jsonl", pathlib.Path(tmp) / "log.txt"
        spec_path = pathlib.Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps({**spec, "records": str(records)}))
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.worker", str(spec_path)],
                cwd=REPO,
                env=_worker_env(jax_cache),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            seen = 0
            deadline = time.monotonic() + timeout_s
            status = None
            while status is None:
                try:
                    status = proc.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    if time.monotonic() > deadline:
                        os.killpg(proc.pid, signal.SIGKILL)  # the worker and what it started
                        proc.wait()
                        status = "timeout"
                seen = _read_records(records, seen, on_record)
            _read_records(records, seen, on_record)
        if status == 0:
            return None
        what = f"timed out after {timeout_s:g} s" if status == "timeout" else f"exit status {status}"
        return f"{what}; output ends:\n{_tail(log)}"


def _worker_env(jax_cache: str | None) -> dict[str, str]:
    """This process's environment, with the checkout importable and JAX's compile cache set."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    if jax_cache:
        env |= {
            "JAX_COMPILATION_CACHE_DIR": jax_cache,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.5",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        }
    return env


def _read_records(path: pathlib.Path, seen: int, on_record: Callable[[dict], None]) -> int:
    """Passes on the complete lines of ``path`` past the first ``seen``; returns the new count."""
    if not path.exists():
        return seen
    lines = path.read_text().splitlines(keepends=True)
    complete = [line for line in lines if line.endswith("\n")]
    for line in complete[seen:]:
        on_record(json.loads(line))
    return len(complete)


def _tail(path: pathlib.Path, chars: int = 2000) -> str:
    text = path.read_text(errors="replace")[-chars:].strip()
    return text or "(no output)"


def record_writer(path: str) -> Callable[[dict], None]:
    """The worker's side: appends one JSON line per record, flushed at once."""

    def emit(record: dict) -> None:
        with open(path, "a") as f:
            f.write(json.dumps(record, default=float) + "\n")
            f.flush()
            os.fsync(f.fileno())

    return emit


# -- ratios ------------------------------------------------------------------------------------


def ratios(
    results: dict, stacks: tuple[Stack, ...], internal: tuple[tuple[str, str], ...] = (), same_n: bool = True
) -> list[dict]:
    """Ratios of median steps/s, all measured in this run.

    Every ``ours`` stack over every peer of its family, and each ``internal``
    pair (a gymjax stack over another: an adapter over the bare step), at each
    N both measured; with ``same_n=False`` (trainers, one batch size each) at
    whatever N each ran.
    """
    pairs = [
        (a.name, b.name, "ours/peer")
        for a in stacks
        if a.ours
        for b in stacks
        if not b.ours and b.family == a.family
    ]
    pairs += [(a, b, "internal") for a, b in internal]
    out = []
    for a, b, kind in pairs:
        ours, theirs = _medians(results, a), _medians(results, b)
        if same_n:
            matched = [(n, ours[n], n, theirs[n]) for n in ours if n in theirs]
        else:
            matched = [(n, x, m, y) for n, x in ours.items() for m, y in theirs.items()]
        for n, x, m, y in matched:
            out.append({"ours": a, "peer": b, "kind": kind, "n": n, "peer_n": m, "ratio": x / y})
    return out


def _medians(results: dict, name: str) -> dict[int, float]:
    sizes = results.get(name, {}).get("sizes", {})
    return {
        int(n): r["steps_per_s"]["median"] for n, r in sizes.items() if r.get("steps_per_s", {}).get("median")
    }
