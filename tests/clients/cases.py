"""The client matrix as data: which client runs which scenario (``scenarios.py``) on which env.

``what`` is the call as the client's users write it, the row the docs' table shows. A case whose
``env_id`` is Gymnasium's own (:func:`is_reference`) is a reference: the same client on the env it
was written for, so a row failing there too is the client's, not gymjax's. Cases on
``brax/``, ``playground/`` and ``gymnax/`` ids run the client on another collection's env through
gymjax (``gymjax.envs.external``).
"""

import dataclasses
import pathlib
from typing import Any

from . import scenarios

SCENARIOS = pathlib.Path(scenarios.__file__)


def is_reference(env_id: str) -> bool:
    """Gymnasium's own env, not one of gymjax's (``Jax...``) nor another collection's (``brax/...``)."""
    return not env_id.startswith("Jax") and "/" not in env_id


@dataclasses.dataclass(frozen=True)
class Case:
    client: str
    what: str
    env_id: str
    scenario: str  # a function of scenarios.py, called with env_id= and kwargs
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)  # JSON: it travels on a command line
    # Run by `make test`: a few seconds, the `dev` extra's clients only, and no in-process test of the
    # same path there (the others run in `make test-slow`, which CI runs too).
    cheap: bool = False
    timeout_s: float = 120
    needs: tuple[str, ...] = ()  # modules that must be importable, else the case is skipped
    env_var: str | None = None  # an environment variable naming what the case runs, else it is skipped
    # A documented refusal: the case passes when it fails with this text in its output.
    refused: str | None = None
    # A client's own bug, shown by its reference case: an expected failure with this text in its output.
    xfail: str | None = None

    def __post_init__(self):
        if not callable(getattr(scenarios, self.scenario, None)):
            raise TypeError(f"{self.name}: scenarios.py has no {self.scenario}()")

    @property
    def name(self) -> str:
        return f"{self.client}: {self.what} [{self.env_id}]"


C = Case
GYM, SB3, ZOO, TRL, PZ = "Gymnasium", "SB3", "rl-zoo3", "torchrl", "PettingZoo"
CART, PEND, INV, ANT, MULTI_ANT = "JaxCartPole-v0", "JaxPendulum-v0", "JaxInvertedPendulum-v0", "JaxAnt-v0", \
    "JaxMultiAnt-v0"
GYMNAX_CART, GYMNAX_MINATAR = "gymnax/CartPole-v1", "gymnax/Breakout-MinAtar-v0"
BRAX_PEND, PLAYGROUND_CART = "brax/inverted_pendulum-v0", "playground/CartpoleBalance-v0"
C_ANT = {"backend": "mujoco"}  # MuJoCo's C engine: MJX's first Ant compile costs ~60 s on 2 cores
VEC = "make_vec(id, 4, 'vector_entry_point')"
SB3_ = ("stable_baselines3",)
ZOO_ = ("rl_zoo3",)
TRL_ = ("torchrl",)
CLEANRL_ = ("torch", "tensorboard", "tyro")
PZ_MUJOCO = {"engine": "mujoco", "max_episode_steps": 40, "width": 64, "height": 48}
SHORT = ("--total-timesteps", "2048", "--num-steps", "256")  # ppo_continuous_action's default rollout is 2048
# Neither a Gymnasium nor a torch release handles a bool array through DLPack: the reference fails alike.
DLPACK_BOOL = "DLPack only supports signed/unsigned integers"
# CleanRL's continuous PPO calls Gymnasium 0.29's TransformObservation; it fails on Pendulum-v1 too.
CLEANRL_GYM_029 = "TransformObservation.__init__() missing 1 required positional argument"

