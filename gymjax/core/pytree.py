"""Frozen dataclasses that JAX treats as pytrees: what envs' states and parameters are made of.

``flax.struct.dataclass``'s face (``@dataclass``, ``field(pytree_node=...)``, ``.replace``) without
flax: importing flax brings ``flax.linen`` with it, and every process that makes an env paid that
before its first step (every ``SubprocVecEnv`` worker, every RLlib env runner). The trainers,
whose networks are flax's, import it themselves.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import jax

T = TypeVar("T")


def dataclass(cls: type[T]) -> type[T]:
    """``cls`` as a frozen dataclass whose fields are its pytree's children, in their order (those
    declared ``field(pytree_node=False)`` are static: part of its structure, not leaves), with
    :func:`replace` as a method."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    children, static = [], []
    for f in dataclasses.fields(cls):
        (children if f.metadata.get("pytree_node", True) else static).append(f.name)
    jax.tree_util.register_dataclass(cls, data_fields=children, meta_fields=static)
    cls.replace = replace
    return cls


def field(pytree_node: bool = True, **kwargs: Any) -> Any:
    """``dataclasses.field(**kwargs)``; ``pytree_node=False`` makes the field static."""
    return dataclasses.field(metadata={**kwargs.pop("metadata", {}), "pytree_node": pytree_node}, **kwargs)


def replace(self: T, **changes: Any) -> T:
    """A copy of ``self`` with ``changes`` made."""
    return dataclasses.replace(self, **changes)
