"""``jax.random``'s ``split``, ``fold_in``, ``uniform`` and ``normal`` on raw ``uint32[..., 2]``
keys: the same numbers, computed without a loop where traced in :func:`unrolled`.

On the CPU, JAX lowers each Threefry hash as a five-iteration ``while`` loop (to keep compile times
short), and XLA's CPU runtime pays for every iteration, more so inside the branch auto-reset takes
when some env of a batch ends: with sixteen pendulums, such a step cost about a quarter more than
one where none ended (``benchmarks/results/catalog.md`` has the batch's figures). Here the hash is
written out round by round in array operations, which XLA fuses, and handed to ``jax.random`` as a
PRNG implementation of its own (``jax.extend.random.define_prng_impl``), so that every bit is
``jax.random``'s: a seed draws the episodes it drew before (``tests/test_core_prng.py`` compares
them). With ``jax_threefry_partitionable`` off (not JAX's default), whose bit layout this does not
write, and outside :func:`unrolled`, the functions are ``jax.random``'s own.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from typing import Any

import jax
import jax.extend.random
import jax.numpy as jnp
import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def threefry2x32(k1: jax.Array, k2: jax.Array, x1: jax.Array, x2: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The Threefry-2x32 hash (20 rounds) of counters ``(x1, x2)`` under key ``(k1, k2)``, unrolled."""
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    x1, x2 = x1 + ks[0], x2 + ks[1]
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            x1 = x1 + x2
            x2 = x1 ^ ((x2 << np.uint32(r)) | (x2 >> np.uint32(32 - r)))
        x1 = x1 + ks[(group + 1) % 3]
        x2 = x2 + ks[(group + 2) % 3] + np.uint32(group + 1)
    return x1, x2


def _counters(shape: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
    """The high and low words of a ``uint64`` iota of ``shape`` (``jax.random``'s counters)."""
    size = math.prod(shape)
    if size >= 2**32:
        raise NotImplementedError(f"gymjax.core.prng draws fewer than 2**32 numbers at once, not {shape}")
    return jnp.zeros(shape, jnp.uint32), jnp.arange(size, dtype=jnp.uint32).reshape(shape)


def _seed(seed: jax.Array) -> jax.Array:
    """``jax.random.PRNGKey(seed)``'s data: the seed's high and low 32 bits."""
    seed = jnp.asarray(seed)
    low = jax.lax.convert_element_type(seed, jnp.uint32)  # the low 32 bits, as JAX's conversion keeps them
    if seed.dtype.itemsize < 8:
        return jnp.stack([jnp.zeros((), jnp.uint32), low])
    high = jax.lax.shift_right_logical(seed, jnp.asarray(32, seed.dtype))  # as JAX's: negative seeds too
    return jnp.stack([jax.lax.convert_element_type(high, jnp.uint32), low])


def _split(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    return jnp.stack(threefry2x32(key[0], key[1], *_counters(shape)), axis=len(shape))


def _fold_in(key: jax.Array, data: Any) -> jax.Array:
    high, low = _seed(jnp.asarray(data, jnp.uint32))
    return jnp.stack(threefry2x32(key[0], key[1], high[None], low[None])).reshape(2)


def _random_bits(key: jax.Array, bit_width: int, shape: tuple[int, ...]) -> jax.Array:
    bits1, bits2 = threefry2x32(key[0], key[1], *_counters(shape))
    if bit_width == 64:
        return (bits1.astype(jnp.uint64) << np.uint64(32)) | bits2.astype(jnp.uint64)
    unsigned = {8: jnp.uint8, 16: jnp.uint16, 32: jnp.uint32}[bit_width]
    return (bits1 ^ bits2).astype(unsigned)


_IMPL = jax.extend.random.define_prng_impl(
    key_shape=(2,), seed=_seed, split=_split, random_bits=_random_bits, fold_in=_fold_in,
    name="gymjax_threefry2x32_unrolled", tag="gjt",
)  # fmt: skip


_tracing = threading.local()


@contextlib.contextmanager
def unrolled() -> Iterator[None]:
    """Within it, the functions below trace the hash written out; outside, ``jax.random``'s loop.

    The batch's auto-reset traces its draws in it: there the loop cost most (inside the branch a
    step takes when an env ends) and, vmapped, compiled slower than the written-out hash. A single
    env's reset program is left to JAX: its few scalar draws chain, and XLA copies a chain of
    written-out hashes into every fusion that reads it, which compiled a second slower."""
    before = getattr(_tracing, "on", False)
    _tracing.on = True
    try:
        yield
    finally:
        _tracing.on = before


def _ours(key: jax.Array) -> bool:
    """Whether this module computes for ``key`` (else ``jax.random`` does): a raw key, traced in
    :func:`unrolled`, with JAX's default bit layout."""
    return (getattr(_tracing, "on", False) and jax.config.jax_threefry_partitionable
            and not jnp.issubdtype(jnp.result_type(key), jax.dtypes.prng_key))


def _typed(key: jax.Array) -> jax.Array:
    return jax.random.wrap_key_data(jnp.asarray(key, jnp.uint32), impl=_IMPL)


def split(key: jax.Array, num: int = 2) -> jax.Array:
    """``jax.random.split(key, num)``."""
    if not _ours(key):
        return jax.random.split(key, num)
    return jax.random.key_data(jax.random.split(_typed(key), num))


def fold_in(key: jax.Array, data: Any) -> jax.Array:
    """``jax.random.fold_in(key, data)``."""
    if not _ours(key):
        return jax.random.fold_in(key, data)
    return jax.random.key_data(jax.random.fold_in(_typed(key), data))


def uniform(key: jax.Array, shape: tuple[int, ...] = (), dtype: Any = jnp.float32, minval: Any = 0.0,
            maxval: Any = 1.0) -> jax.Array:
    """``jax.random.uniform(key, shape, dtype, minval, maxval)``."""
    return jax.random.uniform(_typed(key) if _ours(key) else key, shape, dtype, minval, maxval)


def normal(key: jax.Array, shape: tuple[int, ...] = (), dtype: Any = jnp.float32) -> jax.Array:
    """``jax.random.normal(key, shape, dtype)``."""
    return jax.random.normal(_typed(key) if _ours(key) else key, shape, dtype)
