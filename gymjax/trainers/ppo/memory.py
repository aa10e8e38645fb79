"""How much memory a PPO config needs, checked before anything compiles.

XLA finds out that a batch does not fit only when it allocates it, after a
compile that can take minutes (``num_envs=10**7`` on CartPole failed only
inside XLA, after compiling). This estimate is coarse on purpose, a lower
bound of what one process holds at once: the envs' states (twice: the epoch's
input and output), one iteration's rollout with its SGD copies, and the
networks: their weights with what training keeps beside them (gradients and
Adam's two moments), and one minibatch's activations for the backward pass.
``policy_hidden_sizes=[60000, 60000]`` (3.6e9 weights) passed a check that
counted the batch alone, then ended the command in ``RESOURCE_EXHAUSTED``.
"""

from __future__ import annotations

import jax

from gymjax.core.memory import GIB, available_bytes, refuse_if_short, tree_bytes
from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.ppo.networks import make_networks

# Per agent step of each env, in float32 values beyond the observation and action: reward, two
# flags, log-prob, value, advantage, return, episode return and length, done mask.
SCALARS_PER_STEP = 10
# The rollout is held once, copied once shuffled for the minibatches, and once more as gradients'
# inputs; the observations three times (obs, final obs, normalized).
ROLLOUT_COPIES = 3
# Each trained weight is held at once as itself, its gradient and Adam's first and second moments
# (the update and the new weights may be computed in place of these, so they are not counted).
WEIGHT_COPIES = 4


def estimate_bytes(config: PPOConfig, obs_size: int, action_size: int, env_state_bytes: int, envs: int) -> int:
    """Bytes for ``envs`` envs of this process: their states and one iteration's data."""
    per_step = (3 * obs_size + 2 * action_size + SCALARS_PER_STEP) * 4
    rollout = config.unroll_length * envs * per_step * ROLLOUT_COPIES
    return 2 * env_state_bytes * envs + rollout


def network_bytes(config: PPOConfig, obs_size: int, action_space) -> tuple[int, int]:
    """``(parameters, bytes)`` of the policy and value networks on one device: the weights
    (shapes only, nothing computed) times :data:`WEIGHT_COPIES`, and a minibatch's activations."""
    networks = make_networks(obs_size, action_space, config)
    shapes = jax.eval_shape(networks.init, jax.random.PRNGKey(0))
    trained = (shapes.policy, shapes.value)
    params = sum(x.size for x in jax.tree.leaves(trained))
    # Each hidden layer's output over the minibatch, kept for the backward pass (float32).
    width = sum(config.policy_hidden_sizes) + sum(config.value_hidden_sizes)
    activations = config.minibatch_size * width * 4
    return params, WEIGHT_COPIES * tree_bytes(trained) + activations


def check_fits(config: PPOConfig, env, obs_size: int, action_size: int, envs: int) -> None:
    """Refuses a config whose batch and networks cannot fit, with the estimate; nothing runs or compiles."""
    state = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    state_bytes = tree_bytes(state)
    batch = estimate_bytes(config, obs_size, action_size, state_bytes, envs)
    params, nets = network_bytes(config, obs_size, env.action_space)
    # Every device keeps its own copy of the networks; the CPU's devices share the host's memory.
    local = jax.local_devices()
    nets *= len(local) if local[0].platform == "cpu" else 1
    if nets > batch:  # name what is too large: the networks here, the batch below
        what = (f"policy_hidden_sizes={list(config.policy_hidden_sizes)} with value_hidden_sizes="
                f"{list(config.value_hidden_sizes)}")
        advice = "Use smaller hidden layers (policy_hidden_sizes, value_hidden_sizes)."
    else:
        what = f"num_envs={config.num_envs} with unroll_length={config.unroll_length}"
        advice = "Lower num_envs or unroll_length, or add devices."
    refuse_if_short(
        batch + nets, available_bytes(), what,
        f"{params:,} network weights x {WEIGHT_COPIES} (weights, gradients, Adam's two moments) and their "
        f"activations: {nets / GIB:,.1f} GiB; {envs:,} envs in this process x {state_bytes:,} bytes of env state, "
        f"and one iteration's rollout: {batch / GIB:,.1f} GiB",
        advice,
    )
