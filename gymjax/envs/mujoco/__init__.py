"""Envs simulated by MuJoCo: MJX, or MuJoCo C from inside jit (``backend="mujoco"``)."""

from gymjax.envs.mujoco.ant import Ant
from gymjax.envs.mujoco.base import BACKENDS, SOLVER_PRESETS, MujocoEnv
from gymjax.envs.mujoco.host import HostData, NotDifferentiableError
from gymjax.envs.mujoco.inverted_pendulum import InvertedPendulum
from gymjax.envs.mujoco.multi_ant import AGENT_CONFS, MultiAnt

__all__ = [
    "AGENT_CONFS",
    "Ant",
    "BACKENDS",
    "HostData",
    "InvertedPendulum",
    "MujocoEnv",
    "MultiAnt",
    "NotDifferentiableError",
    "SOLVER_PRESETS",
]
