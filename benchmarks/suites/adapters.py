"""The adapters suite: gymjax's SB3 and PettingZoo adapters against the ecosystem's own.

- SB3: :class:`~gymjax.wrappers.sb3.SB3VecEnv` over JaxAnt-v0 (both backends)
  against SB3's ``DummyVecEnv`` and ``SubprocVecEnv`` of
  ``Monitor(gymnasium.make("Ant-v5"))``, env steps/s at N envs.
- PettingZoo: :class:`~gymjax.wrappers.pettingzoo.PettingZooEnv` (one
  ``ParallelEnv``, JaxMultiAnt-v0 2x4) against Gymnasium-Robotics' MaMuJoCo
  ``mamujoco_v1.parallel_env("Ant", "2x4")``, env steps/s of one env (each step
  moves both agents); and the batched :class:`PettingZooVectorEnv` at N envs.
"""

from __future__ import annotations

import functools

from benchmarks.harness import Stack, Stepper, config_stack, measure_sizes
from benchmarks.suites.env import PROCESS_MAX_N, random_actions

NAME = "adapters"
SIZES = (16, 64)
QUICK_SIZES = (4,)
QUICK_MJX = "quick mode compiles MJX only in the env suite"

work = measure_sizes


def default_sizes(quick: bool, backend: str) -> tuple[int, ...]:
    return QUICK_SIZES if quick else SIZES


# -- SB3 ----------------------------------------------------------------------------------------


def _sb3_stepper(env) -> Stepper:
    env.reset()
    actions = random_actions(env.action_space, env.num_envs).astype("float32")
    return Stepper(functools.partial(env.step, actions), env.close, env)


def sb3_vec_env(n: int, env_id: str = "JaxAnt-v0", **env_kwargs) -> Stepper:
    """gymjax's SB3 ``VecEnv``: one jitted step for all ``n`` envs."""
    from gymjax.wrappers.sb3 import SB3VecEnv

    return _sb3_stepper(SB3VecEnv(env_id, n, **env_kwargs))


def _monitored_ant():
    import gymnasium
    from stable_baselines3.common.monitor import Monitor

    return Monitor(gymnasium.make("Ant-v5"))


def sb3_dummy(n: int) -> Stepper:
    """SB3's ``DummyVecEnv`` of ``Monitor(gymnasium.make("Ant-v5"))``: one env after another."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    return _sb3_stepper(DummyVecEnv([_monitored_ant] * n))


def sb3_subproc(n: int) -> Stepper:
    """SB3's ``SubprocVecEnv`` of the same: one process per env."""
    from stable_baselines3.common.vec_env import SubprocVecEnv

    return _sb3_stepper(SubprocVecEnv([_monitored_ant] * n))


# -- PettingZoo ---------------------------------------------------------------------------------


def _parallel_stepper(env) -> Stepper:
    """Steps a PettingZoo ``ParallelEnv``, resetting it when its episode has ended (``agents`` empty)."""
    env.reset(seed=0)
    actions = {a: random_actions(env.action_space(a), 1)[0] for a in env.possible_agents}

    def step() -> None:
        if not env.agents:
            env.reset()
        env.step(actions)

    return Stepper(step, env.close, env)


def pettingzoo_parallel(n: int, **env_kwargs) -> Stepper:
    """gymjax's ``PettingZooEnv`` (one env, ``n`` is 1): JaxMultiAnt-v0, agents 2x4."""
    from gymjax.wrappers.pettingzoo import PettingZooEnv

    assert n == 1, "a ParallelEnv is one env"
    return _parallel_stepper(PettingZooEnv("JaxMultiAnt-v0", agent_conf="2x4", **env_kwargs))


def mamujoco_parallel(n: int) -> Stepper:
    """Gymnasium-Robotics' MaMuJoCo Ant 2x4 (one env, ``n`` is 1)."""
    from gymnasium_robotics import mamujoco_v1

    assert n == 1, "a ParallelEnv is one env"
    return _parallel_stepper(mamujoco_v1.parallel_env("Ant", "2x4"))


def pettingzoo_vector(n: int, **env_kwargs) -> Stepper:
    """gymjax's ``PettingZooVectorEnv``: ``n`` JaxMultiAnt-v0 2x4 envs in one jitted step."""
    from gymjax.wrappers.pettingzoo import PettingZooVectorEnv

    env = PettingZooVectorEnv("JaxMultiAnt-v0", num_envs=n, agent_conf="2x4", **env_kwargs)
    env.reset(seed=0)
    actions = {a: random_actions(env.action_space(a), n) for a in env.possible_agents}
    return Stepper(functools.partial(env.step, actions), None, env)


# -- the stacks ---------------------------------------------------------------------------------

SB3 = ("stable_baselines3", "torch")
PZ = ("pettingzoo",)
MONITORED = 'Monitor(gymnasium.make("Ant-v5")), MuJoCo C'

STACKS = (
    *(
        config_stack(
            "SB3VecEnv, JaxAnt-v0",
            sb3_vec_env,
            config,
            note="gymjax.wrappers.sb3.SB3VecEnv",
            mjx_quick_reason=QUICK_MJX,
            family="sb3",
            needs=SB3,
        )
        for config in ("mujoco", "mjx accurate")
    ),
    Stack(
        "SB3 DummyVecEnv, Ant-v5",
        sb3_dummy,
        ours=False,
        family="sb3",
        needs=SB3,
        note=f"DummyVecEnv of {MONITORED}, one env after another",
    ),
    Stack(
        "SB3 SubprocVecEnv, Ant-v5",
        sb3_subproc,
        ours=False,
        family="sb3",
        needs=SB3,
        processes=True,
        note=f"SubprocVecEnv of {MONITORED}, one process per env",
        max_n=PROCESS_MAX_N,
        max_n_reason=f"one process per env: above {PROCESS_MAX_N} envs it would measure the scheduler",
    ),
    *(
        config_stack(
            "PettingZooEnv, JaxMultiAnt-v0 2x4",
            pettingzoo_parallel,
            config,
            sizes=(1,),
            note="gymjax.wrappers.pettingzoo.PettingZooEnv (a ParallelEnv, one env)",
            mjx_quick_reason=QUICK_MJX,
            family="pettingzoo",
            needs=PZ,
        )
        for config in ("mujoco", "mjx accurate")
    ),
    Stack(
        "PettingZooVectorEnv, JaxMultiAnt-v0 2x4 (mujoco)",
        functools.partial(pettingzoo_vector, backend="mujoco"),
        ours=True,
        family="pettingzoo-batched",
        needs=PZ,
        note="gymjax's batched multi-agent env (no peer batches MaMuJoCo: no ratio)",
    ),
    Stack(
        "MaMuJoCo Ant 2x4 ParallelEnv",
        mamujoco_parallel,
        ours=False,
        family="pettingzoo",
        needs=PZ + ("gymnasium_robotics",),
        sizes=(1,),
        note='gymnasium_robotics.mamujoco_v1.parallel_env("Ant", "2x4"), MuJoCo C',
    ),
)

INTERNAL_RATIOS = (("SB3VecEnv, JaxAnt-v0 (mujoco)", "SB3VecEnv, JaxAnt-v0 (mjx accurate)"),)
