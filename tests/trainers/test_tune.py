"""``gymjax tune``: trials into SQLite read back with Optuna's own API, a study continued after a
SIGKILL mid-trial, pruning, workers sharing a study, the best preset trained with ``train
--preset-file``, and bad input refused in one line before any trial."""

import csv
import itertools
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from gymjax.cli import main
from gymjax.trainers import tune
from gymjax.trainers.ppo import PPOConfig, preset_file

optuna = pytest.importorskip("optuna")  # the tune extra, in the dev extra

# TINY's config (tests/trainers/ppo_configs.py) as flags: four one-iteration epochs, an evaluation after each.
TINY_FLAGS = [
    "--env", "JaxCartPole-v0", "--timesteps", "512", "--num-envs", "8", "--unroll-length", "16",
    "--num-minibatches", "2", "--update-epochs", "2", "--num-evals", "4", "--num-eval-envs", "4",
    "--policy-hidden-sizes", "16,16", "--value-hidden-sizes", "16,16",
]
# Few values, so the compiled programs repeat between trials and runs (JAX's disk cache).
SPACE = {
    "learning_rate": {"type": "categorical", "choices": [3e-4, 1e-3]},
    "gamma": {"type": "categorical", "choices": [0.95, 0.99]},
}
STUDY = "gymjax-JaxCartPole-v0"  # the default study name of the flags above


@pytest.fixture
def space_file(tmp_path):
    path = tmp_path / "space.json"
    path.write_text(json.dumps(SPACE))
    return path


