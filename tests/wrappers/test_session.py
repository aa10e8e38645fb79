"""The host runtime under every adapter: both autoreset modes against SyncVectorEnv and
Gymnasium's vector wrappers, every adapter agreeing step for step, and what a new user
of Gymnasium tries first (pickling, forks, MuJoCo attributes, reset options)."""

import copy
import dataclasses
import multiprocessing
import pickle
import time

import gymnasium
import jax
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import vector as vw
from lockstep import assert_same  # tests/lockstep.py

import gymjax
from gymjax.wrappers import programs, session
from gymjax.wrappers.gymnasium import GymnasiumEnv, GymnasiumVectorEnv
from gymjax.wrappers.options import SessionOptions
from gymjax.wrappers.sb3 import SB3VecEnv
from gymjax.wrappers.torch import TorchEnv, TorchVectorEnv

LIMIT = 16  # CartPole under random actions falls after ~10-30 steps, or reaches this limit: both kinds


def _reference(env_fn, n, mode, limit=LIMIT):
    """Gymnasium's own SyncVectorEnv over single gymjax envs behind TimeLimit."""
    fns = [lambda: gymnasium.wrappers.TimeLimit(env_fn(), limit) for _ in range(n)]
    return gymnasium.vector.SyncVectorEnv(fns, autoreset_mode=mode)


def _lockstep(ours, reference, steps=80, seed=5):
    assert_same(ours.reset(seed=seed), reference.reset(seed=seed))
    reference.action_space.seed(seed)
    ends = np.zeros(2, int)
    for t in range(steps):
        action = reference.action_space.sample()
        out, ref = ours.step(action), reference.step(action)
        assert_same(out, ref, f"step {t}")
        ends += [np.sum(ref[2]), np.sum(ref[3])]
    assert ends.min() >= 2, ends  # both terminations and time limits were compared


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_vector_env_equals_sync_vector_env_in_both_modes(cartpole_with_info, mode):
    """CartPoleWithInfo has a step-only info key: masked for envs that reset, in either mode."""
    ours = GymnasiumVectorEnv(cartpole_with_info, 3, max_episode_steps=LIMIT, autoreset_mode=mode)
    assert ours.autoreset_mode == ours.metadata["autoreset_mode"] == mode
    _lockstep(ours, _reference(lambda: GymnasiumEnv(cartpole_with_info), 3, mode))


# Gymnasium's vector wrappers, each over ours and over SyncVectorEnv. The observation
# wrappers refuse SAME_STEP (they would normalize a reset obs as the episode's last).
WRAPPERS = {
    "RecordEpisodeStatistics": (vw.RecordEpisodeStatistics, (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)),
    "NormalizeObservation": (vw.NormalizeObservation, (AutoresetMode.NEXT_STEP,)),
    "NormalizeReward": (vw.NormalizeReward, (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)),
    "ClipAction": (vw.ClipAction, (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)),
    "RescaleAction": (lambda env: vw.RescaleAction(env, -0.5, 0.5), (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)),
    "DictInfoToList": (vw.DictInfoToList, (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)),
}
CASES = [(name, mode) for name, (_, modes) in WRAPPERS.items() for mode in modes]


@pytest.mark.parametrize("name, mode", CASES, ids=[f"{n}-{m.name}" for n, m in CASES])
def test_gymnasium_vector_wrappers_see_what_they_see_on_sync_vector_env(name, mode):
    wrap, _ = WRAPPERS[name]
    # InvertedPendulum: Box actions (for the action wrappers); random actions drop the pole
    # in ~4-12 steps, so a limit of 7 ends episodes both ways.
    # MuJoCo C: the same semantics as MJX, and it compiles in a fraction of the time.
    ours = wrap(
        gymnasium.make_vec("JaxInvertedPendulum-v0", 2, max_episode_steps=7, autoreset_mode=mode, engine="mujoco")
    )
    reference = wrap(_reference(lambda: GymnasiumEnv("JaxInvertedPendulum-v0", engine="mujoco"), 2, mode, limit=7))
    _lockstep(ours, reference, steps=40, seed=2)


