"""gymnasium.make / make_vec on gymjax ids, checked against Gymnasium's own machinery."""

import os
import subprocess
import sys
import time

import gymnasium
import jax
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from lockstep import assert_same  # tests/lockstep.py

import gymjax
from gymjax.wrappers import programs
from gymjax.wrappers.gymnasium import GymnasiumEnv, GymnasiumVectorEnv
from gymjax.wrappers.options import seed_words

IDS = ["JaxAnt-v0", "JaxInvertedPendulum-v0", "JaxCartPole-v0", "JaxPendulum-v0"]


@pytest.mark.parametrize("env_id", IDS)
def test_every_id_is_registered_for_make_and_make_vec(env_id):
    spec = gymnasium.spec(env_id)
    assert spec.entry_point == "gymjax.wrappers.gymnasium:GymnasiumEnv"
    assert spec.vector_entry_point == "gymjax.wrappers.gymnasium:GymnasiumVectorEnv"
    assert spec.max_episode_steps == gymjax.envs.spec(env_id).max_episode_steps


@pytest.mark.parametrize("env_id", ["JaxCartPole-v0", "JaxPendulum-v0", "JaxInvertedPendulum-v0"])
def test_check_env_passes(env_id):
    env = gymnasium.make(env_id)
    assert isinstance(env.unwrapped, GymnasiumEnv)
    check_env(env.unwrapped)


def test_check_env_passes_for_ant(ant_env):
    check_env(ant_env.unwrapped)  # renders too: the fixture has render_mode="rgb_array"
    assert ant_env.observation_space == gymnasium.spaces.Box(-np.inf, np.inf, (105,), np.float32)


def _lockstep(ours, reference, steps, seed, tol=1e-5):
    """Steps both vector envs with the same actions, comparing everything they return.

    Keys, masks and flags must be equal; numbers to ``tol`` (a batched and an
    unbatched XLA program round differently, and contacts amplify it).
    """
    assert ours.metadata["autoreset_mode"] == reference.metadata["autoreset_mode"]
    obs, info = ours.reset(seed=seed)
    obs_ref, info_ref = reference.reset(seed=seed)
    np.testing.assert_allclose(obs, obs_ref, rtol=tol, atol=tol)
    _assert_infos_equal(info, info_ref, tol)
    ours.action_space.seed(seed)
    ended = np.zeros(2, int)
    for _ in range(steps):
        action = ours.action_space.sample()
        obs, reward, terminated, truncated, info = ours.step(action)
        obs_ref, reward_ref, terminated_ref, truncated_ref, info_ref = reference.step(action)
        np.testing.assert_allclose(obs, obs_ref, rtol=tol, atol=tol)
        np.testing.assert_allclose(reward, reward_ref, rtol=tol, atol=tol)
        np.testing.assert_array_equal(terminated, terminated_ref)
        np.testing.assert_array_equal(truncated, truncated_ref)
        _assert_infos_equal(info, info_ref, tol)
        ended += [terminated.sum(), truncated.sum()]
    return ended


def _assert_infos_equal(ours, reference, tol):
    assert ours.keys() == reference.keys()
    for key, value in reference.items():
        if key == "final_obs":
            for a, b in zip(ours[key], value):
                assert (a is None) == (b is None)
                if b is not None:
                    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
        elif isinstance(value, dict):
            _assert_infos_equal(ours[key], value, tol)
        elif key.startswith("_"):
            np.testing.assert_array_equal(ours[key], value, err_msg=key)
        else:
            np.testing.assert_allclose(ours[key], value, rtol=tol, atol=tol, err_msg=key)


def _sync(env_id, num_envs, mode=AutoresetMode.SAME_STEP, **kwargs):
    return gymnasium.make_vec(
        env_id, num_envs=num_envs, vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode}, **kwargs,
    )


SAME = {"autoreset_mode": AutoresetMode.SAME_STEP}


def test_vector_env_equals_sync_vector_env_cartpole():
    ours = gymnasium.make_vec("JaxCartPole-v0", num_envs=2, max_episode_steps=15, **SAME)
    assert isinstance(ours, GymnasiumVectorEnv)
    terminations, truncations = _lockstep(ours, _sync("JaxCartPole-v0", 2, max_episode_steps=15), 120, seed=3)
    assert terminations >= 2 and truncations >= 2


