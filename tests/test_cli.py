"""``gymjax train | eval | render`` on a run directory, ``gymjax demo``, ``gymjax crosscheck``, and bad input."""

import csv
import json
import re
import shutil

import imageio_ffmpeg
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
    # CartPole pays 1 a step: a return that is not the length counts steps past an episode's end
    assert summary["episode_return_mean"] == summary["episode_length_mean"]

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


def test_demo_steps_and_writes_a_video(tmp_path, capsys):
    out = tmp_path / "demo"
    # the run directory's writer: a link planted at the video's path is replaced, never written through
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"kept")
    (out / "JaxCartPole-v0.mp4").symlink_to(victim)
    assert main(["demo", "--env", "JaxCartPole-v0", "--num-envs", "4", "--steps", "5", "--video-steps", "3",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert re.search(r"^20 env steps in [\d.]+ s: [\d,]+ steps/s", text, re.MULTILINE), text
    video = out / "JaxCartPole-v0.mp4"
    assert not video.is_symlink() and victim.read_bytes() == b"kept"
    assert imageio_ffmpeg.count_frames_and_secs(str(video))[0] == 3
    assert sorted(p.name for p in out.iterdir()) == ["JaxCartPole-v0.mp4"]  # no temporary left
    assert f"video: {video}" in text


def test_demo_takes_env_options_and_refuses_wrong_ones(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--env", "JaxPendulum-v0", "--env-kwargs", "g=9.81", "--num-envs", "2",
                 "--steps", "2", "--video-steps", "0", "--out", str(out)]) == 0
    assert "options {'g': 9.81}" in capsys.readouterr().out
    assert not out.exists()  # no video asked for, nothing written
    # CartPole has no MJX solver: refused in one line naming what it takes, before anything is stepped
    with pytest.raises(SystemExit, match=r"^cannot make JaxCartPole-v0 with \{'solver': 'fast'\}: JaxCartPole-v0 has "
                                         r"no option 'solver' \(an unexpected keyword argument 'solver'\); "
                                         r"its options are "
                                         r"\['sutton_barto_reward'\]$"):
        main(["demo", "--env", "JaxCartPole-v0", "--env-kwargs", "solver=fast", "--out", str(out)])
    assert "env steps" not in capsys.readouterr().out


@pytest.mark.parametrize("argv, expected", [
    (["demo", "--env", "CartPole-v9"], r"^cannot make CartPole-v9 with \{\}: unknown environment id .*JaxCartPole-v0"),
    (["demo", "--env-kwargs", "fast"], r"--env-kwargs expects KEY=VALUE pairs, got 'fast'"),
    (["demo", "--num-envs", "0"], r"argument --num-envs: expected a positive integer, got '0'"),
    (["render", "--run-dir", "x", "--out", "x.gif"], r"^--out x\.gif: expected a \.mp4 path"),
    (["crosscheck", "--gae-lambda", "1.5"], r"argument --gae-lambda: expected a number in \[0, 1\]"),
    (["eval"], r"gymjax eval: error: the following arguments are required: --run-dir"),
    (["bench"], r"invalid choice: 'bench'"),  # the harness is `python -m benchmarks`, beside the package
    (["train", "--preset", "hoper", "--run-dir", "r"], r"argument --preset: no PPO preset 'hoper'; presets: ant "),
    (["train", "--preset", "ant", "--env", "JaxCartPole-v0", "--run-dir", "r"],
     r"^--preset ant is tuned for JaxAnt-v0, not --env JaxCartPole-v0; drop one of them"),
    (["eval", "--run-dir", "r", "--reference", "--stochastic"], r"^--reference plays the policy's mode"),
    # what XLA would find out only when it allocates: refused with the estimate, nothing written
    (["train", "--env", "JaxCartPole-v0", "--num-envs", "100000000", "--run-dir", "r"],
     r"^cannot train JaxCartPole-v0: num_envs=100000000 with unroll_length=32 needs at least [\d,.]+ GiB"),
])
def test_bad_input_is_one_line_naming_what_was_expected(tmp_path, monkeypatch, capsys, argv, expected):
    monkeypatch.chdir(tmp_path)  # demo's default --out is relative: nothing may appear here
    with pytest.raises(SystemExit) as refusal:
        main(argv)
    # argparse's errors exit 2 with the line on stderr; the checks after parsing raise the line itself
    code = refusal.value.code
    message = capsys.readouterr().err if code == 2 else str(code)
    assert re.search(expected, message) and len(message.strip().splitlines()) == 1, message
    assert not any(tmp_path.iterdir())


def test_crosscheck_passes_and_reports(capsys):
    pytest.importorskip("stable_baselines3")
    # the window tests/test_crosscheck.py knows to hold both terminations and timeouts
    assert main(["crosscheck", "--env", "JaxCartPole-v0", "--num-envs", "2", "--steps", "50",
                 "--max-episode-steps", "15"]) == 0
    text = capsys.readouterr().out
    passed, total = map(int, re.search(r"^(\d+)/(\d+) checks passed$", text, re.MULTILINE).groups())
    assert passed == total >= 10
    assert re.search(r"^GAE advantages: gymjax == SB3 RolloutBuffer +PASS", text, re.MULTILINE), text


def test_preset_run_records_its_name_and_settings_and_evaluates_on_gymnasiums_env(tmp_path, capsys):
    run_dir = tmp_path / "run"
    # the CartPole preset, its budget cut: flags override the preset's fields
    assert main(["train", "--preset", "cartpole", "--timesteps", "2048", "--num-evals", "2", "--reference-episodes",
                 "3", "--quiet", "--no-video", "--run-dir", str(run_dir)]) == 0
    recorded = json.loads((run_dir / "run.json").read_text())
    assert recorded["env"] == "JaxCartPole-v0" and recorded["preset"] == "cartpole"  # the preset's env
    assert recorded["config"]["update_epochs"] == 20 and recorded["config"]["gamma"] == 0.98  # the preset's
    assert recorded["config"]["num_timesteps"] == 2048  # the flag's
    logged = [r for r in rows(run_dir / "metrics.csv") if r["reference/episode_return"]]
    assert len(logged) == 2 and all(0 < float(r["reference/episode_return"]) <= 500 for r in logged)

    capsys.readouterr()
    assert main(["eval", "--run-dir", str(run_dir), "--episodes", "3", "--reference"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    ref = summary["reference"]
    assert ref["reference_env"] == "CartPole-v1" and ref["episodes"] == 3
    # CartPole-v1 pays 1 a step: the return counts the steps of the first episode only
    assert ref["episode_return_mean"] == ref["episode_length_mean"] > 0
    with pytest.raises(SystemExit, match=r"only --timesteps may change .*'--preset'"):
        main(["train", "--preset", "cartpole", "--resume", "--run-dir", str(run_dir)])


def test_eval_refuses_a_run_json_whose_env_was_changed_in_one_line(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["train", *TINY_FLAGS, "--num-evals", "1", "--no-video", "--run-dir", str(run_dir)]) == 0
    record = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**record, "env": "JaxPendulum-v0"}))
    for command in ("eval", "render"):
        with pytest.raises(SystemExit) as refusal:
            main([command, "--run-dir", str(run_dir)])
        assert str(refusal.value.code) == (
            f"{run_dir / 'run.json'} records env JaxPendulum-v0 with options {{}}, but the checkpoint was trained on "
            "JaxCartPole-v0, not JaxPendulum-v0: run.json was changed after training; its env and env_kwargs must "
            "be the run's"
        )
    assert not (run_dir / "policy.mp4").exists()


def test_the_library_refuses_bad_env_options_with_an_error_not_an_exit():
    """A library call raises what a caller can catch; the command turns it into its one line."""
    from gymjax import envs

    with pytest.raises(ValueError, match=r"--env-kwargs expects KEY=VALUE pairs, got 'fast'"):
        envs.parse_env_kwargs(["fast"])
    assert envs.parse_env_kwargs(["frame_skip=4", "solver=fast"]) == {"frame_skip": 4, "solver": "fast"}
