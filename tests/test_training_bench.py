"""The training benchmark (``python -m benchmarks training``): a quick run of two cheap arms, its
time to target, rl-zoo's settings as SB3 takes them, and its refusals of bad flags."""

from __future__ import annotations

import argparse
import json
import math
import sys

import pytest

from benchmarks import arms, training


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    training.add_arguments(p)
    return p.parse_args(argv)


# rl_zoo3 (extra 'bench', not 'dev'): without it the arms with rl-zoo's settings are reported skipped.
ZOO = arms._zoo_file() is not None
needs_zoo = pytest.mark.skipif(not ZOO, reason="rl_zoo3 is not installed (extra 'bench')")


@pytest.mark.slow  # the harness end to end (25 s); its parts (time to target, arms, flags) are tested below
def test_a_quick_run_writes_curves_evaluated_on_gymnasium_with_their_time_to_target(tmp_path):
    argv = ["--env", "cartpole", "--arms", "gymjax", "sb3", "--steps", "3000", "--points", "3", "--episodes", "2",
            "--out", str(tmp_path), "--work", str(tmp_path / "work"), "--stem", "quick"]  # fmt: skip
    assert training.main(parse(argv), argv) == 0
    record = json.loads((tmp_path / "quick.json").read_text())
    assert record["command"][:4] == ["python", "-m", "benchmarks", "training"]
    task = record["results"]["tasks"]["cartpole"]
    assert (task["env_id"], task["reference_id"], task["target"]) == ("JaxCartPole-v0", "CartPole-v1", 475.0)
    assert set(task["arms"]) == {"gymjax", "sb3"}
    if not ZOO:
        assert "rl_zoo3 is not installed" in task["arms"]["sb3"]["skipped"]
    for name, arm in task["arms"].items():
        if arm["skipped"]:
            continue
        (run,) = arm["runs"]
        assert run["error"] is None, run["error"]
        curve = run["curve"]
        assert len(curve) >= 2, name
        walls, steps = [c["wall_s"] for c in curve], [c["env_steps"] for c in curve]
        assert walls == sorted(walls) and steps == sorted(steps) and len(set(steps)) == len(steps), name
        assert steps[-1] == run["env_steps"] >= 3000, name
        # Played on Gymnasium's CartPole-v1: each episode's return is its length, 1 to 500.
        played = [json.loads(line) for line in (tmp_path / "work" / "quick" / f"cartpole-{name}-seed0" / "curve.jsonl")
                  .read_text().splitlines()]  # fmt: skip
        assert {p["env"] for p in played} == {"CartPole-v1"}
        assert all(p["return"] == p["length"] and 1 <= p["return"] <= 500 for p in played)
        # gymjax's best snapshot: the first with the trainer's highest evaluation, played on the same env.
        snapshots = [json.loads(line) for line in (tmp_path / "work" / "quick" / f"cartpole-{name}-seed0" /
                     "snapshots.jsonl").read_text().splitlines()]  # fmt: skip
        judged = [s for s in snapshots if "eval_return" in s]
        if name == "gymjax":
            top = max(s["eval_return"] for s in judged)
            assert len(judged) >= 2 and run["best"]["eval_return"] == top
            assert run["best"]["env_steps"] == next(s["env_steps"] for s in judged if s["eval_return"] == top)
            assert 1 <= run["best"]["return"] <= 500
            assert f"| {run['best']['return']:,.1f} |" in training.arm_row(arm, 475.0)
            # its losses by epoch (why a curve falls), steps rising to the run's last
            losses = run["diagnostics"]
            assert [d["env_steps"] for d in losses] == sorted({d["env_steps"] for d in losses})
            assert losses[-1]["env_steps"] == run["env_steps"]
            assert all(set(arms.DIAGNOSTICS) <= set(d) and d["losses/approx_kl"] == d["losses/approx_kl"]
                       for d in losses)  # fmt: skip
            assert "losses by env steps (approx KL" in (tmp_path / "quick.md").read_text()
        else:
            assert not judged and "best" not in run  # SB3 has no evaluation of its own here
        hit = training.reached(curve, 475.0)
        row = training.arm_row(arm, 475.0)
        assert row.endswith(f"| {1 if hit else 0}/1 |")
        if hit:
            assert f"| {hit['env_steps']:,} |" in row
    assert (tmp_path / "quick.md").read_text().count("| gymjax PPO, preset cartpole") == 1
    assert (tmp_path / "quick.png").stat().st_size > 0


