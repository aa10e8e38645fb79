"""JaxInvertedDoublePendulum-v0: Gymnasium's InvertedDoublePendulum-v5 on MuJoCo C or MJX.

Source matched: ``gymnasium/envs/mujoco/inverted_double_pendulum_v5.py``, on its
``inverted_double_pendulum.xml``. Observation: the cart's ``qpos[0]``, ``sin`` and ``cos`` of
the two hinge angles, ``qvel`` clipped to ``[-10, 10]``, and the cart's constraint force
``qfrc_constraint[0]`` clipped likewise: 9 numbers.

The pole's tip is the model's ``tip`` site (``site_xpos[0]``), placed by MuJoCo's kinematics
through both hinges. Brax once took pole 2's base shifted straight up instead, so the "tip
height" ignored pole 2's angle and a fallen second pole was paid the alive bonus (Brax
#574). Here ``terminated = tip height <= 1``, and the terminating step pays no alive bonus.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from gymjax.envs import options
from gymjax.envs.mujoco.base import MujocoEnv, field


class InvertedDoublePendulum(MujocoEnv):
    """A double pole balanced on a cart: 9-dim observation, one force action in ``[-1, 1]``."""

    data_fields = ("site_xpos", "qfrc_constraint")
    reset_noise = ("uniform", "normal")

    def __init__(
        self,
        xml_file: str = "inverted_double_pendulum.xml",
        frame_skip: int = 5,
        default_camera_config: dict[str, Any] | None = None,  # v5's default; its DEFAULT_CAMERA_CONFIG is unused
        healthy_reward: float = 10.0,
        reset_noise_scale: float = 0.1,
        **kwargs: Any,
    ):
        super().__init__(xml_file, frame_skip, default_camera_config, **kwargs)
        self.healthy_reward = options.real(self, "healthy_reward", healthy_reward)
        self.reset_noise_scale = options.real(self, "reset_noise_scale", reset_noise_scale, minimum=0.0)
        if self.mj_model.nsite < 1:
            raise ValueError(f"InvertedDoublePendulum: {self.xml_path} has no site for the pole's tip")
        self.observation_space = self.observation_box(9)

    def tip(self, data):
        """The second pole's tip ``(x, y, z)``: site 0 of the model, as Gymnasium reads it."""
        return field(data, "site_xpos")[0]

    def outcome(self, before, after, action):
        x, _, y = self.tip(after)
        terminated = y <= 1
        v1, v2 = after.qvel[1], after.qvel[2]
        distance_penalty = 0.01 * x**2 + (y - 2) ** 2
        velocity_penalty = 1e-3 * v1**2 + 5e-3 * v2**2
        alive_bonus = self.healthy_reward * ~terminated
        info = {
            "reward_survive": alive_bonus,
            "distance_penalty": -distance_penalty,
            "velocity_penalty": -velocity_penalty,
        }
        return alive_bonus - distance_penalty - velocity_penalty, terminated, info

    def observation(self, data):
        angles = data.qpos[1:]
        constraint = jnp.clip(field(data, "qfrc_constraint"), -10.0, 10.0)[:1]
        return jnp.concatenate(
            [data.qpos[:1], jnp.sin(angles), jnp.cos(angles), jnp.clip(data.qvel, -10.0, 10.0), constraint]
        )
