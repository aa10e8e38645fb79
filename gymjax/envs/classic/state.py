"""What the classic envs' physics states share: typed fields that are Gymnasium's ``state`` vector.

Each env's state is a ``flax.struct`` dataclass, as the MuJoCo envs' ``mjx.Data`` and ``HostData``
are: step and render read fields by name. Its fields, in order, are the numbers of the reference
env's ``state`` vector, which is what ``reset_to`` takes (the parity tests and ``eval --reference``
start from Gymnasium's states) and what NumPy reads a state as (the Gymnasium adapter's
``env.state``, the renderer).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from gymjax.core import State
from gymjax.core.env import STATE_LAYOUT

# The classic envs' checkpoints: their physics state became named fields (it was one array), so a
# run saved with the array cannot resume (Env.state_layout); the MuJoCo envs' runs are unaffected.
LAYOUT = STATE_LAYOUT + 1


class PhysicsState:
    """Base of the classic envs' physics states (subclasses are ``flax.struct`` dataclasses of
    float32 arrays, scalars for one env or ``[N]`` for a batch)."""

    @classmethod
    def from_vector(cls, vector: Any) -> Any:
        """The state at Gymnasium's ``state`` vector (its last axis the fields, in order), as float32."""
        vector = jnp.asarray(vector, jnp.float32)
        names = [f.name for f in dataclasses.fields(cls)]
        if vector.shape[-1:] != (len(names),):
            raise ValueError(
                f"{cls.__name__} takes Gymnasium's state vector [{', '.join(names)}]: {len(names)} numbers "
                f"in the last axis, got shape {vector.shape}"
            )
        return cls(*jnp.moveaxis(vector, -1, 0))

    def vector(self) -> jax.Array:
        """Gymnasium's ``state`` vector, ``[..., fields]``."""
        return jnp.stack([getattr(self, f.name) for f in dataclasses.fields(self)], axis=-1)

    def as_float32(self) -> Any:
        """Every field float32, whatever the params' dtype (randomized params may be float64)."""
        return jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), self)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(self.vector(), dtype)


def first_state(physics: PhysicsState, obs: jax.Array) -> State:
    """The state a reset returns: at ``physics``, no reward, not ended."""
    return State(
        env_state=physics,
        obs=obs,
        reward=jnp.float32(0.0),
        terminated=jnp.bool_(False),
        truncated=jnp.bool_(False),
    )
