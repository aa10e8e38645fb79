"""Time-budgeted training (``train(budget=Minutes(m))``, ``gymjax train --minutes``): the run ends by the
deadline within one epoch, however the machine's speed changes during it, its chosen steps replay
bit for bit, run.json records them (and where the deadline stopped the run) and a resume keeps
them, and bad budgets are refused before any work."""

import argparse
import ast
import graphlib
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
from gymjax.trainers import runs
from gymjax.trainers.hooks import Hook, Progress, StopTraining
from gymjax.trainers.loggers import read_rows
from gymjax.trainers.ppo import Minutes, budget, train
from gymjax.trainers.store import checkpoint as ckpt

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


class Slowdown(Hook):
    """The machine slowing down mid-run, by construction rather than by load: from the second epoch
    on, ``pause`` seconds of host work before each epoch. Notes when each epoch began."""

    def __init__(self, pause):
        self.pause = pause
        self.began = []

    def before_epoch(self, progress):
        self.began.append(time.time())
        if progress.epoch > 0:
            time.sleep(self.pause)


class StopAt(Hook):
    """Ends a run before epoch ``epoch``, as the deadline ended the run it replays."""

    def __init__(self, epoch):
        self.epoch = epoch

    def before_epoch(self, progress):
        if progress.epoch == self.epoch:
            raise StopTraining(f"at epoch {self.epoch}")


def last_line(capsys):
    return capsys.readouterr().err.strip().splitlines()[-1]


# It measures its own speed before keeping to a deadline, so not beside the parallel pass's compiles;
# it sleeps 40 s of its minute by construction, so beside the serial tests (tests/conftest.py), which
# its few light epochs barely load and whose load it is built to survive.
@pytest.mark.serial
@pytest.mark.xdist_group("beside_serial")
def test_timed_run_ends_by_the_deadline_and_its_steps_replay_bit_for_bit(tmp_path, capsys):
    """The run slows by a third of its budget before every epoch after the first, so its chosen
    steps cannot fit (they took the budget at the speed timed): the deadline must stop it, however
    loaded the machine is, and an epoch boundary before the deadline. (A minute: under a load of 7
    on 2 cores, setup and compile took 23 s.)"""
    minutes = 1
    slowdown = Slowdown(pause=minutes * 60 / 3)
    calls = []  # metrics after every epoch
    start = time.time()
    _, params, metrics = train(
        CONFIG, ENV, budget=Minutes(minutes), checkpoint_dir=tmp_path / "timed", hooks=[slowdown],
        progress_fn=lambda step, m: calls.append(m), progress_bar=False,
    )
    wall = time.time() - start
    chosen = ckpt.read_meta(tmp_path / "timed")["config"]["num_timesteps"]
    stopped = ckpt.read_meta(tmp_path / "timed")["env_steps"]
    assert metrics["env_steps"] == stopped < chosen and CONFIG.replace(num_timesteps=chosen).num_epochs > 2
    # Within one epoch of the deadline, on either side: it ran while the next epoch fitted.
    epoch_s = max(b - a for a, b in itertools.pairwise([*slowdown.began, start + wall]))
    assert minutes * 60 - 2 * epoch_s < wall <= minutes * 60 + epoch_s, (wall, epoch_s, chosen)
    said = last_line(capsys)
    assert re.fullmatch(
        rf"ended (at \d:\d\d of the 1:00 budget \(deadline met\)|[\d.]+ s past the 1:00 budget: .*); the "
        rf"deadline stopped it at env step {stopped:,} of the {chosen:,} chosen \(this machine ran slower than "
        rf"timed\): --timesteps {chosen} replays it up to there, and resuming it trains the rest", said
    ), said
    assert ("deadline met" in said) or wall > minutes * 60, (said, wall)

    again_calls = []
    _, again_params, _ = train(
        CONFIG.replace(num_timesteps=chosen), ENV, hooks=[StopAt(len(calls))],
        progress_fn=lambda step, m: again_calls.append(m), progress_bar=False,
    )
    assert same_tree(params, again_params)
    assert [without_times(m) for m in calls] == [without_times(m) for m in again_calls]


