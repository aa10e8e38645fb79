"""Third-party clients on gymjax envs, unmodified, as a new user would run them: the compatibility table.

Every case is a small function run alone in a fresh process (``--run-case``) with a timeout:
a hang is reported as ``hangs`` and its process group killed, a crash as ``fail`` with the
exception's first line and where it was raised. A case whose client is not installed is
``skipped``. Cases marked "(reference)" run the same client on Gymnasium's own env: a client
that fails there too is behind its dependencies, not held back by gymjax.

Writes benchmarks/results/clients.{json,md}; ``tests/test_clients.py`` runs the cheap cases
(Gymnasium, SB3, PettingZoo: the ``dev`` extra) in CI.

    python -m benchmarks.clients                 # every case, a few minutes on 2 cores
    python -m benchmarks.clients --only torchrl  # the cases whose name contains "torchrl"
    python -m benchmarks.clients --list

CleanRL is a folder of scripts, not an importable package. Two sources are tried: the scripts
of PyPI's last release (``cleanrl==1.2.0``, downloaded once with ``pip download`` into
``~/.cache/gymjax/``) and, when ``CLEANRL_DIR`` names a checkout's ``cleanrl/`` folder, that
checkout's (GitHub master). Both are run through a runner that imports gymjax and then runs the
script with ``runpy``, argv passed, since CleanRL makes its envs with ``gym.make(env_id)``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import importlib.util
import io
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
ROOT = pathlib.Path(__file__).resolve().parent.parent
CLEANRL_RELEASE = "1.2.0"  # PyPI's last cleanrl (May 2023)
CLEANRL_CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "gymjax"
# Headless defaults for the case processes: EGL for MuJoCo's renderer, no display for pygame.
CASE_ENV = {"MUJOCO_GL": "egl", "SDL_VIDEODRIVER": "dummy", "PYTHONWARNINGS": "ignore"}
STEPS = 300  # random steps per wrapper case: CartPole episodes end every ~20, Pendulum's at 200


@dataclasses.dataclass(frozen=True)
class Case:
    """One client call on one env. ``run()`` returns a note (str), a measurement (dict) or None."""

    client: str
    what: str  # what was run, as the user would write it
    env_id: str
    run: Callable[[], Any]
    needs: tuple[str, ...] = ()  # modules that must be importable, else the case is skipped
    cleanrl: str | None = None  # where CleanRL's scripts come from: "pypi" or "CLEANRL_DIR"
    timeout_s: float = 120
    cheap: bool = False  # run in CI by tests/test_clients.py (~3-5 s each)
    # A documented refusal: the case passes as "refused" when it fails with an error (its own or a
    # worker's) containing this text, and still fails on any other error or none.
    refused: str | None = None

    @property
    def name(self) -> str:
        return f"{self.client}: {self.what} [{self.env_id}]"


class ClientProcessError(RuntimeError):
    """A client's own command line (rl_zoo3.train, ...) failed; carries where its error was raised."""

    def __init__(self, message: str, origin: str | None):
        super().__init__(message)
        self.origin = origin


# ---------------------------------------------------------------- helpers run inside the case process


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


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _cli(args: list[str], timeout_s: float = 300) -> str:
    """Runs a client's command line (``python -m ...``); raises with the client's own error line."""
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if done.returncode:
        line, origin = _traceback_summary(done.stderr)
        raise ClientProcessError(f"`{' '.join(args[:2])}` exited {done.returncode}: {line}", origin)
    return done.stdout


def _traceback_summary(stderr: str) -> tuple[str, str | None]:
    """The exception line of the last traceback in ``stderr`` and the frame that raised it."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    frames = [i for i, line in enumerate(lines) if line.lstrip().startswith('File "')]
    origin = None
    if frames:
        match = re.match(r'\s*File "(.+)", line (\d+), in (.+)', lines[frames[-1]])
        origin = f"{_short_path(match[1])}:{match[2]} in {match[3]}" if match else None
        after = [line for line in lines[frames[-1] + 1 :] if not line.startswith(" ")]
        if after:
            return after[0].strip()[:300], origin
    error_like = [line for line in lines if re.match(r"^[\w.]*(Error|Exception)\b", line.strip())]
    return ((error_like or lines or ["no error output"])[-1].strip())[:300], origin


def _short_path(path: str) -> str:
    """``path`` relative to this checkout, site-packages or the standard library."""
    if path.startswith(str(ROOT) + os.sep):
        return path[len(str(ROOT)) + 1 :]
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1]
    path = re.sub(r"^.*/lib/(python3\.\d+)/", r"\1/", path)  # the standard library
    return path.replace(str(pathlib.Path.home()), "~")


def _is_gymjax(path: str) -> bool:
    return path.startswith(str(ROOT / "gymjax") + os.sep) or "site-packages/gymjax/" in path


# ---------------------------------------------------------------- Gymnasium


def gymnasium_check_env(env_id: str):
    from gymnasium.utils.env_checker import check_env

    check_env(_make(env_id).unwrapped)


def gymnasium_wrapper(env_id: str, wrapper: str, *args):
    import gymnasium

    env = getattr(gymnasium.wrappers, wrapper)(_make(env_id), *args)
    ended = 0
    env.reset(seed=0)
    for _ in range(STEPS):
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            if wrapper == "RecordEpisodeStatistics":
                _require("episode" in info, f"no info['episode'] at an episode end: {sorted(info)}")
            ended += 1
            env.reset()
    _require(ended > 0, f"no episode ended in {STEPS} steps")


def gymnasium_record_video(env_id: str):
    import gymnasium

    folder = tempfile.mkdtemp()
    env = gymnasium.wrappers.RecordVideo(
        _make(env_id, render_mode="rgb_array"), folder, episode_trigger=lambda episode: episode == 0
    )
    _random_steps(env, 100)
    env.close()
    videos = list(pathlib.Path(folder).glob("*.mp4"))
    _require(bool(videos), f"no .mp4 in {folder}")


def gymnasium_vector_wrapper(env_id: str, wrapper: str, *args, autoreset_mode: str | None = None):
    """``wrapper`` on gymjax's vector env (or, for a Gymnasium id, on SyncVectorEnv), random steps."""
    import gymnasium
    from gymnasium.wrappers import vector

    if env_id.startswith("Jax"):
        kwargs = {"autoreset_mode": gymnasium.vector.AutoresetMode[autoreset_mode]} if autoreset_mode else {}
        envs = _make_vec(env_id, **kwargs)
    else:
        envs = gymnasium.make_vec(
            env_id,
            4,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": gymnasium.vector.AutoresetMode[autoreset_mode or "NEXT_STEP"]},
        )
    envs = getattr(vector, wrapper)(envs, *args)
    to_action = lambda a: a
    if wrapper == "NumpyToTorch":
        import torch

        to_action = torch.as_tensor
    ended, infos = _random_vector_steps(envs, to_action=to_action)
    _require(ended > 0, f"no episode ended in {STEPS} steps of 4 envs")
    if wrapper == "RecordEpisodeStatistics":
        _require(any("episode" in info for info in infos), "no info['episode'] in any step")
    if wrapper == "DictInfoToList":
        _require(
            all(isinstance(info, list) and len(info) == 4 for info in infos), "infos are not a list of 4"
        )
    envs.close()


