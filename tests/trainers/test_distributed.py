"""Several processes on jax.distributed (gloo on CPU), tested with local processes on CartPole."""

import hashlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import jax
import numpy as np
import pytest

from gymjax.cli import main
from gymjax.trainers import checkpoint as ckpt
from gymjax.trainers import distributed
from gymjax.trainers.loggers import read_rows
from gymjax.trainers.ppo import load_policy

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


def processes(n, *extra_env):
    """``SCRIPT`` in ``n`` processes connected on 127.0.0.1; their JSON lines, by process."""
    port = distributed.free_port()
    procs = [
        subprocess.Popen([sys.executable, "-c", SCRIPT, f"127.0.0.1:{port}", str(n), str(i)], env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(n)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]


def test_two_processes_keep_identical_parameters_and_equal_one_process_with_two_devices():
    first = processes(2)
    assert [r["devices"] for r in first] == [2, 2]  # one global mesh over both processes
    assert first[0]["params"] == first[1]["params"]
    assert len(first[0]["losses"]) == 4 and first[1]["losses"] == []  # callbacks run on process 0 only
    assert processes(2)[0]["params"] == first[0]["params"]  # the same seed, the same run
    # One process with two forced devices splits the envs the same way (4 per device, same keys):
    # the gloo all-reduce of two values is the in-process one, bit for bit.
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
    return subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def policy_digest(run_dir):
    obs = jax.random.normal(jax.random.PRNGKey(0), (32, 4))
    actions = np.asarray(load_policy(pathlib.Path(run_dir) / "checkpoints", deterministic=False)(obs, jax.random.PRNGKey(1)))
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
