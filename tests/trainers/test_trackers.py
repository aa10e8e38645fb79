"""MLflow and W&B trackers, offline, read back with their own readers: a CLI run killed mid-way and
resumed stays one tracker run with each env step logged once and the values of metrics.csv."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from test_run_dir import CACHE, ENV, EPOCH, FLAGS, ROOT, cli, wait_for_rows

from gymjax.cli import main
from gymjax.trainers import runs
from gymjax.trainers.loggers import read_rows
from gymjax.trainers.ppo import PPOConfig, train
from gymjax.trainers.runs import trackers

CONFIG = PPOConfig(  # FLAGS as a config: the same compiled programs
    num_envs=8, unroll_length=16, num_minibatches=2, update_epochs=4, num_evals=2, num_eval_envs=4,
    epoch_iterations=2, policy_hidden_sizes=(16, 16), num_timesteps=2 * EPOCH,
)
WALL_TIME = ("sps", "time/")  # the only metrics a replayed epoch does not reproduce


def needs(module):
    try:
        __import__(module)
    except ImportError:
        pytest.skip(f"{module} is not installed (pip install -e '.[{module}]')")


def fresh(tmp_path, *flags):
    """``gymjax train`` of one epoch into tmp_path/run: quick even where a check it tests is missing."""
    return ["train", *FLAGS, "--timesteps", str(EPOCH), "--run-dir", str(tmp_path / "run"), *flags]


def csv_rows(run_dir):
    return [{k: float(v) for k, v in row.items() if v != ""} for row in read_rows(run_dir / "metrics.csv")[1]]


@pytest.fixture
def offline_wandb(tmp_path, monkeypatch):
    needs("wandb")
    for name in ("WANDB_DIR", "WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(name, str(tmp_path / name))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    import wandb

    wandb.teardown()  # W&B reads its environment once a process: this test's, not an earlier test's
    yield tmp_path / "WANDB_DIR" / "wandb"
    wandb.teardown()


# -- MLflow ---------------------------------------------------------------------------------


@pytest.mark.slow  # 25 s; W&B's resume into the same run without a replayed epoch runs in make test
def test_mlflow_run_killed_mid_way_resumes_into_the_same_run_each_step_once(tmp_path, monkeypatch):
    needs("mlflow")
    from mlflow.tracking import MlflowClient

    cwd, store = tmp_path / "cwd", tmp_path / "store" / "store.db"
    cwd.mkdir(), store.parent.mkdir()
    monkeypatch.chdir(cwd)  # MLflow's own artifact root for a SQLite store: ./mlruns of the working directory
    uri, run_dir = f"sqlite:///{store}", tmp_path / "run"  # not the default ./mlflow.db
    flags = [f for f in FLAGS if f != "--no-video"]
    proc = cli("train", *flags, "--timesteps", 8 * EPOCH, "--save-every-epochs", 3, "--run-dir", run_dir,
               "--logger", "csv", "mlflow", "--mlflow-tracking-uri", uri, "--tracker-project", "cartpole",
               "--tracker-tags", "suite=test", "tiny", wait=False)
    wait_for_rows(run_dir / "metrics.csv", 5, proc)
    proc.kill()  # after the checkpoint of epoch 3, before the one of epoch 6: epochs 4 and 5 are replayed
    proc.communicate()
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("cartpole").experiment_id])
    logged = max(m.step for m in client.get_metric_history(run.info.run_id, "epoch"))
    assert logged >= 4 * EPOCH

    with pytest.raises(SystemExit, match="pass --mlflow-tracking-uri sqlite:///"):  # run.json never picks the store
        main(["train", "--run-dir", str(run_dir), "--resume"])
    assert not (cwd / "mlflow.db").exists()  # the default store, refused before its client made it
    assert main(["train", "--run-dir", str(run_dir), "--resume", "--mlflow-tracking-uri", uri]) == 0

    (run,) = client.search_runs([run.info.experiment_id])
    recorded = json.loads((run_dir / "run.json").read_text())["trackers"]["mlflow"]
    assert recorded == {"run_id": run.info.run_id, "tracking_uri": uri, "experiment": "cartpole",
                        "claim": run.data.tags[trackers.CLAIM_TAG]}
    assert trackers.CLAIM_BEFORE_TAG not in run.data.tags
    assert run.info.status == "FINISHED" and run.info.run_name == "run"
    assert run.data.tags["suite"] == "test" and run.data.tags["tiny"] == ""
    assert run.data.params["num_envs"] == "8" and run.data.params["env"] == ENV
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {"learning_curve.png", "policy.mp4"}
    beside = tmp_path / "store" / "store.db-artifacts" / "cartpole" / run.info.run_id / "artifacts"
    assert {p.name for p in beside.iterdir()} == {"learning_curve.png", "policy.mp4"}  # where the docs say
    assert list(cwd.iterdir()) == []  # no ./mlruns
    rows = csv_rows(run_dir)
    assert [r["env_steps"] for r in rows] == [EPOCH * i for i in range(1, 9)]
    for key in rows[-1]:
        if key == "env_steps":
            continue
        history = {m.step: m.value for m in client.get_metric_history(run.info.run_id, key)}
        assert len(client.get_metric_history(run.info.run_id, key)) == len(history)  # each step once
        for row in rows:
            if key not in row or (key.startswith(WALL_TIME) and 3 * EPOCH < row["env_steps"] <= logged):
                continue  # a replayed epoch keeps the wall time it was first logged with
            assert history.pop(int(row["env_steps"])) == pytest.approx(row[key], rel=1e-6), (key, row["env_steps"])
        assert all(3 * EPOCH < step <= logged for step in history), (key, history)


@pytest.mark.slow  # 18 s of MLflow runs; make test keeps MLflow as a hook of PPO's train
def test_a_resume_refused_by_the_trainer_leaves_the_tracker_run_untouched(tmp_path):
    """The trackers start once the trainer's checks have passed: a refused resume does not reopen the
    recorded run, mark it failed, or log to it."""
    needs("mlflow")
    from mlflow.tracking import MlflowClient

    from gymjax.trainers.hooks import Hook

    class Refuses(Hook):  # a hook whose saved state it cannot take back: the trainer refuses the resume
        def state_dict(self):
            return {"n": 1}

        def load_state_dict(self, state):
            raise ValueError("not this state")

    uri, run_dir = f"sqlite:///{tmp_path}/store.db", tmp_path / "run"
    config = PPOConfig(num_timesteps=2 * EPOCH, num_envs=8, unroll_length=16, num_minibatches=2, num_evals=1)
    options = trackers.TrackerOptions(project="p", mlflow_tracking_uri=uri)
    runs.train(run_dir, ENV, config, hooks=[Refuses()], loggers=["mlflow"], tracker_options=options,
                 console=False, progress_bar=False, video=False)
    client = MlflowClient(uri)
    (before,) = client.search_runs([client.get_experiment_by_name("p").experiment_id])
    with pytest.raises(Exception, match="not this state"):
        runs.train(run_dir, resume=True, num_timesteps=4 * EPOCH, hooks=[Refuses()], loggers=["mlflow"],
                     tracker_options=options, console=False, progress_bar=False, video=False)
    (after,) = client.search_runs([before.info.experiment_id])
    assert (after.info.status, after.info.end_time, after.data.tags) == (
        before.info.status, before.info.end_time, before.data.tags)  # FINISHED, as the first session left it


@pytest.mark.slow  # 15 s; the W&B twin of this case runs in make test
def test_a_copied_run_directory_cannot_continue_the_mlflow_run_its_original_continued(tmp_path, monkeypatch):
    needs("mlflow")
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    uri, original, copy = f"sqlite:///{tmp_path}/store.db", tmp_path / "run", tmp_path / "copy"
    options = trackers.TrackerOptions(mlflow_tracking_uri=uri)
    quiet = {"console": False, "progress_bar": False, "video": False}
    runs.train(original, ENV, CONFIG, loggers=["mlflow"], tracker_options=options, **quiet)
    shutil.copytree(original, copy)  # cp -r: the same run.json, the same checkpoints' run_id
    runs.train(copy, resume=True, num_timesteps=3 * EPOCH, tracker_options=options, **quiet)  # the first on
    client = MlflowClient(uri)
    run_id = json.loads((copy / "run.json").read_text())["trackers"]["mlflow"]["run_id"]
    steps = [m.step for m in client.get_metric_history(run_id, "epoch")]
    assert steps == [EPOCH, 2 * EPOCH, 3 * EPOCH]

    # The original would log into the run its copy continued, and its own epoch 3 would never be logged.
    with pytest.raises(runs.RunDirectoryError, match="is continued by another run directory") as error:
        runs.train(original, resume=True, num_timesteps=3 * EPOCH, tracker_options=options, **quiet)
    assert "\n" not in str(error.value) and str(error.value).endswith("resume with --new-tracker-run mlflow")
    assert [m.step for m in client.get_metric_history(run_id, "epoch")] == steps
    assert client.get_run(run_id).info.status == "FINISHED"  # refused before the run was touched

    # A run.json taken from another run (with no claim, or a made-up one) is refused alike.
    for claim in ({}, {"claim": "0" * 32}):
        record = json.loads((original / "run.json").read_text())
        record["trackers"]["mlflow"] = {k: v for k, v in record["trackers"]["mlflow"].items() if k != "claim"}
        record["trackers"]["mlflow"].update(claim)
        (original / "run.json").write_text(json.dumps(record))
        with pytest.raises(runs.RunDirectoryError, match="is continued by another run directory"):
            runs.train(original, resume=True, num_timesteps=3 * EPOCH, tracker_options=options, **quiet)

    # What the refusal says to do starts a new MLflow run, in the same experiment; the copy still continues its own.
    assert main(["train", "--run-dir", str(original), "--resume", "--timesteps", str(3 * EPOCH), "--quiet",
                 "--no-video", "--mlflow-tracking-uri", uri, "--new-tracker-run", "mlflow"]) == 0
    recorded = json.loads((original / "run.json").read_text())["trackers"]["mlflow"]
    new = client.get_run(recorded["run_id"])
    assert recorded["run_id"] != run_id and recorded["claim"] == new.data.tags[trackers.CLAIM_TAG]
    assert [m.step for m in client.get_metric_history(new.info.run_id, "epoch")] == [3 * EPOCH]
    assert new.info.experiment_id == client.get_run(run_id).info.experiment_id and new.info.status == "FINISHED"
    runs.train(original, resume=True, num_timesteps=4 * EPOCH, tracker_options=options, **quiet)  # continues it
    assert [m.step for m in client.get_metric_history(new.info.run_id, "epoch")] == [3 * EPOCH, 4 * EPOCH]
    runs.train(copy, resume=True, num_timesteps=4 * EPOCH, tracker_options=options, **quiet)
    assert [m.step for m in client.get_metric_history(run_id, "epoch")] == [*steps, 4 * EPOCH]


def test_mlflow_logger_as_a_hook_of_ppo_train(tmp_path):
    needs("mlflow")
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    logger = trackers.MLflowLogger(params=CONFIG.to_dict(), tracking_uri=uri, project="api", run_name="hooked")
    train(CONFIG, ENV, hooks=[logger], progress_bar=False)
    run = MlflowClient(uri).get_run(logger.run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "hooked"
    assert run.data.params["policy_hidden_sizes"] == "(16, 16)"
    assert [m.step for m in MlflowClient(uri).get_metric_history(logger.run_id, "losses/total")] == [EPOCH, 2 * EPOCH]


@pytest.mark.parametrize("uri, expected", [
    ("garbage", "expected sqlite:///PATH"),  # MLflow would take it for a file store's folder
    ("sqlite:///:memory:", "expected sqlite:///PATH"),  # a store that keeps nothing
    ("ftp://host/x", "expected sqlite:///PATH"),
    ("postgresql://u@host/db", "put an MLflow server"),  # its artifacts would go to each client's disk
])
def test_an_unusable_tracking_uri_is_refused_at_parsing_in_one_line(tmp_path, capsys, uri, expected):
    with pytest.raises(SystemExit) as exit_:
        main(fresh(tmp_path, "--logger", "mlflow", "--mlflow-tracking-uri", uri))
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"--mlflow-tracking-uri: MLflow tracking URI {uri!r}: expected" in line and expected in line
    with pytest.raises(ValueError, match=expected):
        trackers.TrackerOptions(mlflow_tracking_uri=uri)


def test_a_tracking_uri_from_the_environment_or_a_file_store_is_refused_before_anything_is_written(
        tmp_path, monkeypatch):
    needs("mlflow")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    run = fresh(tmp_path, "--logger", "mlflow")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "garbage")
    with pytest.raises(SystemExit, match=r"^MLflow tracking URI 'garbage': expected .* \(from MLFLOW_TRACKING_URI;"):
        main(run)
    with pytest.raises(SystemExit, match=r"file store is in maintenance mode .* use a sqlite:///PATH store"):
        main([*run, "--mlflow-tracking-uri", (tmp_path / "fs").as_uri()])
    assert sorted(tmp_path.iterdir()) == []  # no run directory, no store, no ./mlruns


def test_an_http_store_that_does_not_answer_is_refused_within_seconds(tmp_path, monkeypatch):
    needs("mlflow")
    import socket
    import time

    with socket.socket() as closed:  # a port nothing listens on: MLflow would retry it for minutes
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    uri = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    with pytest.raises(SystemExit, match=rf"^MLflow at {uri} does not answer \(.*\) within 5 s; start its server"):
        main(fresh(tmp_path, "--logger", "mlflow", "--mlflow-tracking-uri", uri))
    assert time.monotonic() - started < 30 and not (tmp_path / "run").exists()

    monkeypatch.setattr(trackers.mlflow, "PROBE_TIMEOUT_S", 0.5)  # read by the MLflow tracker's probe
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(trackers.TrackerError, match=rf"^MLflow at {uri} does not answer \(.*\) within 0.5 s"):
            trackers.MLflowLogger(tracking_uri=uri).start()


@pytest.mark.parametrize("tags, message", [
    (["=x"], "tracker tag '=x' has an empty key"),
    ([" =x"], "has an empty key"),
    (["a=1", "b", "a=2"], "give the key 'a' more than once"),
    (["a=1", "--tracker-tags", "a"], "give the key 'a' more than once"),  # a plain tag is MLflow's a=""
])
def test_tracker_tags_with_an_empty_or_repeated_key_are_refused_at_parsing(tmp_path, capsys, tags, message):
    with pytest.raises(SystemExit) as exit_:
        main(fresh(tmp_path, "--tracker-tags", *tags))
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match=message):
        trackers.TrackerOptions(tags=tuple(t for t in tags if t != "--tracker-tags"))


def test_new_tracker_run_goes_with_resume(tmp_path):
    with pytest.raises(SystemExit, match="^--new-tracker-run goes with --resume"):
        main(fresh(tmp_path, "--new-tracker-run", "wandb"))
    assert not (tmp_path / "run").exists()


# -- W&B ------------------------------------------------------------------------------------


def test_wandb_offline_resume_continues_the_run_without_logging_a_replayed_epoch(tmp_path, offline_wandb,
                                                                                 monkeypatch):
    run_dir = tmp_path / "run"
    options = trackers.TrackerOptions(project="cartpole", tags=("tiny",))
    quiet = {"console": False, "progress_bar": False, "video": False}
    runs.train(run_dir, ENV, CONFIG.replace(num_timesteps=3 * EPOCH), loggers=["wandb"], tracker_options=options,
                 **quiet)
    shutil.rmtree(run_dir / "checkpoints" / "3")  # resumes from epoch 2: epoch 3 is replayed
    monkeypatch.delenv("WANDB_MODE")  # the resume keeps the recorded mode without being told
    runs.train(run_dir, resume=True, num_timesteps=4 * EPOCH, **quiet)

    recorded = json.loads((run_dir / "run.json").read_text())["trackers"]["wandb"]
    assert recorded["project"] == "cartpole" and recorded["mode"] == "offline"
    segments = trackers.offline_segments(offline_wandb, recorded["run_id"])
    assert len(segments) == 2  # one W&B run (one id), a segment per start
    started = [r.run for path in segments for r in trackers.wandb_records(path) if r.WhichOneof("record_type") == "run"]
    assert {(r.run_id, r.project, r.display_name) for r in started} == {(recorded["run_id"], "cartpole", "run")}
    assert list(started[0].tags) == ["tiny"]  # the resumed segment sends none, leaving the run's own
    history = [row for path in segments for row in trackers.wandb_history(path)]
    rows = csv_rows(run_dir)
    assert [step for step, _ in history] == [r["env_steps"] for r in rows] == [EPOCH * i for i in range(1, 5)]
    for (step, logged), row in zip(history, rows):
        for key, value in row.items():
            if key != "env_steps" and not (key.startswith(WALL_TIME) and step == 3 * EPOCH):
                assert logged[key] == pytest.approx(value, rel=1e-6), (key, step)
    config = {i.key: json.loads(i.value_json) for path in segments for r in trackers.wandb_records(path)
              if r.WhichOneof("record_type") == "config" for i in r.config.update}
    assert config["num_envs"] == 8 and config["env"] == ENV and config["num_timesteps"] == 4 * EPOCH
    for segment in segments:
        plot = segment.parent / "files" / "learning_curve.png"
        assert plot.is_file() and not plot.is_symlink()


def test_a_copied_run_directory_cannot_continue_the_wandb_run_its_original_continued(tmp_path, offline_wandb):
    original, copy = tmp_path / "run", tmp_path / "copy"
    quiet = {"console": False, "progress_bar": False, "video": False}
    runs.train(original, ENV, CONFIG, loggers=["wandb"], **quiet)
    shutil.copytree(original, copy)  # cp -r: the same run.json, the same checkpoints' run_id
    runs.train(copy, resume=True, num_timesteps=3 * EPOCH, **quiet)  # the first on keeps the W&B run
    run_id = json.loads((copy / "run.json").read_text())["trackers"]["wandb"]["run_id"]
    segments = trackers.offline_segments(offline_wandb, run_id)
    history = [step for path in segments for step, _ in trackers.wandb_history(path)]
    assert len(segments) == 2 and history == [EPOCH, 2 * EPOCH, 3 * EPOCH]

    # The original would log into the W&B run its copy continued, and its own epoch 3 would never be sent.
    for claim in ("keep", None, "0" * 32):  # its own run.json, one without a claim, a made-up claim
        if claim != "keep":
            record = json.loads((original / "run.json").read_text())
            record["trackers"]["wandb"].pop("claim", None)
            record["trackers"]["wandb"].update({"claim": claim} if claim else {})
            (original / "run.json").write_text(json.dumps(record))
        with pytest.raises(runs.RunDirectoryError,
                           match="^W&B run .* is continued by another run directory") as error:
            runs.train(original, resume=True, num_timesteps=3 * EPOCH, **quiet)
        assert str(error.value).endswith("resume with --new-tracker-run wandb")
        assert trackers.offline_segments(offline_wandb, run_id) == segments  # refused before wandb.init

    # What the refusal says to do starts a new W&B run, recorded in run.json; the copy still continues its own.
    new_runs = trackers.TrackerOptions(new_runs=("wandb",))
    runs.train(original, resume=True, num_timesteps=3 * EPOCH, tracker_options=new_runs, **quiet)
    recorded = json.loads((original / "run.json").read_text())["trackers"]["wandb"]
    assert recorded["run_id"] != run_id and recorded["mode"] == "offline" and recorded["project"] == "gymjax"
    (new,) = trackers.offline_segments(offline_wandb, recorded["run_id"])
    assert [step for step, _ in trackers.wandb_history(new)] == [3 * EPOCH]
    runs.train(copy, resume=True, num_timesteps=4 * EPOCH, **quiet)
    segments = trackers.offline_segments(offline_wandb, run_id)
    assert [step for path in segments for step, _ in trackers.wandb_history(path)] == [*history, 4 * EPOCH]


def test_a_resumed_wandb_run_keeps_its_recorded_mode_unless_told_otherwise():
    needs("wandb")
    recorded = {"run_id": "abc", "project": "p", "mode": "offline"}
    assert trackers.make("wandb", {}, trackers.TrackerOptions(), recorded).mode == "offline"
    switched = trackers.make("wandb", {}, trackers.TrackerOptions(wandb_mode="online"), recorded)
    assert switched.mode == "online" and switched.run_id == "abc"


# -- run.json and the extras -----------------------------------------------------------------

GOOD = {"run_id": "0" * 32, "tracking_uri": "sqlite:///x.db", "experiment": "e"}


@pytest.mark.parametrize("trackers_value, message", [
    ([], "trackers must be an object"),
    ({"neptune": {}}, "unknown tracker 'neptune'"),
    ({"mlflow": {**GOOD, "extra": "x"}}, "must be an object with keys"),
    ({"mlflow": {**GOOD, "run_id": "../../etc"}}, "run_id must match"),
    ({"mlflow": {**GOOD, "tracking_uri": 3}}, "must be a non-empty printable string"),
    ({"mlflow": {**GOOD, "claim": "../x"}}, "claim must match"),
    ({"wandb": {"run_id": "abc", "project": "p", "mode": "offline", "claim": "../x"}}, "claim must match"),
    ({"wandb": {"run_id": "a/b", "project": "p", "mode": "offline"}}, "run_id must match"),
    ({"wandb": {"run_id": "abc", "project": "p", "mode": "disabled"}}, "mode must be one of"),
])
def test_run_json_trackers_are_checked(trackers_value, message):
    record = runs.RunRecord(ENV, {}, CONFIG).to_json()
    with pytest.raises(runs.RunDirectoryError, match=message):
        runs.RunRecord.from_json({**record, "trackers": trackers_value})


def test_a_missing_library_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if not installed
    with pytest.raises(SystemExit, match=r"^the mlflow logger needs mlflow: pip install 'gymjax\[mlflow\]'$"):
        main(["train", *FLAGS, "--run-dir", str(tmp_path / "run"), "--logger", "mlflow"])
    assert not (tmp_path / "run").exists()  # refused before anything is written
    with pytest.raises(trackers.TrackerError, match=r"pip install 'gymjax\[mlflow\]'"):
        trackers.MLflowLogger()
    with pytest.raises(SystemExit, match="one metrics file per run"):
        main(["train", *FLAGS, "--run-dir", str(tmp_path / "run"), "--logger", "csv", "--metrics-format", "jsonl"])


def test_gymjax_and_its_trainer_never_import_a_tracker():
    code = ("import sys, gymjax, gymjax.trainers.runs, gymjax.trainers.ppo, gymjax.cli.run; "
            "print(sorted({'mlflow', 'wandb'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=ROOT,
                         timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "JAX_COMPILATION_CACHE_DIR": str(CACHE)})
    assert out.stdout.strip() == "[]", out.stderr[-2000:]



# -- a tracker run is tied to the training it records ------------------------------------------------


def _take_trackers(source, target):
    """run.json of ``target`` given ``source``'s trackers section, as a user copying it would."""
    record = json.loads((target / "run.json").read_text())
    record["trackers"] = json.loads((source / "run.json").read_text())["trackers"]
    (target / "run.json").write_text(json.dumps(record))