def _flags(tmp_path, space_file, *more):
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    return ["tune", *TINY_FLAGS, "--search-space", str(space_file), "--storage", storage,
            "--out", str(tmp_path / "out"), *more]


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_three_trials_into_sqlite_read_back_and_the_best_trains(tmp_path, space_file):
    assert main(_flags(tmp_path, space_file, "--n-trials", "3")) == 0

    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{tmp_path / 'tune.db'}")
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    for t in study.trials:
        assert t.user_attrs["seeds"] == [0]  # the base seed, the same for every trial
        assert t.user_attrs["env_steps"] == t.user_attrs["num_timesteps"] == 512
        # each of the 4 evaluations reported at its index; the value is the last one's
        assert sorted(t.intermediate_values) == [0, 1, 2, 3] and t.value == t.intermediate_values[3]
        assert set(t.params) == set(SPACE) and t.params["gamma"] in (0.95, 0.99)
    assert study.user_attrs[tune.SETUP_ATTR]["search_space"] == SPACE

    out = tmp_path / "out"
    rows = _rows(out / "trials.csv")
    assert [(int(r["number"]), r["state"], float(r["value"])) for r in rows] == [
        (t.number, "COMPLETE", t.value) for t in study.trials
    ]
    for name in ("optimization_history.png", "param_importances.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG", name

    preset = json.loads((out / "best_preset.json").read_text())
    best = study.best_trial
    assert preset["env_id"] == "JaxCartPole-v0" and f"trial {best.number}" in preset["origin"]
    run_dir = tmp_path / "run"
    assert main(["train", "--preset-file", str(out / "best_preset.json"), "--run-dir", str(run_dir),
                 "--quiet", "--no-video"]) == 0
    config = json.loads((run_dir / "run.json").read_text())["config"]
    assert {k: config[k] for k in SPACE} == best.params
    assert config["policy_hidden_sizes"] == [16, 16] and config["num_timesteps"] == 512


# A process of its own, killed once its second trial runs (polled, no clock): a serial test
# (tests/conftest.py), in make test-slow (20 s); make test kills a command's workers with it (below).
@pytest.mark.serial
@pytest.mark.slow
def test_a_study_killed_mid_trial_continues_and_never_counts_that_trial(tmp_path, space_file):
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    command = [sys.executable, "-m", "gymjax", *_flags(tmp_path, space_file, "--n-trials", "3")]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    try:
        while True:  # until trial 0 is done and trial 1 has started
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "trial 1 never started"
            try:
                trials = optuna.load_study(study_name=STUDY, storage=storage).trials
            except KeyError:  # the study is not created yet
                trials = []
            if len(trials) == 2 and trials[1].state.name == "RUNNING" and "worker" in trials[1].user_attrs:
                break
            time.sleep(0.2)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stderr.close()
    killed = optuna.load_study(study_name=STUDY, storage=storage).trials[1]
    assert killed.state.name == "RUNNING" and killed.user_attrs["worker"]["pid"] == child.pid

    # The same command, asked for 3 trials in all: the killed one is failed, not counted, so 2 more run.
    assert main(_flags(tmp_path, space_file, "--max-total-trials", "3")) == 0
    study = optuna.load_study(study_name=STUDY, storage=storage)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert study.best_trial.number != 1
    rows = _rows(tmp_path / "out" / "trials.csv")
    assert [r["state"] for r in rows] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert "of 3 complete trials (0 pruned, 1 failed)" in json.loads(
        (tmp_path / "out" / "best_preset.json").read_text())["origin"]


@pytest.mark.slow  # 20 s of timed trials; pruning itself runs in make test (a pruned seed, below)
def test_a_pruner_that_must_prune_stops_a_timed_trial(space_file):
    from ppo_configs import TINY

    # 20 evaluations: the first comes after a twentieth of the minute's steps.
    setup = tune.make_setup("JaxCartPole-v0", TINY.replace(num_evals=20), space=SPACE, minutes_per_trial=1.0)
    # Every return is below a billion: the first evaluation's report prunes the trial.
    study = tune.open_study(setup, pruner=optuna.pruners.ThresholdPruner(lower=1e9), say=lambda line: None)
    tune.optimize(study, setup, n_trials=1)
    (trial,) = study.trials
    assert trial.state.name == "PRUNED" and list(trial.intermediate_values) == [0]
    # The budget chose the steps of a minute; pruning stopped the run at the epoch of its first evaluation.
    chosen, made = trial.user_attrs["num_timesteps"], trial.user_attrs["env_steps"]
    config = setup.trial_config(trial.params, 0).replace(num_timesteps=chosen)
    evaluated = next(epoch for epoch in range(config.num_epochs) if config.eval_after_epoch(epoch))
    assert made == (evaluated + 1) * config.env_steps_per_epoch < chosen
    assert "PRUNED at evaluation 1" in tune.describe(trial)


@pytest.mark.slow  # 10 s; the pruner's other cases run in make test
def test_a_trial_that_trained_to_its_end_is_complete_whatever_the_pruner_says():
    from ppo_configs import TINY

    # One evaluation, after the last epoch: nothing is left to save, so the must-prune pruner is not asked.
    setup = tune.make_setup("JaxCartPole-v0", TINY.replace(num_evals=1), space=SPACE)
    study = tune.open_study(setup, pruner=optuna.pruners.ThresholdPruner(lower=1e9), say=lambda line: None)
    tune.optimize(study, setup, n_trials=1)
    (trial,) = study.trials
    assert trial.state.name == "COMPLETE" and trial.value == trial.intermediate_values[0]
    assert trial.user_attrs["env_steps"] == TINY.num_timesteps


# 24 s of six trainings; make test trains a trial's seeds in the pruned-seed case below, checks the
# yardstick and the objective's names, and runs a whole study (above).
@pytest.mark.slow
def test_a_trial_trains_each_seed_and_reports_their_objective(tmp_path, space_file):
    # Two seeds a trial, the worse one its value; the base config's values enqueued first, once.
    flags = _flags(tmp_path, space_file, "--n-trials", "2", "--seeds-per-trial", "2", "--objective", "min",
                   "--enqueue-base", "--learning-rate", "1e-3", "--gamma", "0.95")
    assert main(flags) == 0
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{tmp_path / 'tune.db'}")
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 2
    assert study.trials[0].params == {"learning_rate": 1e-3, "gamma": 0.95}  # the yardstick
    assert "yardstick" in study.trials[0].user_attrs and "yardstick" not in study.trials[1].user_attrs
    for t in study.trials:
        returns = t.user_attrs["returns"]
        assert t.user_attrs["seeds"] == [0, 1] and len(returns) == 2 and t.value == min(returns)
        assert t.user_attrs["env_steps"] == 2 * 512
        # 4 evaluations a seed at steps 0-7; seed 0's last is its return, the last step the trial's value
        assert sorted(t.intermediate_values) == list(range(8))
        assert t.intermediate_values[3] == returns[0] and t.intermediate_values[7] == t.value
    rows = _rows(tmp_path / "out" / "trials.csv")
    assert [(r["seeds"], float(r["return_seed0"]), float(r["return_seed1"]), r["yardstick"]) for r in rows] == [
        ("0 1", *t.user_attrs["returns"], "yes" if t.number == 0 else "") for t in study.trials
    ]
    assert "min return" in json.loads((tmp_path / "out" / "best_preset.json").read_text())["origin"]
    assert (tmp_path / "out" / "seeds.png").read_bytes()[:4] == b"\x89PNG"  # every seed of every trial

    # Continued with the same flags: the yardstick is in the study, so one new trial is searched.
    assert main([*flags[:flags.index("--n-trials")], "--n-trials", "1", *flags[flags.index("--n-trials") + 2:]]) == 0
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{tmp_path / 'tune.db'}")
    assert len(study.trials) == 3 and sum("yardstick" in t.user_attrs for t in study.trials) == 1


def test_a_pruned_seed_leaves_the_trials_other_seeds_untrained():
    from ppo_configs import TINY

    # One evaluation a run: seed 0's is not the trial's last, so the must-prune pruner is asked, and prunes.
    setup = tune.make_setup("JaxCartPole-v0", TINY.replace(num_evals=1), space=SPACE, seeds_per_trial=3)
    study = tune.open_study(setup, pruner=optuna.pruners.ThresholdPruner(lower=1e9), say=lambda line: None)
    tune.optimize(study, setup, n_trials=1)
    (trial,) = study.trials
    assert trial.state.name == "PRUNED" and list(trial.intermediate_values) == [0]
    assert trial.user_attrs["env_steps"] == TINY.num_timesteps and "returns" not in trial.user_attrs
    assert "of seed 0" in tune.describe(trial)


def test_the_yardstick_must_lie_in_the_search_space():
    from ppo_configs import TINY

    setup = tune.make_setup("JaxCartPole-v0", TINY.replace(gamma=0.9), space=SPACE)
    with pytest.raises(tune.TuneError, match=r"gamma = 0.9 is outside the search space's choices \[0.95, 0.99\]"):
        setup.base_params()
    with pytest.raises(tune.TuneError, match="seeds per trial: expected an int >= 1"):
        tune.make_setup("JaxCartPole-v0", TINY, space=SPACE, seeds_per_trial=0)
    with pytest.raises(tune.TuneError, match="objective: expected one of mean, median, min"):
        tune.make_setup("JaxCartPole-v0", TINY, space=SPACE, objective="max")


@pytest.mark.serial  # three processes of its own; one of the serial tests, as the one above
def test_workers_share_one_study(tmp_path, space_file):
    assert main(_flags(tmp_path, space_file, "--n-trials", "2", "--n-jobs", "2")) == 0
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{tmp_path / 'tune.db'}")
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]
    pids = {t.user_attrs["worker"]["pid"] for t in study.trials}
    assert len(pids) == 2 and os.getpid() not in pids  # one trial in each worker process
    assert len(_rows(tmp_path / "out" / "trials.csv")) == 2
    for k in (0, 1):
        assert (tmp_path / "out" / f"worker-{k}.log").exists()