def test_observation_wrappers_refuse_same_step_and_accept_next_step():
    with pytest.raises(ValueError, match="NEXT_STEP or DISABLED"):
        vw.NormalizeObservation(gymnasium.make_vec("JaxCartPole-v0", 2, autoreset_mode="same_step"))
    vw.NormalizeObservation(gymnasium.make_vec("JaxCartPole-v0", 2, autoreset_mode="next_step"))
    vw.NormalizeObservation(gymnasium.make_vec("JaxCartPole-v0", 2))  # the default, as SyncVectorEnv's


def test_bad_autoreset_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="autoreset_mode must be one of"):
        gymnasium.make_vec("JaxCartPole-v0", 2, autoreset_mode="sometimes")


def test_every_adapter_agrees_step_for_step(cartpole_with_info):
    """Same env, seed and actions through every adapter, across falls and time limits."""
    n, seed, steps = 3, 7, 45
    vec = GymnasiumVectorEnv(cartpole_with_info, n, max_episode_steps=LIMIT, autoreset_mode="same_step")
    tvec = TorchVectorEnv(cartpole_with_info, n, max_episode_steps=LIMIT)
    sb3 = SB3VecEnv(cartpole_with_info, n, max_episode_steps=LIMIT)
    singles = [gymnasium.wrappers.TimeLimit(GymnasiumEnv(cartpole_with_info), LIMIT) for _ in range(n)]
    torch_single = TorchEnv(cartpole_with_info, max_episode_steps=LIMIT)

    obs, _ = vec.reset(seed=seed)
    tobs, _ = tvec.reset(seed=seed)
    sb3.seed(seed)
    sobs = sb3.reset()
    single_obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(singles)]
    t0, _ = torch_single.reset(seed=seed)
    for other in (tobs.numpy(), sobs, np.stack(single_obs)):
        np.testing.assert_array_equal(other, obs)
    np.testing.assert_array_equal(t0.numpy(), obs[0])

    rng, returns, ends = np.random.default_rng(seed), np.zeros(n), 0
    for _ in range(steps):
        actions = rng.integers(0, 2, n)
        obs, reward, terminated, truncated, info = vec.step(actions)
        tobs, treward, tterm, ttrunc, tinfo = tvec.step(torch.as_tensor(actions))
        sobs, sreward, sdone, sinfos = sb3.step(actions)
        done = terminated | truncated
        returns += reward
        np.testing.assert_array_equal(tobs.numpy(), obs)
        np.testing.assert_array_equal(sobs, obs)
        for ours in (treward.numpy(), sreward):
            np.testing.assert_array_equal(ours, reward)
        np.testing.assert_array_equal(tterm.numpy(), terminated)
        np.testing.assert_array_equal(ttrunc.numpy(), truncated)
        np.testing.assert_array_equal(sdone, done)
        for i, env in enumerate(singles):
            o, r, term, trunc, single_info = env.step(actions[i])
            assert (r, term, trunc) == (reward[i], terminated[i], truncated[i])
            last = info["final_obs"][i] if done[i] else obs[i]
            np.testing.assert_array_equal(o, last)
            assert single_info["pushed"] == (info["final_info"]["pushed"][i] if done[i] else info["pushed"][i])
            if done[i]:
                np.testing.assert_array_equal(sinfos[i]["terminal_observation"], last)
                np.testing.assert_array_equal(tinfo["final_obs"][i].numpy(), last)
                assert sinfos[i]["episode"]["r"] == pytest.approx(returns[i], abs=1e-5)
                assert sinfos[i]["episode"]["l"] == int(tinfo["final_metrics"]["episode_length"][i])
                assert tinfo["final_metrics"]["episode_return"][i].item() == pytest.approx(returns[i], abs=1e-5)
                assert sinfos[i]["TimeLimit.truncated"] == bool(truncated[i] and not terminated[i])
                reset_obs, _ = env.reset()  # a single env continues its key stream, as the batch does
                np.testing.assert_array_equal(reset_obs, obs[i])
                returns[i], ends = 0.0, ends + 1
        o0, r0, term0, trunc0, _ = torch_single.step(torch.as_tensor(actions[0]))
        np.testing.assert_array_equal(o0.numpy(), info["final_obs"][0] if done[0] else obs[0])
        if done[0]:
            np.testing.assert_array_equal(torch_single.reset()[0].numpy(), obs[0])
    assert ends >= 6


