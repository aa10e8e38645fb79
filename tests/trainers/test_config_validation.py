"""PPOConfig refuses bad values with an error naming the field, before any work starts; a resumed
run may change every field but those its saved arrays depend on."""

import dataclasses
import time

import numpy as np
import pytest

import gymjax
from gymjax.envs.classic import CartPole
from gymjax.trainers.ppo import PPOConfig, PPOTrainer, SavedMeta, resume
from gymjax.trainers.store.checkpoint import IncompatibleCheckpoint

BAD = [
    # (field, value, words the message must hold)
    ("learning_rate", -0.1, "learning_rate must be a real number > 0, got -0.1"),
    ("learning_rate", "3e-4", "learning_rate must be a real number > 0, got '3e-4' (str)"),
    ("learning_rate", True, "learning_rate must be a real number > 0, got True (bool)"),
    ("clip_epsilon", -0.2, "clip_epsilon must be a real number > 0"),
    ("max_grad_norm", float("nan"), "max_grad_norm must be a real number (finite), got nan"),
    ("entropy_cost", -1e-3, "entropy_cost must be a real number >= 0"),
    ("value_loss_coef", float("inf"), "value_loss_coef must be a real number >= 0, got inf"),
    ("gamma", 1.5, "gamma must be a real number in [0, 1]"),
    ("gae_lambda", -0.1, "gae_lambda must be a real number in [0, 1]"),
    ("gamma_early", 1.5, "gamma_early must be a real number in [0, 1] or None, got 1.5"),
    ("gamma_early_steps", -1, "gamma_early_steps must be an int >= 0, got -1"),
    ("reward_scaling", 0.0, "reward_scaling must be a real number != 0"),
    ("log_std_init", float("-inf"), "log_std_init must be a real number (finite)"),
    ("num_envs", True, "num_envs must be an int > 0, got True (bool)"),
    ("num_envs", 8.0, "num_envs must be an int > 0, got 8.0 (float)"),
    ("unroll_length", 0, "unroll_length must be an int > 0, got 0"),
    ("episode_length", 0, "episode_length must be an int > 0 or None, got 0"),
    ("target_kl", 0.0, "target_kl must be a real number > 0 or None, got 0.0"),
    ("target_kl", -0.01, "target_kl must be a real number > 0 or None, got -0.01"),
    ("target_kl", float("inf"), "target_kl must be a real number > 0 or None, got inf"),
    ("num_evals", -1, "num_evals must be an int >= 0"),
    ("max_to_keep", 0, "max_to_keep must be an int > 0 or None"),
    ("epoch_iterations", 0, "epoch_iterations must be an int > 0 or None"),
    ("policy_hidden_sizes", (0,), "policy_hidden_sizes must be a non-empty tuple of positive ints"),
    ("value_hidden_sizes", (), "value_hidden_sizes must be a non-empty tuple of positive ints"),
    ("policy_hidden_sizes", [64, 64], "got [64, 64] (list)"),
    ("normalize_observations", 1, "normalize_observations must be True or False, got 1 (int)"),
    ("activation", "gelu", "activation must be one of ('tanh', 'relu', 'swish', 'elu'), got 'gelu'"),
    ("lr_schedule", "cosine", "lr_schedule must be one of ('constant', 'linear')"),
    # PRNGKey raised a raw OverflowError past 2**63 - 1, and kept the low 32 bits of the rest.
    ("seed", 2**70, "seed must be an int in [0, 2**32 - 1], got 1180591620717411303424 (int)"),
    ("seed", 2**32, "seed must be an int in [0, 2**32 - 1], got 4294967296"),
    ("seed", -1, "seed must be an int in [0, 2**32 - 1], got -1"),
]


@pytest.mark.parametrize("field, value, words", BAD, ids=[f"{f}={v!r}" for f, v, _ in BAD])
def test_a_bad_value_names_the_field_and_what_it_takes(field, value, words):
    with pytest.raises(ValueError) as error:
        PPOConfig(**{field: value})
    assert words in str(error.value)