@pytest.mark.slow  # 10 s; the W&B twin of this case runs in make test
def test_another_training_cannot_continue_an_mlflow_run_through_a_copied_trackers_section(tmp_path, monkeypatch):
    """Issue 51: run r's ``trackers`` copied into an independent run y's run.json held r's current
    claim, so y's resume logged its points into r's MLflow run without a word, and r's own resume was
    refused afterwards. The MLflow run records the training (its checkpoints' run_id): y is refused."""
    needs("mlflow")
    from mlflow.tracking import MlflowClient

    from gymjax.trainers.store import checkpoint as ckpt

    monkeypatch.chdir(tmp_path)
    uri, r, y = f"sqlite:///{tmp_path}/m.db", tmp_path / "r", tmp_path / "y"
    options = trackers.TrackerOptions(mlflow_tracking_uri=uri)
    quiet = {"console": False, "progress_bar": False, "video": False}
    runs.train(r, ENV, CONFIG, loggers=["mlflow"], tracker_options=options, **quiet)
    runs.train(y, ENV, CONFIG.replace(seed=1), **quiet)  # an independent run: its own training
    client = MlflowClient(uri)
    run_id = json.loads((r / "run.json").read_text())["trackers"]["mlflow"]["run_id"]
    training_r = ckpt.read_meta(r / "checkpoints")["run_id"]
    assert client.get_run(run_id).data.tags[trackers.TRAINING_TAG] == training_r  # tied at its first checkpoint
    steps = [m.step for m in client.get_metric_history(run_id, "epoch")]
    assert steps == [EPOCH, 2 * EPOCH]

    _take_trackers(r, y)
    before = (y / "run.json").read_text()
    with pytest.raises(SystemExit) as refused:
        main(["train", "--run-dir", str(y), "--resume", "--timesteps", str(3 * EPOCH), "--quiet", "--no-video",
              "--mlflow-tracking-uri", uri])
    message = str(refused.value.code)
    training_y = ckpt.read_meta(y / "checkpoints")["run_id"]
    assert "\n" not in message and message.startswith(f"MLflow run {run_id} records training {training_r[:8]}")
    assert f"checkpoints are of training {training_y[:8]}" in message
    assert message.endswith("resume with --new-tracker-run mlflow")
    assert [m.step for m in client.get_metric_history(run_id, "epoch")] == steps  # nothing of y's logged
    assert client.get_run(run_id).info.status == "FINISHED" and ckpt.step_dirs(y / "checkpoints")[-1] == 2
    assert (y / "run.json").read_text() == before  # refused before run.json was rewritten

    # r's own resume still continues its run; y, told so, logs to a new run tied to its own training.
    runs.train(r, resume=True, num_timesteps=3 * EPOCH, tracker_options=options, **quiet)
    assert [m.step for m in client.get_metric_history(run_id, "epoch")] == [*steps, 3 * EPOCH]
    assert main(["train", "--run-dir", str(y), "--resume", "--timesteps", str(3 * EPOCH), "--quiet", "--no-video",
                 "--mlflow-tracking-uri", uri, "--new-tracker-run", "mlflow"]) == 0
    new = client.get_run(json.loads((y / "run.json").read_text())["trackers"]["mlflow"]["run_id"])
    assert new.info.run_id != run_id and new.data.tags[trackers.TRAINING_TAG] == training_y


