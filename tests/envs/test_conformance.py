"""Every registered id against its Gymnasium reference: a new id is tested by being registered.

For each single-agent id of ``gymjax.envs.registered_ids()`` (gymjax's own, and the user's ids
``tests/conftest.py`` registers): Gymnasium's ``check_env``; the registry's time limit on the built
env; the vector env in lockstep with ``SyncVectorEnv`` in both autoreset modes; pickling; a
rendered frame; an unknown option named. For each with a Gymnasium twin (``reference_id``, made
with the registry's ``reference_kwargs``), also: the spaces, time limit, constructor options and
info keys of the reference, and one step from the reference's own states (MuJoCo C: Gymnasium's
physics, so float32 rounding apart). MuJoCo envs run on the C engine here (the CPU default); MJX's deviation
from it is bounded in ``test_mjx_parity.py``.
"""

import inspect
import pickle

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from lockstep import assert_same  # tests/lockstep.py
from tiers import slow_unless  # tests/tiers.py

import gymjax
from gymjax import envs
from gymjax.envs.mujoco import MujocoEnv

IDS = envs.registered_ids()
TWINNED = [i for i in IDS if envs.spec(i).reference_id is not None]
# What Gymnasium's MujocoEnv takes for every task, and its classic-control envs' render_mode: the
# adapter (size, mode) or MujocoEnv (camera) answers them, not the task's own signature.
RENDER_OPTIONS = {"render_mode", "width", "height", "camera_id", "camera_name", "max_geom", "visual_options"}
TOLERANCE = 1e-5  # float32 observations of float64 physics
# The per-id cases that cost seconds of compiles (lockstep, a rendered frame, a pickle) run in make
# test on a classic env of each space, a terminating and a contact-rich MuJoCo task and the user's
# ids (the code under test is one adapter for all); every id runs them with `-m slow` (CI runs both).
IN_MAKE_TEST = {"JaxCartPole-v0", "JaxPendulum-v0", "JaxHopper-v0", "JaxAnt-v0",
                *(i for i in IDS if i not in envs.CATALOG)}


def each_id_in_make_test_or_slow(test):
    """``made`` over every id, those outside ``IN_MAKE_TEST`` marked slow."""
    return pytest.mark.parametrize("made", slow_unless(IN_MAKE_TEST, IDS), indirect=True)(test)


def reference_id(env_id):
    ref = envs.spec(env_id).reference_id
    assert ref is not None, f"{env_id} names no Gymnasium reference"
    return ref


def make_reference(env_id, **kwargs):
    """``env_id``'s Gymnasium twin, with the options the registry gives it (a variant's)."""
    return gymnasium.make(reference_id(env_id), **envs.spec(env_id).reference_kwargs, **kwargs)


@pytest.fixture(scope="module", params=IDS)
def made(request):
    """``(id, our env)``, unwrapped: every id, with a twin or not."""
    ours = gymnasium.make(request.param)
    yield request.param, ours.unwrapped
    ours.close()


@pytest.fixture(scope="module", params=TWINNED)
def pair(request):
    """``(id, our env, Gymnasium's env)``, unwrapped, shared by this module's tests for one id."""
    ours = gymnasium.make(request.param)
    ref = make_reference(request.param)
    yield request.param, ours.unwrapped, ref.unwrapped
    ours.close()
    ref.close()


def _mujoco(env):
    return isinstance(env.jax_env, MujocoEnv)


def test_passes_gymnasiums_check_env(made):
    _, ours = made
    check_env(ours, skip_render_check=True)  # rendering: test_renders_a_frame


def test_the_time_limit_is_the_registrys_and_only_there(made):
    env_id, ours = made
    limit = envs.spec(env_id).max_episode_steps
    assert gymnasium.spec(env_id).max_episode_steps == limit == gymjax.make(env_id).max_episode_steps
    assert envs.spec(env_id).load()().max_episode_steps is None  # the class alone: no time limit


def test_spaces_and_time_limit_are_the_references(pair):
    env_id, ours, ref = pair
    assert ours.action_space == ref.action_space
    assert ours.observation_space.shape == ref.observation_space.shape
    assert ours.observation_space.dtype == np.float32
    np.testing.assert_array_equal(ours.observation_space.low, ref.observation_space.low)
    np.testing.assert_array_equal(ours.observation_space.high, ref.observation_space.high)
    assert gymnasium.spec(env_id).max_episode_steps == gymnasium.spec(reference_id(env_id)).max_episode_steps
    assert ours.metadata["render_fps"] == ref.metadata["render_fps"]
    assert ours.dt == pytest.approx(getattr(ref, "dt", ours.dt))