def test_the_deadline_times_each_epoch_as_the_run_goes():
    """Driven by a clock of its own: the calibration's forecast for the first epoch, then each
    epoch's own time, its evaluation's and its checkpoint's."""
    now = [10.0]  # setup, compile and calibration took 10 s
    config = CONFIG.replace(num_timesteps=100 * 128, epoch_iterations=10, num_evals=2)  # evaluates after 4, 9
    steps = config.env_steps_per_epoch
    costs = budget.Costs(setup_s=0, compile_s=0, iteration_s=0.1, epoch_s=0, first_eval_s=1, eval_s=0.5, save_s=0.2)
    deadline = budget.Deadline(config, costs, minutes=1, started_at=0.0, clock=lambda: now[0])

    def epoch(k, train_s, eval_s=3.0, save_s=0.2):
        deadline.before_epoch(Progress(k, k * steps, 10))
        now[0] += train_s
        if config.eval_after_epoch(k):
            now[0] += eval_s
            deadline.after_eval(Progress(k + 1, (k + 1) * steps, 10), {"time/eval_s": eval_s})
        deadline.after_epoch(Progress(k + 1, (k + 1) * steps, 10), {})
        now[0] += save_s
        deadline.after_checkpoint(Progress(k + 1, (k + 1) * steps, 10), None)

    epoch(0, 2.0)  # forecast 1 + 0.2 s (the calibration's), at 10 s: 12.2 s
    epoch(1, 8.0)  # the machine slows: forecast 2.2 s, at 12.2 s: 20.4 s
    epoch(2, 8.0)  # forecast 8.2 s, at 20.4 s: 28.6 s
    epoch(3, 8.0)  # 36.8 s
    epoch(4, 8.0)  # forecast 8 + 1 (the calibration's first evaluation) + 0.2 s: 9.2 s; it takes 11.2 s: 48 s
    epoch(5, 8.0)  # forecast 8.2 s (8 s less the 3 s evaluation), at 48 s: 56.2 s
    with pytest.raises(StopTraining, match=r"past the 1:00 deadline \(forecast 8.2 s, 3.8 s left\)"):
        epoch(6, 8.0)  # forecast 8.2 s, at 56.2 s: 64.4 s
    assert deadline.stopped_at == 6 * steps
    assert deadline.outcome() == (
        f"ended at 0:56 of the 1:00 budget (deadline met); the deadline stopped it at env step {6 * steps:,} of "
        f"the {config.num_timesteps:,} chosen (this machine ran slower than timed): --timesteps "
        f"{config.num_timesteps} replays it up to there, and resuming it trains the rest"
    )

    # The first epoch always runs (the budget was chosen to hold it); the last may overrun its forecast.
    now[0] = 59.0
    late = budget.Deadline(config, costs, minutes=1, started_at=0.0, clock=lambda: now[0])
    late.before_epoch(Progress(0, 0, 10))
    now[0] = 65.0
    assert late.outcome() == (
        "ended 5.0 s past the 1:00 budget: its last epoch began 1.0 s before the deadline, forecast to take "
        "1.2 s, and took 6.0 s (this machine slowed)"
    )


