"""JaxHumanoidStandup-v0: Gymnasium's HumanoidStandup-v5 on MuJoCo C or MJX (``engine=``).

Source matched: ``gymnasium/envs/mujoco/humanoidstandup_v5.py``, on its ``humanoidstandup.xml``
(the humanoid lying down). Observation as Humanoid-v5's (348 by default). Reward
``qpos[2] / timestep - ctrl_cost_weight * sum(a^2) - clip(impact_cost_weight *
sum(cfrc_ext^2), *impact_cost_range) + 1``; never terminates.

``uph_cost_weight`` is taken, as by Gymnasium, and unused: its docstring weighs the
``reward_linup`` term by it, its code does not. We follow the code.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from gymjax.envs import options
from gymjax.envs.mujoco.base import MujocoEnv, control_cost, field
from gymjax.envs.mujoco.humanoid import body_parts_observation, read_body_parts

DEFAULT_CAMERA_CONFIG = {"trackbodyid": 1, "distance": 4.0, "lookat": (0.0, 0.0, 0.8925), "elevation": -20.0}


class HumanoidStandup(MujocoEnv):
    """Standing up: 348-dim observation, 17 torque actions in ``[-0.4, 0.4]``."""

    data_fields = ("cinert", "cvel", "qfrc_actuator", "cfrc_ext", "ten_length", "ten_velocity")
    reset_info_keys = ("x_position", "y_position", "z_distance_from_origin", "tendon_length", "tendon_velocity")

    def __init__(
        self,
        xml_file: str = "humanoidstandup.xml",
        frame_skip: int = 5,
        default_camera_config: dict[str, Any] = DEFAULT_CAMERA_CONFIG,
        uph_cost_weight: float = 1.0,
        ctrl_cost_weight: float = 0.1,
        impact_cost_weight: float = 5e-7,
        impact_cost_range: tuple[float, float] = (-np.inf, 10.0),
        reset_noise_scale: float = 1e-2,
        exclude_current_positions_from_observation: bool = True,
        include_cinert_in_observation: bool = True,
        include_cvel_in_observation: bool = True,
        include_qfrc_actuator_in_observation: bool = True,
        include_cfrc_ext_in_observation: bool = True,
        **kwargs: Any,
    ):
        super().__init__(xml_file, frame_skip, default_camera_config, **kwargs)
        self.uph_cost_weight = options.real(self, "uph_cost_weight", uph_cost_weight)
        self.ctrl_cost_weight = options.real(self, "ctrl_cost_weight", ctrl_cost_weight)
        self.impact_cost_weight = options.real(self, "impact_cost_weight", impact_cost_weight)
        self.impact_cost_range = options.interval(self, "impact_cost_range", impact_cost_range)
        self.reset_noise_scale = options.real(self, "reset_noise_scale", reset_noise_scale, minimum=0.0)
        self.exclude_current_positions_from_observation = options.flag(
            self, "exclude_current_positions_from_observation", exclude_current_positions_from_observation
        )
        self.body_parts = read_body_parts(self, {
            "include_cinert_in_observation": include_cinert_in_observation,
            "include_cvel_in_observation": include_cvel_in_observation,
            "include_qfrc_actuator_in_observation": include_qfrc_actuator_in_observation,
            "include_cfrc_ext_in_observation": include_cfrc_ext_in_observation,
        })

    def outcome(self, before, after, action):
        uph_cost = after.qpos[2] / float(self.mj_model.opt.timestep)
        quad_ctrl_cost = control_cost(self.ctrl_cost_weight, action)
        quad_impact_cost = jnp.clip(
            self.impact_cost_weight * jnp.sum(jnp.square(field(after, "cfrc_ext"))), *self.impact_cost_range
        )
        info = {
            **self.reset_info(after),
            "reward_linup": uph_cost,
            "reward_quadctrl": -quad_ctrl_cost,
            "reward_impact": -quad_impact_cost,
        }
        return uph_cost - quad_ctrl_cost - quad_impact_cost + 1, False, info

    def reset_info(self, data):
        return {
            "x_position": data.qpos[0],
            "y_position": data.qpos[1],
            "z_distance_from_origin": data.qpos[2] - self.init_qpos[2],
            "tendon_length": field(data, "ten_length"),
            "tendon_velocity": field(data, "ten_velocity"),
        }

    def observation(self, data):
        return body_parts_observation(self, data, self.body_parts)