def test_vector_env_equals_sync_vector_env_pendulum():
    ours = gymnasium.make_vec("JaxPendulum-v0", num_envs=2, max_episode_steps=10, **SAME)
    _, truncations = _lockstep(ours, _sync("JaxPendulum-v0", 2, max_episode_steps=10), 35, seed=0)
    assert truncations >= 4


def test_vector_env_equals_sync_vector_env_ant(ant_vec):
    """Ant's info has step-only keys: masked out for envs that reset, as SyncVectorEnv does (in the
    default mode, NEXT_STEP, which the shared fixture has)."""
    mode = ant_vec.metadata["autoreset_mode"]
    _, truncations = _lockstep(ant_vec, _sync("JaxAnt-v0", 2, mode, max_episode_steps=6), 13, seed=1, tol=1e-3)
    assert truncations >= 2


def test_make_vec_defaults_to_gymnasiums_autoreset_mode_next_step():
    """RLlib's env runners (and any loop written for SyncVectorEnv) assume Gymnasium's default,
    NEXT_STEP, without checking: on a SAME_STEP default they trained on wrong transitions, silently.
    The default make_vec is checked in lockstep against SyncVectorEnv in its own default mode, and
    against NEXT_STEP's rule: the ending step returns the episode's last obs, the next one the reset
    obs with reward 0 and neither flag."""
    gymnasium_default = gymnasium.make_vec("CartPole-v1", 2, vectorization_mode="sync")
    ours = gymnasium.make_vec("JaxCartPole-v0", num_envs=3, max_episode_steps=12)
    assert ours.autoreset_mode == ours.metadata["autoreset_mode"] == gymnasium_default.metadata["autoreset_mode"]
    assert GymnasiumVectorEnv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # read before an instance exists
    reference = gymnasium.vector.SyncVectorEnv(  # no autoreset_mode: Gymnasium's default
        [lambda: gymnasium.wrappers.TimeLimit(GymnasiumEnv("JaxCartPole-v0"), 12) for _ in range(3)]
    )
    assert_same(ours.reset(seed=4), reference.reset(seed=4))
    rng, ended, restarts = np.random.default_rng(4), np.zeros(3, bool), 0
    for t in range(60):
        action = rng.integers(0, 2, 3)
        out, ref = ours.step(action), reference.step(action)
        assert_same(out, ref, f"step {t}")
        obs, reward, terminated, truncated, info = out
        assert "final_obs" not in info  # SAME_STEP's key
        for i in np.flatnonzero(ended):  # the step after an end: the reset
            assert reward[i] == 0 and not terminated[i] and not truncated[i]
            restarts += 1
        ended = terminated | truncated
    assert restarts >= 4


def test_reset_observations_and_infos_are_writable():
    """reset() handed out NumPy's read-only view of the JAX buffer: `obs *= 1.0` and Gymnasium's vector
    FlattenObservation failed with 'assignment destination is read-only'; step's were copies."""
    single = gymnasium.make("JaxCartPole-v0")
    obs, _ = single.reset(seed=0)
    obs *= 1.0
    vec = gymnasium.make_vec("JaxAnt-v0", 2, engine="mujoco", max_episode_steps=5)
    obs, info = vec.reset(seed=0)
    assert obs.flags.writeable and all(v.flags.writeable for v in info.values())
    obs *= 1.0
    stepped = vec.step(np.zeros((2, 8), np.float32))
    assert stepped[0].flags.writeable
    flat = gymnasium.wrappers.vector.FlattenObservation(gymnasium.make_vec("JaxCartPole-v0", 2))
    obs, _ = flat.reset(seed=0)
    assert obs.shape == (2, 4)
    flat.step(np.zeros(2, int))


