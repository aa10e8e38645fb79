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


@prng.unrolled()
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
    for seed in (0, 7, -3, 2**31 - 1):  # the implementation's own seeding, as PRNGKey's
        np.testing.assert_array_equal(jax.random.key_data(jax.random.key(seed, impl=prng._IMPL)),
                                      jax.random.PRNGKey(seed))


def test_a_batch_of_draws_compiles_without_a_loop_where_unrolled_and_matches(raw_keys):
    def draws(random):
        return jax.jit(jax.vmap(lambda k: (random.split(k), random.uniform(k, (3,)), random.normal(k, (2,)))))

    ours, theirs = draws(prng), draws(jax.random)
    with prng.unrolled():
        unrolled = ours.lower(raw_keys).compile()
    for a, b in zip(unrolled(raw_keys), theirs(raw_keys)):
        np.testing.assert_array_equal(a, b)
    assert " while(" not in unrolled.as_text()
    assert " while(" in draws(prng).lower(raw_keys).compile().as_text()  # traced outside it: JAX's own


def test_a_batchs_auto_reset_draws_without_a_loop():
    # The branch a step takes when an env of the batch ends held four of JAX's Threefry loops.
    import gymnasium

    import gymjax  # noqa: F401  (registers the ids)

    envs = gymnasium.make_vec("JaxHopper-v0", 2, vectorization_mode="vector_entry_point")
    envs.reset(seed=0)
    program, words = envs.session._program, envs.session._words
    step = jax.jit(program._step_words).lower(words, np.zeros((2, 3), np.float32)).compile().as_text()
    assert " while(" not in step and "conditional(" in step
    envs.close()


@prng.unrolled()
def test_typed_keys_and_the_other_bit_layout_are_left_to_jax_random(raw_keys):
    typed = jax.random.key(3)
    np.testing.assert_array_equal(jax.random.key_data(prng.split(typed)), jax.random.key_data(jax.random.split(typed)))
    with jax.threefry_partitionable(False):
        np.testing.assert_array_equal(prng.split(raw_keys[0]), jax.random.split(raw_keys[0]))
        np.testing.assert_array_equal(prng.uniform(raw_keys[0], (4,)), jax.random.uniform(raw_keys[0], (4,)))
