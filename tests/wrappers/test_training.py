"""The JAX wrappers: time limit, action repeat, auto-reset, domain randomization, eval env."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gymjax
from gymjax.core import State
from gymjax.envs.classic import CartPole, CartPoleState, Pendulum
from gymjax.wrappers import (
    ActionRepeat,
    AutoReset,
    DomainRandomization,
    EpisodeWrapper,
    VmapWrapper,
    make_eval_env,
    next_reset_key,
    wrap_for_training,
)
from gymjax.wrappers.training import BraxRandomization


def _keys(n, seed=0):
    return jax.random.split(jax.random.PRNGKey(seed), n)


def _is_concrete(tree):
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(tree))


def test_episode_wrapper_truncates_and_counts():
    env = EpisodeWrapper(Pendulum(), max_episode_steps=3)
    state = env.reset(jax.random.PRNGKey(0))
    rewards = []
    for _ in range(3):
        assert not bool(state.truncated)
        state = env.step(state, jnp.array([0.5]))
        rewards.append(float(state.reward))
    assert bool(state.truncated) and not bool(state.terminated)
    assert int(state.episode.episode_length) == 3
    np.testing.assert_allclose(state.episode.episode_return, sum(rewards), rtol=1e-6)


def test_terminated_and_truncated_both_set_on_the_last_step():
    env = EpisodeWrapper(CartPole(), max_episode_steps=4)
    state = env.reset(jax.random.PRNGKey(0))
    state = state.replace(
        env_state=CartPoleState.from_vector([2.39, 5.0, 0.0, 0.0]),
        episode=state.episode.replace(episode_length=jnp.int32(3)),
    )
    state = env.step(state, 1)
    assert bool(state.terminated) and bool(state.truncated)


def test_action_repeat_sums_rewards_and_stops_at_the_end():
    base = Pendulum()
    state = base.reset(jax.random.PRNGKey(1))
    repeated = ActionRepeat(base, 3).step(state, jnp.array([1.0]))
    by_hand, total = state, 0.0
    for _ in range(3):
        by_hand = base.step(by_hand, jnp.array([1.0]))
        total += float(by_hand.reward)
    np.testing.assert_allclose(repeated.obs, by_hand.obs, rtol=1e-6)
    np.testing.assert_allclose(repeated.reward, total, rtol=1e-5)

    cartpole = CartPole()
    near_edge = cartpole.reset_to(jnp.array([2.39, 5.0, 0.0, 0.0]))  # ends on the first step
    out = ActionRepeat(cartpole, 4).step(near_edge, 1)
    once = cartpole.step(near_edge, 1)
    assert bool(out.terminated) and float(out.reward) == 1.0
    np.testing.assert_array_equal(out.obs, once.obs)  # not stepped past the terminal state
    assert ActionRepeat(cartpole, 4).dt == pytest.approx(4 * cartpole.dt)


def _rollout(env, state, actions):
    step = jax.jit(env.step)
    states = []
    for a in actions:
        state = step(state, a)
        states.append(state)
    return states


def test_autoreset_keeps_final_obs_and_leaves_other_envs_running():
    """Same-step reset of the ended envs only; the others step as if alone.

    Gymnasium's FunctionalJaxVectorEnv once froze every env when one reset.
    """
    n, limit = 4, 7
    batched = wrap_for_training(CartPole(), episode_length=limit)
    plain = VmapWrapper(EpisodeWrapper(CartPole(), limit))
    keys = _keys(n)
    state = jax.jit(batched.reset)(keys)
    shadow = jax.jit(plain.reset)(jax.vmap(lambda k: next_reset_key(k)[1])(keys))
    np.testing.assert_array_equal(state.obs, shadow.obs)

    actions = jnp.asarray(np.random.default_rng(0).integers(0, 2, (30, n)), jnp.int32)
    step, plain_step = jax.jit(batched.step), jax.jit(plain.step)
    ended_any = False
    for a in actions:
        state, shadow = step(state, a), plain_step(shadow, a)
        done = np.asarray(state.terminated | state.truncated)
        np.testing.assert_array_equal(state.terminated, shadow.terminated)
        np.testing.assert_array_equal(state.reward, shadow.reward)
        np.testing.assert_array_equal(state.autoreset.final_obs, shadow.obs)  # the true last obs
        np.testing.assert_array_equal(state.obs[~done], shadow.obs[~done])  # others untouched
        if done.any():
            ended_any = True
            assert not np.allclose(state.obs[done], shadow.obs[done])  # reset obs replaced them
            assert (np.asarray(state.episode.episode_length)[done] == 0).all()
            np.testing.assert_array_equal(
                state.autoreset.final_episode.episode_length[done], shadow.episode.episode_length[done]
            )
            assert (np.abs(np.asarray(state.obs)[done]) <= 0.05).all()  # a fresh CartPole start
            # continue the shadow from the same reset states, to keep comparing
            shadow = shadow.replace(env_state=state.env_state, obs=state.obs, episode=state.episode)
    assert ended_any


def test_autoreset_draws_the_same_episodes_as_a_single_env():
    """Env i's k-th reset uses the k-th key of its own stream, as a lone env would."""
    n = 3
    batched = wrap_for_training(CartPole(), episode_length=2)  # every env ends every 2 steps
    state = batched.reset(_keys(n, seed=4))
    single = CartPole()
    for i in range(n):
        key = _keys(n, seed=4)[i]
        key, use = next_reset_key(key)
        np.testing.assert_array_equal(state.obs[i], single.reset(use).obs)
    state = batched.step(batched.step(state, jnp.zeros(n, jnp.int32)), jnp.zeros(n, jnp.int32))
    for i in range(n):
        key = _keys(n, seed=4)[i]
        key, _ = next_reset_key(key)
        key, use = next_reset_key(key)
        np.testing.assert_array_equal(state.obs[i], single.reset(use).obs)


