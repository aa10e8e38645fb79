"""``gymjax train | eval | render`` on a run directory."""

import csv
import json
import shutil

import pytest

from gymjax.cli import main

TINY_FLAGS = [
    "--env", "JaxCartPole-v0", "--timesteps", "512", "--num-envs", "8", "--unroll-length", "16",
    "--num-minibatches", "2", "--update-epochs", "2", "--num-evals", "4", "--num-eval-envs", "4",
    "--max-to-keep", "none", "--policy-hidden-sizes", "16,16", "--quiet",
]


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_train_eval_render_resume(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["train", *TINY_FLAGS, "--run-dir", str(run_dir)]) == 0
    for name in ("run.json", "metrics.csv", "learning_curve.png", "policy.mp4"):
        assert (run_dir / name).stat().st_size > 0, name
    recorded = json.loads((run_dir / "run.json").read_text())
    assert recorded["env"] == "JaxCartPole-v0" and recorded["config"]["policy_hidden_sizes"] == [16, 16]
    assert [int(r["env_steps"]) for r in rows(run_dir / "metrics.csv")] == [128, 256, 384, 512]

    capsys.readouterr()
    assert main(["eval", "--run-dir", str(run_dir), "--episodes", "4"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["env_steps"] == 512 and summary["episodes"] == 4
    assert 0 < summary["episode_return_mean"] <= 500

    out = tmp_path / "again.mp4"
    assert main(["render", "--run-dir", str(run_dir), "--out", str(out)]) == 0
    assert out.stat().st_size > 0

    # Lose the last two checkpoints, as a run killed after epoch 2 would have; resume.
    for step in ("3", "4"):
        shutil.rmtree(run_dir / "checkpoints" / step)
    assert main(["train", "--run-dir", str(run_dir), "--resume", "--quiet", "--no-video"]) == 0
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit()) == ["1", "2", "3", "4"]
    # one row per epoch: the replayed epochs replaced their old rows
    assert [int(r["env_steps"]) for r in rows(run_dir / "metrics.csv")] == [128, 256, 384, 512]


def test_train_refuses_to_overwrite_or_mix(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints" / "1").mkdir(parents=True)  # a run that saved a checkpoint
    (run_dir / "run.json").write_text("{}")
    with pytest.raises(SystemExit, match="already holds a run"):
        main(["train", *TINY_FLAGS, "--run-dir", str(run_dir)])
    with pytest.raises(SystemExit, match="drop"):
        main(["train", "--run-dir", str(run_dir), "--resume", "--learning-rate", "0.1"])
    with pytest.raises(SystemExit, match="not a gymjax run directory"):
        main(["eval", "--run-dir", str(tmp_path / "nothing")])
    with pytest.raises(SystemExit, match="invalid config: num_envs must be an int > 0"):
        main(["train", *TINY_FLAGS, "--num-envs", "0", "--run-dir", str(tmp_path / "bad")])


def test_help_documents_config_fields(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    for flag, words in [("--gae-mode", "Brax's masked GAE"), ("--value-loss-coef", "0.5 * 0.5"),
                        ("--timesteps", "environment steps")]:
        assert flag in text and words in " ".join(text.split())
