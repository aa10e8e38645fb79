"""target_kl: an iteration's SGD steps stop at the first minibatch whose approximate KL to the acting
policy exceeds 1.5 * target_kl, as SB3's PPO; the skipped steps leave Adam as it was, the schedule not."""

import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from ppo_configs import TINY

from gymjax.cli.run import add_config_flags
from gymjax.trainers.ppo import PPOConfig, PPOTrainer
from gymjax.trainers.ppo.losses import Minibatch

# One iteration per epoch, a linear schedule: the schedule's count is in the optimizer state.
ONE = TINY.replace(num_timesteps=8 * 16, epoch_iterations=1, num_evals=0, lr_schedule="linear")
STEPS = ONE.update_epochs * ONE.num_minibatches  # SGD steps per iteration
APPLIED = "losses/sgd_steps_applied"


def _state_of(opt_state, kind):
    (found,) = [x for x in jax.tree.leaves(opt_state, is_leaf=lambda x: isinstance(x, kind)) if isinstance(x, kind)]
    return found


def _equal(a, b) -> bool:
    return all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(np.array_equal(x, y)), a, b)))


def _epochs(config, epochs=1):
    trainer = PPOTrainer(config, "JaxCartPole-v0")
    run = trainer.init()
    before = jax.device_get(run.state)
    metrics = [trainer.run_epoch(run) for _ in range(epochs)]
    return before, jax.device_get(run.state), metrics


def test_a_huge_target_kl_takes_every_step_as_none():
    _, plain, plain_metrics = _epochs(ONE, epochs=2)
    _, huge, huge_metrics = _epochs(ONE.replace(target_kl=1e9), epochs=2)
    # Equal to an ulp, not bit for bit: the flag's selects change how XLA fuses the step, and one of
    # Adam's nu moved by an ulp in 16 steps (run eagerly, op by op, the two are equal bit for bit).
    # A step skipped would move the parameters by about the learning rate.
    for a, b in [(plain.params, huge.params), (plain.opt_state, huge.opt_state)]:
        jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-12), a, b)
    assert all(APPLIED not in m for m in plain_metrics)  # no target_kl, no new metric
    assert [m.pop(APPLIED) for m in huge_metrics] == [1.0, 1.0]
    for p, h in zip(plain_metrics, huge_metrics):
        assert set(p) == set(h)
        for k in p:
            if k.startswith("losses/"):
                assert h[k] == pytest.approx(p[k], rel=1e-5, abs=1e-9), k


def test_a_tiny_target_kl_takes_at_most_the_first_sgd_step():
    before, after, (metrics,) = _epochs(ONE.replace(target_kl=1e-12))
    # The first minibatch's KL is that of the acting policy to itself after the observation statistics'
    # update: above 1.5e-12, unless it rounds to 0; so the first step at most, never a later one.
    adam = _state_of(after.opt_state, optax.ScaleByAdamState)
    applied = int(adam.count[0])
    assert applied in (0, 1) and metrics[APPLIED] == pytest.approx(applied / STEPS)
    assert int(_state_of(after.opt_state, optax.ScaleByScheduleState).count[0]) == STEPS
    trainable = lambda s: (s.params.policy, s.params.value)  # noqa: E731
    if applied == 0:
        assert _equal(trainable(before), trainable(after))
        assert _equal(_state_of(before.opt_state, optax.ScaleByAdamState), adam)
    else:
        assert not _equal(trainable(before), trainable(after))


def test_a_stop_holds_for_the_rest_of_the_iteration():
    # One sample whose acting log-probability is far below the policy's own: its minibatch's KL is
    # about 16 / minibatch size, every other's about 0. The run stops at that minibatch in the
    # first pass (the third, with these keys) and takes no step after it, though the next
    # minibatches' KL is small again.
    config = ONE.replace(target_kl=0.01, update_epochs=3, num_minibatches=4, normalize_observations=False)
    trainer = PPOTrainer(config, "JaxPendulum-v0")
    state = trainer.init().state
    n = config.num_envs * config.unroll_length
    obs_key, action_key = jax.random.split(jax.random.PRNGKey(1))
    obs = jax.random.normal(obs_key, (n, 3))
    raw_action = jax.random.normal(action_key, (n, 1))
    initial = jax.tree.map(lambda x: x[0], state.params)
    log_prob = trainer.networks.distribution.log_prob(trainer.networks.logits(initial, obs), raw_action)
    log_prob = log_prob.at[17].add(-3.0)
    data = Minibatch(obs, raw_action, log_prob, jnp.ones(n), jnp.zeros(n))
    data = jax.tree.map(lambda x: x[None], data)

    def sgd(args):
        return trainer._sgd(*args)

    _, opt_state, metrics = jax.jit(trainer.mesh.per_device(sgd))((state.params, state.opt_state, data, state.key))
    steps = config.update_epochs * config.num_minibatches
    applied = int(_state_of(opt_state, optax.ScaleByAdamState).count[0])
    # Without the stop carried on, every minibatch but the one with that sample would be applied:
    # update_epochs * (num_minibatches - 1) steps.
    assert applied < config.num_minibatches
    assert float(metrics[APPLIED][0]) == pytest.approx(applied / steps)
    assert int(_state_of(opt_state, optax.ScaleByScheduleState).count[0]) == steps
    # The losses are those of the steps taken and the one that stopped them, as SB3 reports: the
    # KL is about that sample's (e**3 - 1 - 3) over its minibatch, shared by those steps (the others'
    # are about 0); the later minibatches holding it again would raise the mean to about 3 times that / steps.
    stopping_kl = (np.exp(3.0) - 4) / (n // config.num_minibatches)
    assert float(metrics["losses/approx_kl"][0]) == pytest.approx(stopping_kl / (applied + 1), rel=0.05)


def test_target_kl_is_none_or_a_positive_number():
    # The bad values' messages: tests/trainers/test_config_validation.py.
    assert PPOConfig().target_kl is None and type(PPOConfig(target_kl=1).target_kl) is float


def test_the_cli_flag_takes_a_number_or_none():
    parser = argparse.ArgumentParser()
    add_config_flags(parser)
    assert parser.parse_args(["--target-kl", "0.015"]).target_kl == 0.015
    assert parser.parse_args(["--target-kl", "none"]).target_kl is None
    assert not hasattr(parser.parse_args([]), "target_kl")