def gymnasium_make_vec(
    env_id: str, mode: str, vector_kwargs: dict | None = None, jax_ran_first: bool = False
):
    import gymnasium

    import gymjax  # noqa: F401

    if jax_ran_first:  # the user stepped a gymjax env in this process before making the vector env
        _random_steps(gymnasium.make(env_id), 5)
    envs = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode=mode, vector_kwargs=vector_kwargs)
    ended, _ = _random_vector_steps(envs, 100)
    envs.close()
    _require(ended > 0, "no episode ended in 100 steps")


def gymnasium_reset_writable(env_id: str):
    """What users and wrappers do to a reset's observation: write into it (it was a read-only view)."""
    import gymnasium
    from gymnasium.wrappers import vector

    obs, _ = _make(env_id).reset(seed=0)
    obs *= 1.0
    envs = vector.FlattenObservation(_make_vec(env_id))  # writes the reset obs into its own buffer
    obs, _ = envs.reset(seed=0)
    obs *= 1.0
    _require(isinstance(envs.unwrapped, gymnasium.vector.VectorEnv), "not a vector env")


def minari_style_seeds(env_id: str):
    """Minari's DataCollector seeds each reset with a 60-bit random int (``secrets.randbits``), as any
    Gymnasium env takes it; seeds above 2**32 - 1 were refused."""
    import secrets

    import numpy as np

    env = _make(env_id)
    seed = secrets.randbits(60) | 2**59
    first, _ = env.reset(seed=seed)
    again, _ = env.reset(seed=seed)
    _require(np.array_equal(first, again), "the same 60-bit seed gave another episode")
    envs = _make_vec(env_id)
    obs, _ = envs.reset(seed=seed)  # env i: seed + i
    _require(np.array_equal(obs[0], first), "make_vec's env 0 differs from make(id) reset with the same seed")


def rllib_style_next_step_loop(env_id: str, num_envs: int = 4, steps: int = 200):
    """RLlib's env runners (``gym_env_vectorize_mode="vector_entry_point"``) step ``make_vec(id, n)``
    as Gymnasium's default NEXT_STEP vector env, without checking: after an env's episode ends, its
    next obs starts the next episode and that step's reward is dropped. This loop does what they do,
    in plain Gymnasium code, and checks every obs it would record against ``make(id)`` envs stepped
    alone: on a SAME_STEP env it records the reset obs as the episode's last, silently."""
    import gymnasium
    import numpy as np

    import gymjax  # noqa: F401

    envs = gymnasium.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point")
    singles = [gymnasium.make(env_id) for _ in range(num_envs)]
    obs, _ = envs.reset(seed=0)
    expected = np.stack([env.reset(seed=i)[0] for i, env in enumerate(singles)])
    _require(np.allclose(obs, expected), "reset observations differ")
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
            _require(
                np.allclose(obs[i], want) and reward[i] == want_reward and
                (bool(terminated[i]), bool(truncated[i])) == want_flags,
                f"env {i}, step {t}: the transition a NEXT_STEP client records is not the env's "
                f"(autoreset_mode={envs.metadata.get('autoreset_mode')})",
            )
        restarted = terminated | truncated
    _require(episodes > 0, f"no episode ended in {steps} steps")
    return f"{episodes} episode ends checked"