CASES = [
    C(GYM, "check_env(make(id).unwrapped)", CART, "gymnasium_check_env"),  # in-process: test_conformance.py
    C(GYM, "check_env(make(id).unwrapped)", PEND, "gymnasium_check_env"),
    C(GYM, "check_env(make(id).unwrapped)", INV, "gymnasium_check_env"),
    C(GYM, "check_env(make(id).unwrapped)", ANT, "gymnasium_check_env", timeout_s=300),
    C(GYM, "wrappers.RecordEpisodeStatistics(make(id))", CART, "gymnasium_wrapper",
      {"wrapper": "RecordEpisodeStatistics"}, cheap=True),
    C(GYM, "wrappers.NormalizeReward(make(id))", CART, "gymnasium_wrapper", {"wrapper": "NormalizeReward"}),
    C(GYM, "wrappers.NormalizeObservation(make(id))", CART, "gymnasium_wrapper",
      {"wrapper": "NormalizeObservation"}),
    C(GYM, "wrappers.ClipAction(make(id))", PEND, "gymnasium_wrapper", {"wrapper": "ClipAction"}),
    C(GYM, "wrappers.RescaleAction(make(id), -0.5, 0.5)", PEND, "gymnasium_wrapper",
      {"wrapper": "RescaleAction", "args": [-0.5, 0.5]}),
    C(GYM, "wrappers.FlattenObservation(make(id))", CART, "gymnasium_wrapper", {"wrapper": "FlattenObservation"}),
    C(GYM, "wrappers.RecordVideo(make(id, render_mode='rgb_array'), tmp)", CART, "gymnasium_record_video",
      needs=("moviepy",)),
    C(GYM, f"wrappers.vector.RecordEpisodeStatistics({VEC})", CART, "gymnasium_vector_wrapper",
      {"wrapper": "RecordEpisodeStatistics"}),
    # NEXT_STEP is gymjax's default, as Gymnasium's: its observation wrappers take it.
    C(GYM, f"wrappers.vector.NormalizeObservation({VEC})", CART, "gymnasium_vector_wrapper",
      {"wrapper": "NormalizeObservation"}),  # in-process: tests/wrappers/test_session.py
    C(GYM, f"wrappers.vector.NormalizeReward({VEC})", CART, "gymnasium_vector_wrapper",
      {"wrapper": "NormalizeReward"}),
    C(GYM, f"wrappers.vector.ClipAction({VEC})", PEND, "gymnasium_vector_wrapper", {"wrapper": "ClipAction"}),
    C(GYM, f"wrappers.vector.RescaleAction({VEC}, -0.5, 0.5)", PEND, "gymnasium_vector_wrapper",
      {"wrapper": "RescaleAction", "args": [-0.5, 0.5]}),
    C(GYM, f"wrappers.vector.DictInfoToList({VEC})", CART, "gymnasium_vector_wrapper",
      {"wrapper": "DictInfoToList"}),
    C(GYM, f"wrappers.vector.NumpyToTorch({VEC})", CART, "gymnasium_vector_wrapper", {"wrapper": "NumpyToTorch"},
      needs=("torch",)),
    # SAME_STEP asked for by name: Gymnasium's observation wrappers refuse it (the documented outcome).
    C(GYM, "wrappers.vector.NormalizeObservation(make_vec(id, 4, 'vector_entry_point', autoreset_mode=SAME_STEP))",
      CART, "gymnasium_vector_wrapper", {"wrapper": "NormalizeObservation", "autoreset_mode": "SAME_STEP"},
      refused="Expected autoreset_mode to be NEXT_STEP"),
    C(GYM, "wrappers.vector.NumpyToTorch(make_vec(id, 4, 'vector_entry_point', autoreset_mode=SAME_STEP))",
      CART, "gymnasium_vector_wrapper", {"wrapper": "NumpyToTorch", "autoreset_mode": "SAME_STEP"},
      needs=("torch",), xfail=DLPACK_BOOL),
    C(GYM, "wrappers.vector.NumpyToTorch(make_vec(id, 4, 'sync', vector_kwargs={'autoreset_mode': SAME_STEP}))",
      "CartPole-v1", "gymnasium_vector_wrapper", {"wrapper": "NumpyToTorch", "autoreset_mode": "SAME_STEP"},
      needs=("torch",), xfail=DLPACK_BOOL),
    C(GYM, "obs *= 1.0 and wrappers.vector.FlattenObservation(make_vec(id, 4)) on reset()'s obs", CART,
      "gymnasium_reset_writable"),  # in-process: tests/wrappers/test_gymnasium.py
    C("Minari-style", "reset(seed=secrets.randbits(60)) on make(id) and make_vec(id, 4), as DataCollector seeds",
      CART, "minari_style_seeds", cheap=True),
    C("RLlib-style", f"NEXT_STEP loop over {VEC}, every transition vs make(id) alone", CART,
      "rllib_style_next_step_loop"),  # in-process: test_conformance.py's lockstep
    C("RLlib-style", "make('gymjax:<id>') and make_vec('gymjax:<id>', 2) in a process that never imported gymjax",
      CART, "module_prefixed_id", cheap=True),
    C("Tianshou-style", "110 x make(id) + reset + step (DQN example's 10 train + 100 test envs), under 20 s", CART,
      "many_envs_compile_once", cheap=True),
    C(GYM, "make_vec(id, 2, vectorization_mode='sync')", CART, "gymnasium_make_vec", {"mode": "sync"}, cheap=True),
    C(GYM, "make_vec(id, 2, 'async') (fork, the default)", CART, "gymnasium_make_vec", {"mode": "async"},
      timeout_s=60),  # the MuJoCo id's case below is cheap
    # Making a MuJoCo env starts no JAX runtime (the engine is chosen without one), so a client that
    # makes one env for the spaces and then forks its workers works as it does on CartPole.
    C(GYM, "make_vec(id, 2, 'async') (fork, the default) on a MuJoCo id", "JaxHopper-v0", "gymnasium_make_vec",
      {"mode": "async"}, cheap=True, timeout_s=90),
    # JAX's threads do not survive a fork: the workers refuse at once, naming 'spawn', instead of
    # hanging at their first JAX call.
    C(GYM, "make_vec(id, 2, 'async') (fork) after a gymjax env ran", CART, "gymnasium_make_vec",
      {"mode": "async", "jax_ran_first": True}, cheap=True, timeout_s=60,
      refused="Start worker processes with 'spawn' or 'forkserver'"),
    C(GYM, "make_vec(id, 2, 'async', vector_kwargs={'context': 'spawn'})", CART, "gymnasium_make_vec",
      {"mode": "async", "vector_kwargs": {"context": "spawn"}}, timeout_s=180),
    C(GYM, "pickle of make(id), stepped; the clone continues alike", CART, "gymnasium_clone",
      {"how": "pickle"}),  # in-process: test_conformance.py
    C(GYM, "copy.deepcopy of make(id), stepped; the clone continues alike", CART, "gymnasium_clone",
      {"how": "copy.deepcopy"}),
    C(GYM, "cloudpickle of make(id), stepped; the clone continues alike", CART, "gymnasium_clone",
      {"how": "cloudpickle"}),
    C(GYM, "pickle of make(id, backend='mujoco'), stepped", ANT, "gymnasium_clone", {"how": "pickle", **C_ANT}),
    C(GYM, "unwrapped.model/data/dt/frame_skip/init_qpos/init_qvel/state_vector() vs Ant-v5", ANT,
      "gymnasium_mujoco_attributes", {"reference_id": "Ant-v5"}, timeout_s=300),
    C(GYM, "the same attributes, make(id, backend='mujoco')", ANT, "gymnasium_mujoco_attributes",
      {"reference_id": "Ant-v5", **C_ANT}, cheap=True),
    C(GYM, "reset(seed=0, options={})", CART, "gymnasium_reset_options"),
    C(GYM, "reset(seed=0, options={}), backend='mujoco'", ANT, "gymnasium_reset_options", C_ANT),
    C(GYM, "make(id, render_mode='rgb_array', camera_id=0), backend='mujoco'", ANT, "gymnasium_render_option",
      {"camera_id": 0, **C_ANT}),
    C(GYM, "make(id, render_mode='rgb_array', camera_name='track'), backend='mujoco'", ANT,
      "gymnasium_render_option", {"camera_name": "track", **C_ANT}),
    C(GYM, "make(id, render_mode='rgb_array', max_geom=500), backend='mujoco'", ANT, "gymnasium_render_option",
      {"max_geom": 500, **C_ANT}),
    C(GYM, "make(id, render_mode='rgb_array', visual_options={mjVIS_CONTACTPOINT: True}), backend='mujoco'", ANT,
      "gymnasium_render_option", {"contact_points": True, **C_ANT}),
    C(GYM, "make(id, render_mode='human') (SDL dummy display)", CART, "gymnasium_render_human",
      needs=("pygame",)),
    C(GYM, "make(id, render_mode='human', backend='mujoco')", ANT, "gymnasium_render_human", C_ANT),
    C(SB3, "common.env_checker.check_env(make(id))", CART, "sb3_check_env", needs=SB3_, cheap=True),
    C(SB3, "common.env_checker.check_env(make(id))", PEND, "sb3_check_env", needs=SB3_),
    C(SB3, "make_vec_env(id, n_envs=2), random steps", CART, "sb3_make_vec_env", needs=SB3_, cheap=True),
    # Fewer updates than SB3's defaults: on 2 busy cores SAC's default (one gradient step per env
    # step) runs ~6 updates/s whatever the env (Gymnasium's Pendulum-v1 included).
    C(SB3, "PPO('MlpPolicy', id, n_steps=512, batch_size=128, n_epochs=4).learn(2048)", CART, "sb3_learn",
      {"algo": "PPO", "steps": 2048, "n_steps": 512, "batch_size": 128, "n_epochs": 4}, needs=SB3_),
    C(SB3, "A2C('MlpPolicy', id, n_steps=50).learn(2000)", CART, "sb3_learn", {"algo": "A2C", "n_steps": 50},
      needs=SB3_),
    C(SB3, "SAC('MlpPolicy', id, learning_starts=200, train_freq=16).learn(2000)", PEND, "sb3_learn",
      {"algo": "SAC", "learning_starts": 200, "train_freq": 16}, needs=SB3_, timeout_s=240),
    C(SB3, "VecNormalize(make_vec_env(id, 2)) + PPO(n_epochs=2).learn(512)", PEND, "sb3_vec_wrapper",
      {"wrapper": "VecNormalize"}, needs=SB3_),
    C(SB3, "VecFrameStack(make_vec_env(id, 2), 4) + PPO(n_epochs=2).learn(512)", CART, "sb3_vec_wrapper",
      {"wrapper": "VecFrameStack"}, needs=SB3_),
    C(SB3, "VecVideoRecorder(make_vec_env(id, 2, render_mode='rgb_array'))", CART, "sb3_video_recorder",
      needs=(*SB3_, "moviepy")),
    C(SB3, "PPO save / load / evaluate_policy", CART, "sb3_save_load", needs=SB3_),
    C(SB3, "PPO(n_epochs=2).learn(1024) on gymjax.wrappers.sb3.SB3VecEnv(id, 8)", CART, "sb3_gymjax_vec_env",
      needs=SB3_),  # in-process: tests/wrappers/test_sb3.py
    C(ZOO, "rl_zoo3.train --algo ppo -n 2000 --gym-packages gymjax, then rl_zoo3.enjoy -n 300 --no-render", CART,
      "zoo_train", {"enjoy": True}, needs=ZOO_, timeout_s=300),
    C(ZOO, "rl_zoo3.train ... --vec-env subproc", CART, "zoo_train", {"extra": ["--vec-env", "subproc"]},
      needs=ZOO_, timeout_s=240),
    C(ZOO, "rl_zoo3.train ... -conf my.yml", CART, "zoo_train", {"conf": True}, needs=ZOO_, timeout_s=240),
    C(TRL, "check_env_specs(GymEnv(id))", CART, "torchrl_check_env_specs", needs=TRL_),
    C(TRL, "check_env_specs(GymEnv(id))", PEND, "torchrl_check_env_specs", needs=TRL_),
    # GymEnv takes backend= itself (the gym library to import): the option never reaches gymjax.
    C(TRL, "check_env_specs(GymEnv(id, backend='mujoco'))", ANT, "torchrl_check_env_specs", C_ANT, needs=TRL_,
      xfail="module 'mujoco' has no attribute 'make'"),
    C(TRL, "check_env_specs(GymEnv(id, engine='mujoco'))", ANT, "torchrl_check_env_specs", {"engine": "mujoco"},
      needs=TRL_),
    C(TRL, "GymWrapper(make_vec(id, 4, 'vector_entry_point', autoreset_mode=SAME_STEP)): check_env_specs, "
      "rollout(100)", CART, "torchrl_gym_wrapper", {"autoreset_mode": "same_step"}, needs=TRL_),
    # torchrl asks for SAME_STEP and refuses Gymnasium's default by name: the README says so.
    C(TRL, f"GymWrapper({VEC}) (NEXT_STEP, Gymnasium's default)", CART, "torchrl_gym_wrapper", needs=TRL_,
      refused="auto-reset mode must be one of SAME_STEP or DISABLED"),
    *[
        C("CleanRL", f"{script} {' '.join(args)}", env_id, "cleanrl_script", {"script": script, "args": args},
          needs=CLEANRL_, env_var="CLEANRL_DIR", timeout_s=240, xfail=xfail)
        for script, env_id, args, xfail in [
            ("ppo.py", CART, ("--total-timesteps", "2048"), None),
            ("ppo.py", "CartPole-v1", ("--total-timesteps", "2048"), None),
            ("ppo_continuous_action.py", PEND, SHORT, CLEANRL_GYM_029),
            ("ppo_continuous_action.py", INV, SHORT, CLEANRL_GYM_029),
            ("ppo_continuous_action.py", "Pendulum-v1", SHORT, CLEANRL_GYM_029),
        ]
    ],
    C(PZ, "parallel_api_test(PettingZooEnv())", MULTI_ANT, "pettingzoo_api_test", needs=("pettingzoo",),
      timeout_s=300),
    C(PZ, "parallel_api_test(PettingZooEnv(engine='mujoco'))", MULTI_ANT, "pettingzoo_api_test", PZ_MUJOCO,
      needs=("pettingzoo",)),  # in-process: tests/envs/test_multi_agent.py
    C(PZ, "parallel_seed_test(lambda: PettingZooEnv(engine='mujoco'))", MULTI_ANT, "pettingzoo_seed_test",
      PZ_MUJOCO, needs=("pettingzoo",)),
    C(PZ, "render_test(parallel_to_aec(PettingZooEnv(engine='mujoco', render_mode=...)))", MULTI_ANT,
      "pettingzoo_render_test", PZ_MUJOCO, needs=("pettingzoo",)),
    C("SBX", "PPO('MlpPolicy', make(id)).learn(512)", PEND, "sbx_learn", {"vec": False}, needs=("sbx",),
      timeout_s=240),
    C("SBX", "PPO('MlpPolicy', make_vec_env(id, 4)).learn(512)", CART, "sbx_learn", {"vec": True}, needs=("sbx",),
      timeout_s=240),
    C("skrl", "wrap_env(make(id)): reset, step", PEND, "skrl_wrap_env", {"num_envs": None}, needs=("skrl",)),
    C("skrl", "wrap_env(make_vec(id, 4)): reset, step", CART, "skrl_wrap_env", {"num_envs": 4}, needs=("skrl",)),
    C("Tianshou", "DummyVectorEnv([lambda: make(id)] * 10): reset, step, reset ended", CART,
      "tianshou_dummy_vector_env", needs=("tianshou",)),
    C("Minari", "DataCollector(make(id)): 3 episodes, create_dataset", CART, "minari_collect", needs=("minari",)),
    # Another collection's envs, by id only, through gymjax (gymjax.envs.external).
    C(SB3, "PPO('MlpPolicy', id, n_steps=512, batch_size=128, n_epochs=4).learn(2048)", GYMNAX_CART, "sb3_learn",
      {"algo": "PPO", "steps": 2048, "n_steps": 512, "batch_size": 128, "n_epochs": 4}, needs=("gymnax",)),
    C(SB3, "SAC('MlpPolicy', id, learning_starts=200, train_freq=16).learn(1000)", BRAX_PEND, "sb3_learn",
      {"algo": "SAC", "steps": 1000, "learning_starts": 200, "train_freq": 16},
      needs=("brax",), timeout_s=300),
    C(GYM, f"wrappers.vector.NormalizeObservation({VEC})", GYMNAX_MINATAR, "gymnasium_vector_wrapper",
      {"wrapper": "NormalizeObservation"}, needs=("gymnax",)),
    C(TRL, "check_env_specs(GymEnv(id))", PLAYGROUND_CART, "torchrl_check_env_specs",
      needs=(*TRL_, "mujoco_playground"), timeout_s=300),
    C("CleanRL", "ppo.py --total-timesteps 2048", GYMNAX_CART, "cleanrl_script",
      {"script": "ppo.py", "args": ("--total-timesteps", "2048")}, needs=(*CLEANRL_, "gymnax"), env_var="CLEANRL_DIR",
      timeout_s=240),
]