def test_the_old_budget_arguments_still_work_with_a_warning(tmp_path):
    with pytest.warns(DeprecationWarning, match=r"train\(minutes=\) is now train\(budget=ppo.Minutes"):
        with pytest.raises(ValueError, match="a resumed run continues"):  # taken as Minutes(1), then refused
            train(CONFIG, ENV, minutes=1, restore_checkpoint_path=tmp_path)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="give budget=ppo.Minutes"):
        train(CONFIG, ENV, started_at=time.time())
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="give one budget"):
        train(CONFIG, ENV, budget=Minutes(1), minutes=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'minute'"):
        train(CONFIG, ENV, minute=1)


def test_minutes_refused_before_any_work(tmp_path):
    for bad in (0, -1.0, math.nan, math.inf, True, "5"):
        with pytest.raises(ValueError, match=r"minutes must be a real number > 0 .*got"):
            train(CONFIG, ENV, budget=Minutes(bad))
    for long in (1e308, budget.MAX_MINUTES + 1):  # 1e308 * 60 was inf: the timing never ended
        with pytest.raises(ValueError, match=r"minutes must be at most 10,080 \(a week; give num_timesteps .*got"):
            Minutes(long)
    for bad in (math.nan, "now", True):
        with pytest.raises(ValueError, match="started_at must be a time.time"):
            Minutes(1, bad)
    with pytest.raises(TypeError, match=r"budget must be ppo.Minutes\(minutes\) or what time_budget returns, got 5"):
        train(CONFIG, ENV, budget=5)
    with pytest.raises(ValueError, match="a resumed run continues the steps its checkpoint records"):
        train(CONFIG, ENV, budget=Minutes(1), restore_checkpoint_path=tmp_path)
    with pytest.raises(runs.RunDirectoryError, match="give one of them"):
        runs.train(tmp_path / "a", ENV, CONFIG, minutes=1, num_timesteps=1000)
    with pytest.raises(runs.RunDirectoryError, match=r"drop \['minutes'\]"):
        runs.train(tmp_path / "b", resume=True, minutes=1)
    record = runs.RunRecord(ENV, {}, CONFIG, minutes=2).to_json()
    assert record["minutes"] == 2.0
    for bad in ("soon", 0, -2.5, 1e308):
        with pytest.raises(runs.RunDirectoryError, match="minutes must be"):
            runs.RunRecord.from_json({**record, "minutes": bad})
    assert runs.RunRecord.from_json({**record, "deadline_stop": 512}).deadline_stop == 512
    for bad in ({"deadline_stop": 0}, {"deadline_stop": 51.2}, {"deadline_stop": True}, {"deadline_stop": "512"},
                {"deadline_stop": 512, "minutes": None}):
        with pytest.raises(runs.RunDirectoryError, match="deadline_stop must be null, or an env step >= 1 with min"):
            runs.RunRecord.from_json({**record, **bad})
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


def measured(iteration_s, timed=None, closing_s=0.0):
    """A stand-in for budget.measure: this machine's timing, given; notes the seconds it was to take."""

    def measure(config, make_trainer, saves, timing_s, fits=None, closing=None):
        if timed is not None:
            timed.append(timing_s)
        # The closing work as the run directory times it (the plot: these runs make no video).
        closing_s_ = closing(None, None) if closing is not None else closing_s
        return budget.Costs(setup_s=0.0, compile_s=0.0, iteration_s=iteration_s, epoch_s=0.0, first_eval_s=0.0,
                            eval_s=0.0, save_s=0.0, closing_s=closing_s_)

    return measure


# It uses its minute (setup and compile took 30 s of 15 under a load of 4 on 2 cores), beside the serial tests.
@pytest.mark.serial
@pytest.mark.xdist_group("beside_serial")
def test_cli_records_the_grown_plan_and_resume_and_timesteps_replay_it(tmp_path, capsys, monkeypatch):
    """Issue 51: timed at 0.5 s an iteration, the run is far ahead of its plan (an iteration here
    takes milliseconds), so it grows the plan from its measured epochs and uses the budget. Under
    --quiet too it says the steps it chose and, last, when the command ended (the plot included)
    and what replays it, which run.json records (replayed by the test below, on a smaller run)."""
    timed = []
    monkeypatch.setattr(budget, "measure", measured(0.5, timed))
    run_dir = tmp_path / "run"
    start = time.time()
    assert main(["train", *CLI_FLAGS, "--minutes", "1", "--run-dir", str(run_dir), "--quiet"]) == 0
    wall = time.time() - start
    recorded = json.loads((run_dir / "run.json").read_text())
    planned = recorded["config"]["num_timesteps"]
    said = capsys.readouterr().err
    chosen = int(re.search(r"training ([\d,]+) env steps to end by the 1-minute deadline", said)[1].replace(",", ""))
    # 57 s (the budget less its 5% safety) at 0.5 s an iteration of 128 env steps: 114 iterations at most.
    assert chosen <= 114 * 128 and recorded["minutes"] == 1.0 and len(timed) == 1
    rows = read_rows(run_dir / "metrics.csv")[1]
    epoch_s = max(float(b["time/elapsed_s"]) - float(a["time/elapsed_s"]) for a, b in itertools.pairwise(rows))
    # It grew (it trained well past the plan it chose), and used the budget to within an epoch or so.
    assert planned > 2 * chosen and recorded["config"]["epoch_iterations"] is not None
    assert wall > 60 - 2 * epoch_s - 5, (wall, epoch_s)  # 5 s: the plot's share, kept for it
    last = said.strip().splitlines()[-1]
    replay = f"--timesteps {planned} --epoch-iterations {recorded['config']['epoch_iterations']}"
    # "at 1:00" is a deadline met in its last half second (the clock shows whole seconds)
    assert re.match(r"ended (at (0:5\d|1:00) of the 1:00 budget \(deadline met; training ended at|[\d.]+ s past)",
                    last), last
    assert f"it grew from {chosen:,} to {planned:,} env steps" in last and replay in last, last
    trained = recorded["deadline_stop"] or planned
    assert int(rows[-1]["env_steps"]) == trained


@pytest.mark.slow  # 60 s; the CLI's grown plan and its replay run in make test (the serial case above)
def test_a_grown_plan_is_what_resume_and_the_recorded_config_replay(tmp_path):
    """A 30-second budget timed at 50 ms an iteration grows its plan (an iteration takes about a
    millisecond here); run.json records the grown config, a resume from epoch 2 continues it bit for
    bit, and the recorded config replays it from the start bit for bit (a constant rate). Small, so
    that the resume and the replay train seconds, not the minute's million steps."""
    timed = []
    run_dir = tmp_path / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(budget, "measure", measured(0.05, timed))
        runs.train(run_dir, ENV, CONFIG.replace(lr_schedule="constant"), minutes=0.5, video=False, console=False,
                     progress_bar=False)
    recorded = json.loads((run_dir / "run.json").read_text())
    planned = recorded["config"]["num_timesteps"]
    assert recorded["config"]["epoch_iterations"] is not None and planned > 30 / 0.05 * 128  # it grew
    for step in ckpt.step_dirs(run_dir / "checkpoints")[2:]:  # as if killed after epoch 2
        shutil.rmtree(run_dir / "checkpoints" / str(step))
    _, resumed, metrics = runs.train(run_dir, resume=True, video=False, console=False, progress_bar=False)
    assert len(timed) == 1  # not timed again: the recorded steps
    assert metrics["env_steps"] == planned
    _, replayed, _ = train(runs.RunRecord.from_json(recorded).config, ENV, progress_bar=False)
    assert same_tree(resumed, replayed)


def test_a_run_ahead_of_its_plan_grows_it_and_ends_within_an_epoch_of_the_deadline():
    """Driven by a clock of its own: timed at 1 s an epoch, the run takes 0.25 s. A constant rate
    grows at the first boundary to the epochs that fit; a linear one also, less a compile and its
    margin, and no longer once half of its plan is trained. Closing work is kept out of training's
    share."""
    for schedule in ("constant", "linear"):
        now = [5.0]
        config = CONFIG.replace(lr_schedule=schedule, num_timesteps=40 * 128, epoch_iterations=1, num_evals=0)
        costs = budget.Costs(setup_s=0, compile_s=2.0, iteration_s=1.0, epoch_s=0, first_eval_s=0, eval_s=0,
                             save_s=0, closing_s=10.0)
        deadline = budget.Deadline(config, costs, minutes=1, started_at=0.0, clock=lambda now=now: now[0])
        grown = []
        deadline.on_grow = grown.append
        epoch, ended = 0, None
        while True:
            progress = Progress(epoch, epoch * 128, deadline.config.num_epochs)
            if epoch >= deadline.config.num_epochs:
                ended = now[0]
                break
            try:
                deadline.before_epoch(progress)
            except StopTraining:
                ended = now[0]
                break
            deadline.replan(progress)
            now[0] += 0.25
            epoch += 1
        # Training's deadline is 50 s (10 s kept for the plot and video): it ends within an epoch of it.
        if schedule == "constant":
            assert 50 - 0.25 <= ended <= 50, ended
            assert grown[0].num_timesteps == (1 + 179) * 128  # (50 - 5.25) / 0.25 epochs from the first boundary
        else:
            # (50 - 5.25 - 2) * 0.95 / 0.25 = 162.45 epochs from the first boundary; then no growth past half.
            # It ends with its margin unused: the compile it kept (this clock compiles nothing) and 5%.
            assert grown[0].num_timesteps == (1 + 162) * 128 and len(grown) == 1 and 45 < ended <= 50, ended
        assert all(g.epoch_iterations == 1 for g in grown) and deadline.config == grown[-1]

    # Linear, past half of its plan: it stands, however far ahead.
    config = CONFIG.replace(lr_schedule="linear", num_timesteps=40 * 128, epoch_iterations=1)
    late = budget.Deadline(config, costs, minutes=1, started_at=0.0, clock=lambda: 10.0)
    late.before_epoch(Progress(21, 21 * 128, 40))
    assert late.replan(Progress(21, 21 * 128, 40)) is None


def test_a_budget_too_short_is_refused_once_the_timing_shows_it(monkeypatch):
    """Issue 51: under load a 2-minute run compiled for 2:24, timed on, and was refused after 337 s.
    The compile alone tells: refused then, before any iteration is timed, in one line."""
    ran = []

    class Trainer:  # compiles (it says) for 150 s
        def init(self):
            return type("Run", (), {"state": np.zeros(1)})()

        def compile(self, run):
            return 150.0

        def run_epoch(self, run):
            ran.append("epoch")

    with pytest.raises(budget.BudgetTooShort) as refused:
        budget.choose(CONFIG, lambda c: Trainer(), 2, started_at=time.time(), saves=False, say=False)
    assert not ran
    assert re.fullmatch(r"minutes=2 is too short to train here: [\d.]+ s went to starting and timing, and the run's "
                        r"own setup and compile take 150\.\d s more; give at least 2\.\d minutes", str(refused.value))


def test_a_timing_still_running_at_the_deadline_says_so_then(capsys):
    """A compile that straddles the deadline cannot be interrupted: the line that the run cannot fit
    comes at the deadline, while the compile still runs, and the refusal when it returns."""
    said = []

    class Trainer:  # its compile really takes 6 s; the deadline is half a second away
        def init(self):
            return type("Run", (), {"state": np.zeros(1)})()

        def compile(self, run):
            time.sleep(6)
            said.append(capsys.readouterr().err)  # what was said while the compile ran
            return 6.0

    with pytest.raises(budget.BudgetTooShort):
        budget.choose(CONFIG, lambda c: Trainer(), 2, started_at=time.time() - 119.5, saves=False, say=False)
    assert "the 2-minute deadline has passed while this machine was being timed" in said[0]


@pytest.mark.slow  # 23 s; make test's serial cases stop at a deadline, replay it, and resume a grown plan
def test_a_deadline_stop_is_recorded_and_resuming_trains_what_replays_it(tmp_path, capsys, monkeypatch):
    """Timed at 10 ms an iteration, the run then pauses 4 s before its second epoch: past its 6 s
    budget whatever the machine, so the deadline stops it there. run.json says where; a resume
    trains the rest, which is what the printed --timesteps trains from the start."""
    monkeypatch.setattr(budget, "measure", measured(0.01))
    run_dir = tmp_path / "run"
    runs.train(run_dir, ENV, CONFIG, minutes=0.1, video=False, console=False, progress_bar=False,
                 hooks=[Slowdown(pause=4.0)])
    recorded = json.loads((run_dir / "run.json").read_text())
    chosen = recorded["config"]["num_timesteps"]
    assert recorded["deadline_stop"] == CONFIG.replace(num_timesteps=chosen).env_steps_per_epoch < chosen
    assert f"stopped it at env step {recorded['deadline_stop']:,} of the {chosen:,} chosen" in last_line(capsys)

    _, resumed, metrics = runs.train(run_dir, resume=True, video=False, console=False, progress_bar=False)
    assert metrics["env_steps"] == chosen
    _, replayed, _ = train(CONFIG.replace(num_timesteps=chosen), ENV, progress_bar=False)
    assert same_tree(resumed, replayed)


def test_a_long_budget_is_timed_for_at_most_half_a_minute(monkeypatch, capsys):
    """1% of a week was 100 silent minutes of timing; the deadline keeps the end without it. The
    steps chosen, which replay the run, are said even when the timing is not announced."""
    timed = []
    monkeypatch.setattr(budget, "measure", measured(0.5, timed))
    deadline = budget.choose(CONFIG, None, budget.MAX_MINUTES, started_at=time.time(), saves=False, say=False)
    assert timed == [budget.MAX_CALIBRATION_S]
    assert f"training {deadline.config.num_timesteps:,} env steps to end by the 10080-minute deadline" in last_line(
        capsys
    )


def test_the_trainers_import_no_circle():
    """Issue 39: ppo/budget.py and ppo/train.py imported each other (budget for its type hints)."""
    trainers = ROOT / "gymjax" / "trainers"
    modules = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p for p in trainers.rglob("*.py")
    }
    graph = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                # "from package import module" imports the module; "from module import name", the module
                imported |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                             for a in node.names}
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
        graph[name] = imported & set(modules) - {name}
    list(graphlib.TopologicalSorter(graph).static_order())  # CycleError names the circle


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