def test_pickle_and_deepcopy_keep_the_env_and_its_state():
    env = gymnasium.make("JaxCartPole-v0")
    env.reset(seed=3)
    env.step(1)
    clones = (pickle.loads(pickle.dumps(env)), copy.deepcopy(env))
    expected, *_ = env.unwrapped.step(0)
    for clone in clones:
        np.testing.assert_array_equal(clone.unwrapped.step(0)[0], expected)
    vec = gymnasium.make_vec("JaxCartPole-v0", 2)
    vec.reset(seed=0)
    clone = pickle.loads(pickle.dumps(vec))
    np.testing.assert_array_equal(clone.step(np.ones(2, int))[0], vec.step(np.ones(2, int))[0])


def _build_in_child(queue):
    try:
        gymnasium.make("JaxCartPole-v0")
        queue.put("built")
    except RuntimeError as e:
        queue.put(str(e))


def _refusal_in_a_forked_child():
    """What a gymjax env built in a child forked from this process says."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_build_in_child, args=(queue,))
    child.start()
    message = queue.get(timeout=60)
    child.join(timeout=30)
    return message


def test_a_fork_after_jax_started_is_refused_not_hung():
    jax.numpy.zeros(1).block_until_ready()  # JAX is running in this process
    message = _refusal_in_a_forked_child()
    assert "forked after JAX started" in message and "spawn" in message


def test_the_fork_refusal_names_torchrls_fork_start_and_its_ways_out():
    """torchrl's ParallelEnv(n, make_env, mp_start_method="fork"): its EnvCreator makes and resets an env
    in the parent (JAX starts), then forks the workers, whose first gymjax env is refused. The
    parent sees an EOFError; the worker's message is the user's only clue, so it names the case."""
    parent = gymnasium.make("JaxCartPole-v0")
    parent.reset(seed=0)  # what EnvCreator does to read the specs
    message = _refusal_in_a_forked_child()
    assert "torchrl's ParallelEnv(n, make_env, mp_start_method='fork')" in message
    assert "EnvCreator" in message and "torchrl's default" in message
    assert "'spawn' or 'forkserver'" in message and "in the workers only" in message


def test_mujoco_attributes_users_read(ant_env):
    env = ant_env.unwrapped
    ant_env.reset(seed=0)
    assert env.model.nq == 15 and env.frame_skip == 5 and env.dt == pytest.approx(0.05)
    np.testing.assert_allclose(env.state_vector(), np.concatenate([env.data.qpos, env.data.qvel]))
    qpos = np.asarray(env.init_qpos).copy()
    qpos[7:] += 0.1  # the joints (qpos[3:7], the torso's quaternion, is normalized by MuJoCo)
    env.set_state(qpos, np.zeros(14))
    np.testing.assert_allclose(env.data.qpos, qpos, rtol=1e-6)
    assert env.ctrl_cost_weight == 0.5  # the env's options read through
    obs, info = ant_env.reset(seed=0, options={"anything": 1})  # accepted and ignored, as Ant-v5
    assert obs.shape == (105,)


def test_set_state_needs_a_mujoco_simulator():
    # CartPole has reset_to(physics) too, but no qpos/qvel to set as Gymnasium's MuJoCo envs do.
    env = gymnasium.make("JaxCartPole-v0")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="has no simulator state to set"):
        env.unwrapped.set_state(np.zeros(2), np.zeros(2))


def test_backend_is_the_old_name_of_engine():
    """Run directories recorded backend=, and clients pass it on: it still names the engine."""
    env = gymjax.make("JaxInvertedPendulum-v0", backend="mujoco")
    assert env.engine == "mujoco" and env.env_kwargs == {"backend": "mujoco"}  # recorded as given
    with pytest.raises(ValueError, match="engine= or its old name backend="):
        gymjax.make("JaxInvertedPendulum-v0", engine="mujoco", backend="mjx")


def test_human_rendering_shows_frames_and_returns_none(monkeypatch):
    """PettingZoo's render_test starts with render_mode="human"; SDL's dummy driver stands in for a screen."""
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    env = gymnasium.make("JaxCartPole-v0", render_mode="human")
    assert isinstance(env.unwrapped, GymnasiumEnv) and "human" in env.metadata["render_modes"]
    env.reset(seed=0)
    env.step(0)
    assert env.render() is None and env.unwrapped.session._window._screen is not None
    env.close()
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        gymnasium.make_vec("JaxCartPole-v0", 2, render_mode="human")


def test_ant_v5_render_options():
    """camera_id / camera_name / max_geom / visual_options, as Gymnasium's MujocoEnv takes them."""
    import mujoco

    kwargs = dict(engine="mujoco", render_mode="rgb_array", width=48, height=32)
    free = gymnasium.make("JaxAnt-v0", **kwargs)
    tracked = gymnasium.make(
        "JaxAnt-v0", camera_name="track", max_geom=500,
        visual_options={mujoco.mjtVisFlag.mjVIS_CONTACTPOINT: True}, **kwargs,
    )
    frames = []
    for env in (free, tracked):
        env.reset(seed=0)
        frames.append(env.render().astype(int))
    assert frames[0].shape == frames[1].shape == (32, 48, 3)
    assert np.abs(frames[0] - frames[1]).mean() > 5  # another viewpoint
    assert tracked.unwrapped.camera_id == 0 and tracked.unwrapped.max_geom == 500
    pickle.loads(pickle.dumps(tracked))
    with pytest.raises(ValueError, match="camera_name 'nope' is not a camera"):
        gymnasium.make("JaxAnt-v0", camera_name="nope")
    with pytest.raises(ValueError, match="cannot be given together"):
        gymnasium.make("JaxAnt-v0", camera_id=0, camera_name="track")


