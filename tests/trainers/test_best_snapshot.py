"""The best evaluated policy, kept beside the last (gymjax.trainers.store.best): chosen by the trainer's
evaluation, surviving a kill and a resume, loaded by ``load_policy``/``eval``/``render``, refused
cleanly when absent, linked or another run's, and never lost to a kill during its save."""

import json
import os
import pathlib
import shutil

import jax
import numpy as np
import pytest
from ppo_configs import TINY, StopAfter

from gymjax.cli import main
from gymjax.trainers import runs
from gymjax.trainers.loggers import read_rows
from gymjax.trainers.ppo import load_policy, load_policy_and_meta
from gymjax.trainers.store import best
from gymjax.trainers.store import checkpoint as ckpt

ENV = "JaxCartPole-v0"
# 8 epochs of one iteration, an evaluation after each. With seed 0 the evaluations peak at
# epoch 2 and never reach that again, so the best and the last policies differ.
CONFIG = TINY.replace(num_timesteps=8 * 8 * 16, num_evals=8)
KILLED_AFTER = 3  # epochs saved before the kill
QUIET = {"video": False, "console": False, "progress_bar": False}


def evaluations(run_dir):
    """``[(epoch, eval/episode_return, env_steps)]`` as metrics.csv logged them."""
    rows = read_rows(pathlib.Path(run_dir) / "metrics.csv")[1]
    return [(int(r["epoch"]), float(r[best.METRIC]), int(r["env_steps"])) for r in rows if r[best.METRIC]]


def best_meta(run_dir):
    return load_policy_and_meta(pathlib.Path(run_dir) / "checkpoints", policy="best")[1]


def policy_params(path):
    """A checkpoint root's (or best root's) policy item, as saved."""
    return ckpt.restore(path, with_state=False, targets=lambda meta: (None, None)).policy


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory):
    """A run killed after epoch 3's checkpoint, resumed to the end; and its best as the kill left it."""
    run_dir = tmp_path_factory.mktemp("best") / "run"
    with pytest.raises(KeyboardInterrupt):
        runs.train(run_dir, ENV, CONFIG, hooks=[StopAfter(KILLED_AFTER)], **QUIET)
    before = best_meta(run_dir)
    runs.train(run_dir, resume=True, **QUIET)
    return run_dir, before


@pytest.fixture
def copy(killed_and_resumed, tmp_path):
    shutil.copytree(killed_and_resumed[0], tmp_path / "run", symlinks=True)
    return tmp_path / "run"


def test_the_best_is_the_highest_evaluation_logged_with_its_epoch(killed_and_resumed):
    run_dir, _ = killed_and_resumed
    logged = evaluations(run_dir)
    assert [e for e, _, _ in logged] == list(range(1, 9))  # one evaluation an epoch, none lost to the kill
    top = max(r for _, r, _ in logged)
    epoch, _, env_steps = next(x for x in logged if x[1] == top)  # the first to reach it: later ties do not replace
    meta = best_meta(run_dir)
    assert meta["best"] == {"metric": "eval/episode_return", "value": top, "step": epoch}
    assert (meta["step"], meta["epoch"], meta["env_steps"]) == (epoch, epoch, env_steps)
    returns = [r for _, r, _ in logged]
    replaced = sum(r > max(returns[:i], default=-np.inf) for i, r in enumerate(returns))
    # One version is left, numbered by the times the best was replaced (the older ones removed).
    assert ckpt.step_dirs(run_dir / "checkpoints" / "best") == [replaced]


def test_a_resumed_run_keeps_the_best_from_before_the_kill(killed_and_resumed):
    run_dir, before = killed_and_resumed
    logged = evaluations(run_dir)
    best_before = max(r for e, r, _ in logged if e <= KILLED_AFTER)
    # The premise: every evaluation after the resume is worse, so a resumed run that forgot its best
    # would have replaced it with a worse one.
    assert all(r < best_before for e, r, _ in logged if e > KILLED_AFTER), logged
    assert before["best"]["value"] == best_before
    after = best_meta(run_dir)
    assert after["best"] == before["best"] and after["run_id"] == before["run_id"]


def test_the_best_policy_acts_as_its_checkpoint_and_differs_from_the_last(killed_and_resumed):
    run_dir, _ = killed_and_resumed
    checkpoints = run_dir / "checkpoints"
    epoch = best_meta(run_dir)["step"]
    assert epoch != 8  # the premise (see CONFIG)
    kept, of_step, last = (policy_params(p) for p in (checkpoints / "best", checkpoints / str(epoch), checkpoints))
    jax.tree.map(np.testing.assert_array_equal, kept, of_step)  # the best epoch's policy, bit for bit
    assert not all(jax.tree.leaves(jax.tree.map(np.array_equal, kept, last)))

    obs = jax.random.normal(jax.random.PRNGKey(0), (64, 4))
    key = jax.random.PRNGKey(1)
    acts = np.asarray(load_policy(checkpoints, deterministic=False, policy="best")(obs, key))
    assert acts.shape == (64,) and set(acts.tolist()) <= {0, 1}
    np.testing.assert_array_equal(acts, load_policy(checkpoints / str(epoch), deterministic=False)(obs, key))


