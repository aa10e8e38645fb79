"""What each client does, as its users write it: one function per scenario, run alone in a fresh
process by ``python scenarios.py NAME KWARGS_JSON DONE_FILE`` (the cases in ``cases.py`` name them).

A scenario fails by raising; it may return a note for the table (episodes checked, CleanRL's SPS).
Imports are inside the functions: the process must not import gymjax before the scenario does
(``module_prefixed_id`` checks that gymnasium imports it itself).
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

STEPS = 300  # random steps per wrapper case: CartPole episodes end every ~20, Pendulum's at 200


def _make(env_id: str, **kwargs):
    import gymnasium

    import gymjax  # noqa: F401  (registers the Jax* ids)

    return gymnasium.make(env_id, **kwargs)


def _make_vec(env_id: str, num_envs: int = 4, **kwargs):
    import gymnasium

    import gymjax  # noqa: F401

    return gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)


def _random_steps(env, steps: int = STEPS) -> int:
    """Random actions through episode ends on a single env; returns the episodes ended."""
    env.reset(seed=0)
    env.action_space.seed(0)
    ended = 0
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            ended += 1
            env.reset()
    return ended


def _random_vector_steps(envs, steps: int = STEPS, to_action=lambda a: a) -> tuple[int, list]:
    """Random actions on a vector env (it resets itself); returns the episodes ended and the infos."""
    import numpy as np

    envs.reset(seed=0)
    envs.action_space.seed(0)
    ended, infos = 0, []
    for _ in range(steps):
        _, _, terminated, truncated, info = envs.step(to_action(envs.action_space.sample()))
        ended += int(np.sum(np.logical_or(np.asarray(terminated), np.asarray(truncated))))
        infos.append(info)
    return ended, infos


def _cli(*args: str) -> None:
    """A client's command line (``python -m ...``), its output into this case's: on a failure the
    last traceback there is the client's own, which the table reports."""
    done = subprocess.run([sys.executable, *args], check=False)
    if done.returncode:
        raise SystemExit(f"`{' '.join(args[:2])}` exited {done.returncode}")


# ---------------------------------------------------------------- Gymnasium


def gymnasium_check_env(env_id: str):
    from gymnasium.utils.env_checker import check_env

    check_env(_make(env_id).unwrapped)


def gymnasium_wrapper(env_id: str, wrapper: str, args: tuple = ()):
    import gymnasium

    env = getattr(gymnasium.wrappers, wrapper)(_make(env_id), *args)
    ended = 0
    env.reset(seed=0)
    for _ in range(STEPS):
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            if wrapper == "RecordEpisodeStatistics":
                assert "episode" in info, f"no info['episode'] at an episode end: {sorted(info)}"
            ended += 1
            env.reset()
    assert ended > 0, f"no episode ended in {STEPS} steps"


def gymnasium_record_video(env_id: str):
    import gymnasium

    folder = tempfile.mkdtemp()
    env = gymnasium.wrappers.RecordVideo(
        _make(env_id, render_mode="rgb_array"), folder, episode_trigger=lambda episode: episode == 0
    )
    _random_steps(env, 100)
    env.close()
    assert list(pathlib.Path(folder).glob("*.mp4")), f"no .mp4 in {folder}"


def gymnasium_vector_wrapper(env_id: str, wrapper: str, args: tuple = (), autoreset_mode: str | None = None):
    """``wrapper`` on gymjax's vector env (or, for a Gymnasium id, on SyncVectorEnv), random steps."""
    import gymnasium
    from gymnasium.wrappers import vector

    mode = {"autoreset_mode": gymnasium.vector.AutoresetMode[autoreset_mode]} if autoreset_mode else {}
    if env_id.startswith("Jax") or "/" in env_id:  # gymjax's, or another collection's through gymjax
        envs = _make_vec(env_id, **mode)
    else:
        envs = gymnasium.make_vec(env_id, 4, vectorization_mode="sync", vector_kwargs=mode)
    envs = getattr(vector, wrapper)(envs, *args)
    to_action = lambda a: a
    if wrapper == "NumpyToTorch":
        import torch

        to_action = torch.as_tensor
    ended, infos = _random_vector_steps(envs, to_action=to_action)
    assert ended > 0, f"no episode ended in {STEPS} steps of 4 envs"
    if wrapper == "RecordEpisodeStatistics":
        assert any("episode" in info for info in infos), "no info['episode'] in any step"
    if wrapper == "DictInfoToList":
        assert all(isinstance(info, list) and len(info) == 4 for info in infos), "infos are not a list of 4"
    envs.close()