def many_envs_compile_once(env_id: str, count: int = 110, limit_s: float = 20.0):
    """Tianshou's DQN example makes 10 train + 100 test envs with ``gymnasium.make``: each compiled its
    own reset and step (~0.35 s each, ~40 s in all); envs of one id and options now share them."""
    start = time.perf_counter()
    envs = [_make(env_id) for _ in range(count)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
        env.step(env.action_space.sample())
    seconds = time.perf_counter() - start
    _require(seconds < limit_s, f"{count} x make + reset + step took {seconds:.1f} s")
    return f"{count} x make(id) + reset + step: {seconds:.1f} s"


def module_prefixed_id(env_id: str):
    """``gymnasium.make("gymjax:<id>")`` imports gymjax itself, in a process that never did (RLlib's
    env runners get the id string alone)."""
    import gymnasium

    _require("gymjax" not in sys.modules, "gymjax was imported before make")
    env = gymnasium.make(f"gymjax:{env_id}")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    envs = gymnasium.make_vec(f"gymjax:{env_id}", 2, vectorization_mode="vector_entry_point")
    envs.reset(seed=0)


def sbx_learn(env_id: str, vec: bool):
    """SBX (SB3's API, JAX networks): PPO learns a few updates on ``make(id)`` or ``make_vec_env(id)``."""
    from sbx import PPO
    from stable_baselines3.common.env_util import make_vec_env

    import gymjax  # noqa: F401

    env = make_vec_env(env_id, n_envs=4) if vec else _make(env_id)
    PPO("MlpPolicy", env, n_steps=128, batch_size=64, seed=0).learn(512)


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
        obs, reward, terminated, truncated, _ = env.step(actions)
    _require(tuple(obs.shape) == (n, *env.observation_space.shape), f"obs shape {tuple(obs.shape)}")
    _require(tuple(reward.shape) == (n, 1), f"reward shape {tuple(reward.shape)}")


def tianshou_dummy_vector_env(env_id: str, num_envs: int = 10):
    """Tianshou's ``DummyVectorEnv`` of ``make(id)`` envs, each reset when its episode ends."""
    import numpy as np
    from tianshou.env import DummyVectorEnv

    import gymjax  # noqa: F401

    envs = DummyVectorEnv([lambda: _make(env_id) for _ in range(num_envs)])
    envs.reset(seed=0)
    ended = 0
    for _ in range(STEPS):
        _, _, terminated, truncated, _ = envs.step(np.array([envs.action_space[0].sample() for _ in range(num_envs)]))
        done = np.flatnonzero(np.logical_or(terminated, truncated))
        if done.size:
            ended += done.size
            envs.reset(done)
    _require(ended > 0, f"no episode ended in {STEPS} steps")
    return f"{ended} episodes"


def minari_collect(env_id: str, episodes: int = 3):
    """Minari's ``DataCollector`` records random episodes (it seeds resets with 60-bit ints) into a dataset."""
    import minari  # noqa: F401
    from minari import DataCollector

    os.environ["MINARI_DATASETS_PATH"] = tempfile.mkdtemp()
    env = DataCollector(_make(env_id))
    for _ in range(episodes):
        env.reset()
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    dataset = env.create_dataset(dataset_id="gymjax/random-v0", algorithm_name="random")
    _require(dataset.total_episodes == episodes, f"{dataset.total_episodes} episodes recorded")
    return f"{dataset.total_steps} steps recorded"


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
        _require(np.allclose(ours, theirs), "the clone's observations differ from the original's")


# What Gymnasium MuJoCo users read on env.unwrapped, compared with Ant-v5's.
ANT_V5_ATTRIBUTES = ("model", "data", "dt", "frame_skip", "init_qpos", "init_qvel", "state_vector()")


def gymnasium_mujoco_attributes(env_id: str, reference_id: str, **kwargs):
    import gymnasium
    import mujoco
    import numpy as np

    ours, ref = _make(env_id, **kwargs).unwrapped, gymnasium.make(reference_id).unwrapped
    ours.reset(seed=0)
    ref.reset(seed=0)
    problems = []
    for name in ANT_V5_ATTRIBUTES:
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
            problems.append(f"{name} = {value!r}, Ant-v5's is {expected!r}")
        elif name not in ("model", "data", "dt", "frame_skip") and np.shape(value) != np.shape(expected):
            problems.append(f"{name} has shape {np.shape(value)}, Ant-v5's {np.shape(expected)}")
    if problems:
        raise AssertionError("; ".join(problems))


def gymnasium_reset_options(env_id: str, **kwargs):
    env = _make(env_id, **kwargs)
    env.reset(seed=0, options={})
    env.step(env.action_space.sample())


def gymnasium_render_option(env_id: str, **options):
    import numpy as np

    env = _make(env_id, render_mode="rgb_array", width=64, height=48, **options)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    frame = env.render()
    _require(
        isinstance(frame, np.ndarray) and frame.shape == (48, 64, 3),
        f"frame: {getattr(frame, 'shape', frame)}",
    )
    env.close()


def gymnasium_render_human(env_id: str, **kwargs):
    env = _make(env_id, render_mode="human", **kwargs)
    _random_steps(env, 20)
    env.close()


# ---------------------------------------------------------------- Stable-Baselines3


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
    _require(dones > 0, f"no episode ended in {STEPS} steps")


def sb3_learn(algo: str, env_id: str, steps: int = 2000, **kwargs):
    import stable_baselines3

    import gymjax  # noqa: F401

    model = getattr(stable_baselines3, algo)("MlpPolicy", env_id, seed=0, **kwargs)  # SB3 makes the env by id
    model.learn(steps)


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
    _require(bool(list(pathlib.Path(folder).glob("*.mp4"))), f"no .mp4 in {folder}")


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
    _require(
        (loaded.predict(obs, deterministic=True)[0] == model.predict(obs, deterministic=True)[0]).all(),
        "the loaded model acts differently",
    )
    evaluate_policy(loaded, envs, n_eval_episodes=2)


def sb3_gymjax_vec_env(env_id: str):
    from stable_baselines3 import PPO

    from gymjax.wrappers.sb3 import SB3VecEnv

    PPO("MlpPolicy", SB3VecEnv(env_id, 8), n_steps=64, batch_size=256, n_epochs=2, seed=0).learn(1024)


# ---------------------------------------------------------------- rl-baselines3-zoo

ZOO_CONF = """\
JaxCartPole-v0:
  n_envs: 2
  n_timesteps: !!float 2e3
  policy: 'MlpPolicy'
  n_steps: 128
  batch_size: 64
"""


def zoo_train(env_id: str, *extra: str, enjoy: bool = False, conf: bool = False):
    folder = tempfile.mkdtemp()
    args = [
        "-m",
        "rl_zoo3.train",
        "--algo",
        "ppo",
        "--env",
        env_id,
        "-n",
        "2000",
        "--gym-packages",
        "gymjax",
        "-f",
        folder,
        "--seed",
        "0",
        *extra,
    ]
    if conf:
        path = pathlib.Path(folder) / "my.yml"
        path.write_text(ZOO_CONF)
        args += ["-conf", str(path)]
    _cli(args)
    if enjoy:
        _cli(
            [
                "-m",
                "rl_zoo3.enjoy",
                "--algo",
                "ppo",
                "--env",
                env_id,
                "-f",
                folder,
                "--gym-packages",
                "gymjax",
                "-n",
                "300",
                "--no-render",
            ]
        )


# ---------------------------------------------------------------- torchrl


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
    _require(rollout.batch_size[-1] == 100, f"rollout batch size {rollout.batch_size}")


# ---------------------------------------------------------------- CleanRL


def cleanrl_folder(source: str) -> pathlib.Path | None:
    """The folder holding CleanRL's scripts for ``source`` ("pypi" or "CLEANRL_DIR"), fetched if need be."""
    if source == "CLEANRL_DIR":
        folder = os.environ.get("CLEANRL_DIR")
        return pathlib.Path(folder) if folder and (pathlib.Path(folder) / "ppo.py").is_file() else None
    folder = CLEANRL_CACHE / f"cleanrl-{CLEANRL_RELEASE}" / "cleanrl"
    if not (folder / "ppo.py").is_file():
        import zipfile

        download = pathlib.Path(tempfile.mkdtemp())
        # The wheel says Requires-Python <3.11, but its scripts are plain files a user copies out.
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"cleanrl=={CLEANRL_RELEASE}",
                "--no-deps",
                "--ignore-requires-python",
                "-q",
                "-d",
                str(download),
            ],
            capture_output=True,
            check=False,
        )
        wheels = list(download.glob("cleanrl-*.whl"))
        if done.returncode or not wheels:
            return None
        with zipfile.ZipFile(wheels[0]) as wheel:
            for script in ("ppo.py", "ppo_continuous_action.py"):
                (folder / script).parent.mkdir(parents=True, exist_ok=True)
                (folder / script).write_bytes(wheel.read(f"cleanrl/{script}"))
    return folder


