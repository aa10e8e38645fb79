"""gymjax.core.pytree: flax.struct's dataclass face, which the envs' states and params use."""

import dataclasses
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gymjax.core import pytree


@pytree.dataclass
class Point:
    x: jax.Array
    name: str = pytree.field(pytree_node=False, default="p")
    extra: dict = pytree.field(default_factory=dict)


def test_fields_are_children_in_order_and_a_static_field_is_structure():
    p = Point(jnp.float32(1.0), "a", {"v": jnp.arange(2)})
    leaves, treedef = jax.tree.flatten(p)
    assert [np.shape(leaf) for leaf in leaves] == [(), (2,)]
    assert jax.tree.structure(Point(jnp.float32(0.0), "b", {"v": jnp.arange(2)})) != treedef  # the name is structure
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(p)[0]]
    assert paths == [".x", ".extra['v']"]
    doubled = jax.jit(lambda q: jax.tree.map(lambda v: v * 2, q))(p)
    assert doubled.name == "a" and float(doubled.x) == 2.0


def test_replace_copies_and_the_instance_is_frozen_and_pickles():
    p = Point(jnp.float32(1.0))
    q = p.replace(x=jnp.float32(3.0))
    assert float(p.x) == 1.0 and float(q.x) == 3.0 and q.name == "p" and q.extra == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2.0
    back = pickle.loads(pickle.dumps(q))
    assert float(back.x) == 3.0 and back.name == "p"