def gymnasium_make_vec(env_id: str, mode: str, vector_kwargs: dict | None = None, jax_ran_first: bool = False):
    import gymnasium

    import gymjax  # noqa: F401

    if jax_ran_first:  # the user stepped a gymjax env in this process before making the vector env
        _random_steps(gymnasium.make(env_id), 5)
    envs = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode=mode, vector_kwargs=vector_kwargs)
    ended, _ = _random_vector_steps(envs, 100)
    envs.close()
    assert ended > 0, "no episode ended in 100 steps"


def gymnasium_reset_writable(env_id: str):
    """What users and wrappers do to a reset's observation: write into it (it was a read-only view)."""
    from gymnasium.wrappers import vector

    obs, _ = _make(env_id).reset(seed=0)
    obs *= 1.0
    envs = vector.FlattenObservation(_make_vec(env_id))  # writes the reset obs into its own buffer
    obs, _ = envs.reset(seed=0)
    obs *= 1.0


def gymnasium_clone(env_id: str, how: str, **kwargs):
    """A clone of a stepped env continues exactly as the original does (its state travels with it)."""
    import copy
    import pickle

    import cloudpickle
    import numpy as np

    clone_fn = {
        "pickle": lambda env: pickle.loads(pickle.dumps(env)),
        "copy.deepcopy": copy.deepcopy,
        "cloudpickle": lambda env: cloudpickle.loads(cloudpickle.dumps(env)),
    }[how]
    env = _make(env_id, **kwargs)
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(6)]
    env.step(actions[0])
    clone = clone_fn(env)
    for action in actions[1:]:
        ours, theirs = env.step(action)[0], clone.step(action)[0]
        assert np.allclose(ours, theirs), "the clone's observations differ from the original's"


# What Gymnasium MuJoCo users read on env.unwrapped, compared with the reference env's.
MUJOCO_ATTRIBUTES = ("model", "data", "dt", "frame_skip", "init_qpos", "init_qvel", "state_vector()")


def gymnasium_mujoco_attributes(env_id: str, reference_id: str, **kwargs):
    import gymnasium
    import mujoco
    import numpy as np

    ours, ref = _make(env_id, **kwargs).unwrapped, gymnasium.make(reference_id).unwrapped
    ours.reset(seed=0)
    ref.reset(seed=0)
    problems = []
    for name in MUJOCO_ATTRIBUTES:
        try:
            value = ours.state_vector() if name == "state_vector()" else getattr(ours, name)
        except Exception as exc:  # noqa: BLE001 - each missing attribute is reported, not the first alone
            problems.append(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}")
            continue
        expected = ref.state_vector() if name == "state_vector()" else getattr(ref, name)
        if name == "model" and not isinstance(value, mujoco.MjModel):
            problems.append(f"model is {type(value).__name__}, not mujoco.MjModel")
        elif name == "data" and not isinstance(value, mujoco.MjData):
            problems.append(f"data is {type(value).__name__}, not mujoco.MjData")
        elif name in ("dt", "frame_skip") and value != expected:
            problems.append(f"{name} = {value!r}, {reference_id}'s is {expected!r}")
        elif name not in ("model", "data", "dt", "frame_skip") and np.shape(value) != np.shape(expected):
            problems.append(f"{name} has shape {np.shape(value)}, {reference_id}'s {np.shape(expected)}")
    assert not problems, "; ".join(problems)


def gymnasium_reset_options(env_id: str, **kwargs):
    env = _make(env_id, **kwargs)
    env.reset(seed=0, options={})
    env.step(env.action_space.sample())


def gymnasium_render_option(env_id: str, contact_points: bool = False, **options):
    """An ``rgb_array`` frame with a render option; ``contact_points`` passes MuJoCo's own
    ``visual_options={mjVIS_CONTACTPOINT: True}`` (an enum key, which the case table cannot hold)."""
    import numpy as np

    if contact_points:
        import mujoco

        options["visual_options"] = {mujoco.mjtVisFlag.mjVIS_CONTACTPOINT: True}
    env = _make(env_id, render_mode="rgb_array", width=64, height=48, **options)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.shape == (48, 64, 3), f"frame: {getattr(frame, 'shape', frame)}"
    env.close()


def gymnasium_render_human(env_id: str, **kwargs):
    env = _make(env_id, render_mode="human", **kwargs)
    _random_steps(env, 20)
    env.close()


# ---------------------------------------------------------------- what other clients do, in Gymnasium code