def cleanrl_script(source: str, script: str, env_id: str, *args: str) -> dict:
    """Runs CleanRL's script unmodified after ``import gymjax``; returns CleanRL's last SPS line."""
    import runpy

    import gymjax  # noqa: F401  (CleanRL makes its envs with gym.make(env_id))

    path = cleanrl_folder(source) / script
    sys.argv = [str(path), "--env-id", env_id, *args]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(path), run_name="__main__")
    sps = [int(line.split()[-1]) for line in out.getvalue().splitlines() if line.startswith("SPS:")]
    _require(bool(sps), "the script printed no SPS line (did it train at all?)")
    return {"sps": sps[-1]}


# ---------------------------------------------------------------- PettingZoo


def pettingzoo_api_test(**kwargs):
    from pettingzoo.test import parallel_api_test

    from gymjax.wrappers.pettingzoo import PettingZooEnv

    parallel_api_test(PettingZooEnv(**kwargs), num_cycles=50)


def pettingzoo_seed_test(**kwargs):
    from pettingzoo.test import parallel_seed_test

    from gymjax.wrappers.pettingzoo import PettingZooEnv

    parallel_seed_test(lambda: PettingZooEnv(**kwargs))


def pettingzoo_render_test(**kwargs):
    from pettingzoo.test import render_test
    from pettingzoo.utils.conversions import parallel_to_aec

    from gymjax.wrappers.pettingzoo import PettingZooEnv

    # render_test drives the AEC API, so the parallel env goes through PettingZoo's own converter.
    render_test(lambda render_mode=None: parallel_to_aec(PettingZooEnv(render_mode=render_mode, **kwargs)))


# ---------------------------------------------------------------- single-env speed


def single_env_speed(ours_id: str, ours_kwargs: dict, reference_id: str, steps: int, rounds: int = 5) -> dict:
    """Steps/s of one env through ``gymnasium.make``, gymjax's and Gymnasium's interleaved A,B,A,B."""
    import statistics

    import gymnasium

    def rate(env, actions) -> float:
        env.reset(seed=0)
        start = time.perf_counter()
        for action in actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        return len(actions) / (time.perf_counter() - start)

    ours, reference = _make(ours_id, **ours_kwargs), gymnasium.make(reference_id)
    reference.action_space.seed(0)
    actions = [reference.action_space.sample() for _ in range(steps)]
    rate(ours, actions[:200])  # compiles
    rate(reference, actions[:200])
    load_before = os.getloadavg()
    a, b = [], []
    for _ in range(rounds):
        a.append(rate(ours, actions))
        b.append(rate(reference, actions))
    return {
        "gymjax": statistics.median(a),
        "gymnasium": statistics.median(b),
        "ratio": statistics.median(a) / statistics.median(b),
        "steps": steps,
        "rounds": rounds,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }


# ---------------------------------------------------------------- the cases

P = functools.partial
SINGLE_AGENT_IDS = ("JaxCartPole-v0", "JaxPendulum-v0", "JaxInvertedPendulum-v0", "JaxAnt-v0")
C_ANT = {"backend": "mujoco"}  # MuJoCo's C engine: MJX's first Ant compile costs ~60 s on 2 cores


