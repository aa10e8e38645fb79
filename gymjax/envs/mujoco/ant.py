"""JaxAnt-v0: Gymnasium's Ant-v5 on MuJoCo C or MJX (``engine=``; default ``"auto"``).

Source matched: ``gymnasium/envs/mujoco/ant_v5.py`` (Gymnasium 1.x), on the very
``ant.xml`` Gymnasium ships. Same constructor options, observation layout,
reward terms, termination and ``info`` keys. Differences, all deliberate:

- observations are float32 (Ant-v5 declares float64);
- with ``engine="mujoco"`` the transitions are Ant-v5's own (same engine, same
  float64 state), up to the float32 observations;
- ``info`` has every key at reset too (zeros for the step-only ones), because a
  JAX pytree keeps one structure; the Gymnasium adapter reports them as Ant-v5 does.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import mujoco

from gymjax.envs import options
from gymjax.envs.mujoco.base import MujocoEnv, change, control_cost, field

DEFAULT_CAMERA_CONFIG = {"distance": 4.0}


class Ant(MujocoEnv):
    """Quadruped locomotion: 105-dim observation, 8 torque actions in ``[-1, 1]``.

    Observation (defaults): ``qpos[2:]`` (13), ``qvel`` (14), then the clipped
    external contact forces ``cfrc_ext[1:]`` flattened (13 bodies x 6 = 78).
    Reward: ``healthy_reward * is_healthy + forward_reward_weight * dx/dt
    - ctrl_cost_weight * sum(a^2) - contact_cost_weight * sum(clip(cfrc_ext)^2)``.
    """

    data_fields = ("xpos", "cfrc_ext")
    differenced_fields = ("xpos",)  # the main body's, for its velocity
    reset_noise = ("uniform", "normal")
    reset_info_keys = ("x_position", "y_position", "distance_from_origin")

    def __init__(
        self,
        xml_file: str = "ant.xml",
        frame_skip: int = 5,
        default_camera_config: dict[str, Any] = DEFAULT_CAMERA_CONFIG,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 0.5,
        contact_cost_weight: float = 5e-4,
        healthy_reward: float = 1.0,
        main_body: int | str = 1,
        terminate_when_unhealthy: bool = True,
        healthy_z_range: tuple[float, float] = (0.2, 1.0),
        contact_force_range: tuple[float, float] = (-1.0, 1.0),
        reset_noise_scale: float = 0.1,
        exclude_current_positions_from_observation: bool = True,
        include_cfrc_ext_in_observation: bool = True,
        **kwargs: Any,
    ):
        super().__init__(xml_file, frame_skip, default_camera_config, **kwargs)
        self.forward_reward_weight = options.real(self, "forward_reward_weight", forward_reward_weight)
        self.ctrl_cost_weight = options.real(self, "ctrl_cost_weight", ctrl_cost_weight)
        self.contact_cost_weight = options.real(self, "contact_cost_weight", contact_cost_weight)
        self.healthy_reward = options.real(self, "healthy_reward", healthy_reward)
        self.terminate_when_unhealthy = options.flag(self, "terminate_when_unhealthy", terminate_when_unhealthy)
        self.healthy_z_range = options.interval(self, "healthy_z_range", healthy_z_range)
        self.contact_force_range = options.interval(self, "contact_force_range", contact_force_range)
        self.reset_noise_scale = options.real(self, "reset_noise_scale", reset_noise_scale, minimum=0.0)
        self.exclude_current_positions_from_observation = options.flag(
            self, "exclude_current_positions_from_observation", exclude_current_positions_from_observation
        )
        self.include_cfrc_ext_in_observation = options.flag(
            self, "include_cfrc_ext_in_observation", include_cfrc_ext_in_observation
        )
        if not isinstance(main_body, (str, int)) or isinstance(main_body, bool):
            raise ValueError(f"Ant: main_body must be a body's id or name, got {main_body!r}")
        if isinstance(main_body, str):
            body_id = mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_BODY, main_body)
            if body_id < 0:
                raise ValueError(f"main_body {main_body!r} is not a body of {self.xml_path}")
            main_body = body_id
        self.main_body = int(main_body)

        m = self.mj_model
        obs_size = m.nq + m.nv - 2 * self.exclude_current_positions_from_observation
        obs_size += (m.nbody - 1) * 6 * self.include_cfrc_ext_in_observation
        self.observation_space = self.observation_box(obs_size)

    def outcome(self, before, after, action):
        x_velocity, y_velocity = change(before, after, "xpos")[self.main_body, :2] / self.dt
        healthy = self.is_healthy(after)
        forward_reward = self.forward_reward_weight * x_velocity
        healthy_reward = self.healthy_reward * healthy
        ctrl_cost = control_cost(self.ctrl_cost_weight, action)
        contact_cost = self.contact_cost(after)
        reward = forward_reward + healthy_reward - ctrl_cost - contact_cost
        info = {
            **self.reset_info(after),
            "x_velocity": x_velocity,
            "y_velocity": y_velocity,
            "reward_forward": forward_reward,
            "reward_ctrl": -ctrl_cost,
            "reward_contact": -contact_cost,
            "reward_survive": healthy_reward,
        }
        return reward, ~healthy & self.terminate_when_unhealthy, info

    # Ant-v5's properties, as functions of a physics state (the Gymnasium adapter reads them at its own).

    def contact_forces(self, data):
        """``cfrc_ext`` clipped to ``contact_force_range``."""
        return jnp.clip(field(data, "cfrc_ext"), *self.contact_force_range)

    def contact_cost(self, data):
        return self.contact_cost_weight * jnp.sum(jnp.square(self.contact_forces(data)))

    def is_healthy(self, data):
        min_z, max_z = self.healthy_z_range
        finite = jnp.isfinite(data.qpos).all() & jnp.isfinite(data.qvel).all()
        z = data.qpos[2]
        return finite & (min_z <= z) & (z <= max_z)

    def reset_info(self, data):
        return {
            "x_position": data.qpos[0],
            "y_position": data.qpos[1],
            "distance_from_origin": jnp.linalg.norm(data.qpos[:2]),
        }

    def observation(self, data):
        qpos = data.qpos[2:] if self.exclude_current_positions_from_observation else data.qpos
        parts = [qpos, data.qvel]
        if self.include_cfrc_ext_in_observation:
            parts.append(self.contact_forces(data)[1:].ravel())
        return jnp.concatenate(parts)
