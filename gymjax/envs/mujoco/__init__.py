"""Envs simulated by MuJoCo MJX."""

from gymjax.envs.mujoco.ant import Ant
from gymjax.envs.mujoco.base import SOLVER_PRESETS, MjxEnv
from gymjax.envs.mujoco.inverted_pendulum import InvertedPendulum
from gymjax.envs.mujoco.multi_ant import AGENT_CONFS, MultiAnt, MultiState

__all__ = ["AGENT_CONFS", "Ant", "InvertedPendulum", "MjxEnv", "MultiAnt", "MultiState", "SOLVER_PRESETS"]
