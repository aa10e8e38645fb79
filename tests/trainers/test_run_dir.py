"""Run directories under faults: real ``gymjax train`` runs on CartPole killed, interrupted,
corrupted, run twice at once, filled up; and the checks that keep one run's data from being
lost or mixed with another's."""

import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest
from child_signals import from_a_terminal  # tests/child_signals.py
from ppo_configs import TINY

from gymjax.cli import main
from gymjax.trainers.hooks import Hook
from gymjax.trainers.loggers import CSVLogger, JSONLLogger, TensorBoardLogger, read_rows
from gymjax.trainers.ppo import PPOConfig, load_policy, train
from gymjax.trainers.store import checkpoint as ckpt

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = ROOT / ".jax_cache"
ENV = "JaxCartPole-v0"

# 128 env steps an iteration, 2 iterations an epoch: many short epochs, each with a checkpoint.
FLAGS = [
    "--env", ENV, "--num-envs", "8", "--unroll-length", "16", "--num-minibatches", "2",
    "--update-epochs", "4", "--num-evals", "2", "--num-eval-envs", "4", "--epoch-iterations", "2",
    "--max-to-keep", "3", "--policy-hidden-sizes", "16,16", "--quiet", "--no-video",
]
EPOCH = 256


def steps(directory):
    return ckpt.step_dirs(pathlib.Path(directory))


def cli(*args, wait=True):
    """``gymjax ...`` in a fresh process (the persistent compilation cache keeps it short)."""
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(CACHE), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.5",
           "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "gymjax", *map(str, args)]
    if wait:
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    with from_a_terminal():  # the tests send it signals, whatever the suite's launcher hands this process
        return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_rows(metrics, n, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if metrics.exists() and len(read_rows(metrics)[1]) >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"no {n} rows in {metrics} after {timeout} s")


def final_policy_output(run_dir):
    obs = jax.random.normal(jax.random.PRNGKey(0), (32, 4))
    return np.asarray(
        load_policy(pathlib.Path(run_dir) / "checkpoints", deterministic=False)(obs, jax.random.PRNGKey(1))
    )


