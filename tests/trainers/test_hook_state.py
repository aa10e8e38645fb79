"""Hook state in checkpoints (killed and resumed runs end with the hooks' state of an uninterrupted
one), early stopping, older and damaged hook-state items, and the progress bar's chosen metrics."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from ppo_configs import TINY, StopAfter

from gymjax.trainers.hooks import EarlyStopping, Hook, Hooks, HookStateError, Progress, StopTraining
from gymjax.trainers.ppo import PPOTrainer, load_policy, train
from gymjax.trainers.runs import train as train_run
from gymjax.trainers.store import checkpoint as ckpt

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENV = "JaxCartPole-v0"
SUBPROCESS_ENV = {
    **os.environ,
    "JAX_COMPILATION_CACHE_DIR": str(ROOT / ".jax_cache"),
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.5",
    "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "trainers"), str(ROOT)]),
}


class Counter(Hook):
    """Counts after_epoch calls; the count is its state."""

    def __init__(self):
        self.count = 0

    def after_epoch(self, progress, metrics):
        self.count += 1

    def state_dict(self):
        return {"count": self.count}

    def load_state_dict(self, state):
        if not isinstance(state.get("count"), int):
            raise TypeError(f"expected an int count, got {state.get('count')!r}")
        self.count = state["count"]


# 30 one-iteration epochs, a checkpoint every 2; early stopping on the training return.
RUN = textwrap.dedent(
    """
    import json, os, signal, sys
    from ppo_configs import TINY
    from test_hook_state import Counter
    from gymjax.trainers.hooks import EarlyStopping, Hook
    from gymjax.trainers.ppo import train

    class KillAt(Hook):  # stateless: the resume's stateful hooks are the same two
        def __init__(self, epoch):
            self.epoch = epoch
        def after_epoch(self, progress, metrics):
            if progress.epoch == self.epoch:
                os.kill(os.getpid(), signal.SIGKILL)  # after epoch `epoch`, before its (odd) step is saved

    directory, kill_at, resume = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "resume"
    config = TINY.replace(num_timesteps=30 * 8 * 16, epoch_iterations=1, num_evals=0, log_training_metrics=True,
                          save_every_epochs=2)
    hooks = [Counter(), EarlyStopping("train/episode_return", patience=4)] + ([KillAt(kill_at)] if kill_at else [])
    epochs = []
    train(config, "JaxCartPole-v0", hooks=hooks, checkpoint_dir=directory,
          restore_checkpoint_path=directory if resume else None, progress_bar=False,
          progress_fn=lambda steps, metrics: epochs.append(steps // config.env_steps_per_epoch))
    print(json.dumps({"count": hooks[0].count, "early": hooks[1].state_dict(), "epochs": epochs}))
    """
)


def run_script(directory, kill_at=0, resume=False, wait=True):
    command = [sys.executable, "-c", RUN, str(directory), str(kill_at), "resume" if resume else "fresh"]
    proc = subprocess.Popen(command, env=SUBPROCESS_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc


def finished(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow  # 22 s; a resume's hook state runs in make test in the case below
def test_a_killed_and_resumed_run_ends_with_the_hook_state_of_an_uninterrupted_one(tmp_path):
    kill_at = 7
    uninterrupted = run_script(tmp_path / "uninterrupted")
    killed = run_script(tmp_path / "killed", kill_at=kill_at)  # both at once: two cores
    expected = finished(uninterrupted)
    killed.communicate(timeout=300)
    assert killed.returncode == -9
    stop = expected["early"]["stopped_epoch"]
    # The premise: early stopping ends the run after the kill and before the budget.
    assert kill_at < stop < 30 and expected["count"] == stop and expected["epochs"] == list(range(1, stop + 1))
    assert ckpt.step_dirs(tmp_path / "killed")[-1] == kill_at - 1

    resumed = finished(run_script(tmp_path / "killed", resume=True))
    assert resumed["epochs"] == list(range(kill_at, stop + 1))  # epoch 7 again, as it was not saved
    assert resumed["count"] == stop  # the count restored from step 6, not 0 and not 7
    assert resumed["early"] == expected["early"]  # the same best, wait and stopping epoch
    assert ckpt.step_dirs(tmp_path / "killed")[-1] == stop  # the stopping epoch saved, off the schedule

    # A resume of the stopped run trains nothing: its EarlyStopping stops it again at once.
    again = finished(run_script(tmp_path / "killed", resume=True))
    assert again["epochs"] == [] and again["count"] == stop and again["early"] == expected["early"]


@pytest.fixture(scope="module")
def two_steps(tmp_path_factory):
    """Steps 1 and 2 of TINY (4 epochs) with a Counter's state; a pristine copy per test."""
    directory = tmp_path_factory.mktemp("two") / "ckpt"
    with pytest.raises(KeyboardInterrupt):
        train(TINY, ENV, hooks=[Counter(), StopAfter(2)], checkpoint_dir=directory, progress_bar=False)
    return directory


@pytest.fixture
def steps(two_steps, tmp_path):
    directory = tmp_path / "ckpt"
    shutil.copytree(two_steps, directory)
    return directory


def resume(directory, hooks, path=None):
    train(TINY, ENV, hooks=hooks, checkpoint_dir=directory, restore_checkpoint_path=path or directory,
          progress_bar=False)


def test_a_checkpoint_written_before_hook_state_resumes_with_hooks_fresh(steps):
    for step in (1, 2):  # as an earlier gymjax wrote them: no hooks item, no "hook_state" in meta
        shutil.rmtree(steps / str(step) / "hooks")
        meta_file = steps / str(step) / "meta" / "metadata"
        meta = json.loads(meta_file.read_text())
        del meta["hook_state"]
        meta_file.write_text(json.dumps(meta))
    assert load_policy(steps)(np.zeros(4, np.float32)).shape == ()
    counter = Counter()
    with pytest.warns(UserWarning, match="holds no hook state .* every hook starts fresh"):
        resume(steps, [counter])
    assert counter.count == 2  # epochs 3 and 4 only


def test_a_damaged_hook_state_item_is_one_line_and_the_reader_falls_back(steps):
    for text in ("{not json", json.dumps({"format": 1, "hooks": [{"index": "0", "class": "Counter"}]})):
        (steps / "2" / "hooks" / "metadata").write_text(text)
        with pytest.raises(ckpt.CheckpointError) as error:
            PPOTrainer(TINY, ENV).restore(steps / "2")  # that step alone: it cannot be used
        assert len(str(error.value).splitlines()) == 1 and "step 2" in str(error.value)
    assert "the hooks item has the entry {'index': '0', 'class': 'Counter'}; expected" in str(error.value)
    assert load_policy(steps / "2")(np.zeros(4, np.float32)).shape == ()  # a policy never reads hook state

    counter = Counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resume(steps, [counter])
    damaged = [str(w.message) for w in caught if "is damaged" in str(w.message)]
    assert len(damaged) == 1 and len(damaged[0].splitlines()) == 1 and "hooks item" in damaged[0]
    assert counter.count == 4  # 1 restored from step 1, then epochs 2, 3, 4


def test_a_hook_refusing_its_state_is_one_line_naming_it_and_nothing_changes(steps):
    item = steps / "2" / "hooks" / "metadata"
    saved = json.loads(item.read_text())
    assert saved["hooks"] == [{"index": 0, "class": "Counter", "state": {"count": 2}}]
    saved["hooks"][0]["state"] = {"count": "two"}
    item.write_text(json.dumps(saved))
    with pytest.raises(HookStateError) as error:
        resume(steps, [Counter()])
    assert str(error.value) == (
        "hook 0 (Counter) cannot load its state from checkpoint step 2: TypeError: expected an int count, got 'two'"
    )
    assert ckpt.step_dirs(steps) == [1, 2]


def test_another_hook_list_is_warned_and_matching_hooks_keep_their_state():
    saved = Hooks([Counter(), EarlyStopping("losses/total", mode="min")]).state_dict()
    saved["hooks"][0]["state"]["count"] = 5
    counter, early = Counter(), EarlyStopping("losses/total", mode="min")
    with pytest.warns(UserWarning) as caught:
        Hooks([early, Hook(), counter]).load_state_dict(saved)
    assert [str(w.message) for w in caught] == [
        (
            "the hooks differ from those that wrote the checkpoint (saved: 0:Counter, 1:EarlyStopping; "
            "now: 0:EarlyStopping, 1:Counter): none get their state back, the others start fresh"
        )
    ]
    assert counter.count == 0
    Hooks([Hook(), counter, Hook(), early]).load_state_dict(saved)  # stateless hooks do not count

    assert counter.count == 5


def test_hook_state_must_be_json_and_early_stopping_validates_its_own():
    class Bad(Counter):
        def state_dict(self):
            return {"count": float("nan")}

    with pytest.raises(TypeError, match=r"^hook 0 \(Bad\)\.state_dict\(\) must return JSON values"):
        Hooks([Hook(), Bad()]).state_dict()
    with pytest.raises(ValueError, match="expected the keys best, waited, stopped_epoch; got best"):
        EarlyStopping().load_state_dict({"best": 1.0})
    with pytest.raises(ValueError, match="expected waited to be an int >= 0, got -1"):
        EarlyStopping().load_state_dict({"best": 1.0, "waited": -1, "stopped_epoch": None})


def test_early_stopping_counts_measurements_and_the_other_hooks_still_run():
    early, counter = EarlyStopping("eval/episode_return", patience=2, min_delta=1.0), Counter()
    hooks = Hooks([early, counter])
    returns = [10.0, None, 10.5, 12.0, None, 12.9, 11.0]  # None: an epoch without evaluation
    for epoch, value in enumerate(returns, 1):
        hooks.after_epoch(Progress(epoch, epoch, 10), {} if value is None else {"eval/episode_return": value})
        if hooks.stop:
            break
    assert isinstance(hooks.stop, StopTraining) and epoch == 7 and counter.count == 7
    assert early.state_dict() == {"best": 12.0, "waited": 2, "stopped_epoch": 7}


def test_progress_metrics_chooses_what_the_bar_shows(capfd):
    train(TINY, ENV, progress_bar=True, progress_metrics=("losses/total", "eval/episode_return"))
    err = capfd.readouterr().err
    last = err.split("\r")[-1]
    assert "losses/total=" in last and "eval/episode_return=" in last and "ret=" not in err and "sps=" not in err
    with pytest.raises(TypeError, match="a sequence of metric names, got the string 'losses/total'"):
        train(TINY, ENV, progress_metrics="losses/total")


# -- a run directory's start: every check before anything is written -----------------------------


class Unsavable(Counter):
    """A state holding a set: not JSON, so no checkpoint could hold it."""

    def state_dict(self):
        return {"seen": {self.count}}


def test_a_hook_whose_state_cannot_be_saved_is_refused_before_the_run_starts(tmp_path):
    run_dir = tmp_path / "run"
    with pytest.raises(TypeError, match=r"^hook 0 \(Unsavable\)\.state_dict\(\) must return JSON values"):
        train_run(run_dir, ENV, TINY, hooks=[Unsavable()], console=False, progress_bar=False, video=False)
    assert not run_dir.exists()  # no run.json, no metrics row: the corrected command starts afresh


def test_a_resume_refused_by_a_hook_leaves_run_json_as_it_was_and_announces_nothing(tmp_path, capsys):
    run_dir = tmp_path / "run"
    config = TINY.replace(num_timesteps=2 * 8 * 16, num_evals=1, epoch_iterations=1)
    train_run(run_dir, ENV, config, hooks=[Counter()], console=False, progress_bar=False, video=False)
    item = run_dir / "checkpoints" / "2" / "hooks" / "metadata"
    saved = json.loads(item.read_text())
    saved["hooks"][0]["state"] = {"count": "two"}
    item.write_text(json.dumps(saved))
    recorded = (run_dir / "run.json").read_bytes()
    capsys.readouterr()
    with pytest.raises(HookStateError, match="hook 0 \\(Counter\\) cannot load its state"):
        train_run(run_dir, resume=True, num_timesteps=4 * 8 * 16, hooks=[Counter()], console=False,
                  progress_bar=False, video=False)
    assert (run_dir / "run.json").read_bytes() == recorded  # num_timesteps not extended
    assert "training to" not in capsys.readouterr().out  # the plan is said once every check has passed
    assert ckpt.step_dirs(run_dir / "checkpoints") == [1, 2]

    counter = Counter()  # the same resume, the state repaired: the plan is said and recorded
    saved["hooks"][0]["state"] = {"count": 2}
    item.write_text(json.dumps(saved))
    train_run(run_dir, resume=True, num_timesteps=4 * 8 * 16, hooks=[counter], console=False, progress_bar=False,
              video=False)
    assert "training to 512 env steps (was 256)" in capsys.readouterr().out
    assert json.loads((run_dir / "run.json").read_text())["config"]["num_timesteps"] == 4 * 8 * 16
    assert counter.count == 4