@pytest.mark.parametrize("env_id", [i for i in envs.registered_ids() if envs.spec(i).reference_id])
def test_reward_threshold_is_the_references(env_id):
    # Clients stop at it (Tianshou's EpochStopCallbackRewardThreshold asserts it is set).
    expected = gymnasium.spec(reference_id(env_id)).reward_threshold
    assert gymnasium.spec(env_id).reward_threshold == expected
    assert envs.spec(env_id).reward_threshold == expected


def test_register_refuses_what_it_could_not_honour():
    with pytest.raises(ValueError, match="'JaxHopper-v0' is already registered"):
        envs.register("JaxHopper-v0", "gymjax.envs.mujoco.hopper:Hopper", 1000)
    with pytest.raises(ValueError, match="max_episode_steps must be an int >= 1 or None, got 0"):
        envs.register("NeverMade-v0", "gymjax.envs.mujoco.hopper:Hopper", 0)
    with pytest.raises(ValueError, match="NeverMade-v0: reference_kwargs without a reference_id"):
        envs.register("NeverMade-v0", "gymjax.envs.mujoco.hopper:Hopper", 10, reference_kwargs={"x": 1})
    assert "NeverMade-v0" not in envs.registered_ids() and "NeverMade-v0" not in gymnasium.registry


def test_a_variants_options_are_fixed_by_the_registry_and_overridable():
    env = gymjax.make("TestJaxCartPoleSutton-v0")
    assert env.sutton_barto_reward and env.env_kwargs == {}  # recorded: what the caller gave
    assert not gymjax.make("TestJaxCartPoleSutton-v0", sutton_barto_reward=False).sutton_barto_reward


def test_a_made_env_carries_the_reward_threshold():
    env = gymnasium.make("JaxCartPole-v0")
    assert env.spec.reward_threshold == gymnasium.spec("CartPole-v1").reward_threshold == 475.0
    env.close()


def test_takes_every_option_of_the_reference_with_its_default(pair):
    env_id, ours, ref = pair
    theirs = {
        name: p.default
        for name, p in inspect.signature(type(ref).__init__).parameters.items()
        if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }
    factory = envs.spec(env_id).load()
    mine = envs.options_of(factory)
    assert set(theirs) - RENDER_OPTIONS <= set(mine), sorted(set(theirs) - RENDER_OPTIONS - set(mine))
    for name, default in theirs.items():
        if name in RENDER_OPTIONS:
            continue
        value = getattr(ours.jax_env, name, None) if name not in ("xml_file", "default_camera_config") else None
        signature_default = _default_of(factory, name)
        if isinstance(default, dict):
            assert signature_default.keys() == default.keys(), name
            for key, v in default.items():
                np.testing.assert_allclose(signature_default[key], v, err_msg=f"{name}.{key}")
        elif default is None or isinstance(default, (str, bool)):
            assert signature_default == default, name
        else:
            np.testing.assert_allclose(signature_default, default, err_msg=name)
        if value is not None and not isinstance(default, (dict, str)) and default is not None:
            np.testing.assert_allclose(value, default, err_msg=f"{name} as built")


def _default_of(factory, name):
    for cls in inspect.getmro(factory):
        parameters = inspect.signature(cls.__init__).parameters if "__init__" in vars(cls) else {}
        if name in parameters:
            return parameters[name].default
    raise AssertionError(f"{factory.__name__} has no option {name!r}")


def test_info_keys_are_the_references(pair):
    _, ours, ref = pair
    _, info = ours.reset(seed=0)
    _, info_ref = ref.reset(seed=0)
    assert info.keys() == info_ref.keys()
    action = ref.action_space.sample()
    step_info, step_info_ref = ours.step(action)[4], ref.step(action)[4]
    assert step_info.keys() == step_info_ref.keys()
    for key, value in step_info_ref.items():
        assert np.shape(step_info[key]) == np.shape(value), key


def _reference_states(ref, steps=120, seed=0):
    """States Gymnasium's env visits under random actions, with the action taken there,
    over several episodes (each ended by the env or after 40 steps)."""
    ref.reset(seed=seed)
    ref.action_space.seed(seed)
    visited, t_episode = [], 0
    for t in range(steps):
        state = _get_state(ref)
        action = ref.action_space.sample()
        visited.append((state, action))
        terminated = ref.step(action)[2]
        t_episode += 1
        if terminated or t_episode == 40:
            ref.reset(seed=seed + t + 1)
            t_episode = 0
    return visited


def _get_state(ref):
    if hasattr(ref, "data"):  # Gymnasium's MujocoEnv
        return np.array(ref.data.qpos), np.array(ref.data.qvel)
    return np.array(ref.state, np.float64)


def _f32(x):
    return np.asarray(x, np.float32).astype(np.float64)


