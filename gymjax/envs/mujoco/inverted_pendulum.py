"""JaxInvertedPendulum-v0: Gymnasium's InvertedPendulum-v5 on MuJoCo C or MJX (``engine=``; default ``"auto"``).

Source matched: ``gymnasium/envs/mujoco/inverted_pendulum_v5.py``. The
observation is ``[cart x, pole hinge angle, cart x_dot, hinge angular velocity]``,
read straight from ``qpos``/``qvel`` of Gymnasium's ``inverted_pendulum.xml``;
the pole angle (``obs[1]``) decides termination (``|angle| > 0.2`` rad).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from gymjax.envs import options
from gymjax.envs.mujoco.base import MujocoEnv

DEFAULT_CAMERA_CONFIG = {"trackbodyid": 0, "distance": 2.04}


class InvertedPendulum(MujocoEnv):
    """Cart-pole on MuJoCo: 4-dim observation, one force action in ``[-3, 3]``."""


    def __init__(
        self,
        xml_file: str = "inverted_pendulum.xml",
        frame_skip: int = 2,
        default_camera_config: dict[str, Any] = DEFAULT_CAMERA_CONFIG,
        reset_noise_scale: float = 0.01,
        **kwargs: Any,
    ):
        super().__init__(xml_file, frame_skip, default_camera_config, **kwargs)
        self.reset_noise_scale = options.real(self, "reset_noise_scale", reset_noise_scale, minimum=0.0)
        self.observation_space = self.observation_box(self.mj_model.nq + self.mj_model.nv)

    def outcome(self, before, after, action):
        obs = self.observation(after)
        terminated = ~jnp.isfinite(obs).all() | (jnp.abs(obs[1]) > 0.2)
        reward = jnp.where(terminated, 0.0, 1.0)
        return reward, terminated, {"reward_survive": reward}

    def observation(self, data):
        return jnp.concatenate([data.qpos, data.qvel])