def test_time_to_target_is_the_first_evaluated_point_at_or_above_it_and_the_summary_spreads_the_seeds():
    def run(seed, returns):
        curve = [{"wall_s": 10.0 * (i + 1), "env_steps": 1000 * (i + 1), "return": r, "return_std": 0.0}
                 for i, r in enumerate(returns)]  # fmt: skip
        return {"seed": seed, "curve": curve, "wall_s": curve[-1]["wall_s"], "env_steps": curve[-1]["env_steps"],
                "steps_per_s": 100.0, "error": None}  # fmt: skip

    arm = {
        "label": "A",
        "skipped": None,
        "runs": [run(0, [10, 480, 400]), run(1, [10, 20, 500]), run(2, [1, 2, 3])],
    }
    # the best snapshots of two seeds (a third, of an arm without evaluations, has none)
    arm["runs"][0]["best"] = {"return": 470.0}
    arm["runs"][1]["best"] = {"return": 490.0}
    assert training.reached(arm["runs"][0]["curve"], 475.0)["env_steps"] == 2000  # not the best (none later)
    assert training.reached(arm["runs"][2]["curve"], 475.0) is None
    # two seeds reach it, at 20 s and 30 s: median 25 [20 to 30]; final returns 400, 500, 3
    assert training.arm_row(arm, 475.0) == (
        "| A | 3 | 3,000 | 30 | 100 | 400.0 [3.0 to 500.0] | 480.0 [470.0 to 490.0] | 25 [20 to 30] "
        "| 2,500 [2,000 to 3,000] | 2/3 |"
    )
    skipped = {"label": "B", "skipped": "no --brax-python", "runs": []}
    assert training.arm_row(skipped, 475.0) == "| B | skipped: no --brax-python |" + " |" * 8  # as many cells


@needs_zoo
def test_sb3_arms_take_rl_zoo_settings_as_rl_zoo_reads_them():
    zoo_id, entry = arms.zoo_settings("Ant-v5")  # the zoo lists Ant at -v4
    assert zoo_id == "Ant-v4" and entry["normalize"] is True
    kwargs, n_envs, n_timesteps, norm = arms.sb3_kwargs(arms.zoo_settings("CartPole-v1")[1])
    assert (n_envs, n_timesteps, norm) == (8, 100_000, None)
    assert kwargs["learning_rate"](1.0) == pytest.approx(1e-3) and kwargs["learning_rate"](
        0.5
    ) == pytest.approx(5e-4)
    # read, not imported: rl_zoo3's import patches Gymnasium's TimeLimit for the whole process
    assert "rl_zoo3" not in sys.modules
    like = arms.gymjax_like_sb3(entry)
    assert (like["num_envs"], like["unroll_length"], like["num_minibatches"]) == (
        1,
        2048,
        32,
    )  # 2048 / batch 64
    assert like["normalize_rewards"] and like["policy_distribution"] == "normal"
    with pytest.raises(ValueError, match="does not express"):
        arms.gymjax_like_sb3(arms.zoo_settings("CartPole-v1")[1])  # a clip-range schedule
    assert "gymjax_sb3" not in arms.arms_for("cartpole") and "gymjax_sb3" in arms.arms_for("JaxAnt-v0")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--env", "NoSuchEnv-v0"], "NoSuchEnv-v0"),
        (["--env", "cartpole", "--arms", "dqn"], "no arm ['dqn'] for cartpole"),
        (["--env", "cartpole", "--steps", "0"], "--steps must be > 0"),
        (["--env", "cartpole", "--stall", "0"], "--stall must be > 0"),
        (["--env", "cartpole", "--brax-python", "/nonexistent/python"], "is not a file"),
        ([], "--env TASK... is required"),
        (["--env", "cartpole", "--set", "no_such_field=1"], "unexpected keyword argument 'no_such_field'"),
        (["--env", "cartpole", "--set", "update_epochs=0"], "update_epochs must be an int > 0"),
        (["--env", "cartpole", "--set", "update_epochs"], "--set takes FIELD=VALUE"),
    ],
)
def test_bad_flags_are_refused_before_any_work(argv, message, tmp_path):
    with pytest.raises(SystemExit, match=message.replace("[", r"\[").replace("]", r"\]")):
        training.main(parse([*argv, "--out", str(tmp_path)]), argv)
    assert not any(tmp_path.iterdir())


def test_a_budget_of_steps_has_no_wall_clock_limit_a_time_budget_has_its_own():
    # A fixed amount of work under load takes as long as it takes (an hour's steps took two beside
    # another run, and a 1-hour default killed it with nothing to show); the stall limit ends a hang.
    assert training.run_timeout(None, None) == math.inf
    assert training.run_timeout(None, 900.0) == 1500.0
    assert training.run_timeout(42.0, 900.0) == training.run_timeout(42.0, None) == 42.0
    assert parse(["--env", "cartpole"]).stall == training.STALL_S


def test_set_lays_other_settings_over_the_preset_of_the_arms_that_train_with_it():
    table = training.check(parse(["--env", "ant", "--set", "update_epochs=3", "lr_schedule=constant"]))["ant"]
    gymjax, preset = table["gymjax"], arms.arms_for("ant")["gymjax"].settings
    assert preset["update_epochs"] != 3 and preset["lr_schedule"] == "linear"
    assert gymjax.settings == preset | {"update_epochs": 3, "lr_schedule": "constant"}  # the rest is the preset's
    assert "preset ant, update_epochs=3, lr_schedule=constant" in gymjax.label  # the report says it is a trial
    assert table["sb3"].settings == arms.arms_for("ant")["sb3"].settings  # rl-zoo's are rl-zoo's


def test_the_brax_arm_is_skipped_with_its_reason_without_an_interpreter():
    assert "--brax-python" in training.brax_missing(None)