def _cases() -> list[Case]:
    gym, sb3, zoo, trl, pz = "Gymnasium", "SB3", "rl-zoo3", "torchrl", "PettingZoo"
    moviepy, torch = ("moviepy",), ("torch",)
    cases = [
        Case(
            gym,
            "check_env(make(id).unwrapped)",
            i,
            P(gymnasium_check_env, i),
            timeout_s=300 if i == "JaxAnt-v0" else 120,
            cheap=i == "JaxCartPole-v0",
        )
        for i in SINGLE_AGENT_IDS
    ]
    for wrapper, env_id, args in [
        ("RecordEpisodeStatistics", "JaxCartPole-v0", ()),
        ("NormalizeReward", "JaxCartPole-v0", ()),
        ("NormalizeObservation", "JaxCartPole-v0", ()),
        ("ClipAction", "JaxPendulum-v0", ()),
        ("RescaleAction", "JaxPendulum-v0", (-0.5, 0.5)),
        ("FlattenObservation", "JaxCartPole-v0", ()),
    ]:
        cases.append(
            Case(
                gym,
                f"wrappers.{wrapper}(make(id){''.join(f', {a}' for a in args)})",
                env_id,
                P(gymnasium_wrapper, env_id, wrapper, *args),
                cheap=wrapper == "RecordEpisodeStatistics",
            )
        )
    cases.append(
        Case(
            gym,
            "wrappers.RecordVideo(make(id, render_mode='rgb_array'), tmp)",
            "JaxCartPole-v0",
            P(gymnasium_record_video, "JaxCartPole-v0"),
            needs=moviepy,
        )
    )
    for wrapper, env_id, args in [
        ("RecordEpisodeStatistics", "JaxCartPole-v0", ()),
        ("NormalizeObservation", "JaxCartPole-v0", ()),
        ("NormalizeReward", "JaxCartPole-v0", ()),
        ("ClipAction", "JaxPendulum-v0", ()),
        ("RescaleAction", "JaxPendulum-v0", (-0.5, 0.5)),
        ("DictInfoToList", "JaxCartPole-v0", ()),
        ("NumpyToTorch", "JaxCartPole-v0", ()),
    ]:
        cases.append(
            Case(
                gym,
                f"wrappers.vector.{wrapper}(make_vec(id, 4, 'vector_entry_point'))",
                env_id,
                P(gymnasium_vector_wrapper, env_id, wrapper, *args),
                needs=torch if wrapper == "NumpyToTorch" else (),
                # NEXT_STEP is gymjax's default, as Gymnasium's: its observation wrappers take it.
                cheap=wrapper == "NormalizeObservation",
            )
        )
    # The other mode, asked for by name: SAME_STEP refused by Gymnasium's observation wrappers (the
    # documented outcome), and Gymnasium's own SyncVectorEnv in SAME_STEP mode as the reference.
    for wrapper, env_id, mode, needs in [
        ("NormalizeObservation", "JaxCartPole-v0", "SAME_STEP", ()),
        ("NumpyToTorch", "JaxCartPole-v0", "SAME_STEP", torch),
        ("NumpyToTorch", "CartPole-v1", "SAME_STEP", torch),
    ]:
        how = (
            f"make_vec(id, 4, 'vector_entry_point', autoreset_mode={mode})"
            if env_id.startswith("Jax")
            else f"make_vec(id, 4, 'sync', vector_kwargs={{'autoreset_mode': {mode}}}) (reference)"
        )
        cases.append(
            Case(
                gym,
                f"wrappers.vector.{wrapper}({how})",
                env_id,
                P(gymnasium_vector_wrapper, env_id, wrapper, autoreset_mode=mode),
                needs=needs,
                refused="Expected autoreset_mode to be NEXT_STEP" if wrapper == "NormalizeObservation" else None,
            )
        )
    cases += [
        Case(
            gym,
            "obs *= 1.0 and wrappers.vector.FlattenObservation(make_vec(id, 4)) on reset()'s obs",
            "JaxCartPole-v0",
            P(gymnasium_reset_writable, "JaxCartPole-v0"),
            cheap=True,
        ),
        Case(
            "Minari-style",
            "reset(seed=secrets.randbits(60)) on make(id) and make_vec(id, 4), as DataCollector seeds",
            "JaxCartPole-v0",
            P(minari_style_seeds, "JaxCartPole-v0"),
            cheap=True,
        ),
        Case(
            "RLlib-style",
            "NEXT_STEP loop over make_vec(id, 4, 'vector_entry_point'), every transition vs make(id) alone",
            "JaxCartPole-v0",
            P(rllib_style_next_step_loop, "JaxCartPole-v0"),
            cheap=True,
        ),
        Case(
            "RLlib-style",
            "make('gymjax:<id>') and make_vec('gymjax:<id>', 2) in a process that never imported gymjax",
            "JaxCartPole-v0",
            P(module_prefixed_id, "JaxCartPole-v0"),
            cheap=True,
        ),
        Case(
            "Tianshou-style",
            "110 x make(id) + reset + step (DQN example's 10 train + 100 test envs), under 20 s",
            "JaxCartPole-v0",
            P(many_envs_compile_once, "JaxCartPole-v0"),
            cheap=True,
        ),
    ]
    cases += [
        Case(
            gym,
            "make_vec(id, 2, vectorization_mode='sync')",
            "JaxCartPole-v0",
            P(gymnasium_make_vec, "JaxCartPole-v0", "sync"),
            cheap=True,
        ),
        Case(
            gym,
            "make_vec(id, 2, 'async') (fork, the default)",
            "JaxCartPole-v0",
            P(gymnasium_make_vec, "JaxCartPole-v0", "async"),
            timeout_s=60,
            cheap=True,
        ),
        Case(
            gym,
            "make_vec(id, 2, 'async') (fork) after a gymjax env ran",
            "JaxCartPole-v0",
            P(gymnasium_make_vec, "JaxCartPole-v0", "async", jax_ran_first=True),
            timeout_s=60,
            cheap=True,
            # JAX's threads do not survive a fork: the workers refuse at once and name 'spawn'
            # instead of hanging at their first JAX call.
            refused="Start worker processes with 'spawn' or 'forkserver'",
        ),
        Case(
            gym,
            "make_vec(id, 2, 'async', vector_kwargs={'context': 'spawn'})",
            "JaxCartPole-v0",
            P(gymnasium_make_vec, "JaxCartPole-v0", "async", {"context": "spawn"}),
            timeout_s=180,
        ),
    ]
    for how in ("pickle", "copy.deepcopy", "cloudpickle"):
        cases.append(
            Case(
                gym,
                f"{how} of make(id), stepped; the clone continues alike",
                "JaxCartPole-v0",
                P(gymnasium_clone, "JaxCartPole-v0", how),
                cheap=how == "pickle",
            )
        )
    cases += [
        Case(
            gym,
            "pickle of make(id, backend='mujoco'), stepped",
            "JaxAnt-v0",
            P(gymnasium_clone, "JaxAnt-v0", "pickle", **C_ANT),
        ),
        Case(
            gym,
            "unwrapped.model/data/dt/frame_skip/init_qpos/init_qvel/state_vector() vs Ant-v5",
            "JaxAnt-v0",
            P(gymnasium_mujoco_attributes, "JaxAnt-v0", "Ant-v5"),
            timeout_s=300,
        ),
        Case(
            gym,
            "the same attributes, make(id, backend='mujoco')",
            "JaxAnt-v0",
            P(gymnasium_mujoco_attributes, "JaxAnt-v0", "Ant-v5", **C_ANT),
            cheap=True,
        ),
        Case(
            gym, "reset(seed=0, options={})", "JaxCartPole-v0", P(gymnasium_reset_options, "JaxCartPole-v0")
        ),
        Case(
            gym,
            "reset(seed=0, options={}), backend='mujoco'",
            "JaxAnt-v0",
            P(gymnasium_reset_options, "JaxAnt-v0", **C_ANT),
        ),
    ]
    render_options = {"camera_id": 0, "camera_name": "track", "max_geom": 500}
    for option, value in render_options.items():
        cases.append(
            Case(
                gym,
                f"make(id, render_mode='rgb_array', {option}={value!r}), backend='mujoco'",
                "JaxAnt-v0",
                P(gymnasium_render_option, "JaxAnt-v0", **C_ANT, **{option: value}),
            )
        )
    cases += [
        Case(
            gym,
            "make(id, render_mode='rgb_array', visual_options={mjVIS_CONTACTPOINT: True})",
            "JaxAnt-v0",
            P(_visual_options_case, "JaxAnt-v0"),
        ),
        Case(
            gym,
            "make(id, render_mode='human') (SDL dummy display)",
            "JaxCartPole-v0",
            P(gymnasium_render_human, "JaxCartPole-v0"),
            needs=("pygame",),
        ),
        Case(
            gym,
            "make(id, render_mode='human', backend='mujoco')",
            "JaxAnt-v0",
            P(gymnasium_render_human, "JaxAnt-v0", **C_ANT),
        ),
    ]
    sb3_needs = ("stable_baselines3",)
    cases += [
        Case(
            sb3,
            "common.env_checker.check_env(make(id))",
            "JaxCartPole-v0",
            P(sb3_check_env, "JaxCartPole-v0"),
            sb3_needs,
            cheap=True,
        ),
        Case(
            sb3,
            "common.env_checker.check_env(make(id))",
            "JaxPendulum-v0",
            P(sb3_check_env, "JaxPendulum-v0"),
            sb3_needs,
        ),
        Case(
            sb3,
            "make_vec_env(id, n_envs=2), random steps",
            "JaxCartPole-v0",
            P(sb3_make_vec_env, "JaxCartPole-v0"),
            sb3_needs,
            cheap=True,
        ),
        # Fewer updates than SB3's defaults: on 2 busy cores SAC's default (one gradient step per env
        # step) runs ~6 updates/s whatever the env (Gymnasium's Pendulum-v1 included).
        Case(
            sb3,
            "PPO('MlpPolicy', id, n_steps=512, batch_size=128, n_epochs=4).learn(2048)",
            "JaxCartPole-v0",
            P(sb3_learn, "PPO", "JaxCartPole-v0", 2048, n_steps=512, batch_size=128, n_epochs=4),
            sb3_needs,
        ),
        Case(
            sb3,
            "A2C('MlpPolicy', id, n_steps=50).learn(2000)",
            "JaxCartPole-v0",
            P(sb3_learn, "A2C", "JaxCartPole-v0", n_steps=50),
            sb3_needs,
        ),
        Case(
            sb3,
            "SAC('MlpPolicy', id, learning_starts=200, train_freq=16).learn(2000)",
            "JaxPendulum-v0",
            P(sb3_learn, "SAC", "JaxPendulum-v0", learning_starts=200, train_freq=16),
            sb3_needs,
            timeout_s=240,
        ),
        Case(
            sb3,
            "VecNormalize(make_vec_env(id, 2)) + PPO(n_epochs=2).learn(512)",
            "JaxPendulum-v0",
            P(sb3_vec_wrapper, "JaxPendulum-v0", "VecNormalize"),
            sb3_needs,
        ),
        Case(
            sb3,
            "VecFrameStack(make_vec_env(id, 2), 4) + PPO(n_epochs=2).learn(512)",
            "JaxCartPole-v0",
            P(sb3_vec_wrapper, "JaxCartPole-v0", "VecFrameStack"),
            sb3_needs,
        ),
        Case(
            sb3,
            "VecVideoRecorder(make_vec_env(id, 2, render_mode='rgb_array'))",
            "JaxCartPole-v0",
            P(sb3_video_recorder, "JaxCartPole-v0"),
            sb3_needs + moviepy,
        ),
        Case(
            sb3,
            "PPO save / load / evaluate_policy",
            "JaxCartPole-v0",
            P(sb3_save_load, "JaxCartPole-v0"),
            sb3_needs,
        ),
        Case(
            sb3,
            "PPO(n_epochs=2).learn(1024) on gymjax.wrappers.sb3.SB3VecEnv(id, 8)",
            "JaxCartPole-v0",
            P(sb3_gymjax_vec_env, "JaxCartPole-v0"),
            sb3_needs,
            cheap=True,
        ),
    ]
    zoo_needs = ("rl_zoo3",)
    cases += [
        Case(
            zoo,
            "rl_zoo3.train --algo ppo -n 2000 --gym-packages gymjax, then rl_zoo3.enjoy -n 300 --no-render",
            "JaxCartPole-v0",
            P(zoo_train, "JaxCartPole-v0", enjoy=True),
            zoo_needs,
            timeout_s=300,
        ),
        Case(
            zoo,
            "rl_zoo3.train ... --vec-env subproc",
            "JaxCartPole-v0",
            P(zoo_train, "JaxCartPole-v0", "--vec-env", "subproc"),
            zoo_needs,
            timeout_s=240,
        ),
        Case(
            zoo,
            "rl_zoo3.train ... -conf my.yml",
            "JaxCartPole-v0",
            P(zoo_train, "JaxCartPole-v0", conf=True),
            zoo_needs,
            timeout_s=240,
        ),
    ]
    trl_needs = ("torchrl",)
    cases += [
        Case(
            trl,
            "check_env_specs(GymEnv(id))",
            "JaxCartPole-v0",
            P(torchrl_check_env_specs, "JaxCartPole-v0"),
            trl_needs,
        ),
        Case(
            trl,
            "check_env_specs(GymEnv(id))",
            "JaxPendulum-v0",
            P(torchrl_check_env_specs, "JaxPendulum-v0"),
            trl_needs,
        ),
        Case(
            trl,
            "check_env_specs(GymEnv(id, backend='mujoco'))",
            "JaxAnt-v0",
            P(torchrl_check_env_specs, "JaxAnt-v0", backend="mujoco"),
            trl_needs,
        ),
        Case(
            trl,
            "check_env_specs(GymEnv(id, engine='mujoco'))",
            "JaxAnt-v0",
            P(torchrl_check_env_specs, "JaxAnt-v0", engine="mujoco"),
            trl_needs,
        ),
        Case(
            trl,
            "GymWrapper(make_vec(id, 4, 'vector_entry_point', autoreset_mode=SAME_STEP)): check_env_specs, "
            "rollout(100)",
            "JaxCartPole-v0",
            P(torchrl_gym_wrapper, "JaxCartPole-v0", autoreset_mode="same_step"),
            trl_needs,
        ),
        Case(
            trl,
            "GymWrapper(make_vec(id, 4, 'vector_entry_point')) (NEXT_STEP, Gymnasium's default)",
            "JaxCartPole-v0",
            P(torchrl_gym_wrapper, "JaxCartPole-v0"),
            trl_needs,
            # torchrl asks for SAME_STEP and refuses Gymnasium's default by name: the README says so.
            refused="auto-reset mode must be one of SAME_STEP or DISABLED",
        ),
    ]
    cleanrl_needs = ("torch", "tensorboard", "tyro")
    short = (
        "--total-timesteps",
        "2048",
        "--num-steps",
        "256",
    )  # ppo_continuous_action's default rollout is 2048
    for source, label in (
        ("pypi", f"CleanRL {CLEANRL_RELEASE} (PyPI)"),
        ("CLEANRL_DIR", "CleanRL (CLEANRL_DIR)"),
    ):
        for script, env_id, args in [
            ("ppo.py", "JaxCartPole-v0", ("--total-timesteps", "2048")),
            ("ppo.py", "CartPole-v1", ("--total-timesteps", "2048")),
            ("ppo_continuous_action.py", "JaxPendulum-v0", short),
            ("ppo_continuous_action.py", "JaxInvertedPendulum-v0", short),
            ("ppo_continuous_action.py", "Pendulum-v1", short),
        ]:
            reference = "" if env_id.startswith("Jax") else " (reference)"
            cases.append(
                Case(
                    label,
                    f"{script} {' '.join(args)}{reference}",
                    env_id,
                    P(cleanrl_script, source, script, env_id, *args),
                    cleanrl_needs,
                    cleanrl=source,
                    timeout_s=240,
                )
            )
    pz_needs = ("pettingzoo",)
    c_multi = {"engine": "mujoco", "max_episode_steps": 40, "width": 64, "height": 48}
    cases += [
        Case(
            pz,
            "parallel_api_test(PettingZooEnv())",
            "JaxMultiAnt-v0",
            pettingzoo_api_test,
            pz_needs,
            timeout_s=300,
        ),
        Case(
            pz,
            "parallel_api_test(PettingZooEnv(engine='mujoco'))",
            "JaxMultiAnt-v0",
            P(pettingzoo_api_test, **c_multi),
            pz_needs,
            cheap=True,
        ),
        Case(
            pz,
            "parallel_seed_test(lambda: PettingZooEnv(engine='mujoco'))",
            "JaxMultiAnt-v0",
            P(pettingzoo_seed_test, **c_multi),
            pz_needs,
        ),
        Case(
            pz,
            "render_test(parallel_to_aec(PettingZooEnv(engine='mujoco', render_mode=...)))",
            "JaxMultiAnt-v0",
            P(pettingzoo_render_test, **c_multi),
            pz_needs,
        ),
    ]
    cases += [
        Case("SBX", "PPO('MlpPolicy', make(id)).learn(512)", "JaxPendulum-v0",
             P(sbx_learn, "JaxPendulum-v0", False), ("sbx",), timeout_s=240),
        Case("SBX", "PPO('MlpPolicy', make_vec_env(id, 4)).learn(512)", "JaxCartPole-v0",
             P(sbx_learn, "JaxCartPole-v0", True), ("sbx",), timeout_s=240),
        Case("skrl", "wrap_env(make(id)): reset, step", "JaxPendulum-v0",
             P(skrl_wrap_env, "JaxPendulum-v0", None), ("skrl",)),
        Case("skrl", "wrap_env(make_vec(id, 4)): reset, step", "JaxCartPole-v0",
             P(skrl_wrap_env, "JaxCartPole-v0", 4), ("skrl",)),
        Case("Tianshou", "DummyVectorEnv([lambda: make(id)] * 10): reset, step, reset ended", "JaxCartPole-v0",
             P(tianshou_dummy_vector_env, "JaxCartPole-v0"), ("tianshou",)),
        Case("Minari", "DataCollector(make(id)): 3 episodes, create_dataset", "JaxCartPole-v0",
             P(minari_collect, "JaxCartPole-v0"), ("minari",)),
    ]
    cases += [
        Case(
            "speed",
            "steps/s, make(id) vs make('CartPole-v1'), 3000 random steps x 5 rounds",
            "JaxCartPole-v0",
            P(single_env_speed, "JaxCartPole-v0", {}, "CartPole-v1", 3000),
        ),
        Case(
            "speed",
            "steps/s, make(id, backend='mujoco') vs make('Ant-v5'), 2000 random steps x 5 rounds",
            "JaxAnt-v0",
            P(single_env_speed, "JaxAnt-v0", C_ANT, "Ant-v5", 2000),
            timeout_s=240,
        ),
    ]
    return cases