@pytest.mark.parametrize("values", [dict(gamma_early=0.99), dict(gamma_early_steps=1000)])
def test_gamma_early_and_its_steps_come_together(values):
    with pytest.raises(ValueError) as error:
        PPOConfig(**values)
    assert str(error.value).startswith("gamma_early and gamma_early_steps go together: a discount and the env steps")


def test_the_seed_range_is_what_prng_keys_tell_apart():
    import jax

    assert PPOConfig(seed=2**32 - 1).seed == 2**32 - 1
    # Why 32 bits: without jax_enable_x64 a larger seed gives a smaller one's key.
    if not jax.config.jax_enable_x64:
        assert (jax.random.PRNGKey(2**32) == jax.random.PRNGKey(0)).all()


def test_good_values_pass_and_numpy_numbers_become_python_numbers():
    config = PPOConfig(num_envs=np.int64(64), learning_rate=np.float32(1e-3), gamma=1, max_grad_norm=0.0)
    assert type(config.num_envs) is int and type(config.learning_rate) is float and type(config.gamma) is float
    assert config.replace(episode_length=None).episode_length is None


def test_the_batch_must_split_over_devices_and_minibatches():
    # 6 envs * 1 step = 6 steps split into 2 minibatches on one device; over 2 devices each has 3.
    config = PPOConfig(num_envs=6, unroll_length=1, num_minibatches=2)
    config.check_batch_split(3)  # 2 steps per device: 2 minibatches of 1
    with pytest.raises(ValueError, match=r"each device's batch, .* = 6 / 2 \* 1 = 3, must be divisible by num_mini"):
        config.check_batch_split(2)
    with pytest.raises(ValueError, match=r"num_envs \(6\) must be a multiple of the device count \(4"):
        config.check_batch_split(4)
    with pytest.raises(ValueError, match=r"= 3 / 1 \* 5 = 15, must be divisible by num_minibatches \(2\)"):
        PPOConfig(num_envs=3, unroll_length=5, num_minibatches=2)  # the same check, for one device


def test_a_batch_that_cannot_fit_is_refused_with_the_estimate_before_compiling():
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"num_envs=10000000 with unroll_length=32 needs at least [0-9.]+ GiB .* is "
                                         r"[0-9.]+ GiB\. Lower num_envs"):
        PPOTrainer(PPOConfig(num_envs=10**7), "JaxCartPole-v0")
    assert time.perf_counter() - start < 5  # XLA took 10 s to fail on it


def test_agent_episode_length_counts_agent_steps_rounded_up():
    from gymjax.envs.classic import CartPole

    env = gymjax.make("JaxCartPole-v0")  # max_episode_steps 500, from the registry
    assert PPOConfig(action_repeat=3).agent_episode_length(env) == 167  # ceil(500 / 3): the last step is cut
    assert PPOConfig(action_repeat=3, episode_length=9).agent_episode_length(env) == 3
    with pytest.raises(ValueError, match="has no time limit; set PPOConfig.episode_length"):
        PPOConfig().agent_episode_length(CartPole())  # the class alone: the time limit is the registry's


# Another valid value of each field a resumed run must keep: a field newly marked
# resume="fixed" fails the test below until it is given one here.
OTHER_FIXED_VALUE = {
    "num_envs": 8,  # the env state and the return statistics are [num_envs, ...]
    "policy_hidden_sizes": (32,),  # the parameters' shapes
    "value_hidden_sizes": (32, 32, 32),
    "activation": "relu",  # the same parameters would mean another function
    "policy_distribution": "normal",
}
# Fields a resumed run may change unasked (how long, what is reported), with another value each.
FREE_CHANGES = [
    ("num_timesteps", 5_000_000),  # gymjax train --resume --timesteps
    ("num_evals", 3),
    ("save_every_epochs", 5),
    ("epoch_iterations", 2),
]
# Fields that change how the run trains: refused on resume unless named in resume_changes.
GUARDED_CHANGES = [
    ("learning_rate", 1e-3),
    ("entropy_cost", 0.0),
    ("seed", 7),
    ("normalize_rewards", True),
    ("gamma", 0.9),
    ("target_kl", 0.02),
]


