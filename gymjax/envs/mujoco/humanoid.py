"""JaxHumanoid-v0: Gymnasium's Humanoid-v5 on MuJoCo C or MJX (``engine=``; default ``"auto"``).

Source matched: ``gymnasium/envs/mujoco/humanoid_v5.py``, on its ``humanoid.xml``.
Observation (defaults, 348): ``qpos[2:]`` (22), ``qvel`` (23), then per body but the world
``cinert`` (130), ``cvel`` (78), the actuated ``qfrc_actuator[6:]`` (17) and ``cfrc_ext``
(78), each part switchable by its ``include_*_in_observation`` option. Reward
``forward_reward_weight * d(centre of mass x)/dt + healthy_reward * is_healthy -
ctrl_cost_weight * sum(a^2) - clip(contact_cost_weight * sum(cfrc_ext^2), *contact_cost_range)``.

The centre of mass weighs the bodies' ``xipos`` by the model's nominal ``body_mass`` (a
randomized mass moves the bodies but not these weights). On MJX the model's PGS solver
runs as Newton (MJX has no PGS; ``base.MJX_SOLVER_FOR``), the XML itself unchanged.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import mujoco
import numpy as np

from gymjax.envs import options
from gymjax.envs.mujoco.base import MujocoEnv, change, control_cost, field, strictly_inside

DEFAULT_CAMERA_CONFIG = {"trackbodyid": 1, "distance": 4.0, "lookat": (0.0, 0.0, 2.0), "elevation": -20.0}
# The parts of the observation after qpos and qvel, in order: (option, MjData field, first index).
BODY_PARTS = (
    ("include_cinert_in_observation", "cinert", 1),  # the world body's are constant
    ("include_cvel_in_observation", "cvel", 1),
    ("include_qfrc_actuator_in_observation", "qfrc_actuator", 6),  # the free joint has no actuator
    ("include_cfrc_ext_in_observation", "cfrc_ext", 1),
)


def read_body_parts(env: MujocoEnv, include: dict[str, Any]) -> list[str]:
    """Checks the ``include_*_in_observation`` options; sets ``env.observation_space``;
    returns the option names that are on."""
    m = env.mj_model
    blank = mujoco.MjData(m)
    size = m.nq + m.nv - 2 * env.exclude_current_positions_from_observation
    chosen = []
    for option, name, start in BODY_PARTS:
        if options.flag(env, option, include[option]):
            chosen.append(option)
            size += int(np.prod(np.shape(getattr(blank, name)[start:])))
    env.observation_space = env.observation_box(size)
    return chosen


def body_parts_observation(env: MujocoEnv, data, chosen: list[str]) -> jnp.ndarray:
    qpos = data.qpos[2:] if env.exclude_current_positions_from_observation else data.qpos
    parts = [qpos, data.qvel]
    for option, name, start in BODY_PARTS:
        if option in chosen:
            parts.append(field(data, name)[start:].ravel())
    return jnp.concatenate(parts)


class Humanoid(MujocoEnv):
    """Bipedal walking: 348-dim observation, 17 torque actions in ``[-0.4, 0.4]``."""

    data_fields = ("xipos", "cinert", "cvel", "qfrc_actuator", "cfrc_ext", "ten_length", "ten_velocity")
    differenced_fields = ("xipos",)  # for the centre of mass' velocity
    reset_info_keys = ("x_position", "y_position", "tendon_length", "tendon_velocity", "distance_from_origin")

    def __init__(
        self,
        xml_file: str = "humanoid.xml",
        frame_skip: int = 5,
        default_camera_config: dict[str, Any] = DEFAULT_CAMERA_CONFIG,
        forward_reward_weight: float = 1.25,
        ctrl_cost_weight: float = 0.1,
        contact_cost_weight: float = 5e-7,
        contact_cost_range: tuple[float, float] = (-np.inf, 10.0),
        healthy_reward: float = 5.0,
        terminate_when_unhealthy: bool = True,
        healthy_z_range: tuple[float, float] = (1.0, 2.0),
        reset_noise_scale: float = 1e-2,
        exclude_current_positions_from_observation: bool = True,
        include_cinert_in_observation: bool = True,
        include_cvel_in_observation: bool = True,
        include_qfrc_actuator_in_observation: bool = True,
        include_cfrc_ext_in_observation: bool = True,
        **kwargs: Any,
    ):
        super().__init__(xml_file, frame_skip, default_camera_config, **kwargs)
        self.forward_reward_weight = options.real(self, "forward_reward_weight", forward_reward_weight)
        self.ctrl_cost_weight = options.real(self, "ctrl_cost_weight", ctrl_cost_weight)
        self.contact_cost_weight = options.real(self, "contact_cost_weight", contact_cost_weight)
        self.contact_cost_range = options.interval(self, "contact_cost_range", contact_cost_range)
        self.healthy_reward = options.real(self, "healthy_reward", healthy_reward)
        self.terminate_when_unhealthy = options.flag(self, "terminate_when_unhealthy", terminate_when_unhealthy)
        self.healthy_z_range = options.interval(self, "healthy_z_range", healthy_z_range)
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
        mass = np.asarray(self.mj_model.body_mass)
        self._mass_weights = np.asarray(mass / mass.sum(), np.float32)  # NumPy: no JAX runtime at make

    def outcome(self, before, after, action):
        x_velocity, y_velocity = (self._mass_weights @ change(before, after, "xipos"))[:2] / self.dt
        healthy = self.is_healthy(after)
        forward_reward = self.forward_reward_weight * x_velocity
        healthy_reward = self.healthy_reward * healthy
        ctrl_cost = control_cost(self.ctrl_cost_weight, action)
        contact_cost = self.contact_cost(after)
        info = {
            **self.reset_info(after),
            "x_velocity": x_velocity,
            "y_velocity": y_velocity,
            "reward_survive": healthy_reward,
            "reward_forward": forward_reward,
            "reward_ctrl": -ctrl_cost,
            "reward_contact": -contact_cost,
        }
        reward = forward_reward + healthy_reward - ctrl_cost - contact_cost
        return reward, ~healthy & self.terminate_when_unhealthy, info

    # Humanoid-v5's properties, as functions of a physics state.

    def is_healthy(self, data):
        return strictly_inside(data.qpos[2], self.healthy_z_range)

    def contact_cost(self, data):
        cost = self.contact_cost_weight * jnp.sum(jnp.square(field(data, "cfrc_ext")))
        return jnp.clip(cost, *self.contact_cost_range)

    def reset_info(self, data):
        return {
            "x_position": data.qpos[0],
            "y_position": data.qpos[1],
            "tendon_length": field(data, "ten_length"),
            "tendon_velocity": field(data, "ten_velocity"),
            "distance_from_origin": jnp.linalg.norm(data.qpos[:2]),
        }

    def observation(self, data):
        return body_parts_observation(self, data, self.body_parts)