def _heavier_pole(params, key):
    return params.replace(masspole=params.masspole * jax.random.uniform(key, (), minval=2.0, maxval=3.0))


def test_every_adapter_takes_the_same_options():
    """action_repeat, randomization_fn, max_episode_steps and render_mode mean the same everywhere."""
    from gymjax.wrappers.pettingzoo import PettingZooEnv, PettingZooVectorEnv
    from gymjax.wrappers.training import ActionRepeat, DomainRandomization

    options = dict(action_repeat=2, randomization_fn=_heavier_pole, max_episode_steps=5, render_mode="rgb_array")
    adapters = [
        GymnasiumEnv("JaxCartPole-v0", **options),
        GymnasiumVectorEnv("JaxCartPole-v0", 2, **options),
        TorchEnv("JaxCartPole-v0", **options),
        TorchVectorEnv("JaxCartPole-v0", 2, **options),
        SB3VecEnv("JaxCartPole-v0", 2, **options),
    ]
    for adapter in adapters:
        layers, env = [], adapter.session.jax_env
        while hasattr(env, "env"):
            layers.append(type(env))
            env = env.env
        assert ActionRepeat in layers and DomainRandomization in layers, type(adapter).__name__
        assert adapter.session.max_episode_steps == 5
    multi = dict(action_repeat=2, max_episode_steps=5, render_mode="rgb_array", engine="mujoco", width=32, height=32)
    for adapter in (PettingZooEnv("JaxMultiAnt-v0", **multi), PettingZooVectorEnv("JaxMultiAnt-v0", 2, **multi)):
        adapter.reset(seed=0)
        adapter.step({a: np.zeros((2, 4) if isinstance(adapter, PettingZooVectorEnv) else 4, np.float32)
                      for a in adapter.possible_agents})
        frames = adapter.render()
        assert (len(frames) == 2) if isinstance(adapter, PettingZooVectorEnv) else frames.shape == (32, 32, 3)
        assert adapter.session.jax_env.dt == pytest.approx(2 * adapter.session.base.dt)


