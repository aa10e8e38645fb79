"""Several processes on jax.distributed (gloo on CPU), tested with local processes on CartPole."""

import fcntl
import hashlib
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import textwrap
import time

import jax
import numpy as np
import pytest
from child_signals import from_a_terminal  # tests/child_signals.py

from gymjax.cli import main
from gymjax.trainers import distributed
from gymjax.trainers.loggers import read_rows
from gymjax.trainers.ppo import load_policy
from gymjax.trainers.store import checkpoint as ckpt
from gymjax.trainers.store import files

# Two or three processes of JAX each, with deadlines of their own: alone, not beside an xdist worker.
pytestmark = pytest.mark.serial

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENV = {
    **os.environ,
    "JAX_COMPILATION_CACHE_DIR": str(ROOT / ".jax_cache"),
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.5",
    "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "trainers"), str(ROOT)]),
    "PYTHONUNBUFFERED": "1",
}

# ppo.train in each process; prints a digest of its final parameters and its losses.
SCRIPT = textwrap.dedent(
    """
    import hashlib, json, sys
    from gymjax.trainers import distributed
    if len(sys.argv) > 1:
        distributed.initialize(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    import jax, numpy as np
    from ppo_configs import TINY
    from gymjax.trainers.ppo import train

    losses = []
    _, params, _ = train(TINY.replace(normalize_rewards=True), "JaxCartPole-v0", progress_bar=False,
                         progress_fn=lambda s, m: losses.append(m["losses/total"]))
    digest = hashlib.sha256(b"".join(np.asarray(x).tobytes() for x in jax.tree.leaves(params))).hexdigest()
    print(json.dumps({"process": jax.process_index(), "devices": len(jax.devices()), "params": digest,
                      "losses": losses}))
    """
)

FLAGS = [
    "--env", "JaxCartPole-v0", "--num-envs", "8", "--unroll-length", "16", "--num-minibatches", "2",
    "--update-epochs", "4", "--num-evals", "2", "--num-eval-envs", "4", "--epoch-iterations", "2",
    "--max-to-keep", "3", "--policy-hidden-sizes", "16,16", "--quiet", "--no-video",
    "--timesteps", str(12 * 256),
]