@pytest.mark.serial  # as the one above
def test_workers_stop_when_the_command_that_started_them_is_killed(tmp_path, space_file):
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    # 100 trials: minutes of work each worker would go on with, where stopping takes an epoch
    command = [sys.executable, "-m", "gymjax", *_flags(tmp_path, space_file, "--n-trials", "100", "--n-jobs", "2")]
    parent = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    try:
        while True:  # until both workers run a trial
            assert parent.poll() is None and time.monotonic() < deadline, "the workers never started"
            try:
                running = optuna.load_study(study_name=STUDY, storage=storage).get_trials(
                    states=(optuna.trial.TrialState.RUNNING,))
            except KeyError:
                running = []
            pids = {t.user_attrs["worker"]["pid"] for t in running if "worker" in t.user_attrs}
            if len(pids) == 2:
                break
            time.sleep(0.2)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    stop = time.monotonic() + 40  # each stops after the epoch in flight, a second here
    try:
        while any(_running(pid) for pid in pids) and time.monotonic() < stop:
            time.sleep(0.2)
        assert not any(_running(pid) for pid in pids), "a worker outlived the command"
    finally:
        for pid in pids:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def _running(pid):
    try:  # an exited child of a killed parent is reaped by init; a zombie meanwhile counts as stopped
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("plant", ["hard link", "symbolic link"])
def test_a_planted_worker_log_is_refused_before_the_study_is_opened(tmp_path, space_file, plant):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "out").mkdir()
    (os.link if plant == "hard link" else os.symlink)(victim, tmp_path / "out" / "worker-0.log")
    with pytest.raises(SystemExit) as refused:
        main(_flags(tmp_path, space_file, "--n-trials", "2", "--n-jobs", "2"))
    text = str(refused.value.code)
    assert "worker-0.log" in text and ("hard links" if plant == "hard link" else "symbolic link") in text
    assert "\n" not in text and victim.read_text() == "precious\n"
    assert not (tmp_path / "tune.db").exists()  # refused before the study was opened

    (tmp_path / "elsewhere").mkdir()
    flags = _flags(tmp_path, space_file, "--n-trials", "1")
    flags[flags.index("--out") + 1] = str(tmp_path / "link")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SystemExit, match="is a symbolic link"):
        main(flags)
    assert not list((tmp_path / "elsewhere").iterdir())


