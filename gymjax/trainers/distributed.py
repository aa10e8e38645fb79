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

import errno
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

import jax
import numpy as np

# Set by launch_local in the processes it starts, so their messages can say how to start again.
LAUNCHED = "GYMJAX_LOCAL_PROCESSES"
# Set by launch_local to its own pid: its processes end themselves when it is gone.
LAUNCHER_PID = "GYMJAX_LAUNCHER_PID"
# How long a process whose launcher died may take to stop at an epoch (and save) before it is ended.
ORPHAN_GRACE_S = 60.0
# JAX's own connect timeout comes this long after ours: it aborts the process with a C++ trace.
JAX_TIMEOUT_SLACK_S = 10
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
    variables); otherwise all three are needed. Process 0 listens on the
    coordinator's address only (``JAX_COORDINATOR_BIND_ADDRESS`` overrides it,
    e.g. behind NAT). Every process waits ``2 * heartbeat_timeout_s`` seconds
    for the others, then exits with one line. Raises ValueError on bad flags,
    an unknown host or an address that process 0 cannot listen on.
    """
    if jax.distributed.is_initialized():
        return
    given = [coordinator is not None, num_processes is not None, process_id is not None]
    if any(given) and not all(given):
        raise ValueError("--coordinator, --num-processes and --process-id go together: give all three or none")
    if num_processes is not None and not 0 <= process_id < num_processes:
        raise ValueError(f"--process-id must lie in [0, {num_processes}), got {process_id}")
    bind = None
    if coordinator is not None:
        host, port = parse_coordinator(coordinator)
        resolve(host, port, coordinator)  # every process: a typo fails now, not after the wait
        bind = os.environ.get("JAX_COORDINATOR_BIND_ADDRESS") or coordinator
        if process_id == 0:
            check_can_listen(bind)
    if os.environ.get(LAUNCHER_PID):
        stop_with_launcher()
    # CPU processes reduce over gloo; GPUs use NCCL whatever this says.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    _connect(coordinator, num_processes, process_id, heartbeat_timeout_s, bind)
    if bind is not None and _is_loopback(bind_host := parse_coordinator(bind)[0]):
        _gloo_on(bind_host)


def parse_coordinator(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets) as (host, port); ValueError saying what was expected."""
    host, sep, port = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    host = host[1:-1] if bracketed else host
    if (not sep or not host or (":" in host and not bracketed) or not (port.isascii() and port.isdigit())
            or not 1 <= int(port) <= 65535):
        raise ValueError(
            f"--coordinator must be HOST:PORT with a port 1-65535 (e.g. 127.0.0.1:1234, [::1]:1234), got {text!r}"
        )
    return host, int(port)


def resolve(host: str, port: int, text: str) -> tuple:
    """The (family, address) to bind or connect to for ``host``; ValueError if it names no machine."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as e:
        raise ValueError(f"--coordinator {text}: unknown host {host!r} ({e.strerror})") from None
    return family, address


def check_can_listen(address: str) -> None:
    """Process 0 hosts the coordination service at ``address``: JAX crashes (SIGSEGV) when it
    cannot listen there, so try first. SO_REUSEADDR as gRPC does: a closed run's TIME_WAIT
    connections on the port do not count as in use."""
    host, port = parse_coordinator(address)
    family, sockaddr = resolve(host, port, address)
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(sockaddr)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise ValueError(f"--coordinator {address} is in use (another run's coordinator?): "
                                 f"choose another port") from None
            if e.errno == errno.EADDRNOTAVAIL:
                raise ValueError(f"--coordinator {address} is not an address of this machine: run process 0 "
                                 f"there, or set JAX_COORDINATOR_BIND_ADDRESS to where it may listen") from None
            raise ValueError(f"--coordinator {address}: process 0 cannot listen there ({e.strerror})") from None


# A start that connects within this many seconds says nothing about waiting.
QUIET_CONNECT_S = 3.0


def _connect(coordinator, num_processes, process_id, heartbeat_timeout_s, bind) -> None:
    """jax.distributed.initialize, bounded: JAX aborts in C++ when its wait runs out, so a thread
    says why in one line and exits just before."""
    wait_s = 2 * heartbeat_timeout_s
    who = f"process {process_id} of {num_processes}" if num_processes else "this process"
    where = f"at {coordinator}" if coordinator else "at the cluster's coordinator"
    connected = threading.Event()
    _start_daemon(_give_up, connected, wait_s,
                  f"{who}: waiting up to {wait_s} s (twice --heartbeat-timeout) for all processes {where}",
                  f"{who}: not every process reached the coordinator {where} within {wait_s} s; start all of them "
                  f"with the same --coordinator and --num-processes and each its own --process-id, "
                  f"or wait longer with a larger --heartbeat-timeout")
    jax.distributed.initialize(
        coordinator_address=coordinator,
        num_processes=num_processes,
        process_id=process_id,
        initialization_timeout=wait_s + JAX_TIMEOUT_SLACK_S,
        heartbeat_timeout_seconds=heartbeat_timeout_s,
        shutdown_timeout_seconds=heartbeat_timeout_s,
        coordinator_bind_address=bind,  # None (a cluster run): JAX's default, every interface
    )
    connected.set()


def _give_up(connected: threading.Event, wait_s: float, waiting: str, line: str) -> None:
    """Says it waits once the others are late (a normal start connects in a second or two), and
    gives up at ``wait_s``."""
    late_s = min(QUIET_CONNECT_S, wait_s)
    if not connected.wait(late_s):
        _say(waiting)
        if not connected.wait(wait_s - late_s):
            _say(line)
            os._exit(1)


def stop_with_launcher(grace_s: float = ORPHAN_GRACE_S) -> None:
    """In a process a launcher started with its pid in ``LAUNCHER_PID`` (``--local-processes``, ``gymjax
    tune --n-jobs``): stops this process when the launcher dies (:func:`_end_with_launcher`)."""
    if os.environ.get(LAUNCHER_PID):
        _start_daemon(_end_with_launcher, int(os.environ[LAUNCHER_PID]), grace_s)


def _end_with_launcher(launcher_pid: int, grace_s: float) -> None:
    """The launcher's processes have sessions of their own, so nothing ends them when it dies
    (SIGKILL, the OOM killer): when it is gone, stop as on SIGTERM (at the epoch, saving), and
    end at once if that takes over ``grace_s``, so that the run directory's lock is freed."""
    while os.getppid() == launcher_pid:  # a launcher gone before this started counts too
        time.sleep(0.2)
    _say(f"gymjax: the launcher (pid {launcher_pid}) is gone; stopping after the epoch in flight "
         f"(at most {grace_s:.0f} s)")
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(grace_s)
    _say(f"gymjax: not stopped {grace_s:.0f} s after the launcher died; ending now")
    os._exit(143)


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:  # stderr was a pipe its reader (the launcher's) closed: exit all the same
        pass


