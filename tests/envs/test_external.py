"""Brax, MuJoCo Playground and gymnax envs through gymjax (``gymjax.envs.external``).

Lockstep: each source's raw env, stepped by hand with its own ``reset``/``step`` and a hand-made
auto-reset, against the wrapped env through ``gymnasium.make_vec`` in the autoreset modes, across
terminations and time limits (observations, rewards, flags, final observations). Then the client
contracts (Gymnasium's and SB3's checkers), metrics in info, action bounds from the source,
seeding, rendering, a Dict observation, the extras' errors, randomization without an eval env on
Brax, and PPO learning gymnax's CartPole as it learns ``JaxCartPole-v0``.

Playground's locomotion and manipulation tasks load robot models from mujoco_menagerie, which
Playground clones from GitHub at first use; without it (no network) their case is skipped.
"""

import importlib
import importlib.util
import pathlib
import subprocess
import sys

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from lockstep import assert_same  # tests/lockstep.py

from gymjax import envs
from gymjax.envs import external
from gymjax.wrappers.training import next_reset_key

# id: (options, time limit for the test, steps): limits short enough that both kinds of ending occur.
CASES = {
    "gymnax/CartPole-v1": ({}, 15, 60),
    "gymnax/Acrobot-v1": ({}, 12, 30),
    "gymnax/Breakout-MinAtar-v0": ({}, 25, 90),
    "brax/inverted_pendulum-v0": ({"backend": "positional"}, 25, 50),
    "brax/halfcheetah-v0": ({"backend": "positional"}, 8, 20),
    "playground/CartpoleBalance-v0": ({}, 10, 25),
    "playground/Go1JoystickFlatTerrain-v0": ({}, 6, 14),
}
NUM_ENVS = 3
SEED = 7
CMD_COLLECTION = {"gymnax": "gymnax", "brax": "brax.envs", "playground": "mujoco_playground"}


def need(module):
    """Skips where ``module`` is not installed; an installed one that fails to import fails the test
    (gymnax imports ``six``, which it does not declare: a skip would have hidden that)."""
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed")
    return importlib.import_module(module)


def _skip_unavailable(env_id):
    collection = env_id.split("/")[0]
    need(CMD_COLLECTION[collection])
    if env_id.startswith("playground/Go1"):
        from mujoco_playground._src import mjx_env

        if not pathlib.Path(mjx_env.MENAGERIE_PATH).exists():
            pytest.skip("Playground's locomotion tasks need mujoco_menagerie, cloned from GitHub at first use")


def raw_stepper(env):
    """The source's own reset and step, jitted: ``reset(key) -> (state, obs)``,
    ``step(state, action) -> (state, obs, reward, terminated, truncated, metrics)``."""
    from gymjax.envs.external.gymnax import GymnaxEnv

    src = env.source
    if isinstance(env, GymnaxEnv):
        params = env.default_params

        def reset(key):  # the key split GymnaxEnv documents: the reset's half and the steps' half
            use, keep = jax.random.split(key)
            obs, inner = src.reset_env(use, params)
            return (keep, inner), obs

        def step(state, action):
            key, inner = state
            key, use = jax.random.split(key)
            obs, inner, reward, terminated, _ = src.step_env(use, inner, action, params)
            return (key, inner), obs, reward, terminated, src.is_truncated(inner, params), {}

    else:

        def reset(key):
            state = src.reset(key)
            return state, state.obs

        def step(state, action):
            state = src.step(state, action)
            return state, state.obs, state.reward, state.done > 0, jax.numpy.zeros((), bool), state.metrics

    # Batched as the wrapped env is: float32 physics compiled per env and per batch differ in the
    # last bits, which a chaotic body (halfcheetah) grows past any tolerance within steps.
    return jax.jit(reset), jax.jit(jax.vmap(step))


