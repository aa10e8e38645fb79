"""JaxHalfCheetah-v0: Gymnasium's HalfCheetah-v5 on MuJoCo C or MJX (``engine=``; default ``"auto"``).

Source matched: ``gymnasium/envs/mujoco/half_cheetah_v5.py``, on its ``half_cheetah.xml``.
Observation ``qpos[1:]`` (8) and ``qvel`` (9); reward ``forward_reward_weight * dx/dt -
ctrl_cost_weight * sum(a^2)``; never terminates. The forward velocity is the change of the
root's float64 ``x`` on the C engine: a good policy runs hundreds of metres in an episode.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from gymjax.envs import options
from gymjax.envs.mujoco.base import MujocoEnv, change, control_cost

DEFAULT_CAMERA_CONFIG = {"distance": 4.0}


class HalfCheetah(MujocoEnv):
    """Planar running: 17-dim observation, 6 torque actions in ``[-1, 1]``."""

    differenced_fields = ("qpos",)
    reset_noise = ("uniform", "normal")
    reset_info_keys = ("x_position",)

    def __init__(
        self,
        xml_file: str = "half_cheetah.xml",
        frame_skip: int = 5,
        default_camera_config: dict[str, Any] = DEFAULT_CAMERA_CONFIG,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 0.1,
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
        self.observation_space = self.observation_box(m.nq + m.nv - self.exclude_current_positions_from_observation)

    def outcome(self, before, after, action):
        x_velocity = change(before, after, "qpos")[0] / self.dt
        forward_reward = self.forward_reward_weight * x_velocity
        ctrl_cost = control_cost(self.ctrl_cost_weight, action)
        info = {
            "x_position": after.qpos[0],
            "x_velocity": x_velocity,
            "reward_forward": forward_reward,
            "reward_ctrl": -ctrl_cost,
        }
        return forward_reward - ctrl_cost, False, info

    def reset_info(self, data):
        return {"x_position": data.qpos[0]}

    def observation(self, data):
        qpos = data.qpos[1:] if self.exclude_current_positions_from_observation else data.qpos
        return jnp.concatenate([qpos, data.qvel])