def test_seeds_of_any_size_as_gymnasium_takes_them():
    """Minari's DataCollector draws 60-bit seeds; they were refused above 2**32 - 1."""
    single = gymnasium.make("JaxCartPole-v0")
    big = 2**60 + 12345
    first, _ = single.reset(seed=big)
    np.testing.assert_array_equal(single.reset(seed=big)[0], first)  # reproducible
    assert not np.allclose(single.reset(seed=big + 1)[0], first)
    assert not np.allclose(single.reset(seed=big + 2**32)[0], first)  # the high word counts
    assert not np.allclose(single.reset(seed=12345)[0], first)  # and is not dropped
    huge = 2**100 + 7
    np.testing.assert_array_equal(single.reset(seed=huge)[0], single.reset(seed=huge)[0])
    assert not np.allclose(single.reset(seed=huge)[0], single.reset(seed=huge + 1)[0])
    vec = gymnasium.make_vec("JaxCartPole-v0", 3)
    obs, _ = vec.reset(seed=2**64 - 2)  # env 2 gets 2**64: hashed, still distinct and reproducible
    for i in range(3):
        np.testing.assert_array_equal(single.reset(seed=2**64 - 2 + i)[0], obs[i])
    np.testing.assert_array_equal(vec.reset(seed=[big, None, 5])[0][0], first)
    # Seeds below 2**32 are the keys they always were: jax.random.PRNGKey(seed).
    env = GymnasiumEnv("JaxCartPole-v0")
    env.reset(seed=2**32 - 1)
    expected = env.jax_env.reset(gymjax.wrappers.next_reset_key(jax.random.PRNGKey(2**32 - 1))[1])
    np.testing.assert_array_equal(env.jax_state.obs, expected.obs)
    assert seed_words(2**32 - 1) == (2**32 - 1, 0) and seed_words(2**60 + 3) == (3, 2**28)


def test_program_is_shared_by_envs_of_one_description():
    """Tianshou's DQN example makes 110 envs: each compiled its own reset and step (0.33 s each)."""
    programs.clear_program_cache()
    start = time.perf_counter()
    first = gymnasium.make("JaxCartPole-v0")
    first.reset(seed=0)
    first.step(0)
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    others = [gymnasium.make("JaxCartPole-v0") for _ in range(20)]
    for i, env in enumerate(others):
        env.reset(seed=i)
        env.step(0)
    shared_s = (time.perf_counter() - start) / len(others)
    assert all(env.unwrapped.session._program is first.unwrapped.session._program for env in others)
    assert shared_s < compile_s / 10, (shared_s, compile_s)
    # Each env keeps its own state: stepping one does not move another.
    a, b = others[0], gymnasium.make("JaxCartPole-v0")
    np.testing.assert_array_equal(a.reset(seed=1)[0], b.reset(seed=1)[0])
    moved, _, _, _, _ = a.step(1)
    np.testing.assert_array_equal(b.step(1)[0], moved)

    def program(*args, **kwargs):
        return GymnasiumEnv(*args, **kwargs).session._program

    same = program("JaxCartPole-v0")
    assert program("JaxCartPole-v0", render_mode="rgb_array", width=64) is same  # rendering is on the host
    for options in ({"max_episode_steps": 5}, {"action_repeat": 2}, {"sutton_barto_reward": True}):
        assert program("JaxCartPole-v0", **options) is not same, options
    assert program("JaxCartPole-v0", sutton_barto_reward=True) is program("JaxCartPole-v0", sutton_barto_reward=True)
    assert program("JaxCartPole-v0", sutton_barto_reward=False) is not program(
        "JaxCartPole-v0", sutton_barto_reward=True
    )

    def heavier(params, key):
        return params.replace(masspole=params.masspole * 2)

    def lighter(params, key):
        return params.replace(masspole=params.masspole / 2)

    # Functions and user-given envs by identity, whatever their names or values.
    assert program("JaxCartPole-v0", randomization_fn=heavier) is program("JaxCartPole-v0", randomization_fn=heavier)
    assert program("JaxCartPole-v0", randomization_fn=heavier) is not program(
        "JaxCartPole-v0", randomization_fn=lighter
    )
    mine, other = gymjax.make("JaxCartPole-v0"), gymjax.make("JaxCartPole-v0")
    assert program(mine) is program(mine) and program(mine) is not program(other)
    vec = {mode: GymnasiumVectorEnv("JaxCartPole-v0", 2, autoreset_mode=mode).session._program for mode in AutoresetMode
           if mode is not AutoresetMode.DISABLED}
    assert vec[AutoresetMode.SAME_STEP] is not vec[AutoresetMode.NEXT_STEP]
    assert GymnasiumVectorEnv("JaxCartPole-v0", 3).session._program is not vec[AutoresetMode.NEXT_STEP]


