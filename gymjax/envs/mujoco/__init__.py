"""Envs simulated by MuJoCo MJX."""

from gymjax.envs.mujoco.ant import Ant
from gymjax.envs.mujoco.base import SOLVER_PRESETS, MjxEnv
from gymjax.envs.mujoco.inverted_pendulum import InvertedPendulum

__all__ = ["Ant", "InvertedPendulum", "MjxEnv", "SOLVER_PRESETS"]
