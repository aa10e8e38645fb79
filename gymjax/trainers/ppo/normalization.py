"""Running statistics (mean and variance) merged across batches and devices: observation
normalization, and SB3 VecNormalize-style reward normalization."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

# Normalized observations are clipped, as SB3's VecNormalize clips them.
CLIP = 10.0
EPS = 1e-8


@struct.dataclass
class RunningStats:
    """Mean and variance of every observation seen, per feature.

    Attributes:
        mean: float32 ``[obs_dim]``.
        var: float32 ``[obs_dim]`` (population variance).
        count: float32 scalar, observations seen. A float, not an int32, so it
            never wraps; past 2**24 it only rounds, which leaves the weights of
            new batches essentially unchanged.
    """

    mean: jax.Array
    var: jax.Array
    count: jax.Array

    @classmethod
    def create(cls, obs_dim: int) -> RunningStats:
        return cls(jnp.zeros(obs_dim, jnp.float32), jnp.ones(obs_dim, jnp.float32), jnp.zeros((), jnp.float32))


def update(stats: RunningStats, batch: jax.Array, axis_name: str | None = None) -> RunningStats:
    """Merges ``batch`` (``[..., obs_dim]``) into ``stats`` (Chan et al.'s parallel update).

    With ``axis_name``, the batch statistics are pooled over that mapped axis
    first, so every device ends with the same ``stats``.
    """
    batch = batch.reshape(-1, batch.shape[-1]).astype(jnp.float32)
    n = jnp.asarray(batch.shape[0], jnp.float32)
    total = batch.sum(0)
    if axis_name is not None:
        n = jax.lax.psum(n, axis_name)
        total = jax.lax.psum(total, axis_name)
    batch_mean = total / n
    squares = jnp.square(batch - batch_mean).sum(0)
    if axis_name is not None:
        squares = jax.lax.psum(squares, axis_name)
    batch_var = squares / n

    count = stats.count + n
    delta = batch_mean - stats.mean
    mean = stats.mean + delta * n / count
    m2 = stats.var * stats.count + batch_var * n + jnp.square(delta) * stats.count * n / count
    return RunningStats(mean=mean, var=m2 / count, count=count)


def normalize(stats: RunningStats | None, obs: jax.Array) -> jax.Array:
    """``(obs - mean) / std``, clipped to ``[-10, 10]``; ``obs`` unchanged without stats."""
    if stats is None:
        return obs
    return jnp.clip((obs - stats.mean) / jnp.sqrt(stats.var + EPS), -CLIP, CLIP)


@struct.dataclass
class RewardNormalizer:
    """What reward normalization carries between steps, as SB3's ``VecNormalize`` does.

    Attributes:
        returns: float32 ``[B]``, each env's discounted return so far (0 after an episode ends).
        stats: :class:`RunningStats` of those returns (one feature).
    """

    returns: jax.Array
    stats: RunningStats

    @classmethod
    def create(cls, num_envs: int) -> RewardNormalizer:
        # SB3's RunningMeanStd starts its count at 1e-4 rather than 0; so does this, to match it.
        stats = RunningStats(jnp.zeros(1, jnp.float32), jnp.ones(1, jnp.float32), jnp.asarray(1e-4, jnp.float32))
        return cls(returns=jnp.zeros(num_envs, jnp.float32), stats=stats)


def normalize_rewards(
    norm: RewardNormalizer, rewards: jax.Array, dones: jax.Array, gamma: float, axis_name: str | None = None
) -> tuple[RewardNormalizer, jax.Array]:
    """Rewards ``[T, B]`` divided by the running std of the discounted return, clipped to ``[-10, 10]``.

    Step by step, as ``VecNormalize.step_wait`` does: ``returns = returns * gamma + reward``,
    the statistics take in ``returns``, the reward is scaled with the updated variance, and
    ``returns`` restarts at 0 where ``dones``. Returns the new state and the scaled rewards.
    """

    def step(norm, xs):
        reward, done = xs
        returns = norm.returns * gamma + reward
        stats = update(norm.stats, returns[:, None], axis_name)
        scaled = jnp.clip(reward / jnp.sqrt(stats.var[0] + EPS), -CLIP, CLIP)
        return RewardNormalizer(returns=jnp.where(done, 0.0, returns), stats=stats), scaled

    return jax.lax.scan(step, norm, (rewards.astype(jnp.float32), dones))