@pytest.mark.parametrize("bad, words", [
    (dict(max_episode_steps=0), r"max_episode_steps must be None or an int >= 1, got 0 \(int\)"),
    (dict(action_repeat=1.5), r"action_repeat must be an int >= 1, got 1.5 \(float\)"),
    (dict(time_limit="yes"), r"time_limit must be True or False, got 'yes' \(str\)"),
    (dict(randomization_fn=3),
     r"randomization_fn must be None, a function \(params, key\) -> params or BraxRandomization\(fn\), got 3"),
    (dict(autoreset_mode="sometimes"), r"autoreset_mode must be one of \['same_step', 'next_step'\]"),
    (dict(render_mode=1), r"render_mode must be None or a mode's name, such as 'rgb_array', got 1 \(int\)"),
    (dict(width=-1), r"width must be None or an int >= 1, got -1 \(int\)"),
])
def test_bad_options_are_refused_by_name_before_any_env_is_built(monkeypatch, bad, words):
    def build(*args):
        raise AssertionError("an env was built")

    monkeypatch.setattr(session, "build", build)
    with pytest.raises(ValueError, match=words):
        SessionOptions(**bad)
    with pytest.raises(ValueError, match=words):  # the same check for an adapter's keywords
        GymnasiumVectorEnv("JaxCartPole-v0", 2, **bad)
    with pytest.raises(TypeError, match=r"options must be a SessionOptions, got \{'width': 3\} \(dict\)"):
        GymnasiumEnv("JaxCartPole-v0", options={"width": 3})


def _adapters():
    from gymjax.wrappers.pettingzoo import PettingZooEnv, PettingZooVectorEnv

    cartpole, ant = dict(env="JaxCartPole-v0"), dict(env="JaxMultiAnt-v0", engine="mujoco")
    return {
        "GymnasiumEnv": (GymnasiumEnv, cartpole),
        "GymnasiumVectorEnv": (GymnasiumVectorEnv, dict(cartpole, num_envs=2)),
        "TorchEnv": (TorchEnv, cartpole), "TorchVectorEnv": (TorchVectorEnv, dict(cartpole, num_envs=2)),
        "SB3VecEnv": (SB3VecEnv, dict(cartpole, num_envs=2)),
        "PettingZooEnv": (PettingZooEnv, ant), "PettingZooVectorEnv": (PettingZooVectorEnv, dict(ant, num_envs=2)),
    }


ADAPTERS = ["GymnasiumEnv", "GymnasiumVectorEnv", "TorchEnv", "TorchVectorEnv", "SB3VecEnv", "PettingZooEnv",
            "PettingZooVectorEnv"]


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_adapter_given_one_options_object_runs_its_session_with_it(name):
    adapter, arguments = _adapters()[name]
    options = SessionOptions(max_episode_steps=5, time_limit=True, action_repeat=2, render_mode="rgb_array",
                             width=32, height=24)
    env = adapter(options=options, **arguments)
    assert env.session.options == options and env.session.max_episode_steps == 5
    assert env.session.jax_env.dt == pytest.approx(2 * env.session.base.dt)  # the action repeat
    assert env.render_mode == "rgb_array"
    # Keywords replace the object's fields; the rest of the object stays.
    env = adapter(options=options, max_episode_steps=7, **arguments)
    assert env.session.options == dataclasses.replace(options, max_episode_steps=7)
    assert env.session.max_episode_steps == 7


