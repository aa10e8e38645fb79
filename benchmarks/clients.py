"""Third-party clients on gymjax envs, unmodified, as a new user would run them: the compatibility table.

Every case is a short Python program run in a fresh process with a timeout (a hang is
reported as one, not waited out). A case whose client is not installed is skipped.
Cases marked ``reference`` run the same client on Gymnasium's own env: when a client
fails on both, the client (not gymjax) is behind the times.

Writes benchmarks/results/clients.{json,md}; ``tests/test_clients.py`` runs the cheap
cases (Gymnasium, SB3, PettingZoo: the ``dev`` extra) in CI.

    python -m benchmarks.clients                 # every case, a few minutes
    python -m benchmarks.clients --only torchrl  # cases whose name contains "torchrl"
    python -m benchmarks.clients --list
    CLEANRL_DIR=~/cleanrl/cleanrl python -m benchmarks.clients --only CleanRL
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import time

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
ROOT = pathlib.Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    client: str  # the module that must be importable
    code: str  # run with `python -c`; prints "NOTE: ..." lines for the table
    timeout_s: float = 180
    cheap: bool = False  # run in CI by tests/test_clients.py
    expect_error: str | None = None  # passes when it fails with this text (a designed refusal)


PRELUDE = """
import os, warnings
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
warnings.filterwarnings("ignore")
import numpy as np, gymnasium, gymjax
"""

CASES = [
    # -- Gymnasium
    Case("gymnasium check_env, every id", "gymnasium", """
from gymnasium.utils.env_checker import check_env
for env_id in ["JaxCartPole-v0", "JaxPendulum-v0", "JaxInvertedPendulum-v0"]:
    check_env(gymnasium.make(env_id).unwrapped)
check_env(gymnasium.make("JaxAnt-v0", engine="mujoco").unwrapped)
"""),  # tests/wrappers/test_gymnasium.py runs check_env on every id already
    Case("gymnasium wrappers on make()", "gymnasium", """
from gymnasium import wrappers as w
import tempfile
env = gymnasium.make("JaxInvertedPendulum-v0", engine="mujoco")
env = w.RecordEpisodeStatistics(w.NormalizeReward(w.NormalizeObservation(w.ClipAction(
    w.RescaleAction(w.FlattenObservation(env), -0.5, 0.5)))))
env.reset(seed=0)
episodes = 0
for _ in range(200):
    _, _, term, trunc, info = env.step(env.action_space.sample())
    if term or trunc:
        assert "episode" in info
        episodes += 1
        env.reset()
env.close()
assert episodes > 0
""", cheap=True),
    Case("gymnasium RecordVideo", "moviepy", """
import tempfile
env = gymnasium.make("JaxInvertedPendulum-v0", render_mode="rgb_array", width=64, height=64)
env = gymnasium.wrappers.RecordVideo(env, tempfile.mkdtemp(), episode_trigger=lambda e: e == 0)
env.reset(seed=0)
for _ in range(30):
    _, _, term, trunc, _ = env.step(env.action_space.sample())
    if term or trunc:
        env.reset()
env.close()
"""),
    Case("gymnasium vector wrappers (NEXT_STEP), NumpyToTorch", "torch", """
from gymnasium.wrappers import vector as vw
envs = gymnasium.make_vec("JaxInvertedPendulum-v0", 4, autoreset_mode="next_step", engine="mujoco")
envs = vw.NumpyToTorch(vw.DictInfoToList(vw.RecordEpisodeStatistics(vw.NormalizeReward(
    vw.NormalizeObservation(vw.ClipAction(vw.RescaleAction(envs, -0.5, 0.5)))))))
import torch
envs.reset(seed=0)
ended = 0
for _ in range(100):
    obs, r, term, trunc, infos = envs.step(torch.as_tensor(envs.action_space.sample()))
    ended += int((term | trunc).sum())
assert ended > 0 and isinstance(obs, torch.Tensor)
""", cheap=True),
    Case("gymnasium make_vec sync", "gymnasium", """