def hand_rollout(env, actions, limit, mode):
    """What ``make_vec(...).reset(seed=SEED)`` then ``step(actions[t])`` should return, from the raw
    env: env ``i`` keyed ``PRNGKey(SEED + i)``, each reset taking ``next_reset_key``'s key."""
    reset, step = raw_stepper(env)
    keys, states, obs0, ages, pending = [], [], [], [0] * NUM_ENVS, [False] * NUM_ENVS
    for i in range(NUM_ENVS):
        key, use = next_reset_key(jax.random.PRNGKey(SEED + i))
        state, obs = reset(use)
        keys.append(key), states.append(state), obs0.append(obs)
    out = []
    for t in range(len(actions)):
        rows = []
        batch = step(jax.tree.map(lambda *xs: jax.numpy.stack(xs), *states), jax.numpy.asarray(actions[t]))
        for i in range(NUM_ENVS):
            if pending[i]:  # next-step mode: the ended episode restarts now, the action ignored
                keys[i], use = next_reset_key(keys[i])
                states[i], obs = reset(use)
                ages[i], pending[i] = 0, False
                rows.append((obs, 0.0, False, False, None))
                continue
            states[i], obs, reward, terminated, truncated, _ = jax.tree.map(lambda x, i=i: x[i], batch)
            ages[i] += 1
            terminated, truncated = bool(terminated), bool(truncated) or ages[i] >= limit
            final = None
            if terminated or truncated:
                if mode is AutoresetMode.SAME_STEP:
                    final = obs
                    keys[i], use = next_reset_key(keys[i])
                    states[i], obs = reset(use)
                    ages[i] = 0
                else:
                    pending[i] = True
            rows.append((obs, float(reward), terminated, truncated, final))
        out.append(rows)
    return obs0, out


def stack(rows, k):
    return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *[r[k] for r in rows])


# gymnax's envs in both auto-reset modes; Brax's and Playground's each in one (next-step for Brax,
# same-step for Playground): the adapter's code for a mode is the collection's either way, and these
# compile for tens of seconds. Brax's HalfCheetah (contacts, no termination) runs with `-m slow`.
_ONE_MODE = {
    "brax/inverted_pendulum-v0": AutoresetMode.NEXT_STEP,
    "playground/CartpoleBalance-v0": AutoresetMode.SAME_STEP,
}
# Brax's and Playground's cases (about 50 s of compiles each on 2 cores) run with `-m slow` too: the
# adapter's code for a mode is gymnax's cases' in make test (each env next-step, CartPole same-step
# too), which steps Brax's env in the horizon case and Playground's through the adapters in the
# Dict-observation case below.
def _in_make_test(env_id, mode):
    return env_id.startswith("gymnax/") and (mode is AutoresetMode.NEXT_STEP or env_id == "gymnax/CartPole-v1")


LOCKSTEP = [
    pytest.param(env_id, mode, id=f"{env_id}-{mode.name.lower()}",
                 marks=[] if _in_make_test(env_id, mode) else [pytest.mark.slow])
    for env_id in CASES for mode in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
    if _ONE_MODE.get(env_id, mode) is mode and not (env_id == "brax/halfcheetah-v0" and mode is AutoresetMode.SAME_STEP)
]


@pytest.mark.parametrize("env_id,mode", LOCKSTEP)
def test_lockstep_with_the_raw_env(env_id, mode):
    _skip_unavailable(env_id)
    options, limit, steps = CASES[env_id]
    vec = gymnasium.make_vec(env_id, num_envs=NUM_ENVS, max_episode_steps=limit, autoreset_mode=mode, **options)
    vec.action_space.seed(SEED)
    actions = [vec.action_space.sample() for _ in range(steps)]
    obs0, expected = hand_rollout(vec.unwrapped.session.base, actions, limit, mode)
    obs, _ = vec.reset(seed=SEED)
    assert_same(obs, jax.tree.map(lambda *xs: np.stack(xs), *obs0), "reset obs")
    ends = {"terminated": 0, "truncated": 0}
    for t, action in enumerate(actions):
        obs, reward, terminated, truncated, infos = vec.step(action)
        rows = expected[t]
        assert_same(obs, stack(rows, 0), f"step {t} obs")
        assert_same(reward, np.array([r[1] for r in rows], np.float32), f"step {t} reward")
        assert_same(terminated, np.array([r[2] for r in rows]), f"step {t} terminated")
        assert_same(truncated, np.array([r[3] for r in rows]), f"step {t} truncated")
        for i, row in enumerate(rows):
            if row[4] is not None:
                assert_same(infos["final_obs"][i], row[4], f"step {t} final_obs[{i}]")
            elif mode is AutoresetMode.SAME_STEP:
                assert "final_obs" not in infos or infos["final_obs"][i] is None
        ends["terminated"] += int(terminated.sum())
        ends["truncated"] += int((truncated & ~terminated).sum())
    vec.close()
    never_terminates = env_id in ("brax/halfcheetah-v0", "playground/CartpoleBalance-v0", "gymnax/Acrobot-v1")
    assert ends["truncated"] > 0 and (never_terminates or ends["terminated"] > 0), ends