def processes(n, *extra_env, script=SCRIPT, args=()):
    """``script`` in ``n`` processes connected on 127.0.0.1; their JSON lines, by process."""
    port = distributed.free_port()
    procs = [
        subprocess.Popen([sys.executable, "-c", script, f"127.0.0.1:{port}", str(n), str(i), *map(str, args)], env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(n)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]


def test_two_processes_keep_identical_parameters_and_equal_one_process_with_two_devices():
    first = processes(2)
    assert [r["devices"] for r in first] == [2, 2]  # one global mesh over both processes
    assert first[0]["params"] == first[1]["params"]
    assert len(first[0]["losses"]) == 4 and first[1]["losses"] == []  # callbacks run on process 0 only
    # One process with two forced devices splits the envs the same way (4 per device, same keys):
    # the gloo all-reduce of two values is the in-process one, bit for bit (and so two runs of the
    # same seed are the same run; the resume tests below compare two more).
    env = {**ENV, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    single = json.loads(proc.stdout.strip().splitlines()[-1])
    assert single["devices"] == 2 and single["params"] == first[0]["params"]
    assert single["losses"] == first[0]["losses"]


def gymjax(*args, wait=True):
    command = [sys.executable, "-m", "gymjax", *map(str, args)]
    if wait:
        return subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=300)
    with from_a_terminal():  # a test sends it Ctrl-C, whatever the suite's launcher hands this process
        return subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def policy_digest(run_dir):
    obs = jax.random.normal(jax.random.PRNGKey(0), (32, 4))
    actions = np.asarray(
        load_policy(pathlib.Path(run_dir) / "checkpoints", deterministic=False)(obs, jax.random.PRNGKey(1))
    )
    return hashlib.sha256(actions.tobytes()).hexdigest()


def rows(run_dir):
    return [int(r["env_steps"]) for r in read_rows(pathlib.Path(run_dir) / "metrics.csv")[1]]


def wait_for_rows(run_dir, n, procs, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (pathlib.Path(run_dir) / "metrics.csv").exists() and len(rows(run_dir)) >= n:
            return
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.1)
    raise AssertionError(f"no {n} rows after {timeout} s")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("mp") / "run"
    proc = gymjax("train", *FLAGS, "--local-processes", "2", "--run-dir", run_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run_dir


def test_process_zero_alone_writes_and_a_single_process_loads_the_checkpoint(uninterrupted):
    assert rows(uninterrupted) == [256 * (i + 1) for i in range(12)]  # one row per epoch, not two
    assert json.loads((uninterrupted / "run.json").read_text())["env"] == "JaxCartPole-v0"
    meta = ckpt.read_meta(uninterrupted / "checkpoints")
    assert (meta["num_processes"], meta["num_devices"], meta["step"]) == (2, 2, 12)
    assert load_policy(uninterrupted / "checkpoints")(np.zeros((3, 4), np.float32)).shape == (3,)


# 42 s in the serial pass; make test ends a process that ignores the stop, and resumes a killed
# single-process run exactly (test_run_dir.py).
@pytest.mark.slow
def test_a_killed_process_stops_the_other_and_the_run_resumes_exactly(tmp_path, uninterrupted):
    run_dir = tmp_path / "run"
    port = distributed.free_port()
    procs = [
        gymjax("train", *FLAGS, "--heartbeat-timeout", "10", "--run-dir", run_dir, "--coordinator",
               f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", i, wait=False)
        for i in range(2)
    ]
    wait_for_rows(run_dir, 3, procs)
    procs[1].kill()
    start = time.monotonic()
    _, err = procs[0].communicate(timeout=120)
    assert procs[0].returncode != 0 and time.monotonic() - start < 60  # no silent hang
    assert "another process probably died" in err and f"resume with: gymjax train --run-dir {run_dir} --resume" in err
    procs[1].communicate()

    resumed = gymjax("train", "--run-dir", run_dir, "--resume", "--local-processes", "2")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert rows(run_dir) == rows(uninterrupted)
    assert policy_digest(run_dir) == policy_digest(uninterrupted)


@pytest.mark.slow  # 36 s; a killed process stops the others in make test
def test_ctrl_c_on_the_launcher_stops_every_process_at_one_epoch(tmp_path, uninterrupted):
    run_dir = tmp_path / "run"
    launcher = gymjax("train", *FLAGS, "--local-processes", "2", "--run-dir", run_dir, wait=False)
    wait_for_rows(run_dir, 2, [launcher])
    launcher.send_signal(signal.SIGINT)
    out, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 130, err[-3000:]
    assert "Traceback" not in err
    assert f"resume with: gymjax train --run-dir {run_dir} --resume --local-processes 2" in out
    # a single process continues it (the envs are re-split over its one device, with a warning)
    with pytest.warns(UserWarning, match="written on 2 device"):
        assert main(["train", "--run-dir", str(run_dir), "--resume"]) == 0
    assert rows(run_dir) == rows(uninterrupted)


def test_distributed_flags_are_checked():
    with pytest.raises(ValueError, match="go together"):
        distributed.initialize("127.0.0.1:1234", None, None)
    with pytest.raises(ValueError, match=r"--process-id must lie in \[0, 2\)"):
        distributed.initialize("127.0.0.1:1234", 2, 5)


def children(pid):
    """The pids whose parent is ``pid`` (from /proc, as pgrep -P)."""
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid):
    try:
        return (pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


def listening():
    """{socket inode: (address, port)} of every TCP socket in LISTEN state, IPv4 and IPv6."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in pathlib.Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                hex_address, hex_port = fields[1].split(":")
                raw = bytes.fromhex(hex_address)  # 32-bit words in host (little-endian) order
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                family = socket.AF_INET if len(raw) == 4 else socket.AF_INET6
                found[int(fields[9])] = (socket.inet_ntop(family, raw), int(hex_port, 16))
    return found


def socket_inodes(pid):
    inodes = set()
    for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1"}  # the second: IPv4 on a dual-stack socket


@pytest.mark.slow  # 39 s; make test ends a process that ignores the stop after the grace period
def test_processes_listen_on_loopback_only_and_die_with_their_launcher(tmp_path, uninterrupted):
    run_dir = tmp_path / "run"
    launcher = gymjax("train", *FLAGS, "--local-processes", "2", "--run-dir", run_dir, wait=False)
    wait_for_rows(run_dir, 2, [launcher])
    workers = children(launcher.pid)
    assert len(workers) == 2
    try:
        command = pathlib.Path(f"/proc/{workers[0]}/cmdline").read_text().split("\0")
        port = int(command[command.index("--coordinator") + 1].rsplit(":", 1)[1])
        # The coordinator (process 0) and gloo (every process) listen on 127.0.0.1 only, not on *:port.
        sockets = listening()
        assert {address for address, p in sockets.values() if p == port} <= LOOPBACK
        theirs = [sockets[i] for pid in workers for i in socket_inodes(pid) if i in sockets]
        assert port in {p for _, p in theirs} and len(theirs) >= 3, theirs  # coordinator + gloo in each
        assert {address for address, _ in theirs} <= LOOPBACK, theirs

        # SIGKILL: the launcher can pass nothing on; its processes notice and stop at an epoch.
        launcher.kill()
        start = time.monotonic()
        _, err = launcher.communicate(timeout=90)  # returns once every worker closed the pipes
        assert time.monotonic() - start < 90 and not any(alive(pid) for pid in workers)
        assert "the launcher" in err and "is gone" in err and "ending now" not in err, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        assert len(rows(run_dir)) < len(rows(uninterrupted))  # stopped, not left to finish as orphans
    finally:  # a failed check leaves no process behind
        launcher.kill()
        for pid in filter(alive, workers):
            os.killpg(pid, signal.SIGKILL)
    with open(run_dir / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: no orphan holds it
        fcntl.flock(lock, fcntl.LOCK_UN)
    resumed = gymjax("train", "--run-dir", run_dir, "--resume", "--local-processes", "2")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert rows(run_dir) == rows(uninterrupted)


def one_line_failures(commands, timeout=60):
    """Runs every ``gymjax`` command at once; for each its exit code, stderr lines and seconds taken."""
    start = time.monotonic()
    procs = [gymjax(*command, wait=False) for command in commands]
    results = []
    for p in procs:
        _, err = p.communicate(timeout=timeout)
        results.append((p.returncode, err.strip().splitlines(), time.monotonic() - start))
    return results


def explicit(coordinator, process_id=0, *extra):
    return ("train", "--run-dir", "unused", "--coordinator", coordinator, "--num-processes", "2",
            "--process-id", process_id, *extra)


MALFORMED = ("nonsense", "host:", ":123", "host:99999", "host:abc", "host:0", "::1:80", "host:１２")


@pytest.mark.parametrize("text", MALFORMED)
def test_a_malformed_coordinator_is_refused_before_jax(text):
    with pytest.raises(ValueError, match=r"--coordinator must be HOST:PORT with a port 1-65535"):
        distributed.initialize(text, 2, 1)


def test_the_coordinator_address_is_parsed():
    assert distributed.parse_coordinator("127.0.0.1:1234") == ("127.0.0.1", 1234)
    assert distributed.parse_coordinator("[::1]:65535") == ("::1", 65535)
    assert distributed.parse_coordinator("node-7.cluster:1") == ("node-7.cluster", 1)


# Processes that fail and exit on their own (18 s, mostly waiting on them): beside the serial
# group (tests/conftest.py), not in its queue.
@pytest.mark.xdist_group("beside_serial")
def test_a_bad_coordinator_a_port_in_use_and_a_missing_process_are_one_line_each():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        in_use = f"127.0.0.1:{taken.getsockname()[1]}"
        missing = f"127.0.0.1:{distributed.free_port()}"
        results = one_line_failures(
            [explicit("host:"), explicit("nonsense"), explicit(in_use),
             explicit(missing, 0, "--heartbeat-timeout", 2)]
        )
    (bad_code, bad, _), (bad2_code, bad2, _), (in_use_code, used, _), (missing_code, waited, seconds) = results
    expected = "--coordinator must be HOST:PORT with a port 1-65535 (e.g. 127.0.0.1:1234, [::1]:1234), got 'host:'"
    assert bad_code == bad2_code == 1 and bad == [expected]
    assert len(bad2) == 1 and "'nonsense'" in bad2[0]
    assert in_use_code == 1 and used == [
        f"--coordinator {in_use} is in use (another run's coordinator?): choose another port"
    ]
    # One line at once saying what it waits for, one when the wait (twice the heartbeat) is over;
    # JAX's own timeout, 10 s later, would abort with a C++ trace.
    assert missing_code == 1 and len(waited) == 2, waited
    assert waited[0] == f"process 0 of 2: waiting up to 4 s (twice --heartbeat-timeout) for all processes at {missing}"
    assert waited[1].startswith(f"process 0 of 2: not every process reached the coordinator at {missing} within 4 s")
    assert seconds < 30  # startup included; the wait itself is 4 s


def test_a_process_that_ignores_the_stop_is_ended_after_the_grace_period():
    # -1 is never a parent's pid: the launcher counts as gone at once.
    script = ("import signal; from gymjax.trainers import distributed\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stuck: never reaches a safe point\n"
              "distributed._end_with_launcher(-1, 1.0)")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script], env=ENV, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 143 and "ending now" in proc.stderr and time.monotonic() - start < 30, proc.stderr


def test_a_second_writer_in_several_processes_is_refused_in_every_process(tmp_path):
    """Process 0 alone takes the run directory's lock; its refusal stops the others too, in one
    line each, instead of a C++ abort of both when process 1 trains on alone."""
    run_dir = tmp_path / "run"
    lock = files.DirectoryLock(run_dir, "run directory")  # another writer holds it
    try:
        [(code, lines, seconds)] = one_line_failures([("train", *FLAGS, "--run-dir", run_dir, "--local-processes", 2)])
    finally:
        lock.release()
    text = "\n".join(lines)
    assert code == 1 and seconds < 60, text
    assert f"{run_dir} is in use by pid {os.getpid()}" in text and "another process refused to start" in text
    assert "Traceback" not in text and "Check failed" not in text
    assert sorted(p.name for p in run_dir.iterdir()) == [".lock"]  # nothing written


# Early stopping on process 0 (hooks run there alone), with checkpoints.
EARLY_STOPPING = textwrap.dedent(
    """
    import json, sys
    from gymjax.trainers import distributed
    distributed.initialize(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    import jax
    from ppo_configs import TINY
    from gymjax.trainers.hooks import EarlyStopping
    from gymjax.trainers.ppo import train

    config = TINY.replace(num_timesteps=30 * 8 * 16, epoch_iterations=1, num_evals=0, log_training_metrics=True,
                          save_every_epochs=2)
    early, epochs = EarlyStopping("train/episode_return", patience=4), []
    train(config, "JaxCartPole-v0", hooks=[early], checkpoint_dir=sys.argv[4], progress_bar=False,
          progress_fn=lambda steps, metrics: epochs.append(steps))
    print(json.dumps({"process": jax.process_index(), "early": early.state_dict(), "epochs": len(epochs)}))
    """
)


@pytest.mark.slow  # 30 s of two processes; the launcher's Ctrl-C stops every process in make test
def test_a_hook_on_process_zero_stops_every_process_at_its_epoch_and_its_state_is_saved(tmp_path):
    first, second = processes(2, script=EARLY_STOPPING, args=[tmp_path])
    stopped = first["early"]["stopped_epoch"]
    assert stopped is not None and first["epochs"] == stopped < 30  # the hook ran on process 0 ...
    assert second["early"]["stopped_epoch"] is None and second["epochs"] == 0  # ... alone
    # Both processes took part in saving the stopping epoch (off the every-2 schedule when odd);
    # the hooks item holds process 0's state.
    assert ckpt.step_dirs(tmp_path)[-1] == stopped
    saved = json.loads((tmp_path / str(stopped) / "hooks" / "metadata").read_text())
    assert saved["hooks"] == [{"index": 0, "class": "EarlyStopping", "state": first["early"]}]


def test_a_launcher_started_ignoring_sigint_keeps_ignoring_it(monkeypatch):
    """A background job's launcher inherits SIGINT ignored: it must not forward a Ctrl-C it was
    shielded from to its workers (issue 51's inherited ignore, for --local-processes)."""
    seen = {}

    class Worker:  # a process that has already ended
        returncode = 0

        def __init__(self, *args, **kwargs):
            pass

        def poll(self):
            return 0

    def wait_all(procs, grace_s):
        seen.update({s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)})

    monkeypatch.setattr(distributed.subprocess, "Popen", Worker)
    monkeypatch.setattr(distributed, "_wait_all", wait_all)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert distributed.launch_local(["train"], 2) == 0
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # and left so afterwards
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen[signal.SIGINT] is signal.SIG_IGN and callable(seen[signal.SIGTERM])  # SIGTERM still forwarded