envs = gymnasium.make_vec("JaxCartPole-v0", 2, vectorization_mode="sync")
envs.reset(seed=0)
for _ in range(50):
    envs.step(envs.action_space.sample())
""", cheap=True),
    Case("gymnasium make_vec async, spawn", "gymnasium", """
if __name__ == "__main__":
    envs = gymnasium.make_vec("JaxCartPole-v0", 2, vectorization_mode="async", vector_kwargs={"context": "spawn"})
    envs.reset(seed=0)
    for _ in range(50):
        envs.step(envs.action_space.sample())
    envs.close()
""", timeout_s=240),
    Case("gymnasium make_vec async, fork", "gymnasium", """
envs = gymnasium.make_vec("JaxCartPole-v0", 2, vectorization_mode="async")  # building an env starts no JAX
envs.reset(seed=0)
for _ in range(20):
    envs.step(envs.action_space.sample())
envs.close()
""", timeout_s=120, cheap=True),
    Case("gymnasium make_vec async, fork after JAX ran (refused: points to spawn)", "gymnasium", """
import jax
jax.numpy.zeros(1).block_until_ready()  # JAX's threads are running: a forked child would hang
envs = gymnasium.make_vec("JaxCartPole-v0", 2, vectorization_mode="async")
envs.reset(seed=0)
""", expect_error="forked after JAX started", cheap=True),
    Case("pickle, deepcopy, cloudpickle", "gymnasium", """
import pickle, copy, cloudpickle
env = gymnasium.make("JaxCartPole-v0")
env.reset(seed=0)
for clone in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env), cloudpickle.loads(cloudpickle.dumps(env))):
    clone.step(0)
""", cheap=True),
    Case("Gymnasium-MuJoCo attributes, options, human render", "gymnasium", """
import mujoco
env = gymnasium.make("JaxAnt-v0", engine="mujoco", camera_name="track", max_geom=500,
                     visual_options={mujoco.mjtVisFlag.mjVIS_CONTACTPOINT: True})
u = env.unwrapped
env.reset(seed=0, options={})
u.model, u.data, u.dt, u.frame_skip, u.init_qpos, u.init_qvel, u.state_vector()
u.set_state(np.asarray(u.init_qpos), np.zeros(14))
human = gymnasium.make("JaxCartPole-v0", render_mode="human")
human.reset(seed=0)
human.step(0)
""", cheap=True),
    # -- Stable-Baselines3
    Case("SB3 check_env, make_vec_env, PPO / A2C / SAC", "stable_baselines3", """
from stable_baselines3 import A2C, PPO, SAC
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.env_util import make_vec_env
check_env(gymnasium.make("JaxCartPole-v0"))
PPO("MlpPolicy", make_vec_env("JaxCartPole-v0", n_envs=2), n_steps=64, batch_size=64).learn(256)
A2C("MlpPolicy", make_vec_env("JaxCartPole-v0", n_envs=2)).learn(200)
SAC("MlpPolicy", "JaxPendulum-v0", learning_starts=50).learn(150)
""", cheap=True),
    Case("SB3 VecNormalize, VecFrameStack, save/load", "stable_baselines3", """
import tempfile
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecFrameStack, VecNormalize
d = tempfile.mkdtemp()
env = VecNormalize(VecFrameStack(make_vec_env("JaxPendulum-v0", n_envs=2), 2))
model = PPO("MlpPolicy", env, n_steps=64, batch_size=64).learn(128)
model.save(f"{d}/model")
PPO.load(f"{d}/model", env=env).predict(env.reset())
""", cheap=True),
    Case("SB3 VecVideoRecorder", "moviepy", """
import tempfile
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecVideoRecorder
env = make_vec_env("JaxPendulum-v0", n_envs=2, env_kwargs={"render_mode": "rgb_array"})
env = VecVideoRecorder(env, tempfile.mkdtemp(), record_video_trigger=lambda s: s == 0, video_length=20)
env.reset()
for _ in range(25):
    env.step(np.stack([env.action_space.sample() for _ in range(2)]))
