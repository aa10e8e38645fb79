"""Time-budgeted training (``train(minutes=...)``, ``gymjax train --minutes``): the run ends by the
deadline within one epoch, its chosen steps replay bit for bit, run.json records them and a resume
keeps them, and bad budgets are refused before any work."""

import argparse
import itertools
import json
import math
import pathlib
import re
import shutil
import subprocess
import sys
import time

import jax
import numpy as np
import pytest
from ppo_configs import TINY

from gymjax.cli import main
from gymjax.cli import run as cli_run
from gymjax.trainers import checkpoint as ckpt
from gymjax.trainers import rundir
from gymjax.trainers.loggers import read_rows
from gymjax.trainers.ppo import budget, train

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENV = "JaxCartPole-v0"
# The linear schedule: the run's rate must reach 0 over the steps it chose, and a replay must agree.
CONFIG = TINY.replace(lr_schedule="linear", max_to_keep=1)
CLI_FLAGS = [
    "--env", ENV, "--num-envs", "8", "--unroll-length", "16", "--num-minibatches", "2", "--update-epochs", "2",
    "--num-evals", "4", "--num-eval-envs", "4", "--max-to-keep", "none", "--policy-hidden-sizes", "16,16",
    "--no-video",
]


def same_tree(a, b):
    return all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(np.array_equal(x, y)), a, b)))


def without_times(metrics):
    return {k: v for k, v in metrics.items() if not k.startswith("time/") and k != "sps"}


# It measures its own speed, then keeps to a deadline: another worker's compile between the two would break it.
@pytest.mark.serial
def test_timed_run_ends_by_the_deadline_and_its_steps_replay_bit_for_bit(tmp_path):
    minutes = 0.5
    calls = []  # (time, metrics) after every epoch, its evaluation and checkpoint included
    start = time.time()
    _, params, metrics = train(
        CONFIG, ENV, minutes=minutes, checkpoint_dir=tmp_path / "timed",
        progress_fn=lambda step, m: calls.append((time.time(), m)), progress_bar=False,
    )
    wall = time.time() - start
    chosen = ckpt.read_meta(tmp_path / "timed")["config"]["num_timesteps"]
    assert metrics["env_steps"] == chosen and len(calls) > CONFIG.num_evals
    # The longest wait between two epochs' reports: an epoch with its evaluation and checkpoint.
    reported = [t for t, _ in calls]
    epoch_s = max(b - a for a, b in itertools.pairwise(reported))
    assert wall <= minutes * 60 + epoch_s, (wall, epoch_s, chosen)
    # It trains for the budget, not a token run (it ends near 90% of it here; a loaded machine varies).
    assert wall >= 0.5 * minutes * 60, (wall, chosen)

    again_calls = []
    _, again_params, _ = train(
        CONFIG.replace(num_timesteps=chosen), ENV, progress_fn=lambda step, m: again_calls.append(m),
        progress_bar=False,
    )
    assert same_tree(params, again_params)
    assert [without_times(m) for _, m in calls] == [without_times(m) for m in again_calls]