def _visual_options_case(env_id: str):
    import mujoco

    gymnasium_render_option(env_id, **C_ANT, visual_options={mujoco.mjtVisFlag.mjVIS_CONTACTPOINT: True})


CASES = _cases()


# ---------------------------------------------------------------- running the cases


def missing(case: Case) -> str | None:
    """Why ``case`` cannot run here (a client not installed), or None."""
    absent = [m for m in case.needs if importlib.util.find_spec(m) is None]
    if absent:
        return f"not installed: {', '.join(absent)}"
    if case.cleanrl and cleanrl_folder(case.cleanrl) is None:
        if case.cleanrl == "CLEANRL_DIR":
            return "set CLEANRL_DIR to a CleanRL checkout's cleanrl/ folder"
        return f"could not download cleanrl=={CLEANRL_RELEASE} from PyPI"
    return None


def run_case(case: Case, timeout_s: float | None = None) -> dict:
    """Runs ``case`` in a fresh process; ``status`` is pass, refused, fail, hangs or skipped."""
    reason = missing(case)
    if reason:
        return {
            "status": "skipped",
            "seconds": 0.0,
            "error": reason,
            "origin": None,
            "error_elsewhere": None,
            "result": None,
            "traceback": None,
        }
    timeout_s = timeout_s or case.timeout_s
    env = {
        **os.environ,
        **{k: v for k, v in CASE_ENV.items() if k not in os.environ},
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory() as cwd:  # clients write logs, runs/ and videos where they run
        result_file, log = pathlib.Path(cwd) / "result.json", pathlib.Path(cwd) / "output.log"
        start = time.perf_counter()
        with open(log, "w") as output:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.clients",
                    "--run-case",
                    case.name,
                    "--result",
                    str(result_file),
                ],
                cwd=cwd,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                process.wait(timeout=timeout_s)
                hung = False
            except subprocess.TimeoutExpired:
                hung = True
            finally:  # its children too (async workers, zoo's subprocesses)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        seconds = time.perf_counter() - start
        output_text = log.read_text(errors="replace")
        if result_file.is_file():
            record = json.loads(result_file.read_text())
            if hung:
                record["error"] = f"finished, then did not exit within {timeout_s:.0f} s (killed)"
                record["status"] = "hangs"
        elif hung:
            record = {"status": "hangs", "error": f"no result within {timeout_s:.0f} s", "origin": None}
        else:
            line, origin = _traceback_summary(output_text)
            record = {
                "status": "fail",
                "error": f"process died (exit {process.returncode}): {line}",
                "origin": origin,
            }
    elsewhere = _other_error(output_text, record.get("error")) if record["status"] != "pass" else None
    if case.refused is not None:
        said = f"{record.get('error') or ''} {elsewhere or ''} {output_text}"
        if record["status"] == "fail" and case.refused in said:
            record["status"] = "refused"
        elif record["status"] == "pass":
            record = {**record, "status": "fail", "error": f"expected a refusal naming {case.refused!r}"}
    return {
        "status": record["status"],
        "seconds": seconds,
        "error": record.get("error"),
        "origin": record.get("origin"),
        "error_elsewhere": elsewhere,
        "result": record.get("result"),
        "traceback": record.get("traceback"),
    }


