"""JaxSwimmer-v0: Gymnasium's Swimmer-v5 on MuJoCo C or MJX (``engine=``; default ``"auto"``).

Source matched: ``gymnasium/envs/mujoco/swimmer_v5.py``, on its ``swimmer.xml`` (a
three-link body in a viscous fluid, RK4). Observation ``qpos[2:]`` (3) and ``qvel`` (5);
reward ``forward_reward_weight * dx/dt - ctrl_cost_weight * sum(a^2)``; never terminates.
The velocity is the change of the float64 ``x, y`` on the C engine.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from gymjax.envs import options
from gymjax.envs.mujoco.base import MujocoEnv, change, control_cost


class Swimmer(MujocoEnv):
    """Swimming: 8-dim observation, 2 torque actions in ``[-1, 1]``."""

    differenced_fields = ("qpos",)
    reset_info_keys = ("x_position", "y_position", "distance_from_origin")

    def __init__(
        self,
        xml_file: str = "swimmer.xml",
        frame_skip: int = 4,
        default_camera_config: dict[str, Any] | None = None,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 1e-4,
        reset_noise_scale: float = 0.1,
        exclude_current_positions_from_observation: bool = True,
        **kwargs: Any,
    ):
        super().__init__(xml_file, frame_skip, default_camera_config, **kwargs)
        self.forward_reward_weight = options.real(self, "forward_reward_weight", forward_reward_weight)
        self.ctrl_cost_weight = options.real(self, "ctrl_cost_weight", ctrl_cost_weight)
        self.reset_noise_scale = options.real(self, "reset_noise_scale", reset_noise_scale, minimum=0.0)
        self.exclude_current_positions_from_observation = options.flag(
            self, "exclude_current_positions_from_observation", exclude_current_positions_from_observation
        )
        m = self.mj_model
        self.observation_space = self.observation_box(
            m.nq + m.nv - 2 * self.exclude_current_positions_from_observation
        )

    def outcome(self, before, after, action):
        x_velocity, y_velocity = change(before, after, "qpos")[:2] / self.dt
        forward_reward = self.forward_reward_weight * x_velocity
        ctrl_cost = control_cost(self.ctrl_cost_weight, action)
        info = {
            **self.reset_info(after),
            "x_velocity": x_velocity,
            "y_velocity": y_velocity,
            "reward_forward": forward_reward,
            "reward_ctrl": -ctrl_cost,
        }
        return forward_reward - ctrl_cost, False, info

    def reset_info(self, data):
        return {
            "x_position": data.qpos[0],
            "y_position": data.qpos[1],
            "distance_from_origin": jnp.linalg.norm(data.qpos[:2]),
        }

    def observation(self, data):
        qpos = data.qpos[2:] if self.exclude_current_positions_from_observation else data.qpos
        return jnp.concatenate([qpos, data.qvel])