def minari_style_seeds(env_id: str):
    """Minari's DataCollector seeds each reset with a 60-bit random int (``secrets.randbits``), as any
    Gymnasium env takes it; seeds above 2**32 - 1 were refused."""
    import secrets

    import numpy as np

    env = _make(env_id)
    seed = secrets.randbits(60) | 2**59
    first, _ = env.reset(seed=seed)
    again, _ = env.reset(seed=seed)
    assert np.array_equal(first, again), "the same 60-bit seed gave another episode"
    obs, _ = _make_vec(env_id).reset(seed=seed)  # env i: seed + i
    assert np.array_equal(obs[0], first), "make_vec's env 0 differs from make(id) reset with the same seed"


def rllib_style_next_step_loop(env_id: str, num_envs: int = 4, steps: int = 200):
    """RLlib's env runners (``gym_env_vectorize_mode="vector_entry_point"``) step ``make_vec(id, n)``
    as Gymnasium's default NEXT_STEP vector env, without checking: after an env's episode ends, its
    next obs starts the next episode and that step's reward is dropped. This loop does what they do,
    in plain Gymnasium code, and checks every obs it would record against ``make(id)`` envs stepped
    alone: on a SAME_STEP env it records the reset obs as the episode's last, silently."""
    import numpy as np

    envs = _make_vec(env_id, num_envs)
    singles = [_make(env_id) for _ in range(num_envs)]
    obs, _ = envs.reset(seed=0)
    expected = np.stack([env.reset(seed=i)[0] for i, env in enumerate(singles)])
    assert np.allclose(obs, expected), "reset observations differ"
    envs.action_space.seed(0)
    restarted, episodes = np.zeros(num_envs, bool), 0
    for t in range(steps):
        actions = envs.action_space.sample()
        obs, reward, terminated, truncated, _ = envs.step(actions)
        for i, env in enumerate(singles):
            if restarted[i]:  # the runner starts env i's next episode with this obs
                want, want_reward, want_flags = env.reset()[0], 0.0, (False, False)
                episodes += 1
            else:
                want, want_reward, term, trunc, _ = env.step(actions[i])
                want_flags = (term, trunc)
            got_flags = (bool(terminated[i]), bool(truncated[i]))
            assert np.allclose(obs[i], want) and reward[i] == want_reward and got_flags == want_flags, (
                f"env {i}, step {t}: the transition a NEXT_STEP client records is not the env's "
                f"(autoreset_mode={envs.metadata.get('autoreset_mode')})"
            )
        restarted = terminated | truncated
    assert episodes > 0, f"no episode ended in {steps} steps"
    return f"{episodes} episode ends checked"


def module_prefixed_id(env_id: str):
    """``gymnasium.make("gymjax:<id>")`` imports gymjax itself, in a process that never did (RLlib's
    env runners get the id string alone)."""
    import gymnasium

    assert "gymjax" not in sys.modules, "gymjax was imported before make"
    env = gymnasium.make(f"gymjax:{env_id}")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    envs = gymnasium.make_vec(f"gymjax:{env_id}", 2, vectorization_mode="vector_entry_point")
    envs.reset(seed=0)