def test_eval_and_render_take_policy_best_and_label_it(killed_and_resumed, capsys):
    run_dir, _ = killed_and_resumed
    meta = best_meta(run_dir)
    results = {}
    for policy in ("best", "last"):
        assert main(["eval", "--run-dir", str(run_dir), "--episodes", "4", "--policy", policy]) == 0
        results[policy] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert results["best"]["policy"] == "best" and results["best"]["chosen_by"] == meta["best"]
    assert (results["best"]["checkpoint_step"], results["best"]["env_steps"]) == (meta["step"], meta["env_steps"])
    assert np.isfinite(results["best"]["episode_return_mean"])
    assert results["last"]["policy"] == "last" and "chosen_by" not in results["last"]
    assert results["last"]["checkpoint_step"] == 8

    assert main(["render", "--run-dir", str(run_dir), "--policy", "best"]) == 0
    assert (run_dir / "policy_best.mp4").stat().st_size > 0 and not (run_dir / "policy.mp4").exists()


def test_no_best_yet_is_refused_in_one_line_naming_what_there_is(copy, capsys):
    shutil.rmtree(copy / "checkpoints" / "best")
    with pytest.raises(FileNotFoundError, match=r"holds no best policy yet \(checkpoint steps 1, 2, .*policy='last'"):
        load_policy(copy / "checkpoints", policy="best")
    with pytest.raises(SystemExit) as refused:
        main(["eval", "--run-dir", str(copy), "--policy", "best"])
    assert "no best policy yet" in str(refused.value.code) and "\n" not in str(refused.value.code)
    with pytest.raises(ValueError, match="policy must be one of 'last', 'best', got 'first'"):
        load_policy(copy / "checkpoints", policy="first")


@pytest.mark.parametrize("where", ["best", "inside"])
def test_a_planted_link_at_or_in_best_is_refused(copy, tmp_path, where):
    checkpoints = copy / "checkpoints"
    if where == "best":  # best/ pointing at a policy outside the run directory
        shutil.move(checkpoints / "best", tmp_path / "elsewhere")
        (checkpoints / "best").symlink_to(tmp_path / "elsewhere")
    else:
        (meta,) = (checkpoints / "best").glob("*/meta/metadata")
        shutil.move(meta, tmp_path / "metadata")
        meta.symlink_to(tmp_path / "metadata")
    with pytest.raises(ckpt.CheckpointError, match="is a symbolic link; gymjax makes none"):
        load_policy(checkpoints, policy="best")
    with pytest.raises(SystemExit, match="symbolic link"):
        main(["eval", "--run-dir", str(copy), "--policy", "best"])


def test_a_fresh_run_refuses_a_directory_holding_a_best(killed_and_resumed, tmp_path):
    run_dir = tmp_path / "fresh"
    shutil.copytree(killed_and_resumed[0] / "checkpoints" / "best", run_dir / "checkpoints" / "best")
    with pytest.raises(ckpt.CheckpointError, match="holds the best policy of another run"):
        runs.train(run_dir, ENV, CONFIG, **QUIET)
    assert not (run_dir / "run.json").exists()  # refused before run.json was written
    assert best_meta(run_dir)["best"] == best_meta(killed_and_resumed[0])["best"]


def test_a_resume_refuses_another_runs_best(copy):
    (meta_file,) = (copy / "checkpoints" / "best").glob("*/meta/metadata")
    meta = json.loads(meta_file.read_text())
    meta_file.write_text(json.dumps({**meta, "run_id": "f" * 32}))
    with pytest.raises(ckpt.CheckpointError, match="holds the best policy of run ffffffff, not of run"):
        runs.train(copy, resume=True, num_timesteps=9 * 8 * 16, **QUIET)
    assert ckpt.step_dirs(copy / "checkpoints")[-1] == 8  # nothing trained