# One id per collection for the client contracts.
ONE_PER_COLLECTION = ["gymnax/CartPole-v1", "brax/inverted_pendulum-v0", "playground/CartpoleBalance-v0"]


# The checkers call the adapters, which are the same code for every collection: `make test` runs them
# on gymnax's env, and Brax's and Playground's (30 and 50 s of compiles on 2 cores) run with `-m slow`.
@pytest.mark.parametrize("env_id", [pytest.param(i, marks=[] if i.startswith("gymnax/") else [pytest.mark.slow])
                                    for i in ONE_PER_COLLECTION])
def test_gymnasium_and_sb3_checkers(env_id):
    _skip_unavailable(env_id)
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    from stable_baselines3.common.vec_env import VecCheckNan

    from gymjax.wrappers.sb3 import SB3VecEnv

    options = CASES[env_id][0]
    env = gymnasium.make(env_id, **options)
    check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env, warn=True)
    env.close()
    vec = VecCheckNan(SB3VecEnv(env_id, 2, max_episode_steps=5, **options), raise_exception=True)
    vec.reset()
    ended = np.zeros(2, bool)
    for _ in range(5):
        _, _, dones, infos = vec.step(np.stack([vec.action_space.sample() for _ in range(2)]))
        for info, done in zip(infos, dones):
            assert ("terminal_observation" in info) == ("episode" in info) == done
        ended |= dones
    assert ended.all()  # by the time limit of 5 at the latest


def test_spaces_metrics_and_limits_are_the_sources():
    need("brax.envs")
    brax_env = gymnasium.make("brax/inverted_pendulum-v0", backend="positional")
    assert brax_env.action_space == gymnasium.spaces.Box(-3.0, 3.0, (1,), np.float32)  # Brax's ctrl_range
    assert brax_env.unwrapped.session.base.max_episode_steps == 1000  # Brax's episode_length
    gymnax_env = gymnasium.make("gymnax/MountainCarContinuous-v0")
    assert gymnax_env.unwrapped.session.base.max_episode_steps == 999  # gymnax's max_steps_in_episode
    assert gymnax_env.action_space == gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
    assert gymnasium.spec("gymnax/CartPole-v1").max_episode_steps is None  # applied in JAX, known when built


@pytest.mark.slow  # a traced HalfCheetah step, 10 s on 2 cores; make test steps Brax's inverted pendulum
def test_brax_metrics_are_the_info_of_every_step():
    need("brax.envs")
    halfcheetah = gymnasium.make("brax/halfcheetah-v0", backend="positional")
    assert {"x_position", "reward_run", "reward_ctrl"} <= set(halfcheetah.unwrapped.session.info_keys)