def test_minutes_refused_before_any_work(tmp_path):
    for bad in (0, -1.0, math.nan, math.inf, True, "5"):
        with pytest.raises(ValueError, match=r"minutes must be a real number > 0 .*got"):
            train(CONFIG, ENV, minutes=bad)
    for long in (1e308, budget.MAX_MINUTES + 1):  # 1e308 * 60 was inf: the timing never ended
        with pytest.raises(ValueError, match=r"minutes must be at most 10,080 \(a week; give num_timesteps .*got"):
            train(CONFIG, ENV, minutes=long)
    with pytest.raises(ValueError, match="is when a time budget starts counting; give minutes too"):
        train(CONFIG, ENV, started_at=time.time())
    with pytest.raises(ValueError, match="a resumed run continues the steps its checkpoint records"):
        train(CONFIG, ENV, minutes=1, restore_checkpoint_path=tmp_path)
    with pytest.raises(rundir.RunDirectoryError, match="give one of them"):
        rundir.train(tmp_path / "a", ENV, CONFIG, minutes=1, num_timesteps=1000)
    with pytest.raises(rundir.RunDirectoryError, match=r"drop \['minutes'\]"):
        rundir.train(tmp_path / "b", resume=True, minutes=1)
    record = rundir.RunRecord(ENV, {}, CONFIG, minutes=2).to_json()
    assert record["minutes"] == 2.0
    for bad in ("soon", 0, -2.5, 1e308):
        with pytest.raises(rundir.RunDirectoryError, match="minutes must be"):
            rundir.RunRecord.from_json({**record, "minutes": bad})
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--minutes", "0"], "argument --minutes: expected a number of minutes > 0, got '0'"),
        (["--minutes", "nan"], "argument --minutes: expected a number of minutes > 0, got 'nan'"),
        (["--minutes", "1e308"], r"argument --minutes: expected a number of minutes up to 10,080 \(a week; give "
                                 r"--timesteps for a longer run\), got '1e308'"),
        (["--minutes", "1", "--timesteps", "512"], "--minutes chooses --timesteps"),
        (["--minutes", "1", "--local-processes", "2"], "--minutes times one process; drop --local-processes"),
        (["--minutes", "1", "--resume"], r"only --timesteps may change .*'--minutes'\]"),
    ],
)
def test_cli_refuses_bad_minutes(tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", *CLI_FLAGS, "--run-dir", str(tmp_path / "run"), *flags])
    said = f"{exit_info.value.code} {capsys.readouterr().err}"
    assert re.search(message, said), said
    assert not (tmp_path / "run").exists()


def test_cli_records_the_chosen_steps_and_resume_keeps_them(tmp_path, capsys, monkeypatch):
    """The run directory's plumbing, with the machine's timing given: 0.5 s an iteration."""
    timed = []

    def measure(config, make_trainer, saves, timing_s):
        timed.append(config)
        return budget.Costs(setup_s=0.0, compile_s=0.0, iteration_s=0.5, epoch_s=0.0, first_eval_s=0.0, eval_s=0.0,
                            save_s=0.0)

    monkeypatch.setattr(budget, "measure", measure)
    run_dir = tmp_path / "run"
    assert main(["train", *CLI_FLAGS, "--minutes", "1", "--run-dir", str(run_dir)]) == 0
    recorded = json.loads((run_dir / "run.json").read_text())
    chosen = recorded["config"]["num_timesteps"]
    # 57 s (the budget less its 5% safety) at 0.5 s an iteration of 128 env steps: 114 iterations at most.
    assert 100 * 128 <= chosen <= 114 * 128 and recorded["minutes"] == 1.0
    assert f"training {chosen:,} env steps to end by the 1-minute deadline" in capsys.readouterr().err
    rows = [int(r["env_steps"]) for r in read_rows(run_dir / "metrics.csv")[1]]
    assert rows[-1] == chosen and len(timed) == 1

    for step in ckpt.step_dirs(run_dir / "checkpoints")[2:]:  # as if killed after epoch 2
        shutil.rmtree(run_dir / "checkpoints" / str(step))
    assert main(["train", "--run-dir", str(run_dir), "--resume", "--quiet", "--no-video"]) == 0
    assert len(timed) == 1  # not timed again: the recorded steps
    assert json.loads((run_dir / "run.json").read_text())["config"]["num_timesteps"] == chosen
    assert [int(r["env_steps"]) for r in read_rows(run_dir / "metrics.csv")[1]] == rows


def test_the_most_steps_that_fit():
    costs = budget.Costs(
        setup_s=1.0, compile_s=2.0, iteration_s=0.01, epoch_s=0.05, first_eval_s=0.5, eval_s=0.1, save_s=0.2
    )
    chosen = budget.largest_fitting(CONFIG, costs, 30.0)
    assert 0.9 * 30 <= costs.run_s(chosen) <= 30
    # The steps it trains are its num_timesteps, and nothing else changed.
    assert chosen.num_timesteps == chosen.total_env_steps
    assert chosen.replace(num_timesteps=CONFIG.num_timesteps) == CONFIG
    # setup and compile alone take 3 s
    assert budget.largest_fitting(CONFIG, costs, 2.9) is None


# Its bound is half a second from the launch to the child's start.
@pytest.mark.serial
def test_cli_budget_counts_from_the_process_start():
    """A command line's budget counts its imports (JAX's: seconds); main(argv) from Python's from the call."""
    child = (
        "import argparse, sys, time; from gymjax.cli import run; "
        "print(run._started_at(argparse.Namespace(argv=sys.argv[1:])), time.time())"
    )
    launched = time.time()
    out = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=120)
    started, imported = map(float, out.stdout.split())
    assert launched - 0.05 <= started <= min(launched + 0.5, imported), (launched, started, imported)
    assert abs(cli_run._started_at(argparse.Namespace(argv=["train"])) - time.time()) < 0.1