def _other_error(output: str, error: str | None) -> str | None:
    """The first exception line in the output that is not ``error``: a worker process's, say."""
    for line in output.splitlines():
        match = re.match(r"^([A-Za-z_][\w.]*(Error|Exception)): (.+)", line)
        if match and (error is None or match[3][:60] not in error):
            return line.strip()[:300]
    return None


def _run_in_this_process(name: str, result_file: str) -> None:
    """The ``--run-case`` side: runs one case and writes its record as JSON."""
    case = {c.name: c for c in CASES}[name]
    try:
        record = {"status": "pass", "result": case.run()}
    except SystemExit as exc:  # CLI clients exit; 0 is a success
        record = {
            "status": "pass" if exc.code in (0, None) else "fail",
            "error": f"SystemExit: {exc.code}",
            "origin": _raise_site(exc),
        }
    except BaseException as exc:  # noqa: BLE001 - every failure is a row of the table
        traceback.print_exc()
        first = (str(exc).strip().splitlines() or [""])[0]
        record = {
            "status": "fail",
            "error": f"{type(exc).__name__}: {first}"[:300],
            "origin": _raise_site(exc),
            "traceback": traceback.format_exc()[-4000:],
        }
    pathlib.Path(result_file).write_text(json.dumps(record, default=str))