@pytest.mark.parametrize("name", ADAPTERS)
def test_each_adapter_starts_from_its_defaults(name):
    adapter, arguments = _adapters()[name]
    env = adapter(**arguments)
    assert env.session.options == adapter.DEFAULTS
    # A single env's time limit in JAX: the registered one where asked (torch, PettingZoo), else none
    # (gymnasium.make adds its TimeLimit); a batch always has one.
    limited = name != "GymnasiumEnv"
    assert env.session.max_episode_steps == ((500 if "CartPole" in arguments["env"] else 1000) if limited else None)
    if name in ("SB3VecEnv", "PettingZooVectorEnv"):  # their infos report the ended episode's last observation
        with pytest.raises(ValueError, match=f"{name} resets an env in the step that ends its episode: "
                                             "autoreset_mode must be 'same_step', got 'next_step'"):
            adapter(autoreset_mode="next_step", **arguments)


def test_a_batch_that_cannot_fit_is_refused_with_the_estimate_before_allocating(monkeypatch):
    """Before, make_vec(num_envs=10**12) died allocating 931 GiB for a flag per env, and 10**8 grew
    past 6 GiB tiling the observation bounds."""
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"^num_envs=1,000,000,000,000 needs at least [0-9,.]+ GiB \(1,000,000,000,000 "
                                         r"envs x \d+ bytes: env states .*\); .*memory is [0-9.]+ GiB\. "
                                         r"Lower num_envs"):
        gymnasium.make_vec("JaxCartPole-v0", num_envs=10**12)
    assert time.perf_counter() - start < 5
    # The same check on any machine: 10**7 CartPoles need ~2.6 GiB, 1,000 a few hundred KiB.
    for where in ("available_bytes", "host_available_bytes"):
        monkeypatch.setattr(programs, where, lambda: (2**30, "this test's memory"))
    with pytest.raises(ValueError,
                       match=r"^num_envs=10,000,000 needs at least 2\.\d GiB .*; this test's memory is 1\.0 GiB"):
        GymnasiumVectorEnv("JaxCartPole-v0", 10**7)
    envs = GymnasiumVectorEnv("JaxCartPole-v0", 1000)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (1000, 4) and envs.step(np.zeros(1000, np.int64))[0].shape == (1000, 4)


def test_the_state_codec_carries_every_leaf_bit_for_bit():
    import jax.numpy as jnp

    tree = {"f": jnp.array([1.5, -0.0, jnp.nan], jnp.float32), "b": jnp.array([[True, False]]),
            "u8": jnp.array([255, 7], jnp.uint8), "h": jnp.array([0.1, -2.0], jnp.bfloat16),
            "i": jnp.array([-3], jnp.int32), "k": jnp.array([2**32 - 1, 5], jnp.uint32)}
    codec = programs.StateCodec.of(jax.eval_shape(lambda: tree))
    words = jax.jit(codec.pack)(tree)
    assert words.dtype == jnp.uint32 and words.shape == (codec.words,) == (12,)
    back = jax.jit(codec.unpack)(words)
    for name, leaf in tree.items():
        assert back[name].dtype == leaf.dtype and back[name].shape == leaf.shape
        np.testing.assert_array_equal(np.asarray(back[name]).view(np.uint8), np.asarray(leaf).view(np.uint8))
    assert programs.StateCodec.of(jax.eval_shape(lambda: {"key": jax.random.key(0)})) is None  # typed keys: no bits


def test_packing_joins_parts_as_concatenate_does_by_updates_on_the_cpu_and_concatenate_elsewhere():
    # On the CPU the parts are written into one buffer in turn, so that XLA runs them one after another
    # instead of handing them to its thread pool; on a GPU one concatenate is one kernel.
    import jax.numpy as jnp

    parts = [jnp.arange(n, dtype=jnp.float32) * n for n in (3, 1, 5)]
    joined = jax.jit(lambda *p: programs.joined(list(p)))
    np.testing.assert_array_equal(joined(*parts), np.concatenate([np.asarray(p) for p in parts]))
    cpu = joined.trace(*parts).lower().as_text()
    gpu = joined.trace(*parts).lower(lowering_platforms=("cuda",)).as_text()
    assert "dynamic_update_slice" in cpu and "concatenate" not in cpu
    assert "concatenate" in gpu and "dynamic_update_slice" not in gpu
    assert programs.joined(parts[:1]) is parts[0]