def epoch_rows(run_dir):
    return [int(r["env_steps"]) for r in read_rows(pathlib.Path(run_dir) / "metrics.csv")[1]]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted 40-epoch run: what every interrupted-and-resumed run must end as."""
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    assert main(["train", *FLAGS, "--timesteps", str(40 * EPOCH), "--run-dir", str(run_dir)]) == 0
    return run_dir


# -- stopping ------------------------------------------------------------------------------


# SIGTERM takes the same path as SIGINT through the guard (a KeyboardInterrupt); its 20 s run is slow.
@pytest.mark.parametrize("signum, code",
                         [(signal.SIGINT, 130), pytest.param(signal.SIGTERM, 143, marks=pytest.mark.slow)])
def test_a_signal_stops_cleanly_saves_and_resumes_exactly(tmp_path, reference, signum, code):
    run_dir = tmp_path / "run"
    proc = cli("train", *FLAGS, "--timesteps", 40 * EPOCH, "--run-dir", run_dir, wait=False)
    wait_for_rows(run_dir / "metrics.csv", 2, proc)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err[-3000:]
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    last = out.strip().splitlines()[-1]
    assert last.startswith("stopped at epoch ") and last.endswith(
        f"resume with: gymjax train --run-dir {run_dir} --resume"
    )
    epoch = int(last.split()[3].rstrip(","))
    assert 2 <= epoch < 40 and steps(run_dir / "checkpoints")[-1] == epoch  # the epoch in flight was saved
    assert epoch_rows(run_dir) == [EPOCH * (i + 1) for i in range(epoch)]

    assert main(["train", "--run-dir", str(run_dir), "--resume"]) == 0
    assert epoch_rows(run_dir) == epoch_rows(reference)
    np.testing.assert_array_equal(final_policy_output(run_dir), final_policy_output(reference))


def test_sigkill_mid_run_resumes_exactly_and_a_second_writer_is_refused(tmp_path, reference):
    run_dir = tmp_path / "run"
    proc = cli("train", *FLAGS, "--timesteps", 40 * EPOCH, "--run-dir", run_dir, wait=False)
    wait_for_rows(run_dir / "metrics.csv", 3, proc)
    # While it trains: a second writer gets one line naming the holder; a reader works.
    second = cli("train", "--run-dir", run_dir, "--resume")
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert f"is in use by pid {proc.pid}" in second.stderr.strip().splitlines()[-1]
    assert load_policy(run_dir / "checkpoints")(np.zeros(4, np.float32)).shape == ()
    proc.kill()
    proc.communicate()

    assert main(["train", "--run-dir", str(run_dir), "--resume"]) == 0
    assert epoch_rows(run_dir) == epoch_rows(reference)  # no row duplicated or missing
    np.testing.assert_array_equal(final_policy_output(run_dir), final_policy_output(reference))


def test_stop_through_the_api_raises_training_stopped_after_saving(tmp_path):
    from gymjax.trainers.ppo import TrainingStopped

    class SignalAt(Hook):
        def after_epoch(self, progress, metrics):
            if progress.epoch == 2:
                os.kill(os.getpid(), signal.SIGINT)  # as a Ctrl-C during epoch 2 would arrive

    config = TINY.replace(save_every_epochs=3)
    # Python's own handler, as a process started from a terminal has it: a suite started in the
    # background hands this process SIGINT ignored, and training leaves an ignored SIGINT ignored.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(TrainingStopped) as stopped:
            train(config, ENV, hooks=[SignalAt()], checkpoint_dir=tmp_path, progress_bar=False)
        assert (stopped.value.epoch, stopped.value.exit_code) == (2, 130)
        assert steps(tmp_path) == [2] and stopped.value.checkpoint == tmp_path / "2"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored
    finally:
        signal.signal(signal.SIGINT, before)


# -- saved data is never lost or mixed ------------------------------------------------------


def test_a_new_run_refuses_a_directory_with_another_runs_steps(tmp_path):
    train(TINY, ENV, checkpoint_dir=tmp_path, progress_bar=False)
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir() if p.name != ".lock"}
    for max_to_keep in (3, None):
        with pytest.raises(ckpt.CheckpointError, match=r"already holds checkpoint steps 1, 2, 3, 4 \(env step 512"):
            train(TINY.replace(max_to_keep=max_to_keep, seed=1), ENV, checkpoint_dir=tmp_path, progress_bar=False)
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir() if p.name != ".lock"} == before

    # resuming one run into another's directory is refused too
    other = tmp_path.parent / "other"
    train(TINY.replace(seed=1), ENV, checkpoint_dir=other, progress_bar=False)
    with pytest.raises(ckpt.CheckpointError, match="written by another run"):
        train(TINY, ENV, checkpoint_dir=other, restore_checkpoint_path=tmp_path / "2", progress_bar=False)
    assert steps(other) == [1, 2, 3, 4]

    # the CLI: checkpoints without a run.json are another run's
    run_dir = tmp_path.parent / "cli"
    shutil.copytree(tmp_path, run_dir / "checkpoints")
    with pytest.raises(SystemExit, match="without a run.json"):
        main(["train", *FLAGS, "--timesteps", "512", "--run-dir", str(run_dir)])


def test_resuming_from_an_older_step_sets_the_later_ones_aside(tmp_path):
    train(TINY, ENV, checkpoint_dir=tmp_path, progress_bar=False)
    with pytest.warns(UserWarning, match=r"set aside the later checkpoints as 3.superseded-1, 4.superseded-1"):
        train(TINY, ENV, checkpoint_dir=tmp_path, restore_checkpoint_path=tmp_path / "2", progress_bar=False)
    assert steps(tmp_path) == [1, 2, 3, 4]
    assert (tmp_path / "3.superseded-1" / "state").is_dir()


def test_a_metrics_file_of_another_run_is_refused(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"env_steps": 128, "epoch": 1}\n')
    with pytest.raises(ValueError, match="already holds 1 rows of another run"):
        train(TINY, ENV, hooks=[JSONLLogger(path)], progress_bar=False)


def test_two_writers_of_one_directory(tmp_path):
    first = ckpt.Checkpointer(tmp_path)
    with pytest.raises(ckpt.DirectoryInUse, match=rf"is in use by pid {os.getpid()} on .* since"):
        ckpt.Checkpointer(tmp_path)
    first.close()
    ckpt.Checkpointer(tmp_path).close()  # released


# -- stuck runs ------------------------------------------------------------------------------


def test_a_failed_start_leaves_nothing_that_blocks_the_corrected_command(tmp_path):
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit, match="cannot make JaxCartPole-v9"):
        main(["train", *FLAGS, "--env", "JaxCartPole-v9", "--timesteps", "512", "--run-dir", str(run_dir)])
    with pytest.raises(SystemExit, match="cannot make JaxCartPole-v0 with {'nope': 1}"):
        main(["train", *FLAGS, "--env-kwargs", "nope=1", "--timesteps", "512", "--run-dir", str(run_dir)])
    assert not run_dir.exists()
    assert main(["train", *FLAGS, "--timesteps", "512", "--run-dir", str(run_dir)]) == 0


@pytest.mark.slow  # 20 s; a SIGKILL mid-run resumes exactly in make test (above)
def test_a_run_killed_before_its_first_checkpoint_resumes_or_restarts(tmp_path, reference):
    # What a kill during compile leaves: run.json, and maybe an empty checkpoint directory.
    for how in ("--resume", "again"):
        run_dir = tmp_path / how
        (run_dir / "checkpoints").mkdir(parents=True)
        shutil.copy(reference / "run.json", run_dir / "run.json")
        if how == "--resume":
            assert main(["train", "--run-dir", str(run_dir), "--resume"]) == 0
        else:
            assert main(["train", *FLAGS, "--timesteps", str(40 * EPOCH), "--run-dir", str(run_dir)]) == 0
        assert epoch_rows(run_dir) == epoch_rows(reference)
        np.testing.assert_array_equal(final_policy_output(run_dir), final_policy_output(reference))


# -- damaged files ---------------------------------------------------------------------------


def damage(step_dir, how):
    if how == "truncated":
        for f in step_dir.rglob("*"):
            if f.is_file() and f.stat().st_size > 64 and f.parent.name != "meta":
                f.write_bytes(f.read_bytes()[:32])
    elif how == "item missing":
        shutil.rmtree(step_dir / "policy")
    else:  # empty
        shutil.rmtree(step_dir)
        step_dir.mkdir()


@pytest.fixture
def finished(tmp_path, reference):
    run_dir = tmp_path / "run"
    shutil.copytree(reference, run_dir)
    return run_dir


@pytest.mark.parametrize("how", ["truncated", "item missing", "empty"])
def test_a_damaged_latest_checkpoint_falls_back_with_a_warning(finished, capsys, how):
    checkpoints = finished / "checkpoints"
    assert steps(checkpoints) == [38, 39, 40]
    damage(checkpoints / "40", how)
    with pytest.warns(UserWarning, match=r"checkpoints/40 is damaged"):
        main(["eval", "--run-dir", str(finished), "--episodes", "2"])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["checkpoint_step"] == 39
    with pytest.warns(UserWarning, match=r"checkpoints/40 is damaged"):
        assert main(["train", "--run-dir", str(finished), "--resume", "--timesteps", str(42 * EPOCH)]) == 0
    assert steps(checkpoints) == [40, 41, 42]
    assert (checkpoints / "40.damaged-1").is_dir()  # kept for a post-mortem, not deleted
    assert epoch_rows(finished)[-4:] == [39 * EPOCH, 40 * EPOCH, 41 * EPOCH, 42 * EPOCH]


def test_one_damaged_step_directory_names_the_step(finished):
    damage(finished / "checkpoints" / "40", "item missing")
    with pytest.raises(ckpt.CheckpointError, match=r"no intact checkpoint in .*checkpoints: step 40: KeyError"):
        load_policy(finished / "checkpoints" / "40")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_torn_metrics_row_is_dropped_with_a_warning(tmp_path, fmt):
    run_dir = tmp_path / "run"
    flags = [*FLAGS, "--timesteps", str(4 * EPOCH), "--metrics-format", fmt, "--run-dir", str(run_dir)]
    assert main(["train", *flags]) == 0
    path = run_dir / f"metrics.{fmt}"
    text = path.read_text()
    path.write_text(text + ('{"env_steps": 1280, "epo' if fmt == "jsonl" else "1280,5,0.1\n"))
    with pytest.warns(UserWarning, match=rf"metrics.{fmt}: dropped unreadable row"):
        assert main(["train", "--run-dir", str(run_dir), "--resume", "--timesteps", str(5 * EPOCH)]) == 0
    assert [int(r["env_steps"]) for r in read_rows(path)[1]] == [EPOCH * (i + 1) for i in range(5)]


# 14 s; make test fills the disk under a checkpoint's save (test_checkpoint.py) and under eval's and
# render's output (test_run_dir_security.py), and resumes runs stopped and killed (above).
@pytest.mark.slow
def test_a_full_disk_gives_one_line_and_the_run_resumes_once_there_is_room(tmp_path, reference):
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        run_dir = mount / "run"
        full = cli("train", *FLAGS, "--max-to-keep", "none", "--timesteps", 40 * EPOCH, "--run-dir", run_dir)
        assert full.returncode == 1
        lines = full.stderr.strip().splitlines()
        assert len(lines) == 2 and lines[0].startswith("JAX "), full.stderr[-3000:]  # no traceback
        intact = steps(run_dir / "checkpoints")
        assert 0 < len(intact) < 40
        # The disk fills during a checkpoint or during a metrics or run.json write, by timing: either
        # way the line names what was being written, and the checkpoints that are intact.
        failed = (
            rf"checkpoint step {intact[-1] + 1} to {re.escape(str(run_dir / 'checkpoints'))}"
            rf"|{re.escape(str(run_dir))}/[\w.]+"
        )
        assert re.fullmatch(
            rf"could not write ({failed}): No space left on device; intact checkpoints: "
            + re.escape(", ".join(map(str, intact))),
            lines[1],
        ), lines[1]
        subprocess.run(["mount", "-o", "remount,size=64m", str(mount)], check=True)
        assert main(["train", "--run-dir", str(run_dir), "--resume"]) == 0
        assert epoch_rows(run_dir) == epoch_rows(reference)
        np.testing.assert_array_equal(final_policy_output(run_dir), final_policy_output(reference))
    finally:
        subprocess.run(["umount", str(mount)], check=True)


# -- values checked before training ------------------------------------------------------------


def test_restore_refuses_a_checkpoint_of_another_env(tmp_path):
    train(TINY, ENV, checkpoint_dir=tmp_path, progress_bar=False)
    with pytest.raises(ckpt.IncompatibleCheckpoint, match="trained on JaxCartPole-v0, not JaxPendulum-v0"):
        train(TINY, "JaxPendulum-v0", restore_checkpoint_path=tmp_path, progress_bar=False)
    from gymjax import envs
    from gymjax.envs.classic import Pendulum

    # an env object made by gymjax.make knows its id, and is refused by it as the id is
    with pytest.raises(ckpt.IncompatibleCheckpoint, match="trained on JaxCartPole-v0, not JaxPendulum-v0"):
        train(TINY, envs.make("JaxPendulum-v0"), restore_checkpoint_path=tmp_path, progress_bar=False)
    # one made by its class has no id: its spaces tell the runs apart
    with pytest.raises(ValueError, match="takes 4 observations, Pendulum gives 3"):
        train(TINY.replace(episode_length=200), Pendulum(), restore_checkpoint_path=tmp_path, progress_bar=False)


def test_num_timesteps_is_rounded_to_whole_iterations_and_said(capsys):
    config = PPOConfig(num_timesteps=100_000)  # 8,192 env steps an iteration
    assert config.total_env_steps == 12 * 8192 and config.num_epochs == 12  # nearest, not 163,840
    assert PPOConfig(num_timesteps=5_000_000).env_steps_per_epoch <= 250_000  # Ctrl-C stays prompt
    train(TINY.replace(num_timesteps=500), ENV, progress_bar=True)
    assert "training 512 env steps: num_timesteps=500 rounded to 4 epochs" in capsys.readouterr().err


def test_resume_extends_a_finished_run_and_honours_its_options(tmp_path):
    run_dir = tmp_path / "run"
    assert main(["train", *FLAGS, "--timesteps", str(2 * EPOCH), "--tensorboard", "--run-dir", str(run_dir)]) == 0
    events = len(list((run_dir / "tensorboard").iterdir()))
    with pytest.raises(SystemExit, match="only --timesteps may change"):
        main(["train", "--run-dir", str(run_dir), "--resume", "--learning-rate", "0.1", "--timesteps", "1024"])
    with pytest.raises(SystemExit, match="not past the run's 512 env steps"):
        main(["train", "--run-dir", str(run_dir), "--resume", "--timesteps", "256"])
    assert main(["train", "--run-dir", str(run_dir), "--resume", "--timesteps", str(4 * EPOCH)]) == 0
    assert epoch_rows(run_dir) == [EPOCH, 2 * EPOCH, 3 * EPOCH, 4 * EPOCH]  # epochs of the same size
    recorded = json.loads((run_dir / "run.json").read_text())["config"]
    assert recorded["num_timesteps"] == 4 * EPOCH and recorded["epoch_iterations"] == 2
    assert len(list((run_dir / "tensorboard").iterdir())) > events  # --tensorboard honoured on resume


def test_bad_command_line_values_get_one_line(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("")
    with pytest.raises(SystemExit, match="is a file; expected a run directory"):
        main(["eval", "--run-dir", str(a_file)])
    with pytest.raises(SystemExit) as error:
        main(["eval", "--run-dir", str(tmp_path), "--episodes", "0"])
    assert error.value.code == 2 and "expected a positive integer, got '0'" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="expected a .mp4 path"):
        main(["render", "--run-dir", str(tmp_path), "--out", "x.txt"])


def test_a_resume_in_the_same_second_keeps_the_earlier_tensorboard_events(tmp_path, monkeypatch):
    """tensorboardX names event files by the second; a resume that fast must not truncate the first file."""
    from tensorboardX import event_file_writer

    from gymjax.trainers.hooks import Progress

    monkeypatch.setattr(event_file_writer.time, "time", lambda: 1795522496.0)
    first = TensorBoardLogger(tmp_path)
    first.after_epoch(Progress(1, 128, 2), {"a": 1.0})
    first.close()
    (written,) = tmp_path.iterdir()
    kept = written.read_bytes()
    second = TensorBoardLogger(tmp_path)
    second.after_epoch(Progress(2, 256, 2), {"a": 2.0})
    second.close()
    assert len(list(tmp_path.iterdir())) == 2 and written.read_bytes() == kept


def test_csv_logger_resume_keeps_columns(tmp_path):
    """A resumed CSV keeps the rows up to the checkpoint and every column seen."""
    path = tmp_path / "metrics.csv"
    logger = CSVLogger(path)
    from gymjax.trainers.hooks import Progress

    logger.before_training(Progress(0, 0, 3), resumed=False)
    for epoch in (1, 2, 3):
        logger.after_epoch(Progress(epoch, 128 * epoch, 3), {"a": 1.0, **({"eval/x": 2.0} if epoch == 2 else {})})
    resumed = CSVLogger(path)
    resumed.before_training(Progress(2, 256, 3), resumed=True)
    resumed.after_epoch(Progress(3, 384, 3), {"a": 3.0})
    columns, rows = read_rows(path)
    assert "eval/x" in columns and [r["env_steps"] for r in rows] == ["128", "256", "384"] and rows[-1]["a"] == "3.0"