@pytest.mark.parametrize("env_id", ONE_PER_COLLECTION)
def test_a_made_envs_spec_says_the_horizon_it_truncates_at(env_id):
    """The registry's spec has no horizon (make then adds no TimeLimit of its own); the made env's
    does, the one its JAX time limit ends episodes at: TimeAwareObservation reads it."""
    _skip_unavailable(env_id)
    options = CASES[env_id][0]
    horizon = envs.make(env_id, **options).max_episode_steps  # the source's own
    env = gymnasium.make(env_id, **options)
    assert env.spec.max_episode_steps == horizon and gymnasium.spec(env_id).max_episode_steps is None
    wrapper = env
    while isinstance(wrapper, gymnasium.Wrapper):
        assert not isinstance(wrapper, gymnasium.wrappers.TimeLimit)  # no second limit
        wrapper = wrapper.env
    timed = gymnasium.wrappers.TimeAwareObservation(env)  # raised: "must be wrapped by a TimeLimit wrapper"
    assert timed.max_timesteps == horizon
    vec = gymnasium.make_vec(env_id, num_envs=2, **options)
    assert vec.spec.max_episode_steps == horizon
    assert gymnasium.make_vec(env_id, num_envs=2, max_episode_steps=7, **options).spec.max_episode_steps == 7


def test_the_horizon_in_the_spec_is_where_episodes_end():
    need("brax.envs")
    # An option sets Brax's episode_length: the spec follows it, and the episode ends there, truncated.
    env = gymnasium.make("brax/inverted_pendulum-v0", backend="positional", episode_length=5)
    assert env.spec.max_episode_steps == 5
    env.reset(seed=0)
    ends = [env.step(np.zeros(1, np.float32))[2:4] for _ in range(5)]
    assert ends == [(False, False)] * 4 + [(False, True)]


def test_seeded_resets_repeat_and_unseeded_ones_continue_the_stream():
    need("gymnax")
    env = gymnasium.make("gymnax/CartPole-v1")
    first, _ = env.reset(seed=3)
    again, _ = env.reset(seed=3)
    later = [env.reset()[0] for _ in range(3)]
    np.testing.assert_array_equal(first, again)
    assert not any(np.array_equal(first, o) for o in later) and not np.array_equal(later[0], later[1])
    other = gymnasium.make("gymnax/CartPole-v1")
    other.reset(seed=3)
    np.testing.assert_array_equal(later[0], other.reset()[0])  # the stream seed 3 started


def test_rendering_where_the_source_renders():
    need("brax.envs")
    env = gymnasium.make("brax/inverted_pendulum-v0", backend="positional", render_mode="rgb_array",
                         width=64, height=48)
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (48, 64, 3) and frame.dtype == np.uint8 and frame.std() > 0
    need("gymnax")
    # A TypeError too, as a constructor's unexpected argument: SB3 asks for frames and, on one, not.
    with pytest.raises(TypeError, match="render_mode must be None or one of"):
        gymnasium.make("gymnax/CartPole-v1", render_mode="rgb_array")


# The adapters' side of a Dict observation is the same with or without physics: make test runs it on
# CartpoleBalance's spaces with a stand-in for its MJX step (a compile of seconds, not 30 s); the
# task's own step, with `-m slow`.
@pytest.mark.parametrize("physics", [pytest.param(True, marks=pytest.mark.slow), False])
def test_playground_dict_observations_through_the_adapters(physics):
    need("mujoco_playground")
    from mujoco_playground import State, dm_control_suite

    from gymjax.envs import from_playground
    from gymjax.wrappers.sb3 import SB3VecEnv

    class NamedObservations(dm_control_suite.cartpole.Balance):
        """CartpoleBalance observing a dict, as Playground's locomotion tasks do."""

        def _named(self, state):
            return state.replace(obs={"state": state.obs, "privileged_state": state.obs[:2]})

        def reset(self, rng):
            if not physics:
                return self._named(State(data=None, obs=jax.random.normal(rng, (5,)), reward=jnp.zeros(()),
                                         done=jnp.zeros(()), metrics={}, info={}))
            return self._named(super().reset(rng))

        def step(self, state, action):
            if not physics:
                return self._named(state.replace(obs=state.obs["state"] + jnp.sum(action), reward=jnp.ones(())))
            return self._named(super().step(state.replace(obs=state.obs["state"]), action))

        @property
        def observation_size(self):
            return {"state": (5,), "privileged_state": (2,)}

    config = dm_control_suite.get_default_config("CartpoleBalance")
    config.impl = "jax"
    env = from_playground(NamedObservations(swing_up=False, sparse=False, config=config))
    assert env.observation_space == gymnasium.spaces.Dict(
        {"state": gymnasium.spaces.Box(-np.inf, np.inf, (5,), np.float32),
         "privileged_state": gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)})
    from gymjax.wrappers.gymnasium import GymnasiumVectorEnv

    gym_vec = GymnasiumVectorEnv(env, 2, max_episode_steps=3, autoreset_mode="same_step")
    obs, _ = gym_vec.reset(seed=0)
    assert obs["state"].shape == (2, 5) and obs["privileged_state"].shape == (2, 2)
    for _ in range(3):
        obs, _, _, truncated, infos = gym_vec.step(gym_vec.action_space.sample())
    assert truncated.all() and infos["final_obs"][0]["privileged_state"].shape == (2,)
    sb3 = SB3VecEnv(env, 2)
    assert sb3.reset()["state"].shape == (2, 5)


