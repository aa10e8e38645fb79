"""Envs simulated by MuJoCo: MJX, or MuJoCo C from inside jit (``engine="mujoco"``).

One module per task; each is Gymnasium's ``<task>_v5.py`` on :class:`MujocoEnv`.
"""

from gymjax.envs.mujoco.ant import Ant
from gymjax.envs.mujoco.base import ENGINES, SOLVER_PRESETS, MujocoEnv
from gymjax.envs.mujoco.engine import HostData, NotDifferentiableError
from gymjax.envs.mujoco.half_cheetah import HalfCheetah
from gymjax.envs.mujoco.hopper import Hopper
from gymjax.envs.mujoco.humanoid import Humanoid
from gymjax.envs.mujoco.humanoid_standup import HumanoidStandup
from gymjax.envs.mujoco.inverted_double_pendulum import InvertedDoublePendulum
from gymjax.envs.mujoco.inverted_pendulum import InvertedPendulum
from gymjax.envs.mujoco.multi_agent import MultiAgentMujoco
from gymjax.envs.mujoco.multi_agent_graphs import SCENARIOS
from gymjax.envs.mujoco.multi_ant import AGENT_CONFS, MultiAnt
from gymjax.envs.mujoco.pusher import Pusher
from gymjax.envs.mujoco.reacher import Reacher
from gymjax.envs.mujoco.swimmer import Swimmer
from gymjax.envs.mujoco.walker2d import Walker2d

__all__ = [
    "AGENT_CONFS",
    "Ant",
    "ENGINES",
    "HalfCheetah",
    "Hopper",
    "HostData",
    "Humanoid",
    "HumanoidStandup",
    "InvertedDoublePendulum",
    "InvertedPendulum",
    "MujocoEnv",
    "MultiAgentMujoco",
    "MultiAnt",
    "NotDifferentiableError",
    "Pusher",
    "Reacher",
    "SCENARIOS",
    "SOLVER_PRESETS",
    "Swimmer",
    "Walker2d",
]
