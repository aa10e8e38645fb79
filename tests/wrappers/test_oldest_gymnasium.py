"""The Gymnasium adapter on any Gymnasium the project declares: make, step and make_vec on classic control.

This file is what `.ci/run` runs on the oldest Gymnasium pyproject.toml allows (a venv of its own,
`.venv-oldgym`), besides running in the suite on the current one. It uses only what every
supported Gymnasium has: no ``gymnasium.vector.AutoresetMode`` (1.1+) at import.
"""

import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import vector as vw
from lockstep import assert_same  # tests/lockstep.py

import gymjax  # noqa: F401  (registers the ids)
from gymjax.wrappers import gymnasium as adapter
from gymjax.wrappers.gymnasium import GymnasiumEnv, GymnasiumVectorEnv

ROOT = Path(__file__).resolve().parents[2]
HAS_MODES = hasattr(gymnasium.vector, "AutoresetMode")  # Gymnasium 1.1 and later


def _declared_minimum() -> tuple[int, ...]:
    text = (ROOT / "pyproject.toml").read_text()
    found = re.search(r'"gymnasium>=([0-9.]+)"', text)
    assert found, "pyproject.toml declares no gymnasium>= bound"
    return tuple(int(p) for p in found.group(1).split("."))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.match(r"[0-9.]+", text).group(0).rstrip(".").split("."))


def test_installed_gymnasium_is_one_the_project_declares():
    minimum = _declared_minimum()
    assert _version(gymnasium.__version__)[: len(minimum)] >= minimum


@pytest.mark.parametrize("env_id", ["JaxCartPole-v0", "JaxPendulum-v0"])
def test_make_reset_step_and_check_env(env_id):
    env = gymnasium.make(env_id)
    assert isinstance(env.unwrapped, GymnasiumEnv)
    obs, info = env.reset(seed=3)
    assert obs.shape == env.observation_space.shape and obs.dtype == np.float32 and info == {}
    env.action_space.seed(3)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert env.observation_space.contains(obs)
    assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
    again = gymnasium.make(env_id)
    np.testing.assert_array_equal(again.reset(seed=3)[0], env.reset(seed=3)[0])  # seeded resets repeat
    check_env(gymnasium.make(env_id).unwrapped)
    env.close()


def test_time_limit_truncates_at_the_registered_horizon():
    env = gymnasium.make("JaxPendulum-v0")  # never terminates: the TimeLimit ends it, at 200 steps
    env.reset(seed=0)
    for t in range(1, 201):
        _, _, terminated, truncated, _ = env.step(np.zeros(1, np.float32))
        assert not terminated and truncated == (t == 200)


def test_make_vec_steps_as_sync_vector_env_in_next_step_mode():
    """The default vector env against Gymnasium's own SyncVectorEnv of single gymjax envs (whose
    only mode, on 1.0, is next-step auto-reset), through a few episode ends."""
    ours = gymnasium.make_vec("JaxCartPole-v0", 3, max_episode_steps=12)
    assert isinstance(ours, GymnasiumVectorEnv)
    assert ours.metadata["autoreset_mode"].value == "NextStep"
    reference = gymnasium.vector.SyncVectorEnv(
        [lambda: gymnasium.wrappers.TimeLimit(gymnasium.make("JaxCartPole-v0").unwrapped, 12)] * 3
    )
    assert_same(ours.reset(seed=5), reference.reset(seed=5))
    rng = np.random.default_rng(5)
    ends = 0
    for _ in range(40):
        actions = rng.integers(0, 2, 3)
        got, want = ours.step(actions), reference.step(actions)
        assert_same(got, want)
        ends += int(np.sum(want[2] | want[3]))
    assert ends >= 3  # the comparison crossed episode ends and the resets after them


def test_make_vec_sync_mode_and_vector_wrappers():
    sync = gymnasium.make_vec("JaxCartPole-v0", 2, vectorization_mode="sync")
    obs, _ = sync.reset(seed=0)
    assert obs.shape == (2, 4)
    sync.step(np.array([0, 1]))
    stats = vw.RecordEpisodeStatistics(gymnasium.make_vec("JaxCartPole-v0", 2, max_episode_steps=8))
    stats.reset(seed=0)
    seen = []
    for _ in range(10):
        _, _, terminated, truncated, info = stats.step(np.array([0, 1]))
        if "episode" in info:
            seen.append(info["episode"]["l"][info["_episode"]])
    lengths = np.concatenate(seen)
    assert len(lengths) >= 2 and (lengths <= 8).all()


def test_same_step_mode_where_gymnasium_has_it_refused_by_name_where_not():
    if HAS_MODES:
        env = gymnasium.make_vec("JaxCartPole-v0", 2, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)
        assert env.autoreset_mode is gymnasium.vector.AutoresetMode.SAME_STEP
    else:
        with pytest.raises(ValueError, match=r"autoreset_mode=SAME_STEP needs gymnasium>=1\.1"):
            gymnasium.make_vec("JaxCartPole-v0", 2, autoreset_mode="same_step")


def test_without_gymnasium_modes_next_step_is_gymjax_own_and_same_step_refused(monkeypatch):
    """Gymnasium 1.0's case on any Gymnasium: no enum, so the adapter names the mode itself."""
    from gymjax.wrappers.training import AutoResetMode

    monkeypatch.setattr(adapter, "AutoresetMode", None)
    with pytest.raises(ValueError, match=r"needs gymnasium>=1\.1 \(installed: gymnasium "):
        GymnasiumVectorEnv("JaxCartPole-v0", 2, autoreset_mode="same_step")
    assert adapter._GYMNASIUM_MODES[AutoResetMode.NEXT_STEP].value == "NextStep"


def test_reference_evaluation_runs_on_this_gymnasium():
    """``--reference-episodes`` plays Gymnasium's own env in its SyncVectorEnv (next-step auto-reset)."""
    from gymjax.trainers.reference import evaluate_on_reference

    result = evaluate_on_reference(lambda obs: np.zeros(len(obs), np.int64), "JaxCartPole-v0", episodes=2, seed=0)
    assert result["reference_env"] == "CartPole-v1" and result["episodes"] == 2
    assert 8 <= result["episode_length_mean"] <= 20  # always pushing left, the pole falls within ~10 steps