def test_constructors_refuse_bad_input_by_name():
    need("brax.envs")
    need("gymnax")
    from brax.envs.wrappers.training import EpisodeWrapper

    with pytest.raises(ValueError, match="Brax has no env 'halfcheeta'.*halfcheetah"):
        envs.from_brax("halfcheeta")
    inner = envs.from_brax("inverted_pendulum", backend="positional").source
    with pytest.raises(TypeError, match="unwrapped"):
        envs.from_brax(EpisodeWrapper(inner, 10, 1))
    with pytest.raises(ValueError, match="gymnax has no env 'CartPole-v0'.*CartPole-v1"):
        envs.from_gymnax("CartPole-v0")
    with pytest.raises(TypeError, match="from_gymnax takes"):
        envs.from_gymnax(42)
    need("mujoco_playground")
    with pytest.raises(ValueError, match="impl='jax'"):  # MuJoCo Warp's data cannot be vmapped per env
        envs.from_playground("CartpoleBalance", config_overrides={"impl": "warp"})


def test_registering_imports_no_collection_and_a_missing_one_names_its_extra(tmp_path):
    code = (
        "import sys, gymnasium, gymjax\n"
        "assert 'brax/halfcheetah-v0' in gymnasium.registry and 'gymnax/Breakout-MinAtar-v0' in gymnasium.registry\n"
        "assert 'playground/CartpoleBalance-v0' in gymnasium.registry\n"
        "print(sorted(m for m in ('brax', 'mujoco_playground', 'gymnax') if m in sys.modules))\n"
        "sys.modules['gymnax'] = None  # as if not installed\n"
        "gymnasium.make('gymnax/CartPole-v1')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert run.stdout.strip() == "[]", run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert "gymnax is not installed" in last and "gymjax[gymnax]" in last, run.stderr


def test_each_list_of_names_is_the_installed_collections():
    brax_envs = need("brax.envs")
    assert set(external.BRAX) == set(brax_envs._envs) - {"fast"}
    gymnax = need("gymnax")
    assert list(external.GYMNAX) == list(gymnax.registered_envs)
    playground = need("mujoco_playground")
    assert list(external.PLAYGROUND) == list(playground.registry.ALL_ENVS)
    assert envs.registered_ids(collection="brax") == sorted(f"brax/{n}-v0" for n in external.BRAX)
    assert "gymnax/CartPole-v1" in envs.registered_ids(collection="gymnax")
    assert not set(envs.registered_ids()) & set(external.IDS)  # gymjax's own ids stay apart


@pytest.mark.slow  # 43 s of Brax's compiles; make test checks the same leak on a gymjax env (test_ppo.py)
def test_randomization_without_an_eval_env_leaves_the_brax_env_concrete():
    """Brax's seed bug: its randomization wrapper writes the vmapped ``sys`` onto the env, so an
    eval env sharing it (none given) steps with a leaked tracer. Here the env is only read."""
    need("brax.envs")
    from gymjax.trainers import ppo

    env = envs.from_brax("inverted_pendulum", backend="positional")
    nominal = env.default_params

    def heavier_pole(sys, key):
        scale = jax.random.uniform(key, minval=0.5, maxval=1.5)
        return sys.replace(body_mass=sys.body_mass * scale)

    config = ppo.PPOConfig(num_timesteps=2048, num_envs=8, unroll_length=32, num_minibatches=2, update_epochs=1,
                           num_evals=2, num_eval_envs=4, episode_length=50)
    _, _, metrics = ppo.train(config, env, randomization_fn=heavier_pole, progress_bar=False)
    assert np.isfinite(metrics["eval/episode_return"])
    assert env.default_params is nominal  # the env object was never written
    for leaf in jax.tree.leaves(env.source.sys):
        assert not isinstance(leaf, jax.core.Tracer)
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))  # and it still runs outside any trace
    assert np.isfinite(np.asarray(state.obs)).all()