def _start_daemon(target, *args) -> None:
    threading.Thread(target=target, args=args, daemon=True, name=target.__name__).start()


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _gloo_on(host: str) -> None:
    """Gloo listens on the address of this machine's hostname whatever the coordinator's: with a
    coordinator on loopback every process is on this machine, so keep gloo there too. JAX lets
    only its private CPU backend factory choose; if that moved, gloo keeps JAX's default."""
    try:
        from jax._src import distributed as jax_distributed
        from jax._src import xla_bridge
        from jax._src.lib import _jax

        client = jax_distributed.global_state.client

        def cpu_client():
            return xla_bridge.make_cpu_client(collectives=_jax.make_gloo_tcp_collectives(client, hostname=host))

        xla_bridge.register_backend_factory("cpu", cpu_client, priority=0, fail_quietly=False)
    except (ImportError, AttributeError, RuntimeError, TypeError):
        pass


def is_primary() -> bool:
    return jax.process_index() == 0


def any_process(flag: bool) -> bool:
    """Whether ``flag`` holds in any process (every process must call this, in the same order)."""
    if jax.process_count() == 1:
        return flag
    from jax.experimental import multihost_utils

    return bool(np.any(multihost_utils.process_allgather(np.int32(flag))))


def most(value: int) -> int:
    """The largest of every process's ``value`` (every process must call this, in the same order)."""
    if jax.process_count() == 1:
        return value
    from jax.experimental import multihost_utils

    return int(np.max(multihost_utils.process_allgather(np.int32(value))))


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
    exit code, or 0. When the launcher itself dies, the processes notice and
    stop (see ``_end_with_launcher``).
    """
    if num_processes < 1:
        raise ValueError(f"--local-processes must be positive, got {num_processes}")
    coordinator = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", LAUNCHED: str(num_processes), LAUNCHER_PID: str(os.getpid())}
    for name in (*CLUSTER_VARIABLES, "JAX_COORDINATOR_BIND_ADDRESS"):
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

    # A signal the launcher was started ignoring (a background job's SIGINT) stays ignored, as Python
    # keeps it: forwarding it would stop the workers the launch meant to shield.
    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)
                if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        _wait_all(procs, grace_s)
    finally:
        _kill_groups(procs)  # whatever ended the wait (an error in it too), no worker outlives it
        for s, handler in previous.items():
            signal.signal(s, handler)
    codes = [p.returncode for p in procs]
    return next((c for c in codes if c), 0)


def _wait_all(procs: list[subprocess.Popen], grace_s: float) -> None:
    failed_at = None
    while any(p.poll() is None for p in procs):
        failed = [(i, p.returncode) for i, p in enumerate(procs) if p.returncode]
        if failed_at is None and failed:
            failed_at = time.monotonic()
            i, code = failed[0]
            print(f"gymjax: process {i} exited with code {code}; the others stop within "
                  f"{grace_s:.0f} s", file=sys.stderr, flush=True)
        if failed_at is not None and time.monotonic() - failed_at > grace_s:
            _kill_groups(procs)
        time.sleep(0.1)


def _kill_groups(procs: list[subprocess.Popen]) -> None:
    """SIGKILLs the process group of every worker still running, with whatever it started.
    Only unreaped workers: their pid (their group's id) cannot have been reused."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