def test_an_assigned_np_random_seeds_the_next_unseeded_reset():
    """Gymnasium lets users assign env.np_random; gymjax draws from JAX keys, so the generator seeds the
    next reset without a seed (it was ignored: episodes came from the old stream)."""
    def episodes(env, generator):
        env.reset(seed=0)
        env.np_random = generator
        assert env.np_random is generator
        return env.reset()[0], env.reset()[0]

    a = episodes(gymnasium.make("JaxCartPole-v0"), np.random.default_rng(5))
    b = episodes(gymnasium.make("JaxCartPole-v0"), np.random.default_rng(5))
    c = episodes(gymnasium.make("JaxCartPole-v0"), np.random.default_rng(6))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])  # the stream the drawn seed started
    assert not np.allclose(a[0], c[0])
    seed = int(np.random.default_rng(5).integers(2**63))
    np.testing.assert_array_equal(gymnasium.make("JaxCartPole-v0").reset(seed=seed)[0], a[0])
    vec = gymnasium.make_vec("JaxCartPole-v0", 2)
    vec.reset(seed=0)
    vec.np_random = np.random.default_rng(5)
    np.testing.assert_array_equal(vec.reset()[0], vec.reset(seed=[seed, seed + 1])[0])
    env = gymnasium.make("JaxCartPole-v0")
    env.np_random = np.random.default_rng(5)
    np.testing.assert_array_equal(env.reset(seed=3)[0], gymnasium.make("JaxCartPole-v0").reset(seed=3)[0])


