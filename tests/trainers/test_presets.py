"""PPO presets (``PPOConfig.preset``) and evaluation on Gymnasium's own env (``gymjax.trainers.reference``)."""

import dataclasses

import gymnasium
import numpy as np
import pytest

import gymjax
from gymjax import envs
from gymjax.trainers import reference
from gymjax.trainers.ppo import PPOConfig, presets, train


def test_every_preset_is_a_valid_config_for_a_registered_env_with_a_reference():
    fields = {f.name for f in dataclasses.fields(PPOConfig)}
    assert presets.names()[:5] == ["ant", "ant_hour", "inverted_pendulum", "cartpole", "pendulum"]
    first_for_env = {}
    for preset in presets.PRESETS:
        first_for_env.setdefault(preset.env_id, preset.name)
        assert set(preset.settings) <= fields, preset.name
        config = PPOConfig.preset(preset.name)
        # by short name, or by env id: the env's first preset ("JaxAnt-v0" is "ant", not "ant_hour")
        assert PPOConfig.preset(preset.env_id) == PPOConfig.preset(first_for_env[preset.env_id])
        assert "num_timesteps" in preset.settings  # every preset states its budget
        for name, value in preset.settings.items():  # and otherwise only what it changes
            assert getattr(config, name) == value, (preset.name, name)
            assert name == "num_timesteps" or value != getattr(PPOConfig(), name), (preset.name, name)
        assert envs.spec(preset.env_id).reference_id is not None


@pytest.mark.parametrize("env_id", sorted(set(envs.registered_ids()) & envs.CATALOG))
def test_every_catalog_id_has_a_preset(env_id):
    """A new id is in the catalog only with a preset (``gymjax train --env <id>`` starts from it)."""
    preset = presets.get(env_id)
    assert preset.env_id == env_id and preset.origin


def test_preset_changes_override_and_bad_names_list_the_presets():
    config = PPOConfig.preset("ant", seed=3, num_timesteps=1000)
    assert (config.seed, config.num_timesteps, config.policy_hidden_sizes) == (3, 1000, (256, 256))
    with pytest.raises(ValueError, match=r"no PPO preset 'JaxHoper-v0'; presets: ant \(JaxAnt-v0\), "):
        PPOConfig.preset("JaxHoper-v0")
    with pytest.raises(ValueError, match="num_envs must be an int > 0"):
        PPOConfig.preset("ant", num_envs=0)


@pytest.mark.slow  # a preset trained to its target: 30 s on 2 cores
def test_inverted_pendulum_preset_balances_on_gymnasiums_own_env():
    # The preset as `gymjax train --preset inverted_pendulum` runs it, on the default engine (MuJoCo C
    # on a CPU), judged on InvertedPendulum-v5 at each evaluation.
    config = PPOConfig.preset("inverted_pendulum", reference_episodes=4, num_evals=2)
    env = gymjax.make("JaxInvertedPendulum-v0")
    assert env.engine == "mujoco"
    reports = []
    train(config, env, progress_bar=False, progress_fn=lambda step, m: reports.append(m))
    last = [m for m in reports if "reference/episode_return" in m][-1]
    assert last["eval/episode_return"] >= 950 and last["reference/episode_return"] >= 950, last


def test_reference_episodes_are_gymnasiums_episodes_with_the_same_seeds():
    # A policy that always pushes left: each CartPole-v1 episode ends after a few steps, its length
    # set by the reset seed. The evaluator must play exactly those episodes.
    left = lambda obs: np.zeros(len(obs), np.int64)  # noqa: E731
    result = reference.evaluate_on_reference(left, "JaxCartPole-v0", episodes=3, seed=7)
    lengths = []
    for i in range(3):
        env = gymnasium.make("CartPole-v1")
        env.reset(seed=7 + i)
        n, done = 0, False
        while not done:
            _, _, terminated, truncated, _ = env.step(0)
            n, done = n + 1, terminated or truncated
        lengths.append(n)
    assert result["reference_env"] == "CartPole-v1"
    assert result["episode_length_mean"] == result["episode_return_mean"] == np.mean(lengths)
    assert result["episode_return_std"] == pytest.approx(np.std(lengths))
    # action_repeat plays each action that many env steps: still the same episodes, counted in env steps
    repeated = reference.evaluate_on_reference(left, "JaxCartPole-v0", episodes=3, seed=7, action_repeat=2)
    assert repeated["episode_length_mean"] == np.mean(lengths)


