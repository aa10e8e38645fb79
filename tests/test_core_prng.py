"""gymjax.core.prng: jax.random's numbers, without the loop JAX lowers Threefry to on the CPU."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gymjax.core import prng


@pytest.fixture(scope="module")
def raw_keys():
    seeds = jax.vmap(jax.random.PRNGKey)(jnp.arange(24))
    return seeds ^ (jnp.uint32(0x9E3779B9) * jnp.arange(48, dtype=jnp.uint32).reshape(24, 2))  # both words vary


def test_every_draw_is_jax_randoms_bit_for_bit(raw_keys):
    for key in raw_keys:
        for num in (2, 3):
            np.testing.assert_array_equal(prng.split(key, num), jax.random.split(key, num))
        for shape in ((), (1,), (2,), (13,), (5, 3)):
            np.testing.assert_array_equal(prng.uniform(key, shape, jnp.float32, -0.1, 0.1),
                                          jax.random.uniform(key, shape, jnp.float32, -0.1, 0.1))
            np.testing.assert_array_equal(prng.normal(key, shape), jax.random.normal(key, shape))
        for data in (0, 7, 2**31 + 5):
            np.testing.assert_array_equal(prng.fold_in(key, data), jax.random.fold_in(key, data))


def test_a_batch_of_draws_compiles_without_a_loop_and_matches(raw_keys):
    def draws(random):
        return jax.jit(jax.vmap(lambda k: (random.split(k), random.uniform(k, (3,)), random.normal(k, (2,)))))

    ours, theirs = draws(prng), draws(jax.random)
    for a, b in zip(ours(raw_keys), theirs(raw_keys)):
        np.testing.assert_array_equal(a, b)
    assert " while(" not in ours.lower(raw_keys).compile().as_text()


def test_typed_keys_and_the_other_bit_layout_are_left_to_jax_random(raw_keys):
    typed = jax.random.key(3)
    np.testing.assert_array_equal(jax.random.key_data(prng.split(typed)), jax.random.key_data(jax.random.split(typed)))
    with jax.threefry_partitionable(False):
        np.testing.assert_array_equal(prng.split(raw_keys[0]), jax.random.split(raw_keys[0]))
        np.testing.assert_array_equal(prng.uniform(raw_keys[0], (4,)), jax.random.uniform(raw_keys[0], (4,)))
