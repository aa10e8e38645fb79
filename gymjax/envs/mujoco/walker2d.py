"""JaxWalker2d-v0: Gymnasium's Walker2d-v5 on MuJoCo C or MJX (``engine=``; default ``"auto"``).

Source matched: ``gymnasium/envs/mujoco/walker2d_v5.py``, on its ``walker2d_v5.xml`` (v5's
own model: both feet with the same friction). Observation ``qpos[1:]`` (8) and ``qvel``
clipped to ``[-10, 10]`` (9). Healthy while the torso height ``qpos[1]`` is strictly inside
``healthy_z_range`` and its angle ``qpos[2]`` strictly inside ``healthy_angle_range``.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from gymjax.envs import options
from gymjax.envs.mujoco.base import MujocoEnv, change, control_cost, strictly_inside

DEFAULT_CAMERA_CONFIG = {"trackbodyid": 2, "distance": 4.0, "lookat": (0.0, 0.0, 1.15), "elevation": -20.0}


class Walker2d(MujocoEnv):
    """Planar bipedal walking: 17-dim observation, 6 torque actions in ``[-1, 1]``."""

    differenced_fields = ("qpos",)
    reset_info_keys = ("x_position", "z_distance_from_origin")

    def __init__(
        self,
        xml_file: str = "walker2d_v5.xml",
        frame_skip: int = 4,
        default_camera_config: dict[str, Any] = DEFAULT_CAMERA_CONFIG,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 1e-3,
        healthy_reward: float = 1.0,
        terminate_when_unhealthy: bool = True,
        healthy_z_range: tuple[float, float] = (0.8, 2.0),
        healthy_angle_range: tuple[float, float] = (-1.0, 1.0),
        reset_noise_scale: float = 5e-3,
        exclude_current_positions_from_observation: bool = True,
        **kwargs: Any,
    ):
        super().__init__(xml_file, frame_skip, default_camera_config, **kwargs)
        self.forward_reward_weight = options.real(self, "forward_reward_weight", forward_reward_weight)
        self.ctrl_cost_weight = options.real(self, "ctrl_cost_weight", ctrl_cost_weight)
        self.healthy_reward = options.real(self, "healthy_reward", healthy_reward)
        self.terminate_when_unhealthy = options.flag(self, "terminate_when_unhealthy", terminate_when_unhealthy)
        self.healthy_z_range = options.interval(self, "healthy_z_range", healthy_z_range)
        self.healthy_angle_range = options.interval(self, "healthy_angle_range", healthy_angle_range)
        self.reset_noise_scale = options.real(self, "reset_noise_scale", reset_noise_scale, minimum=0.0)
        self.exclude_current_positions_from_observation = options.flag(
            self, "exclude_current_positions_from_observation", exclude_current_positions_from_observation
        )
        m = self.mj_model
        self.observation_space = self.observation_box(m.nq + m.nv - self.exclude_current_positions_from_observation)

    def is_healthy(self, data):
        z, angle = data.qpos[1], data.qpos[2]
        return strictly_inside(z, self.healthy_z_range) & strictly_inside(angle, self.healthy_angle_range)

    def outcome(self, before, after, action):
        x_velocity = change(before, after, "qpos")[0] / self.dt
        healthy = self.is_healthy(after)
        forward_reward = self.forward_reward_weight * x_velocity
        healthy_reward = self.healthy_reward * healthy
        ctrl_cost = control_cost(self.ctrl_cost_weight, action)
        info = {
            **self.reset_info(after),
            "x_velocity": x_velocity,
            "reward_forward": forward_reward,
            "reward_ctrl": -ctrl_cost,
            "reward_survive": healthy_reward,
        }
        return forward_reward + healthy_reward - ctrl_cost, ~healthy & self.terminate_when_unhealthy, info

    def reset_info(self, data):
        return {"x_position": data.qpos[0], "z_distance_from_origin": data.qpos[1] - self.init_qpos[1]}

    def observation(self, data):
        qpos = data.qpos[1:] if self.exclude_current_positions_from_observation else data.qpos
        return jnp.concatenate([qpos, jnp.clip(data.qvel, -10.0, 10.0)])