env.close()
"""),
    Case("SB3 PPO on gymjax's SB3VecEnv", "stable_baselines3", """
from stable_baselines3 import PPO
from gymjax.wrappers.sb3 import SB3VecEnv
PPO("MlpPolicy", SB3VecEnv("JaxCartPole-v0", 8), n_steps=32, batch_size=64).learn(512)
""", cheap=True),
    # -- rl-baselines3-zoo
    Case("rl-zoo3 train + enjoy", "rl_zoo3", """
import subprocess, sys, tempfile
d = tempfile.mkdtemp()
base = [sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", "JaxCartPole-v0", "-n", "2000",
        "--gym-packages", "gymjax", "-f", d, "--seed", "0"]
def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(" ".join(command[2:4]) + ": " + done.stderr.strip().splitlines()[-1])
run(base)
run([sys.executable, "-m", "rl_zoo3.enjoy", "--algo", "ppo", "--env", "JaxCartPole-v0", "-f", d,
     "--gym-packages", "gymjax", "-n", "200", "--no-render"])
""", timeout_s=400),
    Case("rl-zoo3 train, SubprocVecEnv and a custom conf file", "rl_zoo3", """
import subprocess, sys, tempfile, pathlib
d = tempfile.mkdtemp()
conf = pathlib.Path(d) / "conf.yml"
conf.write_text("JaxCartPole-v0:\\n  n_envs: 2\\n  n_timesteps: !!float 2e3\\n  policy: 'MlpPolicy'\\n  n_steps: 64\\n")
done = subprocess.run([sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", "JaxCartPole-v0",
                       "--gym-packages", "gymjax", "-f", d, "--vec-env", "subproc", "-conf", str(conf)],
                      capture_output=True, text=True)
if done.returncode:
    raise RuntimeError(done.stderr.strip().splitlines()[-1])
""", timeout_s=400),
    # -- torchrl
    Case("torchrl check_env_specs(GymEnv), CartPole and Pendulum", "torchrl", """
from torchrl.envs import GymEnv
from torchrl.envs.utils import check_env_specs
for env_id in ["JaxCartPole-v0", "JaxPendulum-v0"]:
    check_env_specs(GymEnv(env_id))
"""),
    Case("torchrl GymEnv('JaxAnt-v0', engine='mujoco')", "torchrl", """
from torchrl.envs import GymEnv
from torchrl.envs.utils import check_env_specs
check_env_specs(GymEnv("JaxAnt-v0", engine="mujoco"))
"""),
    Case("torchrl GymWrapper(make_vec(...)) + rollout", "torchrl", """
from torchrl.envs import GymWrapper
from torchrl.envs.utils import check_env_specs
env = GymWrapper(gymnasium.make_vec("JaxCartPole-v0", 4, vectorization_mode="vector_entry_point"))
check_env_specs(env)
env.rollout(50, break_when_any_done=False)
"""),
    # -- CleanRL: single-file scripts, not a package (its PyPI release stops at Python 3.10); point
    #    CLEANRL_DIR at a checkout's cleanrl/ folder. Its scripts make envs by id, gymjax imported first.
    Case("CleanRL ppo.py, JaxCartPole-v0", "cleanrl", """
import contextlib, io, runpy, sys
sys.argv = ["ppo.py", "--env-id", "JaxCartPole-v0", "--total-timesteps", "8192", "--num-envs", "4"]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    runpy.run_path(os.environ["CLEANRL_DIR"] + "/ppo.py", run_name="__main__")
sps = [line for line in out.getvalue().splitlines() if line.startswith("SPS:")]
print("NOTE: CleanRL's own " + sps[-1])
""", timeout_s=300),
    Case("CleanRL ppo.py, CartPole-v1 (reference)", "cleanrl", """