@pytest.mark.parametrize("killed_at", ["copy", "rename"])
def test_a_kill_during_the_save_leaves_the_previous_best(copy, monkeypatch, killed_at):
    checkpoints = copy / "checkpoints"
    before = best_meta(copy)
    better = {"metric": best.METRIC, "value": before["best"]["value"] + 1, "step": 8}

    copied = []

    def dies_on_the_third(src, dst, **kwargs):
        if len(copied) == 2:
            raise KeyboardInterrupt
        copied.append(src)
        return shutil.copy2(src, dst, **kwargs)

    def dies(*args):
        raise KeyboardInterrupt

    real_copytree = shutil.copytree

    def copytree_dying(src, dst, symlinks=False, ignore=None, copy_function=None, *rest, **kwargs):
        return real_copytree(src, dst, symlinks, ignore, dies_on_the_third, *rest, **kwargs)

    if killed_at == "copy":
        monkeypatch.setattr(shutil, "copytree", copytree_dying)
    else:
        monkeypatch.setattr(best.os, "rename", dies)
    with pytest.raises(KeyboardInterrupt):
        best.save(checkpoints / "8", better)
    monkeypatch.undo()
    assert best_meta(copy)["best"] == before["best"]
    # What a SIGKILL leaves instead: a partial "<n>.writing", which readers do not list.
    version = ckpt.step_dirs(checkpoints / "best")[-1]
    shutil.copytree(checkpoints / "8", checkpoints / "best" / f"{version + 1}.writing")  # as a SIGKILL leaves it
    assert best_meta(copy)["best"] == before["best"]

    # The next save replaces it whole, removes the leftover and the older version.
    best.save(checkpoints / "8", better)
    assert best_meta(copy)["best"] == better
    assert [p.name for p in (checkpoints / "best").iterdir()] == [str(version + 1)]


def _plant(checkpoints: pathlib.Path, planted: str) -> pathlib.Path:
    """What a user (or another program) left where a save of the best would fail on it after an epoch."""
    version = ckpt.step_dirs(checkpoints / "best")[-1] if (checkpoints / "best").is_dir() else 0
    if planted == "best is a file":
        shutil.rmtree(checkpoints / "best", ignore_errors=True)
        path = checkpoints / "best"
    else:  # the name a kill's partial copy has, or the next version's
        path = checkpoints / "best" / (
            f"{version + 1}.writing" if planted == "a file <n>.writing" else str(version + 1)
        )
    if planted == "a FIFO <n>.writing":
        path = path.with_name(f"{version + 1}.writing")
        os.mkfifo(path)
    else:
        path.write_text("saved by someone")
    return path


@pytest.mark.parametrize("planted", ["best is a file", "a file <n>.writing", "a file <n>", "a FIFO <n>.writing"])
def test_a_best_a_save_would_fail_on_is_refused_as_the_resume_starts(copy, planted):
    """Issue 51: a file at ``checkpoints/best`` or at a name the best's save uses ended a resume
    after an epoch of training with a raw NotADirectoryError / FileExistsError. Now one line, before
    any work, and the file is kept as it was."""
    checkpoints = copy / "checkpoints"
    path = _plant(checkpoints, planted)
    rows = len(read_rows(copy / "metrics.csv")[1])
    with pytest.raises(SystemExit) as refused:
        main(["train", "--run-dir", str(copy), "--resume", "--timesteps", str(9 * 8 * 16), "--quiet", "--no-video"])
    message = str(refused.value.code)
    assert "\n" not in message and message.startswith(f"{path} is a ") and "not gymjax's" in message, message
    assert message.endswith("move it away")
    assert ckpt.step_dirs(checkpoints)[-1] == 8 and len(read_rows(copy / "metrics.csv")[1]) == rows  # nothing trained
    assert path.is_fifo() if "FIFO" in planted else path.read_text() == "saved by someone"


def test_a_best_a_save_would_fail_on_is_refused_as_a_fresh_run_starts(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    path = _plant(run_dir / "checkpoints", "best is a file")
    with pytest.raises(runs.RunDirectoryError,
                       match=r"checkpoints/best is a regular file, not gymjax's: .*move it away$"):
        runs.train(run_dir, ENV, CONFIG, **QUIET)
    assert not (run_dir / "run.json").exists() and not ckpt.step_dirs(run_dir / "checkpoints")
    assert path.read_text() == "saved by someone"


def test_a_save_removes_only_its_own_leftovers(copy):
    """A kill's partial copy (a directory ``<n>.writing``) is gymjax's and removed by the next save;
    anything else in ``best``, even named ``*.writing``, is someone's and kept."""
    checkpoints = copy / "checkpoints"
    version = ckpt.step_dirs(checkpoints / "best")[-1]
    shutil.copytree(checkpoints / "8", checkpoints / "best" / f"{version + 1}.writing")  # as a SIGKILL leaves it
    (checkpoints / "best" / "notes.writing").mkdir()
    (checkpoints / "best" / "notes.writing" / "todo").write_text("mine")
    (checkpoints / "best" / "README").write_text("mine")
    better = {"metric": best.METRIC, "value": best_meta(copy)["best"]["value"] + 1, "step": 8}
    best.save(checkpoints / "8", better)
    assert best_meta(copy)["best"] == better
    assert sorted(p.name for p in (checkpoints / "best").iterdir()) == sorted(
        [str(version + 1), "notes.writing", "README"]
    )
    assert (checkpoints / "best" / "notes.writing" / "todo").read_text() == "mine"
