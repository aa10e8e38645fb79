"""Running observation statistics (mean and variance), merged across batches and devices."""

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
