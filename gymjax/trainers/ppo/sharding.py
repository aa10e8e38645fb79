"""Where a PPO run's arrays live: one mesh axis over every device of every process.

Data-parallel with ``shard_map`` (see :mod:`gymjax.trainers.distributed`): each device
steps ``num_envs / D`` envs with its own PRNG key, and holds its own copy of the
parameters, optimizer state and statistics, kept identical by averaging over
:data:`AXIS`. :class:`DeviceMesh` converts between that ``[D, ...]`` layout
(:class:`TrainingState`) and the checkpoint's, one layout whatever the device count
(:class:`~gymjax.trainers.ppo.saved.SavedState`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
import optax
from flax import struct
from jax.flatten_util import ravel_pytree

from gymjax.core import State
from gymjax.trainers.ppo.networks import PPOParams
from gymjax.trainers.ppo.normalization import RewardNormalizer
from gymjax.trainers.ppo.saved import SavedState

AXIS = "devices"  # the mesh axis every collective of the compiled epoch reduces over


@struct.dataclass
class TrainingState:
    """What one device carries from iteration to iteration (all ``[D, ...]`` across devices)."""

    params: PPOParams
    opt_state: optax.OptState
    env_state: State
    reward_norm: RewardNormalizer  # carried (and checkpointed) whether or not normalize_rewards is on
    key: jax.Array


def pmean_tree(tree):
    """The mean over devices of every leaf, as ONE all-reduce of the flattened tree (an all-reduce
    per leaf would cost a round trip each across processes)."""
    flat, unflatten = ravel_pytree(tree)
    return unflatten(jax.lax.pmean(flat, AXIS))


def read_replicated(tree):
    """The first local device's block of every ``[D, ...]`` leaf: a replicated value (params, metrics),
    read without touching other processes' devices."""
    return jax.tree.map(lambda x: np.asarray(x.addressable_shards[0].data)[0], tree)


def _unreplicate(tree):
    return jax.tree.map(lambda x: x[0], tree)


def _whole(tree):
    """Every ``[D, ...]`` leaf whole, on the host; with several processes, gathered into each."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    from jax.experimental import multihost_utils

    return multihost_utils.process_allgather(tree, tiled=True)


def _on_one_device(fn):
    """``fn`` over one device's slice: ``shard_map`` hands each device a ``[1, ...]`` block."""

    def block_fn(block):
        out = fn(_unreplicate(block))
        return jax.tree.map(lambda x: x[None], out)

    return block_fn


class DeviceMesh:
    """One mesh axis, :data:`AXIS`, over ``devices`` (every process's: the mesh spans them all)."""

    def __init__(self, devices: Sequence[jax.Device]):
        self.devices = list(devices)
        self.mesh = jax.make_mesh(
            (len(self.devices),), (AXIS,), axis_types=(jax.sharding.AxisType.Auto,), devices=self.devices
        )
        self.sharding = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec(AXIS))

    @property
    def size(self) -> int:
        """``D``, the devices of every process together."""
        return len(self.devices)

    def per_device(self, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``fn`` of one device's unbatched slice, run on every device over ``[D, ...]`` trees."""
        return jax.shard_map(
            _on_one_device(fn),
            mesh=self.mesh,
            in_specs=jax.sharding.PartitionSpec(AXIS),
            out_specs=jax.sharding.PartitionSpec(AXIS),
            # Envs create per-step constants (zero rewards at reset, ...) that
            # are not marked device-varying; the replication check would reject them.
            check_vma=False,
        )

    def place(self, saved: SavedState) -> TrainingState:
        """A :class:`SavedState` -> one :class:`TrainingState` laid out ``[D, ...]``, one slice per device.

        Per-env leaves (``[num_envs, ...]``) are split over the devices; the rest is replicated.
        The inverse of :meth:`gather`.
        """
        d = self.size

        def put(x):
            # Each process hands over only the blocks of its own devices.
            x = np.asarray(x)
            return jax.make_array_from_callback(x.shape, self.sharding, lambda index: x[index])

        # explicit sizes, not -1: some mjx.Data fields are empty ([N, 0])
        shard = lambda tree: jax.tree.map(lambda x: put(np.reshape(x, (d, x.shape[0] // d) + x.shape[1:])), tree)  # noqa: E731
        replicate = lambda tree: jax.tree.map(lambda x: put(np.broadcast_to(x, (d,) + np.shape(x))), tree)  # noqa: E731
        norm = saved.reward_norm
        return TrainingState(
            params=replicate(saved.params),
            opt_state=replicate(saved.opt_state),
            env_state=shard(saved.env_state),
            reward_norm=RewardNormalizer(returns=shard(norm.returns), stats=replicate(norm.stats)),
            key=put(saved.keys),
        )

    def gather(self, state: TrainingState) -> SavedState:
        """The run's ``[D, ...]`` state whole on the host, in the checkpoint layout (a collective:
        every process calls it). The inverse of :meth:`place`."""
        state = _whole(state)
        # [D, B / D] -> [B]: one layout whatever the device count
        merge = lambda tree: jax.tree.map(lambda x: x.reshape((x.shape[0] * x.shape[1],) + x.shape[2:]), tree)  # noqa: E731
        norm = state.reward_norm
        return SavedState(
            params=_unreplicate(state.params),
            opt_state=_unreplicate(state.opt_state),
            env_state=merge(state.env_state),
            reward_norm=RewardNormalizer(returns=merge(norm.returns), stats=_unreplicate(norm.stats)),
            keys=state.key,
        )