def _meta(config: PPOConfig) -> SavedMeta:
    """A CartPole checkpoint's metadata, as a trainer of ``config`` writes it."""
    return SavedMeta(
        config=config, env_steps=0, epoch=0, elapsed_s=0.0, num_devices=1, num_processes=1, obs_size=4,
        action_space={"type": "Discrete", "n": 2}, env_id="JaxCartPole-v0", state_layout=CartPole.state_layout,
        run_id=None,
    )


def test_the_fields_fixed_on_resume_are_those_the_saved_arrays_depend_on():
    assert {f.metadata["resume"] for f in dataclasses.fields(PPOConfig)} == {"free", "fixed"}
    assert set(resume.FIXED_FIELDS) == set(OTHER_FIXED_VALUE)
    assert not {name for name, _ in FREE_CHANGES} & set(resume.FIXED_FIELDS)


@pytest.mark.parametrize("name", resume.FIXED_FIELDS)
def test_changing_a_fixed_field_on_resume_is_refused(name):
    changed = PPOConfig(**{name: OTHER_FIXED_VALUE[name]})
    with pytest.raises(IncompatibleCheckpoint, match=rf"cannot resume: the checkpoint has {name}=.*, this config"):
        resume.check_compatible(_meta(PPOConfig()), _meta(changed), "JaxCartPole-v0")


@pytest.mark.parametrize("name, value", FREE_CHANGES, ids=[name for name, _ in FREE_CHANGES])
def test_changing_a_free_field_on_resume_is_allowed(name, value):
    changed = PPOConfig(**{name: value})
    assert getattr(changed, name) != getattr(PPOConfig(), name)
    resume.check_compatible(_meta(PPOConfig()), _meta(changed), "JaxCartPole-v0")


@pytest.mark.parametrize("name, value", GUARDED_CHANGES, ids=[name for name, _ in GUARDED_CHANGES])
def test_changing_a_field_of_how_it_trains_on_resume_is_refused_unless_named(name, value):
    changed = PPOConfig(**{name: value})
    before = getattr(PPOConfig(), name)
    with pytest.raises(IncompatibleCheckpoint) as refusal:
        resume.check_compatible(_meta(PPOConfig()), _meta(changed), "JaxCartPole-v0")
    assert str(refusal.value) == (
        f"cannot resume: this config changes {name} {before!r} -> {value!r} from the checkpoint's, which changes how "
        "the run trains; give the checkpoint's values, or name the fields in ppo.train's resume_changes to train on "
        "with these"
    )
    resume.check_compatible(_meta(PPOConfig()), _meta(changed), "JaxCartPole-v0", changes=(name,))


def test_every_changed_field_is_named_and_resume_changes_takes_only_those_fields():
    changed = PPOConfig(learning_rate=1e-3, seed=7, num_evals=3)
    with pytest.raises(IncompatibleCheckpoint, match=r"changes seed 0 -> 7, learning_rate 0.0003 -> 0.001 from"):
        resume.check_compatible(_meta(PPOConfig()), _meta(changed), "JaxCartPole-v0", changes=("gamma",))
    with pytest.raises(ValueError, match=r"resume_changes names \['num_envs', 'learning_rat'\]; it takes"):
        resume.check_changes(["num_envs", "learning_rat"])
    with pytest.raises(TypeError, match="got the string 'seed'"):
        resume.check_changes("seed")
    assert set(resume.GUARDED_FIELDS) >= {name for name, _ in GUARDED_CHANGES}
    assert not set(resume.GUARDED_FIELDS) & {*resume.FIXED_FIELDS, *resume.REPORTING_FIELDS}