import contextlib, io, runpy, sys
sys.argv = ["ppo.py", "--env-id", "CartPole-v1", "--total-timesteps", "8192", "--num-envs", "4"]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    runpy.run_path(os.environ["CLEANRL_DIR"] + "/ppo.py", run_name="__main__")
sps = [line for line in out.getvalue().splitlines() if line.startswith("SPS:")]
print("NOTE: CleanRL's own " + sps[-1])
""", timeout_s=300),
    Case("CleanRL ppo_continuous_action.py, JaxPendulum-v0", "cleanrl", """
import runpy, sys
sys.argv = ["ppo_continuous_action.py", "--env-id", "JaxPendulum-v0", "--total-timesteps", "2048"]
runpy.run_path(os.environ["CLEANRL_DIR"] + "/ppo_continuous_action.py", run_name="__main__")
""", timeout_s=300),
    Case("CleanRL ppo_continuous_action.py, Pendulum-v1 (reference)", "cleanrl", """
import runpy, sys
sys.argv = ["ppo_continuous_action.py", "--env-id", "Pendulum-v1", "--total-timesteps", "2048"]
runpy.run_path(os.environ["CLEANRL_DIR"] + "/ppo_continuous_action.py", run_name="__main__")
""", timeout_s=300),
    # -- PettingZoo
    Case("PettingZoo parallel_api_test, seed test, render_test", "pettingzoo", """
from pettingzoo.test import parallel_api_test, parallel_seed_test, render_test
from pettingzoo.utils.conversions import parallel_to_aec
from gymjax.wrappers.pettingzoo import PettingZooEnv
make = lambda **kw: PettingZooEnv("JaxMultiAnt-v0", engine="mujoco", max_episode_steps=30, width=32, height=32, **kw)
parallel_api_test(make(), num_cycles=40)
parallel_seed_test(make)
render_test(lambda **kw: parallel_to_aec(make(**kw)))  # render_test steps the AEC API
""", timeout_s=300, cheap=True),
]


def case_names() -> list[str]:
    return [c.name for c in CASES]


def run_case(case: Case, timeout_s: float | None = None) -> dict:
    """Runs one case in a fresh process; ``status`` is pass, fail, hangs or skipped."""
    missing = _missing(case.client)
    if missing:
        return {"status": "skipped", "error": missing, "seconds": 0.0, "notes": []}
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    with tempfile.TemporaryDirectory() as cwd:  # clients write logs and videos where they run
        program = pathlib.Path(cwd) / "case.py"
        program.write_text(PRELUDE + textwrap.dedent(case.code))
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, str(program)], cwd=cwd, env=env, capture_output=True,
                                  text=True, timeout=timeout_s or case.timeout_s)
        except subprocess.TimeoutExpired:
            return {"status": "hangs", "error": f"no result in {timeout_s or case.timeout_s:.0f} s",
                    "seconds": time.perf_counter() - start, "notes": []}
    seconds = time.perf_counter() - start
    notes = [line[6:] for line in done.stdout.splitlines() if line.startswith("NOTE: ")]
    error = _first_error(done.stderr) if done.returncode else None
    if case.expect_error is not None:
        ok = done.returncode != 0 and case.expect_error in done.stderr
        status = "pass" if ok else "fail"
        error = None if ok else (error or "ran without the expected error")
        notes.append("refused with a clear error, as designed")
    else:
        status = "pass" if done.returncode == 0 else "fail"
    return {"status": status, "error": error, "seconds": seconds, "notes": notes}


def _missing(client: str) -> str | None:
    if client == "cleanrl":
        folder = os.environ.get("CLEANRL_DIR", "")
        ok = folder and os.path.isfile(os.path.join(folder, "ppo.py")) and importlib.util.find_spec("tyro")
        return None if ok else "set CLEANRL_DIR to a CleanRL checkout's cleanrl/ folder (and pip install tyro)"
    return None if importlib.util.find_spec(client) else f"{client} is not installed"


def _first_error(stderr: str) -> str:
    """The exception line of a traceback (the last line naming an Error or Exception)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line.split(":")[0] or "Exception" in line.split(":")[0]:
            return line[:300]
    return (lines[-1] if lines else "exit status != 0")[:300]