@pytest.mark.slow  # two CartPole trainings to 450 (30 s); make test trains a gymnax env in the run-directory case
def test_ppo_learns_gymnax_cartpole_as_it_learns_jax_cartpole():
    need("gymnax")
    from gymjax.trainers import ppo

    config = ppo.PPOConfig.preset("cartpole", num_timesteps=60_000, num_evals=2)
    returns = {}
    for env_id in ("gymnax/CartPole-v1", "JaxCartPole-v0"):
        _, _, metrics = ppo.train(config, env_id, progress_bar=False)
        returns[env_id] = float(metrics["eval/episode_return"])
    assert returns["gymnax/CartPole-v1"] >= 450 and returns["JaxCartPole-v0"] >= 450, returns


@pytest.mark.slow  # 27 s; a run directory's train, eval and resume run in make test on JAX envs (test_cli.py)
def test_a_run_directory_trains_evaluates_and_resumes(tmp_path):
    """Checkpoints and the run directory's record rebuild the env from its id and options."""
    need("gymnax")
    from gymjax.cli import main

    run_dir = tmp_path / "run"
    flags = ["--env", "gymnax/Acrobot-v1", "--timesteps", "512", "--num-envs", "8", "--unroll-length", "16",
             "--num-minibatches", "2", "--update-epochs", "2", "--num-evals", "2", "--num-eval-envs", "4",
             "--policy-hidden-sizes", "16,16", "--quiet"]
    assert main(["train", *flags, "--run-dir", str(run_dir)]) == 0
    assert main(["eval", "--run-dir", str(run_dir), "--episodes", "2"]) == 0
    assert main(["train", "--run-dir", str(run_dir), "--resume", "--timesteps", "1024", "--quiet"]) == 0


def test_torch_adapter_steps_a_collections_env():
    need("gymnax")
    torch = need("torch")
    from gymjax.wrappers.torch import TorchVectorEnv

    env = TorchVectorEnv("gymnax/CartPole-v1", 4, max_episode_steps=5)
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.shape == (4, 4)
    for _ in range(5):
        obs, _, terminated, truncated, _ = env.step(torch.zeros(4, dtype=torch.int64))
    assert bool((terminated | truncated).all())


@pytest.mark.slow  # MJX's Cartpole step compiled three ways: 30 s on 2 cores
def test_playgrounds_action_repeat_is_applied_and_counts_in_the_time_limit():
    """A Playground config's ``action_repeat`` (PandaRobotiqPushCube's 4): one agent step is that
    many source steps, rewards summed, and its episode length (in source steps) a limit in agent steps."""
    need("mujoco_playground")
    env = envs.from_playground("CartpoleBalance", config_overrides={"action_repeat": 2})
    assert env.max_episode_steps == 500 and env.dt == pytest.approx(2 * env.source.dt)
    key, action = jax.random.PRNGKey(0), np.full((1,), 0.5, np.float32)
    # Jitted: run op by op, MJX's step compiles each of its hundreds of operations (twice as slow).
    step, reset, source_step, source_reset = map(jax.jit, (env.step, env.reset, env.source.step, env.source.reset))
    state = step(reset(key), action)
    inner = source_step(source_step(source_reset(key), action), action)
    np.testing.assert_allclose(state.obs, inner.obs, rtol=1e-6, atol=1e-6)
    once = source_step(source_reset(key), action)
    assert float(state.reward) == pytest.approx(float(once.reward) + float(inner.reward), rel=1e-6)