def _scale_pole(params, key):
    return params.replace(masspole=params.masspole * jax.random.uniform(key, (), minval=0.5, maxval=2.0))


def _scale_pole_brax(params, keys):
    masspole = jax.vmap(lambda k: _scale_pole(params, k).masspole)(keys)
    in_axes = jax.tree.map(lambda _: None, params).replace(masspole=0)
    return params.replace(masspole=masspole), in_axes


def test_randomization_gives_each_env_its_params_and_redraws_at_reset():
    env = wrap_for_training(CartPole(), episode_length=3, randomization_fn=_scale_pole)
    state = jax.jit(env.reset)(_keys(8))
    masspole = state.randomized["masspole"]
    assert masspole.shape == (8,) and len(np.unique(masspole)) == 8
    assert ((masspole >= 0.05) & (masspole <= 0.2)).all()
    step = jax.jit(env.step)
    state = step(step(state, jnp.ones(8, jnp.int32)), jnp.ones(8, jnp.int32))
    np.testing.assert_array_equal(state.randomized["masspole"], masspole)  # fixed within episodes
    state = step(state, jnp.ones(8, jnp.int32))  # episode_length 3: every env resets
    assert not np.isin(state.randomized["masspole"], masspole).any()


def test_randomized_params_reach_the_dynamics():
    env = DomainRandomization(CartPole(), _scale_pole)
    state = env.reset(jax.random.PRNGKey(0))
    state = state.replace(env_state=CartPoleState.from_vector([0.0, 0.0, 0.1, 0.0]))
    masspole = state.randomized["masspole"]
    out = env.step(state, 1)
    by_hand = CartPole().step(state, 1, CartPole().default_params.replace(masspole=masspole))
    np.testing.assert_array_equal(out.obs, by_hand.obs)
    assert not np.allclose(out.obs, CartPole().step(state, 1).obs)


