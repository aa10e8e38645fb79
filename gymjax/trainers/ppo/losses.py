"""The PPO loss: clipped surrogate, value regression, entropy bonus. Pure functions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.ppo.networks import PPONetworks, PPOParams


@struct.dataclass
class Minibatch:
    """One SGD minibatch, flat ``[M, ...]``.

    Attributes:
        obs: float32 ``[M, obs_dim]``, raw (unnormalized) observations acted on.
        raw_action: ``[M, ...]`` the distribution's sample (before tanh or clipping, for Box).
        log_prob: float32 ``[M]``, log-probability under the acting policy.
        advantages: float32 ``[M]``.
        returns: float32 ``[M]``, value targets.
    """

    obs: jax.Array
    raw_action: jax.Array
    log_prob: jax.Array
    advantages: jax.Array
    returns: jax.Array


def ppo_loss(
    params: PPOParams,
    networks: PPONetworks,
    batch: Minibatch,
    key: jax.Array,
    config: PPOConfig,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Total loss and its parts (``losses/...`` metrics).

    ``loss = policy_loss + value_loss_coef * mean((returns - V)^2) - entropy_cost * entropy``
    where ``policy_loss = -mean(min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A))``.
    """
    logits = networks.logits(params, batch.obs)
    log_prob = networks.distribution.log_prob(logits, batch.raw_action)
    ratio = jnp.exp(log_prob - batch.log_prob)

    advantages = batch.advantages
    if config.normalize_advantages:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    eps = config.clip_epsilon
    surrogate = jnp.minimum(ratio * advantages, jnp.clip(ratio, 1 - eps, 1 + eps) * advantages)
    policy_loss = -surrogate.mean()

    values = networks.values(params, batch.obs)
    value_loss = jnp.mean(jnp.square(batch.returns - values))
    entropy = networks.distribution.entropy(logits, key).mean()

    loss = policy_loss + config.value_loss_coef * value_loss - config.entropy_cost * entropy
    metrics = {
        "losses/total": loss,
        "losses/policy": policy_loss,
        "losses/value": value_loss,
        "losses/entropy": entropy,
        "losses/approx_kl": jnp.mean((ratio - 1) - (log_prob - batch.log_prob)),
        "losses/clip_fraction": jnp.mean(jnp.abs(ratio - 1) > eps),
    }
    return loss, metrics