def test_a_database_of_another_application_is_refused_untouched(tmp_path, space_file):
    import sqlite3

    path = tmp_path / "mlflow.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE experiments (id INTEGER PRIMARY KEY, name TEXT)")
    flags = _flags(tmp_path, space_file, "--n-trials", "1")
    flags[flags.index("--storage") + 1] = f"sqlite:///{path}"
    with pytest.raises(SystemExit, match=r"holds another application's tables \(experiments\)"):
        main(flags)
    with sqlite3.connect(path) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert tables == ["experiments"]


BAD_SPACES = [
    ({"learning_rat": {"type": "float", "low": 1e-4, "high": 1e-3}},
     "'learning_rat' is not a PPOConfig field"),
    ({"learning_rate": {"type": "float", "low": -1.0, "high": 1e-3}},
     "learning_rate = -1.0 is refused by PPOConfig"),
    ({"activation": {"type": "categorical", "choices": ["tanh", "sigmoid"]}},
     "activation = 'sigmoid' is refused by PPOConfig"),
    ({"num_envs": {"type": "float", "low": 8, "high": 64}}, "takes ints: use type int"),
    ({"gamma": {"type": "float", "low": 0.99, "high": 0.9}}, "expected low <= high"),
    ({"entropy_cost": {"type": "float", "low": 0.0, "high": 0.1, "log": True}}, "a log scale needs low > 0"),
    ({"seed": {"type": "int", "low": 0, "high": 9}}, "seed is not searched"),
    ({"gamma": {"type": "categorical", "choices": []}}, "non-empty list"),
    ({"gamma": {"type": "uniform", "low": 0.9, "high": 0.99}}, "expected {type: float|int|categorical"),
    ([], "expected a non-empty mapping"),
    ({"num_envs": {"type": "int", "low": 8, "high": 10**400}}, "expected high as a finite int, got 1000"),
    ({"gamma": {"type": "categorical", "choices": [0.99, {"a": 1}]}}, "expected each choice as null"),
    ({"gamma": {"type": "categorical", "choices": [[0.9, 0.99], [0.9, 0.99]]}}, "got [0.9, 0.99]"),
    ({"num_envs": {"type": "categorical", "choices": [10**400]}}, "num_envs = 1000"),
]


@pytest.mark.parametrize("space, message", BAD_SPACES, ids=[m for _, m in BAD_SPACES])
def test_bad_search_spaces_are_refused_in_one_line_before_any_trial(tmp_path, space, message):
    path = tmp_path / "space.json"
    path.write_text(json.dumps(space))
    with pytest.raises(SystemExit) as refused:
        main(_flags(tmp_path, path, "--n-trials", "1"))
    assert message in str(refused.value.code) and "\n" not in str(refused.value.code)
    assert not (tmp_path / "out").exists() and not (tmp_path / "tune.db").exists()