def test_a_host_step_keeps_the_state_packed_and_the_same_as_the_pytree_step():
    packed, plain = (session.Session("JaxCartPole-v0", 4) for _ in range(2))
    for s in (packed, plain):
        s.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(12):
        actions = rng.integers(0, 2, 4)
        packed.step(actions)
        plain.step(actions, host=False)
        packed.fetch()
        assert packed._state is None and packed._words is not None  # one buffer between steps, nothing unpacked
    current = packed.current
    for a, b in zip(jax.tree.leaves(packed.state), jax.tree.leaves(plain.state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert packed.current is current  # reading the state leaves its identity as it was


def test_a_steps_results_come_back_in_one_buffer_bit_for_bit():
    """Every dtype a step reports (observations of any width, booleans, counters) crosses in one
    word buffer and comes back as the arrays it was, each a writable array of its own dtype."""
    import jax.numpy as jnp

    tree = {
        "obs": jnp.arange(7, dtype=jnp.float32) / 3,
        "done": jnp.array([True, False, True]),
        "pixels": jnp.arange(5, dtype=jnp.uint8),
        "half": jnp.array([1.5, -2.25], jnp.float16),
        "count": jnp.array(123456789, jnp.int32),
        "none": None,
        "empty": jnp.zeros((0, 3), jnp.float32),
    }
    packer = programs.Packer(jax.eval_shape(lambda: tree))
    packed = jax.jit(packer.pack)(tree)
    assert packed.dtype == jnp.uint32 and packed.ndim == 1  # one result, one transfer
    back = packer.unpack(packed)
    for key, value in tree.items():
        if value is None:
            assert back[key] is None
            continue
        assert back[key].dtype == value.dtype and back[key].shape == value.shape, key
        np.testing.assert_array_equal(back[key], np.asarray(value))
    back["obs"][0] = 99.0  # writable, and its own: the others keep their values
    np.testing.assert_array_equal(back["done"], [True, False, True])
    assert back["count"] == 123456789


def test_session_programs_use_the_cpu_options_only_on_the_jaxlibs_checked(monkeypatch):
    """The older loop emitter halves a session's compile here; an XLA without the option would
    refuse every compile naming it, so another jaxlib compiles with XLA's defaults, and deciding
    starts no JAX runtime (an env is made before a fork)."""
    import jaxlib

    programs._cpu_compiler_options.cache_clear()
    try:
        assert programs._cpu_compiler_options() == programs.CPU_COMPILER_OPTIONS  # this jaxlib: checked
        double = programs.compiled(None, lambda x: 2 * x, tuned=True)
        assert float(double(np.float32(3.0))) == 6.0  # XLA takes the option
        monkeypatch.setattr(jaxlib, "__version__", "0.4.30")
        programs._cpu_compiler_options.cache_clear()
        assert programs._cpu_compiler_options() is None
    finally:
        programs._cpu_compiler_options.cache_clear()


def test_only_envs_stepped_by_mujocos_engine_compile_with_the_cpu_options(monkeypatch):
    """The older emitter may sum in another order: an env whose physics XLA compiles (Brax's drifts
    1e-5 in 30 steps) keeps XLA's defaults, and so steps as the user's own jit of it does."""
    asked = []
    jit = jax.jit
    monkeypatch.setattr(programs.jax, "jit", lambda f, **kw: asked.append(kw.get("compiler_options")) or jit(f, **kw))
    programs.clear_program_cache()  # each make below builds its program

    def options_of(env_id, **kwargs):
        asked.clear()
        env = gymnasium.make(env_id, **kwargs)
        assert asked, "no program compiled"
        env.close()
        return set(map(repr, asked))

    assert options_of("JaxHopper-v0") == {repr(programs.CPU_COMPILER_OPTIONS)}
    assert options_of("JaxCartPole-v0", max_episode_steps=77) == {"None"}
    assert options_of("JaxHopper-v0", engine="mjx", max_episode_steps=77) == {"None"}
