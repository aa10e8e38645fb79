"""``gymjax crosscheck``: gymjax, SB3 and the torch agent agree on one rollout, and a mismatch fails."""

import numpy as np
import pytest

from gymjax import crosscheck
from gymjax.cli import main

pytest.importorskip("stable_baselines3")


@pytest.fixture(scope="module")
def checks():
    return crosscheck.run("JaxCartPole-v0", num_envs=4, steps=64, max_episode_steps=20, seed=0)


def test_every_check_passes_on_cartpole(checks):
    failed = [(c.name, c.max_diff) for c in checks if not c.passed]
    assert not failed
    names = " ".join(c.name for c in checks)
    for expected in ("SB3 RolloutBuffer", "torch agent", "sb3_vecmonitor", "gymnasium_stats", "brax"):
        assert expected in names
    # the rollout really holds both kinds of episode end
    window = next(c for c in checks if c.name.startswith("rollout: window"))
    assert window.passed


def test_episode_metrics_cover_timeouts():
    rollout = crosscheck.collect("JaxCartPole-v0", num_envs=2, steps=50, max_episode_steps=15, seed=0)
    lengths = [length for _, _, _, length in rollout.episodes["gymjax"]]
    assert 15 in lengths and min(lengths) < 15  # cut by the time limit, and terminated
    assert sorted(rollout.episodes["gymjax"]) == sorted(rollout.episodes["sb3_vecmonitor"])


def test_a_wrong_gae_is_caught(monkeypatch, capsys):
    from gymjax.trainers import torch_ppo

    real = torch_ppo.compute_gae_torch

    def off_by_a_little(*args, **kwargs):
        adv, ret = real(*args, **kwargs)
        return adv + 1e-3, ret  # what a subtly wrong bootstrap would look like

    monkeypatch.setattr(torch_ppo, "compute_gae_torch", off_by_a_little)
    code = main(["crosscheck", "--env", "JaxCartPole-v0", "--steps", "32"])
    out = capsys.readouterr().out
    assert code == 1
    assert "GAE advantages: gymjax == torch agent" in out and "FAIL" in out
    assert "GAE returns: gymjax == torch agent" in out


def test_brax_mode_is_reported_as_numbers(checks):
    detail = next(c.detail for c in checks if c.name.startswith("brax == standard") and c.detail)
    assert "steps differ" in detail and "timeout steps is 0" in detail
    diff = float(detail.split("advantage ")[1].split(";")[0])
    assert np.isfinite(diff) and diff > 0