def test_reference_takes_the_task_options_and_drops_the_engine_ones():
    assert reference.reference_kwargs("JaxAnt-v0", {"engine": "mjx", "solver": "fast", "ctrl_cost_weight": 0.1}) == {
        "ctrl_cost_weight": 0.1
    }
    # a variant's reference options come from the registry (tests/conftest.py: a Hopper of one's own XML)
    xml = envs.spec("TestJaxHopperLongFoot-v0").kwargs["xml_file"]
    assert reference.reference_kwargs("TestJaxHopperLongFoot-v0", {"engine": "mujoco"}) == {"xml_file": xml}
    swing = lambda obs: np.full((len(obs), 1), 2.0, np.float32)  # noqa: E731
    heavy = reference.evaluate_on_reference(swing, "JaxPendulum-v0", {"g": 20.0}, episodes=1)
    light = reference.evaluate_on_reference(swing, "JaxPendulum-v0", {"g": 1.0}, episodes=1)
    assert heavy["episode_return_mean"] != light["episode_return_mean"]  # Pendulum-v1 got g
    with pytest.raises(ValueError, match=r"CartPole-v1 does not take the options \{'gravity': 3\}"):
        reference.evaluate_on_reference(swing, "JaxCartPole-v0", {"gravity": 3}, episodes=1)


def test_reference_refuses_envs_without_one_before_any_work():
    with pytest.raises(ValueError, match=r"JaxMultiAnt-v0 has no Gymnasium reference env; ids with one: \["):
        reference.reference_id("JaxMultiAnt-v0")
    with pytest.raises(ValueError, match="not built by id"):
        reference.reference_id(None)
    with pytest.raises(ValueError, match="episodes must be an int >= 1, got 0"):
        reference.evaluate_on_reference(lambda obs: obs, "JaxCartPole-v0", episodes=0)
    # an env object made by its class has no id: a run asking for reference episodes is refused at once
    from gymjax.envs.classic import CartPole
    from gymjax.trainers.ppo import PPOTrainer

    with pytest.raises(ValueError, match="not built by id"):
        PPOTrainer(PPOConfig(reference_episodes=2), CartPole())
    assert gymjax.make("JaxCartPole-v0").env_id == "JaxCartPole-v0"
    assert PPOTrainer(PPOConfig(reference_episodes=2), gymjax.make("JaxCartPole-v0")).env_id == "JaxCartPole-v0"


def test_a_preset_and_another_env_are_refused_in_one_place():
    from gymjax.trainers.ppo import presets

    assert presets.resolve("ant", None) == ("JaxAnt-v0", presets.get("ant"))
    assert presets.resolve("JaxAnt-v0", "JaxAnt-v0")[1].name == "ant"  # its own env, named: fine
    assert presets.resolve(None, "JaxCartPole-v0") == ("JaxCartPole-v0", None)
    with pytest.raises(ValueError, match=r"^--preset ant is tuned for JaxAnt-v0, not --env JaxHopper-v0; drop one"):
        presets.resolve("ant", "JaxHopper-v0", named="--preset ant", env_named="--env JaxHopper-v0")
    with pytest.raises(ValueError, match=r"^preset ant is tuned for JaxAnt-v0, not JaxHopper-v0; drop one of them"):
        presets.resolve("ant", "JaxHopper-v0")