def test_one_step_matches_the_reference_from_its_own_states(pair):
    """From Gymnasium's states, rounded to what our float32 reset takes, one step each."""
    env_id, ours, ref = pair
    env = ours.jax_env
    reset_to, step = jax.jit(env.reset_to), jax.jit(env.step)
    terminations = 0
    for state, action in _reference_states(ref):
        if _mujoco(ours):
            qpos, qvel = (_f32(x) for x in state)
            ref.data.qacc_warmstart[:] = 0.0  # a reset's, as ours starts from
            ref.set_state(qpos, qvel)
            start = reset_to(jnp.float32(qpos), jnp.float32(qvel))
        else:
            ref.state = _f32(state)
            if hasattr(ref, "steps_beyond_terminated"):  # CartPole warns past a termination
                ref.steps_beyond_terminated = None
            start = reset_to(jnp.float32(ref.state))
        obs_ref, reward_ref, terminated_ref, truncated_ref, info_ref = ref.step(action)
        out = step(start, jnp.asarray(action))
        scale = max(1.0, float(np.abs(obs_ref).max()))
        np.testing.assert_allclose(out.obs, obs_ref, rtol=0, atol=TOLERANCE * scale, err_msg=env_id)
        assert float(out.reward) == pytest.approx(reward_ref, rel=TOLERANCE, abs=TOLERANCE)
        assert bool(out.terminated) == terminated_ref and not bool(out.truncated)
        for key, value in info_ref.items():
            np.testing.assert_allclose(out.info[key], value, rtol=TOLERANCE, atol=TOLERANCE, err_msg=key)
        terminations += terminated_ref
    # Tasks that end under random actions do so in these states (Ant rarely does: test_ant.py).
    assert terminations > 0 or not _can_terminate(env_id), env_id


def _can_terminate(env_id):
    return env_id in {
        "JaxHopper-v0", "JaxWalker2d-v0", "JaxHumanoid-v0", "JaxInvertedPendulum-v0",
        "JaxInvertedDoublePendulum-v0", "JaxCartPole-v0",
    }


# Gymnasium's default mode in make test; same-step (its own path, 60 s over all ids on 2 cores) with
# `-m slow`, and in make test through tests/wrappers/test_session.py and gymnax's lockstep.
@each_id_in_make_test_or_slow
@pytest.mark.parametrize("mode", [pytest.param(AutoresetMode.SAME_STEP, marks=pytest.mark.slow),
                                  AutoresetMode.NEXT_STEP])
def test_vector_env_in_lockstep_with_sync_vector_env(made, mode):
    """``make_vec`` against Gymnasium's SyncVectorEnv of single envs, episodes cut at 5 steps
    so that auto-reset runs in either mode."""
    env_id = made[0]
    ours = gymnasium.make_vec(env_id, num_envs=3, max_episode_steps=5, autoreset_mode=mode)
    reference = gymnasium.vector.SyncVectorEnv(
        [lambda: gymnasium.make(env_id, max_episode_steps=5) for _ in range(3)], autoreset_mode=mode
    )
    assert_same(ours.reset(seed=3), reference.reset(seed=3))
    reference.action_space.seed(3)
    ended = 0
    for t in range(12):
        action = reference.action_space.sample()
        out, ref = ours.step(action), reference.step(action)
        assert_same(out, ref, f"{env_id} step {t}")
        ended += int(np.sum(ref[2] | ref[3]))
    assert ended >= 4
    ours.close()
    reference.close()


@each_id_in_make_test_or_slow
def test_pickles_and_resumes_the_same_episodes(made):
    env_id = made[0]
    env = gymnasium.make(env_id)
    copy = pickle.loads(pickle.dumps(env))
    obs, _ = env.reset(seed=7)
    obs_copy, _ = copy.reset(seed=7)
    np.testing.assert_array_equal(obs, obs_copy)
    action = env.action_space.sample()
    np.testing.assert_array_equal(env.step(action)[0], copy.step(action)[0])
    env.close()
    copy.close()


@each_id_in_make_test_or_slow
def test_renders_a_frame_of_the_references_size(made):
    env_id, ours = made
    size = {"width": 64, "height": 48} if _mujoco(ours) else {}
    env = gymnasium.make(env_id, render_mode="rgb_array", **size)
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.std() > 0  # something was drawn
    if envs.spec(env_id).reference_id is not None:
        reference = make_reference(env_id, render_mode="rgb_array", **size)
        reference.reset(seed=0)
        assert frame.shape == reference.render().shape
        reference.close()
    env.close()


def test_an_unknown_option_is_named(made):
    env_id = made[0]
    with pytest.raises(ValueError, match=f"{env_id} has no option 'not_an_option'"):
        gymjax.make(env_id, not_an_option=1)
    with pytest.raises(ValueError, match="not_an_option"):
        gymnasium.make(env_id, not_an_option=1)
    # and a TypeError in Python's words, which clients probe constructors for (torchrl's GymEnv
    # passes frameskip= and drops it on exactly "unexpected keyword argument 'frameskip'")
    with pytest.raises(TypeError, match="unexpected keyword argument 'frameskip'"):
        gymnasium.make(env_id, frameskip=1)