@pytest.mark.parametrize("url, message", [
    ("tune.db", "expected an RDB URL"),
    ("nosuchdb://host/db", "cannot open it"),
    ("sqlite:////nonexistent-gymjax-dir/tune.db", "cannot open it"),
    ("postgresql://user:secret@127.0.0.1:1/db", "cannot open it"),
])
def test_bad_storage_urls_are_refused_in_one_line_before_any_trial(tmp_path, space_file, url, message):
    flags = _flags(tmp_path, space_file, "--n-trials", "1")
    flags[flags.index("--storage") + 1] = url
    with pytest.raises(SystemExit) as refused:
        main(flags)
    text = str(refused.value.code)
    assert message in text and "\n" not in text and "secret" not in text
    assert not (tmp_path / "out").exists()


def test_bad_flags_and_files_are_refused_in_one_line(tmp_path, space_file, capsys):
    memory = ["tune", *TINY_FLAGS, "--search-space", str(space_file), "--out", str(tmp_path / "out")]
    for argv, message in [
        (memory, "give --n-trials N"),
        ([*memory, "--n-trials", "1", "--n-jobs", "2"], "give --storage"),
        # each worker would open an SQLite database of its own in memory, and tune it alone
        ([*memory, "--n-trials", "1", "--n-jobs", "2", "--storage", "sqlite://"], "--storage sqlite:// is one"),
        ([*memory, "--n-trials", "1", "--n-jobs", "2", "--storage", "sqlite:///:memory:"], "cannot be"),
        ([*memory, "--n-trials", "1", "--timesteps-per-trial", "512"], "give one of them"),
        ([*memory, "--n-trials", "1", "--minutes-per-trial", "1"], "drop --timesteps"),
    ]:
        with pytest.raises(SystemExit, match=message):
            main(argv)
    assert not (tmp_path / "out").exists()

    # A directory holding another study's report (here an in-memory one, kept nowhere else) is not reused.
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / tune.REPORT_FILE).write_text(json.dumps({"study_name": STUDY, "storage": "memory"}))
    with pytest.raises(SystemExit, match="holds the report of study"):
        main([*memory, "--n-trials", "1"])

    # A preset file PPOConfig refuses: one line from argparse, status 2.
    bad = tmp_path / "bad_preset.json"
    bad.write_text(json.dumps({"env_id": "JaxCartPole-v0", "settings": {"num_envs": 0}}))
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        main(["train", "--preset-file", str(bad), "--run-dir", str(tmp_path / "run")])
    assert refused.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "num_envs must be an int > 0" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_a_study_of_another_setup_is_refused_naming_what_differs(tmp_path, space_file):
    from ppo_configs import TINY

    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    other = TINY.replace(learning_rate=1e-3)
    setup = tune.make_setup("JaxCartPole-v0", other, space={"gamma": SPACE["gamma"]})
    tune.open_study(setup, storage, STUDY)
    with pytest.raises(SystemExit) as refused:
        main(_flags(tmp_path, space_file, "--n-trials", "1"))
    text = str(refused.value.code)
    assert "tunes another setup" in text and "config.learning_rate (0.001 there, 0.0003 here)" in text
    assert "search_space" in text and "\n" not in text
    assert not (tmp_path / "out").exists()


def test_yaml_and_json_search_spaces_read_alike(tmp_path):
    yaml_file = tmp_path / "space.yaml"
    yaml_file.write_text("learning_rate: {type: float, low: 1.0e-4, high: 3.0e-3, log: true}\n"
                         "policy_hidden_sizes: {type: categorical, choices: [[64], [64, 64]]}\n")
    json_file = tmp_path / "space.json"
    json_file.write_text(json.dumps({
        "learning_rate": {"type": "float", "low": 1e-4, "high": 3e-3, "log": True},
        "policy_hidden_sizes": {"type": "categorical", "choices": [[64], [64, 64]]},
    }))
    base = PPOConfig()
    spaces = [tune.parse_space(tune.read_data_file(path, "space"), base) for path in (yaml_file, json_file)]
    assert spaces[0] == spaces[1]
    assert spaces[0]["policy_hidden_sizes"] == tune.Param("categorical", choices=((64,), (64, 64)))