@pytest.mark.slow  # the MLflow case above, the same guard's other backend, runs in make test
def test_another_training_cannot_continue_a_wandb_run_through_a_copied_trackers_section(tmp_path, offline_wandb):
    r, y = tmp_path / "r", tmp_path / "y"
    quiet = {"console": False, "progress_bar": False, "video": False}
    runs.train(r, ENV, CONFIG, loggers=["wandb"], **quiet)
    runs.train(y, ENV, CONFIG.replace(seed=1), **quiet)
    run_id = json.loads((r / "run.json").read_text())["trackers"]["wandb"]["run_id"]
    segments = trackers.offline_segments(offline_wandb, run_id)
    _take_trackers(r, y)
    with pytest.raises(runs.RunDirectoryError, match=r"^W&B run .* records training .*--new-tracker-run wandb$"):
        runs.train(y, resume=True, num_timesteps=3 * EPOCH, **quiet)
    assert trackers.offline_segments(offline_wandb, run_id) == segments  # refused before wandb.init
    runs.train(r, resume=True, num_timesteps=3 * EPOCH, **quiet)  # r's own resume continues it
    segments = trackers.offline_segments(offline_wandb, run_id)
    assert [step for path in segments for step, _ in trackers.wandb_history(path)] == [EPOCH, 2 * EPOCH, 3 * EPOCH]