def single_env_speed(steps: int = 2000, rounds: int = 3) -> dict:
    """Steps/s of one env through gymnasium.make, gymjax's against Gymnasium's, interleaved."""
    code = PRELUDE + textwrap.dedent(f"""
    import json, time, statistics
    def rate(env, actions):
        env.reset(seed=0)
        start = time.perf_counter()
        for a in actions:
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
        return len(actions) / (time.perf_counter() - start)
    pairs = {{"CartPole": ("JaxCartPole-v0", "CartPole-v1", {{}}), "Ant": ("JaxAnt-v0", "Ant-v5", {{"engine": "mujoco"}})}}
    out = {{}}
    for name, (ours_id, ref_id, kw) in pairs.items():
        ours, ref = gymnasium.make(ours_id, **kw), gymnasium.make(ref_id)
        actions = [ref.action_space.sample() for _ in range({steps})]
        rate(ours, actions[:100])
        a, b = [], []
        for _ in range({rounds}):
            a.append(rate(ours, actions)); b.append(rate(ref, actions))
        out[name] = {{"gymjax": statistics.median(a), "gymnasium": statistics.median(b),
                     "ratio": statistics.median(a) / statistics.median(b), "load_1min": os.getloadavg()[0]}}
    print(json.dumps(out))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode:
        return {"error": _first_error(done.stderr)}
    return json.loads(done.stdout.strip().splitlines()[-1])


def markdown(report: dict) -> str:
    lines = [
        "# Third-party clients on gymjax envs",
        "",
        "Produced by `python -m benchmarks.clients` (each case a fresh process, unmodified client code; "
        "`tests/test_clients.py` runs the cheap ones in CI). Versions: "
        + ", ".join(f"{k} {v}" for k, v in report["versions"].items()) + ".",
        "",
        "| case | result | seconds | notes / first error line |",
        "|---|---|---|---|",
    ]
    for name, r in report["cases"].items():
        detail = "; ".join(r["notes"]) or ""
        if r["error"]:
            detail = (detail + "; " if detail else "") + "`" + r["error"].replace("|", "\\|") + "`"
        lines.append(f"| {name} | {r['status']} | {r['seconds']:.0f} | {detail} |")
    speed = report.get("single_env_speed") or {}
    if "error" not in speed and speed:
        lines += ["", "## One env through `gymnasium.make`, steps/s (interleaved, medians)", "",
                  "| env | gymjax | Gymnasium | ratio | load (1 min) |", "|---|---|---|---|---|"]
        for name, r in speed.items():
            lines.append(f"| {name} | {r['gymjax']:,.0f} | {r['gymnasium']:,.0f} | {r['ratio']:.2f} | {r['load_1min']:.2f} |")
    return "\n".join(lines) + "\n"


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("gymnasium", "stable-baselines3", "rl_zoo3", "torchrl", "cleanrl", "pettingzoo", "torch", "jax"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def main(argv=None) -> int:
    from tqdm import tqdm

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="run the cases whose name contains this text")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.only is None or args.only.lower() in c.name.lower()]
    if args.list:
        print("\n".join(f"{c.name}  [{c.client}{', CI' if c.cheap else ''}]" for c in cases))
        return 0
    report = {"versions": _versions(), "cases": {}}
    for case in tqdm(cases, desc="clients", unit="case"):
        report["cases"][case.name] = result = run_case(case)
        tqdm.write(f"{result['status']:>7}  {case.name}" + (f": {result['error']}" if result["error"] else ""))
    if args.only is None:
        report["single_env_speed"] = single_env_speed()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "clients" if args.only is None else "clients_partial"
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / f"{stem}.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