# A "billion laughs": ten aliases deep, 10^9 values once expanded, in 700 bytes.
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("text", [
    LAUGHS,  # the whole file
    LAUGHS + "gamma: {type: categorical, choices: *i}\n",  # a field's spec
    "[" * 20_000 + "]" * 20_000,  # nested past Python's parser
    "a: &a [*a]\n",  # an alias within itself
], ids=["laughs", "laughs-in-a-field", "deep", "recursive"])
@pytest.mark.parametrize("as_preset", [False, True], ids=["search-space", "preset-file"])
def test_files_that_expand_or_nest_without_bound_are_refused_in_one_line(tmp_path, text, as_preset):
    path = tmp_path / "file.yaml"
    if as_preset:  # the same document as a preset's settings
        text = f"env_id: JaxCartPole-v0\nsettings:\n  {text.replace(chr(10), chr(10) + '  ')}"
    path.write_text(text)
    started = time.monotonic()
    # A preset file is read by `train --preset-file` too, without the tuning module: its own error.
    with pytest.raises(preset_file.PresetFileError if as_preset else tune.TuneError) as refused:
        preset_file.read_preset_file(path) if as_preset else tune.parse_space(tune.read_data_file(path, "space"),
                                                                               PPOConfig())
    message = str(refused.value)
    assert len(message) < 400 and "\n" not in message
    assert any(m in message for m in ("expand to more than", "nested too deeply", "not valid YAML",
                                      "expected")), message
    assert time.monotonic() - started < 30  # the expansion was never built


def test_without_optuna_tune_says_which_extra_to_install(tmp_path, space_file, monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if not installed: its import raises ImportError
    with pytest.raises(SystemExit, match=r"tuning needs Optuna: pip install 'gymjax\[tune\]'"):
        main(_flags(tmp_path, space_file, "--n-trials", "1"))


def test_only_gymjax_tune_imports_optuna():
    code = "import sys, gymjax.cli.commands; assert 'optuna' not in sys.modules, 'optuna imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("kind", sorted(tune.SPACES))
def test_default_spaces_are_valid_and_every_batch_splits(kind):
    space = tune.SPACES[kind]
    # Each range's ends and choices pass PPOConfig, and the JSON form (DIR/tune.json) reads back the same.
    assert tune.parse_space(tune.space_to_json(space), PPOConfig()) == space
    sizes = [space[name].choices for name in ("num_envs", "unroll_length", "num_minibatches")]
    for num_envs, unroll_length, num_minibatches in itertools.product(*sizes):
        PPOConfig(num_envs=num_envs, unroll_length=unroll_length, num_minibatches=num_minibatches)


def test_a_fifo_or_an_oversized_file_is_refused_not_waited_on(tmp_path):
    import threading

    fifo = tmp_path / "space.json"
    os.mkfifo(fifo)
    refused = []
    reader = threading.Thread(target=lambda: refused.append(_refusal(fifo)), daemon=True)
    reader.start()
    reader.join(10)  # reading a FIFO would wait for a writer forever
    assert refused == [f"space: {fifo} is not a regular file; gymjax wrote none such"]
    big = tmp_path / "big.json"
    big.write_text(" " * (preset_file.MAX_FILE_BYTES + 1))
    assert f"{big} is larger than {preset_file.MAX_FILE_BYTES:,} bytes" in _refusal(big)


def _refusal(path):
    with pytest.raises(tune.TuneError) as e:
        tune.read_data_file(path, "space")
    return str(e.value)


def test_a_trial_in_flight_says_which_seed_and_epoch_it_is_at():
    from ppo_configs import TINY

    # The CLI's bar shows these lines: a trial of several runs is minutes without a finished trial.
    config = TINY.replace(num_evals=2)
    setup = tune.make_setup("JaxCartPole-v0", config, space=SPACE, seeds_per_trial=2)
    study = tune.open_study(setup, pruner=optuna.pruners.NopPruner(), say=lambda line: None)
    lines = []
    tune.optimize(study, setup, n_trials=1, on_progress=lines.append)
    (trial,) = study.trials
    epochs = config.num_epochs
    assert [line.split(", ")[0] for line in lines] == (
        [f"trial {trial.number} seed 0 (1/2)"] * epochs + [f"trial {trial.number} seed 1 (2/2)"] * epochs)
    assert [line.split(", ")[1] for line in lines] == [f"epoch {e}/{epochs}" for e in range(1, epochs + 1)] * 2
    # A run's lines carry its own latest evaluation's return, its last line the return the trial kept.
    first, second = trial.user_attrs["returns"]
    assert lines[epochs - 1].endswith(f"return {first:.4g}") and lines[-1].endswith(f"return {second:.4g}")