def test_brax_form_is_accepted_and_agrees():
    ours = wrap_for_training(CartPole(), episode_length=500, randomization_fn=_scale_pole).reset(_keys(5))
    stated = BraxRandomization(_scale_pole_brax)
    brax = wrap_for_training(CartPole(), episode_length=500, randomization_fn=stated).reset(_keys(5))
    np.testing.assert_allclose(ours.randomized["masspole"], brax.randomized["masspole"])
    wrapped = wrap_for_training(CartPole(), episode_length=500, randomization_fn=stated)
    assert wrapped.env.env.env.fields == ("masspole",)


def test_brax_form_is_taken_by_the_adapters():
    """The adapters check their options before building anything: the stated Brax form passes that check
    and each env of the batch gets its own draw."""
    from gymjax.wrappers.gymnasium import GymnasiumVectorEnv

    envs = GymnasiumVectorEnv("JaxCartPole-v0", 3, randomization_fn=BraxRandomization(_scale_pole_brax))
    envs.reset(seed=0)
    masspole = np.asarray(envs.session.state.randomized["masspole"])
    assert masspole.shape == (3,) and len(set(masspole.tolist())) == 3
    envs.close()


def _notes(error):
    return "\n".join(getattr(error.value, "__notes__", []))


def test_the_form_is_stated_not_guessed():
    # Brax's form as a plain function: called with one key, it fails inside, and the error says
    # how to state the form; one that runs anyway returns a pair, which is refused by name.
    with pytest.raises(TypeError, match="invalid PRNG key data") as failed:
        DomainRandomization(CartPole(), _scale_pole_brax)
    assert "pass BraxRandomization(fn)" in _notes(failed)

    def brax_any_batch(params, keys):
        return params.replace(masspole=params.masspole * jnp.ones(keys.shape[0])), jax.tree.map(lambda _: 0, params)

    with pytest.raises(TypeError, match=r"returned a pair \(params, in_axes\).*pass BraxRandomization\(fn\)"):
        DomainRandomization(CartPole(), brax_any_batch)
    # and gymjax's form stated as Brax's, the same both ways
    with pytest.raises(ValueError, match="accepts a single key") as failed:
        DomainRandomization(CartPole(), BraxRandomization(_scale_pole))
    assert "for gymjax's form fn(params, key) -> params, pass fn itself" in _notes(failed)
    with pytest.raises(TypeError, match=r"returned a CartPoleParams; .*\(params_batched, in_axes\)"):
        DomainRandomization(CartPole(), BraxRandomization(lambda params, keys: params))
    with pytest.raises(ValueError, match="in_axes must be 0 .* or None .*, got 1"):
        DomainRandomization(CartPole(), BraxRandomization(lambda p, k: (p, jax.tree.map(lambda _: 1, p))))
    with pytest.raises(TypeError, match="BraxRandomization takes fn"):
        BraxRandomization("masspole")
    with pytest.raises(TypeError, match="randomization_fn must be a function"):
        DomainRandomization(CartPole(), {"masspole": 0.2})


def test_randomization_must_keep_the_structure():
    def bad(params, key):
        return {"masspole": params.masspole}

    with pytest.raises(ValueError, match="same structure as env.default_params"):
        DomainRandomization(CartPole(), bad)


def _heavier_bodies(model, key):
    """Reads model.body_mass inside vmap: Brax's failing case."""
    scale = jax.random.uniform(key, model.body_mass.shape, minval=0.8, maxval=1.2)
    return model.replace(body_mass=model.body_mass * scale)


def _heavier_bodies_brax(model, keys):
    body_mass = jax.vmap(lambda k: _heavier_bodies(model, k).body_mass)(keys)
    in_axes = jax.tree.map(lambda _: None, model).replace(body_mass=0)
    return model.replace(body_mass=body_mass), in_axes


@pytest.mark.parametrize("randomization_fn", [_heavier_bodies, BraxRandomization(_heavier_bodies_brax)],
                         ids=["gymjax", "brax"])