def many_envs_compile_once(env_id: str, count: int = 110, limit_s: float = 20.0):
    """Tianshou's DQN example makes 10 train + 100 test envs with ``gymnasium.make``: each compiled its
    own reset and step (~0.35 s each, ~40 s in all); envs of one id and options now share them."""
    start = time.perf_counter()
    envs = [_make(env_id) for _ in range(count)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
        env.step(env.action_space.sample())
    seconds = time.perf_counter() - start
    assert seconds < limit_s, f"{count} x make + reset + step took {seconds:.1f} s"
    return f"{count} x make(id) + reset + step: {seconds:.1f} s"


# ---------------------------------------------------------------- Stable-Baselines3 and SBX


def sb3_check_env(env_id: str):
    from stable_baselines3.common.env_checker import check_env

    check_env(_make(env_id))


def sb3_make_vec_env(env_id: str):
    import numpy as np
    from stable_baselines3.common.env_util import make_vec_env

    import gymjax  # noqa: F401

    envs = make_vec_env(env_id, n_envs=2)
    envs.reset()
    dones = 0
    for _ in range(STEPS):
        _, _, done, _ = envs.step(np.array([envs.action_space.sample() for _ in range(2)]))
        dones += int(done.sum())
    assert dones > 0, f"no episode ended in {STEPS} steps"


def sb3_learn(env_id: str, algo: str, steps: int = 2000, **kwargs):
    import stable_baselines3

    import gymjax  # noqa: F401  (SB3 makes the env by id)

    getattr(stable_baselines3, algo)("MlpPolicy", env_id, seed=0, **kwargs).learn(steps)


def sb3_vec_wrapper(env_id: str, wrapper: str):
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecFrameStack, VecNormalize

    import gymjax  # noqa: F401

    envs = make_vec_env(env_id, n_envs=2)
    envs = VecNormalize(envs) if wrapper == "VecNormalize" else VecFrameStack(envs, n_stack=4)
    PPO("MlpPolicy", envs, n_steps=128, batch_size=128, n_epochs=2, seed=0).learn(512)


def sb3_video_recorder(env_id: str):
    import numpy as np
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecVideoRecorder

    import gymjax  # noqa: F401

    folder = tempfile.mkdtemp()
    envs = make_vec_env(env_id, n_envs=2, env_kwargs={"render_mode": "rgb_array"})
    envs = VecVideoRecorder(envs, folder, record_video_trigger=lambda step: step == 0, video_length=40)
    envs.reset()
    for _ in range(50):
        envs.step(np.array([envs.action_space.sample() for _ in range(2)]))
    envs.close()
    assert list(pathlib.Path(folder).glob("*.mp4")), f"no .mp4 in {folder}"


def sb3_save_load(env_id: str):
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    import gymjax  # noqa: F401

    envs = make_vec_env(env_id, n_envs=2)
    model = PPO("MlpPolicy", envs, n_steps=128, batch_size=128, n_epochs=2, seed=0).learn(256)
    path = pathlib.Path(tempfile.mkdtemp()) / "model.zip"
    model.save(path)
    loaded = PPO.load(path, env=envs)
    obs = envs.reset()
    ours, theirs = model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0]
    assert (ours == theirs).all(), "the loaded model acts differently"
    evaluate_policy(loaded, envs, n_eval_episodes=2)


def sb3_gymjax_vec_env(env_id: str):
    from stable_baselines3 import PPO

    from gymjax.wrappers.sb3 import SB3VecEnv

    PPO("MlpPolicy", SB3VecEnv(env_id, 8), n_steps=64, batch_size=256, n_epochs=2, seed=0).learn(1024)


def sbx_learn(env_id: str, vec: bool):
    """SBX (SB3's API, JAX networks): PPO learns a few updates on ``make(id)`` or ``make_vec_env(id)``."""
    from sbx import PPO
    from stable_baselines3.common.env_util import make_vec_env

    import gymjax  # noqa: F401

    env = make_vec_env(env_id, n_envs=4) if vec else _make(env_id)
    PPO("MlpPolicy", env, n_steps=128, batch_size=64, seed=0).learn(512)


# ---------------------------------------------------------------- rl-baselines3-zoo

ZOO_CONF = """\
JaxCartPole-v0:
  n_envs: 2
  n_timesteps: !!float 2e3
  policy: 'MlpPolicy'
  n_steps: 128
  batch_size: 64
"""


def zoo_train(env_id: str, extra: tuple = (), enjoy: bool = False, conf: bool = False):
    folder = tempfile.mkdtemp()
    args = ["-m", "rl_zoo3.train", "--algo", "ppo", "--env", env_id, "-n", "2000", "--gym-packages", "gymjax",
            "-f", folder, "--seed", "0", *extra]
    if conf:
        path = pathlib.Path(folder) / "my.yml"
        path.write_text(ZOO_CONF)
        args += ["-conf", str(path)]
    _cli(*args)
    if enjoy:
        _cli("-m", "rl_zoo3.enjoy", "--algo", "ppo", "--env", env_id, "-f", folder, "--gym-packages", "gymjax",
             "-n", "300", "--no-render")


# ---------------------------------------------------------------- torchrl, skrl, Tianshou, Minari


def torchrl_check_env_specs(env_id: str, **kwargs):
    from torchrl.envs import GymEnv
    from torchrl.envs.utils import check_env_specs

    import gymjax  # noqa: F401  (GymEnv makes the env by id)

    check_env_specs(GymEnv(env_id, **kwargs))


def torchrl_gym_wrapper(env_id: str, **kwargs):
    from torchrl.envs import GymWrapper
    from torchrl.envs.utils import check_env_specs

    env = GymWrapper(_make_vec(env_id, **kwargs))
    check_env_specs(env)
    rollout = env.rollout(100, break_when_any_done=False)
    assert rollout.batch_size[-1] == 100, f"rollout batch size {rollout.batch_size}"