def test_module_prefixed_id_imports_gymjax_in_a_fresh_process():
    """RLlib's env runners make `gymjax:JaxCartPole-v0` in processes that never imported gymjax."""
    code = (
        "import sys, gymnasium\n"
        "assert 'gymjax' not in sys.modules\n"
        "env = gymnasium.make('gymjax:JaxCartPole-v0')\n"
        "obs, _ = env.reset(seed=0); env.step(0)\n"
        "envs = gymnasium.make_vec('gymjax:JaxCartPole-v0', 2)\n"
        "print(type(env.unwrapped).__name__, type(envs).__name__, envs.autoreset_mode.name)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["GymnasiumEnv", "GymnasiumVectorEnv", "NEXT_STEP"]


def test_reset_seeding_is_deterministic_and_streams_continue():
    env = gymnasium.make_vec("JaxCartPole-v0", num_envs=3)
    first, _ = env.reset(seed=11)
    again, _ = env.reset(seed=11)
    np.testing.assert_array_equal(first, again)
    nxt, _ = env.reset()
    assert not np.allclose(nxt, first)
    single = gymnasium.make("JaxCartPole-v0")
    np.testing.assert_array_equal(single.reset(seed=12)[0], first[1])
    np.testing.assert_array_equal(single.reset()[0], nxt[1])
    explicit, _ = env.reset(seed=[11, 12, 13])
    np.testing.assert_array_equal(explicit, first)


@pytest.mark.parametrize("bad, message", [
    (np.zeros(7, np.float32), r"shape \(8,\), got shape \(7,\)"),
    (np.array(["a"] * 8), "dtype <U1"),
    (np.array([np.nan] + [0.0] * 7), "NaN or inf"),
    (np.array([np.inf] + [0.0] * 7), "NaN or inf"),
    (np.array([1e300] + [0.0] * 7), r"finite values within float32's range .*a value past that range"),
    (np.array([-np.finfo(np.float32).max * 2.0] + [0.0] * 7), "a value past that range"),
])
def test_bad_actions_are_clear_errors(ant_env, bad, message):
    ant_env.reset(seed=0)
    with pytest.raises(ValueError, match=message) as err:
        ant_env.unwrapped.step(bad)
    assert "Box(-1.0, 1.0, (8,), float32)" in str(err.value)


@pytest.mark.parametrize("num_envs", [4, 40])  # a few values are read one by one, many by a ufunc
def test_a_nan_in_a_batch_of_actions_is_refused(num_envs):
    vec = gymnasium.make_vec("JaxMountainCarContinuous-v0", num_envs=num_envs)
    vec.reset(seed=0)
    actions = np.zeros((num_envs, 1), np.float32)
    actions[-1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        vec.step(actions)
    vec.step(np.zeros((num_envs, 1), np.float32))


def test_bad_discrete_and_batched_actions():
    env = gymnasium.make("JaxCartPole-v0").unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"integers in \[0, 2\)"):
        env.step(2)
    with pytest.raises(ValueError, match="integers"):
        env.step(0.5)
    vec = gymnasium.make_vec("JaxCartPole-v0", num_envs=3)
    vec.reset(seed=0)
    with pytest.raises(ValueError, match=r"a batch of 3 actions from Discrete\(2\) of shape \(3,\)"):
        vec.step(np.zeros(2, int))
    pendulums = gymnasium.make_vec("JaxPendulum-v0", num_envs=2)
    pendulums.reset(seed=0)
    with pytest.raises(ValueError, match="float32's range"):  # would have become inf
        pendulums.step(np.array([[0.5], [1e39]]))
    pendulums.step(np.array([[0.5], [np.finfo(np.float32).max]], np.float64))  # float32's largest: held


def test_stepping_before_reset_is_refused():
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        gymnasium.make("JaxCartPole-v0").unwrapped.step(0)
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        gymnasium.make_vec("JaxCartPole-v0", num_envs=2).step(np.zeros(2, int))


def test_bad_construction_and_seeds_are_clear_errors():
    with pytest.raises(ValueError, match="num_envs must be a positive int"):
        GymnasiumVectorEnv("JaxCartPole-v0", num_envs=0)
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        GymnasiumEnv("JaxCartPole-v0", render_mode="ansi")
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        GymnasiumVectorEnv("JaxCartPole-v0", 2, render_mode="human")  # one window per env: single envs only
    vec = gymnasium.make_vec("JaxCartPole-v0", num_envs=2)
    with pytest.raises(ValueError, match=r"seed must be a non-negative int \(of any size, as Gymnasium's\), got -1"):
        vec.reset(seed=-1)
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        vec.reset(seed=1.5)
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        gymnasium.make("JaxCartPole-v0").reset(seed=True)
    with pytest.raises(ValueError, match="expected 2 seeds"):
        vec.reset(seed=[1, 2, 3])


def _distinct(a, b):
    return a.shape == b.shape and np.abs(a.astype(int) - b.astype(int)).mean() > 1.0


def test_render_rgb_array_single(ant_env):
    ant_env.reset(seed=0)
    standing = ant_env.render()
    assert standing.shape == (64, 64, 3) and standing.dtype == np.uint8
    assert standing.std() > 5  # an actual scene, not a blank frame
    qpos = np.array(ant_env.unwrapped.jax_env.mj_model.qpos0)
    qpos[3:7] = [0.0, 1.0, 0.0, 0.0]  # upside down
    ant_env.unwrapped.set_state(qpos, np.zeros(14))
    assert _distinct(ant_env.render(), standing)  # the frame follows the state


def test_render_rgb_array_vector(ant_vec):
    ant_vec.reset(seed=0)
    frames = ant_vec.render()
    assert len(frames) == 2 and all(f.shape == (64, 64, 3) for f in frames)
    assert _distinct(frames[0], frames[1]) or frames[0].std() > 5


def test_render_classic_control():
    env = gymnasium.make("JaxCartPole-v0", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (400, 600, 3) and frame.std() > 5


def test_randomization_through_make_and_make_vec():
    def heavier(params, key):
        return params.replace(masspole=params.masspole * jax.random.uniform(key, (), minval=2.0, maxval=3.0))

    vec = gymnasium.make_vec("JaxCartPole-v0", num_envs=4, randomization_fn=heavier)
    vec.reset(seed=0)
    masspole = vec.jax_state.randomized["masspole"]
    assert ((np.asarray(masspole) >= 0.2) & (np.asarray(masspole) <= 0.3)).all()
    single = gymnasium.make("JaxCartPole-v0", randomization_fn=heavier)
    single.reset(seed=0)
    single.step(1)
