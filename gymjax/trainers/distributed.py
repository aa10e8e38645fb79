"""Several processes, one training run: JAX's own distributed runtime, and a local launcher.

Every process runs the same program. ``jax.distributed.initialize`` connects
them; afterwards ``jax.devices()`` lists every device of every process, the
trainer's mesh spans them all, and each process steps the envs on its own
devices. Collectives run over NCCL on GPUs and over gloo on CPUs.

Process 0 (the *primary*) alone writes files other than checkpoint shards:
``run.json``, metrics, plots, videos; it alone holds the run directory's lock
and runs evaluation and callbacks. Every process takes part in checkpoint
saves (orbax's multi-host protocol: a step is finalized only once every
process's part is written).

A process that dies is noticed by the others through the coordination
service's heartbeats (``heartbeat_timeout_s``) or a broken collective; they
then exit non-zero instead of waiting forever.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

import jax
import numpy as np

# Set by launch_local in the processes it starts, so their messages can say how to start again.
LAUNCHED = "GYMJAX_LOCAL_PROCESSES"
# Cluster variables that jax.distributed.initialize() reads by itself.
CLUSTER_VARIABLES = ("JAX_COORDINATOR_ADDRESS", "SLURM_JOB_ID", "OMPI_COMM_WORLD_SIZE")


def initialize(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    heartbeat_timeout_s: int = 30,
) -> None:
    """Connects this process to the others (once; later calls do nothing).

    With no arguments JAX finds the cluster itself (SLURM, Open MPI, or the
    ``JAX_COORDINATOR_ADDRESS`` / ``JAX_NUM_PROCESSES`` / ``JAX_PROCESS_ID``
    variables); otherwise all three are needed.
    """
    if jax.distributed.is_initialized():
        return
    given = [coordinator is not None, num_processes is not None, process_id is not None]
    if any(given) and not all(given):
        raise ValueError("--coordinator, --num-processes and --process-id go together: give all three or none")
    if num_processes is not None and not 0 <= process_id < num_processes:
        raise ValueError(f"--process-id must lie in [0, {num_processes}), got {process_id}")
    # CPU processes reduce over gloo; GPUs use NCCL whatever this says.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator,
        num_processes=num_processes,
        process_id=process_id,
        heartbeat_timeout_seconds=heartbeat_timeout_s,
        shutdown_timeout_seconds=heartbeat_timeout_s,
    )


def is_primary() -> bool:
    return jax.process_index() == 0


def any_process(flag: bool) -> bool:
    """Whether ``flag`` holds in any process (every process must call this, in the same order)."""
    if jax.process_count() == 1:
        return flag
    from jax.experimental import multihost_utils

    return bool(np.any(multihost_utils.process_allgather(np.int32(flag))))


def broadcast_text(text: str, size: int = 64) -> str:
    """Process 0's ``text`` (at most ``size`` ASCII bytes), in every process."""
    if jax.process_count() == 1:
        return text
    from jax.experimental import multihost_utils

    data = np.zeros(size, np.uint8)
    raw = text.encode()[:size]
    data[: len(raw)] = np.frombuffer(raw, np.uint8)
    return bytes(np.asarray(multihost_utils.broadcast_one_to_all(data))).rstrip(b"\0").decode()


def barrier(name: str) -> None:
    """Waits until every process gets here."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def same_processes_flags() -> str:
    """What to add to a command so that it runs on the processes this one runs on."""
    if jax.process_count() == 1:
        return ""
    if os.environ.get(LAUNCHED):
        return f" --local-processes {os.environ[LAUNCHED]}"
    return f" (in {jax.process_count()} processes, started as this run was)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_local(argv: Sequence[str], num_processes: int, grace_s: float = 60.0) -> int:
    """Runs ``gymjax *argv`` as ``num_processes`` processes on this machine, connected on 127.0.0.1.

    Ctrl-C and SIGTERM are passed on to every process (each stops cleanly at
    the same epoch). When one process fails, the others get ``grace_s``
    seconds to notice and exit, then are killed. Returns the first non-zero
    exit code, or 0.
    """
    if num_processes < 1:
        raise ValueError(f"--local-processes must be positive, got {num_processes}")
    coordinator = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", LAUNCHED: str(num_processes)}
    for name in CLUSTER_VARIABLES:
        env.pop(name, None)  # the launched processes take their places from the flags
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "gymjax", *argv, "--coordinator", coordinator,
             "--num-processes", str(num_processes), "--process-id", str(i)],
            env=env,
            # one process group of their own: the terminal's Ctrl-C reaches the launcher only
            start_new_session=True,
        )
        for i in range(num_processes)
    ]

    def forward(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        failed_at = None
        while any(p.poll() is None for p in procs):
            failed = [(i, p.returncode) for i, p in enumerate(procs) if p.returncode]
            if failed_at is None and failed:
                failed_at = time.monotonic()
                i, code = failed[0]
                print(f"gymjax: process {i} exited with code {code}; the others stop within "
                      f"{grace_s:.0f} s", file=sys.stderr, flush=True)
            if failed_at is not None and time.monotonic() - failed_at > grace_s:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
            time.sleep(0.1)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    codes = [p.returncode for p in procs]
    return next((c for c in codes if c), 0)