def test_eval_env_built_after_randomized_training_env(randomization_fn):
    """Brax crashed here: the eval env, built from the same env after the training
    wrapper traced a randomization_fn reading body_mass, found a leaked tracer. The wrapper's
    tracing is the engine's either way; MuJoCo C compiles in seconds where MJX takes a minute."""
    env = gymjax.make("JaxInvertedPendulum-v0", engine="mujoco")
    mass_before = np.asarray(env.default_params.body_mass)
    train = wrap_for_training(env, episode_length=5, randomization_fn=randomization_fn)
    state = jax.jit(train.reset)(_keys(4))
    state = jax.jit(train.step)(state, jnp.zeros((4, 1)))
    assert _is_concrete(env.default_params) and _is_concrete(env.unwrapped.default_params)

    evaluation = make_eval_env(env, episode_length=5)  # no eval_env given
    eval_state = jax.jit(evaluation.reset)(_keys(4))
    eval_state = jax.jit(evaluation.step)(eval_state, jnp.zeros((4, 1)))
    assert np.isfinite(np.asarray(eval_state.obs)).all()
    np.testing.assert_array_equal(env.default_params.body_mass, mass_before)
    masses = state.randomized["body_mass"]
    assert masses.shape == (4, *mass_before.shape) and not np.allclose(masses[0], masses[1])


class _Marked(Pendulum):
    """A Pendulum whose observations say which object produced them."""

    def __init__(self, mark):
        super().__init__()
        self.mark = mark

    def reset(self, key, params=None):
        state = super().reset(key, params)
        return state.replace(info={"mark": jnp.float32(self.mark), "g": jnp.float32(self.default_params.g)})

    def step(self, state, action, params=None):
        out = super().step(state, action, params)
        p = self.default_params if params is None else params
        return out.replace(info={"mark": jnp.float32(self.mark), "g": jnp.float32(p.g)})


def _heavier_gravity(params, key):
    return params.replace(g=params.g * jax.random.uniform(key, (), minval=1.5, maxval=2.0))


@pytest.mark.parametrize("given_eval_env", [False, True])
@pytest.mark.parametrize("randomization", [None, "train only", "train and eval"])
def test_eval_env_combinations(given_eval_env, randomization):
    env, other = _Marked(1.0), _Marked(2.0)
    fn = None if randomization is None else _heavier_gravity
    evaluation = make_eval_env(
        env,
        eval_env=other if given_eval_env else None,
        randomization_fn=fn,
        randomize_eval=randomization == "train and eval",
        episode_length=10,
    )
    state = evaluation.step(evaluation.reset(_keys(3)), jnp.zeros((3, 1)))
    assert (np.asarray(state.info["mark"]) == (2.0 if given_eval_env else 1.0)).all()
    assert state.obs.shape == (3, 3) and int(state.episode.episode_length[0]) == 1
    gravity = np.asarray(state.info["g"])
    if randomization == "train and eval":
        assert (gravity >= 15.0).all() and len(np.unique(gravity)) == 3
    else:
        assert (gravity == 10.0).all()  # nominal physics unless asked
    if not given_eval_env:
        assert evaluation.unwrapped is not env and evaluation.unwrapped.mark == env.mark


def test_randomize_eval_needs_a_function():
    with pytest.raises(ValueError, match="randomize_eval=True needs a randomization_fn"):
        make_eval_env(CartPole(), randomize_eval=True)


def test_state_is_a_pytree_with_done():
    state = AutoReset(VmapWrapper(EpisodeWrapper(CartPole(), 5))).reset(_keys(2))
    assert isinstance(state, State) and state.done.shape == (2,)
    leaves = jax.tree.leaves(state)
    assert all(leaf.shape[0] == 2 for leaf in leaves)


def test_same_seed_same_rollout():
    env = wrap_for_training(CartPole(), episode_length=20, randomization_fn=_scale_pole)
    actions = jnp.asarray(np.random.default_rng(0).integers(0, 2, (40, 3)), jnp.int32)
    runs = [_rollout(env, env.reset(_keys(3, seed=9)), actions)[-1] for _ in range(2)]
    for a, b in zip(jax.tree.leaves(runs[0]), jax.tree.leaves(runs[1])):
        np.testing.assert_array_equal(a, b)