def _raise_site(exc: BaseException) -> str | None:
    """Where ``exc`` was raised, and the innermost gymjax frame on the way when that is elsewhere."""
    if getattr(exc, "origin", None):
        return exc.origin
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    site = lambda f: f"{_short_path(f.filename)}:{f.lineno} in {f.name}"
    ours = [f for f in frames if _is_gymjax(f.filename)]
    text = site(frames[-1])
    if ours and ours[-1] is not frames[-1]:
        text += f" (via {site(ours[-1])})"
    return text


# ---------------------------------------------------------------- the report


def markdown(report: dict) -> str:
    versions = ", ".join(f"{k} {v or 'not installed'}" for k, v in report["versions"].items())
    lines = [
        "# Third-party clients on gymjax envs",
        "",
        (
            "`python -m benchmarks.clients`: each case is unmodified client code in a fresh process with a "
            "timeout; `tests/test_clients.py` runs the cheap ones in CI. "
            f"Versions: {versions}. "
            f"Load average (1 min) at the start: {report['loadavg_start'][0]:.2f}; {report['cpus']} CPUs."
        ),
        "",
        "| client | what was run | env id | result | s | first error line (raised at) |",
        "|---|---|---|---|---|---|",
    ]
    rows = [r for r in report["cases"] if r["client"] != "speed"]
    for r in rows:
        detail = ""
        if r["error"]:
            detail = "`" + r["error"].replace("|", "\\|").replace("`", "'") + "`"
            if r.get("origin"):
                detail += f" ({r['origin']})"
            if r.get("error_elsewhere"):
                detail += (
                    "; first error in its output: `"
                    + r["error_elsewhere"].replace("|", "\\|").replace("`", "'")
                    + "`"
                )
        elif isinstance(r["result"], dict) and "sps" in r["result"]:
            detail = f"CleanRL's own SPS: {r['result']['sps']}"
        elif isinstance(r["result"], str):
            detail = r["result"]
        cells = [r["client"], f"`{r['what']}`", r["env_id"], r["status"], f"{r['seconds']:.0f}", detail]
        lines.append("| " + " | ".join(cells) + " |")
    counts = {s: sum(r["status"] == s for r in rows) for s in ("pass", "refused", "fail", "hangs", "skipped")}
    references = [r for r in rows if "(reference)" in r["what"]]
    lines += [
        "",
        ", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(rows)} cases, of which "
        f"{len(references)} run Gymnasium's own env (reference): "
        f"{sum(r['status'] == 'pass' for r in references)} of those pass.",
        "",
    ]
    speed = [r for r in report["cases"] if r["client"] == "speed"]
    if speed:
        lines += [
            "## One env through `gymnasium.make`: steps/s, random actions, interleaved A,B,A,B, medians",
            "",
            "| env | gymjax | Gymnasium | ratio | load avg before / after |",
            "|---|---|---|---|---|",
        ]
        for r in speed:
            m = r["result"]
            if r["status"] != "pass":
                lines.append(f"| {r['what']} | {r['status']}: {r['error']} | | | |")
                continue
            lines.append(
                f"| `{r['what'].split(', ', 1)[1]}` | {m['gymjax']:,.0f} | {m['gymnasium']:,.0f} | "
                f"{m['ratio']:.2f} | {m['loadavg_before'][0]:.2f} / {m['loadavg_after'][0]:.2f} |"
            )
        lines.append("")
    sps = {
        (r["client"], r["env_id"]): r["result"]["sps"]
        for r in rows
        if isinstance(r["result"], dict) and "sps" in r["result"] and "ppo.py" in r["what"]
    }
    for client in {c for c, _ in sps}:
        if (client, "JaxCartPole-v0") in sps and (client, "CartPole-v1") in sps:
            ours, theirs = sps[client, "JaxCartPole-v0"], sps[client, "CartPole-v1"]
            lines.append(
                f"{client} `ppo.py`, same budget: SPS {ours} on JaxCartPole-v0, {theirs} on "
                f"CartPole-v1 (ratio {ours / theirs:.2f})."
            )
    return "\n".join(lines) + "\n"


CLIENT_PACKAGES = ("gymjax", "gymnasium", "stable-baselines3", "rl_zoo3", "torchrl", "pettingzoo", "sbx-rl", "skrl",
                   "tianshou", "minari", "torch", "jax", "mujoco")


def _versions() -> dict[str, str | None]:
    """The harness's record (Python, commit, packages; None: absent) of the clients, and CleanRL's source."""
    from benchmarks.harness import versions

    folder = os.environ.get("CLEANRL_DIR")
    cleanrl = f"{CLEANRL_RELEASE} (PyPI)" + (f" and CLEANRL_DIR={folder}" if folder else "")
    return {**versions(CLIENT_PACKAGES), "CleanRL": cleanrl}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="run the cases whose name contains this text (case-insensitive)")
    parser.add_argument("--list", action="store_true", help="list the cases (CI ones marked) and exit")
    parser.add_argument("--out", default=str(RESULTS), help="folder for clients.{json,md}")
    parser.add_argument("--run-case", help=argparse.SUPPRESS)  # the child process's side
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_case:
        _run_in_this_process(args.run_case, args.result)
        return 0
    cases = [c for c in CASES if args.only is None or args.only.lower() in c.name.lower()]
    if args.list:
        print("\n".join(f"{'CI ' if c.cheap else '   '}{c.name}" for c in cases))
        return 0
    from tqdm import tqdm

    report = {"versions": _versions(), "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(), "cases": []}
    for case in tqdm(cases, desc="clients", unit="case"):
        result = run_case(case)
        report["cases"].append({"client": case.client, "what": case.what, "env_id": case.env_id, **result})
        tqdm.write(
            f"{result['status']:>7} {result['seconds']:5.0f} s  {case.name}"
            + (f"\n          {result['error']}" if result["error"] else "")
        )
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "clients" if args.only is None else "clients_partial"
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / f"{stem}.md").write_text(markdown(report))
    print(f"wrote {out / stem}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