def test_networks_too_large_are_refused_in_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    """Issue 51: policy_hidden_sizes [60000, 60000] (3.6e9 weights, 14 GiB, and as much again for each
    of their gradients and Adam's two moments) passed a check that counted the batch alone, then
    ended the command in RESOURCE_EXHAUSTED. With 32 GiB to use it is refused, naming the fields; the
    default networks pass the same check."""
    import gymjax.envs
    from gymjax.trainers.ppo import memory

    monkeypatch.setattr(memory, "available_bytes", lambda: (32 * 2**30, "available host memory"))
    huge = CONFIG.replace(policy_hidden_sizes=(60000, 60000))
    with pytest.raises(ValueError) as refused:
        train(huge, ENV, progress_bar=False)
    said = str(refused.value)
    assert "\n" not in said
    assert re.match(r"policy_hidden_sizes=\[60000, 60000\] with value_hidden_sizes=\[.*\] needs at least "
                    r"5\d\.\d GiB \(3,60\d,\d{3},\d{3} network weights x 4 .*; available host memory is 32\.0 GiB\. "
                    r"Use smaller hidden layers", said), said
    memory.check_fits(CONFIG, gymjax.envs.make(ENV), 4, 1, CONFIG.num_envs)  # the usual size fits
    with pytest.raises(SystemExit) as exit_info:
        main(["train", *CLI_FLAGS, "--policy-hidden-sizes", "60000,60000", "--run-dir", str(tmp_path / "run")])
    assert "policy_hidden_sizes=[60000, 60000]" in str(exit_info.value.code), exit_info.value.code
    assert not (tmp_path / "run").exists()