def skrl_wrap_env(env_id: str, num_envs: int | None):
    """skrl's ``wrap_env`` (its Gymnasium wrapper, torch tensors) on ``make(id)`` or ``make_vec(id, n)``."""
    import numpy as np
    import torch
    from skrl.envs.wrappers.torch import wrap_env

    env = wrap_env(_make(env_id) if num_envs is None else _make_vec(env_id, num_envs))
    obs, _ = env.reset()
    n = env.num_envs
    for _ in range(STEPS):
        actions = torch.as_tensor(np.stack([env.action_space.sample() for _ in range(n)])).reshape(n, -1)
        obs, reward, *_ = env.step(actions)
    assert tuple(obs.shape) == (n, *env.observation_space.shape), f"obs shape {tuple(obs.shape)}"
    assert tuple(reward.shape) == (n, 1), f"reward shape {tuple(reward.shape)}"


def tianshou_dummy_vector_env(env_id: str, num_envs: int = 10):
    """Tianshou's ``DummyVectorEnv`` of ``make(id)`` envs, each reset when its episode ends."""
    import numpy as np
    from tianshou.env import DummyVectorEnv

    envs = DummyVectorEnv([lambda: _make(env_id) for _ in range(num_envs)])
    envs.reset(seed=0)
    ended = 0
    for _ in range(STEPS):
        _, _, terminated, truncated, _ = envs.step(np.array([envs.action_space[0].sample() for _ in range(num_envs)]))
        done = np.flatnonzero(np.logical_or(terminated, truncated))
        if done.size:
            ended += done.size
            envs.reset(done)
    assert ended > 0, f"no episode ended in {STEPS} steps"
    return f"{ended} episodes"


def minari_collect(env_id: str, episodes: int = 3):
    """Minari's ``DataCollector`` records random episodes (it seeds resets with 60-bit ints) into a dataset."""
    from minari import DataCollector

    os.environ["MINARI_DATASETS_PATH"] = tempfile.mkdtemp()  # not ~/.minari/datasets

    env = DataCollector(_make(env_id))
    for _ in range(episodes):
        env.reset()
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    dataset = env.create_dataset(dataset_id="gymjax/random-v0", algorithm_name="random")
    assert dataset.total_episodes == episodes, f"{dataset.total_episodes} episodes recorded"
    return f"{dataset.total_steps} steps recorded"


# ---------------------------------------------------------------- CleanRL


def cleanrl_script(env_id: str, script: str, args: tuple = ()):
    """CleanRL's script from ``$CLEANRL_DIR``, unmodified, after ``import gymjax`` (CleanRL makes its envs
    with ``gym.make(env_id)``); returns CleanRL's last SPS line."""
    import contextlib
    import io
    import runpy

    import gymjax  # noqa: F401

    path = pathlib.Path(os.environ["CLEANRL_DIR"]) / script
    sys.argv = [str(path), "--env-id", env_id, *args]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(path), run_name="__main__")
    sps = [line.split()[-1] for line in out.getvalue().splitlines() if line.startswith("SPS:")]
    assert sps, "the script printed no SPS line (did it train at all?)"
    return f"CleanRL's own SPS: {sps[-1]}"


# ---------------------------------------------------------------- PettingZoo


def pettingzoo_api_test(env_id: str, **kwargs):
    from pettingzoo.test import parallel_api_test

    from gymjax.wrappers.pettingzoo import PettingZooEnv

    parallel_api_test(PettingZooEnv(env_id, **kwargs), num_cycles=50)


def pettingzoo_seed_test(env_id: str, **kwargs):
    from pettingzoo.test import parallel_seed_test

    from gymjax.wrappers.pettingzoo import PettingZooEnv

    parallel_seed_test(lambda: PettingZooEnv(env_id, **kwargs))


def pettingzoo_render_test(env_id: str, **kwargs):
    from pettingzoo.test import render_test
    from pettingzoo.utils.conversions import parallel_to_aec

    from gymjax.wrappers.pettingzoo import PettingZooEnv

    # render_test drives the AEC API, so the parallel env goes through PettingZoo's own converter.
    render_test(lambda render_mode=None: parallel_to_aec(PettingZooEnv(env_id, render_mode=render_mode, **kwargs)))


if __name__ == "__main__":
    name, kwargs, done_file = sys.argv[1:]
    note = globals()[name](**json.loads(kwargs))  # env_id= and the case's kwargs
    # Written last: a case whose file exists but whose process did not exit hangs on its way out.
    pathlib.Path(done_file).write_text(note or "")
