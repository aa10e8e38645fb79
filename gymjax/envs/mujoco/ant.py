"""JaxAnt-v0: Gymnasium's Ant-v5 on MuJoCo C (``backend="mujoco"``) or MJX (``backend="mjx"``).

The default, ``backend="auto"``, is MuJoCo C when JAX runs on a CPU and MJX on a GPU/TPU.

Source matched: ``gymnasium/envs/mujoco/ant_v5.py`` (Gymnasium 1.x), on the very
``ant.xml`` Gymnasium ships. Same constructor options, observation layout,
reward terms, termination and ``info`` keys. Differences, all deliberate:

- observations are float32 (Ant-v5 declares float64);
- with ``backend="mujoco"`` the transitions are Ant-v5's own (same engine, same
  float64 state), up to the float32 observations;
- ``info`` has every key at reset too (zeros for the step-only ones), because a
  JAX pytree keeps one structure; the Gymnasium adapter reports them as Ant-v5 does.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from gymjax.core import State
from gymjax.envs import options, spec
from gymjax.envs.mujoco.base import MujocoEnv, cfrc_ext


class Ant(MujocoEnv):
    """Quadruped locomotion: 105-dim observation, 8 torque actions in ``[-1, 1]``.

    Observation (defaults): ``qpos[2:]`` (13), ``qvel`` (14), then the clipped
    external contact forces ``cfrc_ext[1:]`` flattened (13 bodies x 6 = 78).
    Reward: ``healthy_reward * is_healthy + forward_reward_weight * dx/dt
    - ctrl_cost_weight * sum(a^2) - contact_cost_weight * sum(clip(cfrc_ext)^2)``.
    """

    max_episode_steps = spec("JaxAnt-v0").max_episode_steps
    reset_info_keys = ("x_position", "y_position", "distance_from_origin")

    def __init__(
        self,
        xml_file: str = "ant.xml",
        frame_skip: int = 5,
        default_camera_config: dict[str, Any] | None = None,
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
        solver: str | tuple[int, int] | None = None,
        backend: str = "auto",
        camera_id: int | None = None,
        camera_name: str | None = None,
        max_geom: int = 1000,
        visual_options: dict[int, bool] | None = None,
    ):
        if default_camera_config is not None and not isinstance(default_camera_config, dict):
            raise ValueError(f"Ant: default_camera_config must be a dict, got {default_camera_config!r}")
        camera = {"distance": 4.0, "trackbodyid": 1, "elevation": -20.0}
        camera.update(default_camera_config or {})
        render = dict(camera_id=camera_id, camera_name=camera_name, max_geom=max_geom, visual_options=visual_options)
        super().__init__(xml_file, frame_skip, solver=solver, camera=camera, backend=backend, render=render)
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
        obs_size = m.nq + m.nv - 2 * exclude_current_positions_from_observation
        obs_size += (m.nbody - 1) * 6 * include_cfrc_ext_in_observation
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (obs_size,), np.float32)

    def reset(self, key, params=None):
        key_pos, key_vel = jax.random.split(key)
        noise = self.reset_noise_scale
        qpos = self.init_qpos + jax.random.uniform(
            key_pos, (self.mj_model.nq,), jnp.float32, -noise, noise
        )
        qvel = self.init_qvel + noise * jax.random.normal(key_vel, (self.mj_model.nv,), jnp.float32)
        return self.reset_to(qpos, qvel, params)

    def reset_to(self, qpos, qvel, params=None):
        data = self.physics_init(params, qpos, qvel)
        zero = jnp.float32(0.0)
        info = {
            **self._position_info(data),
            "x_velocity": zero,
            "y_velocity": zero,
            "reward_forward": zero,
            "reward_ctrl": zero,
            "reward_contact": zero,
            "reward_survive": zero,
        }
        return State(
            env_state=data,
            obs=self._obs(data),
            reward=zero,
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            info=info,
        )

    def step(self, state, action, params=None):
        before = state.env_state.xpos[self.main_body, :2]
        data = self.physics_step(params, state.env_state, action)
        x_velocity, y_velocity = (data.xpos[self.main_body, :2] - before) / self.dt

        healthy = self._is_healthy(data)
        forward_reward = self.forward_reward_weight * x_velocity
        healthy_reward = self.healthy_reward * healthy
        # Ant-v5 prices the action as given, in float64: a huge action's cost is huge but finite
        # (-4e40 for 1e20 per joint). float32 would overflow to -inf, so saturate at its largest.
        largest = jnp.finfo(jnp.float32).max
        ctrl_cost = jnp.clip(self.ctrl_cost_weight * jnp.sum(jnp.square(action)), -largest, largest)
        ctrl_cost = jnp.where(self.ctrl_cost_weight == 0, 0.0, ctrl_cost)  # 0 * inf is NaN
        contact_cost = self.contact_cost_weight * jnp.sum(jnp.square(self._contact_forces(data)))
        reward = forward_reward + healthy_reward - ctrl_cost - contact_cost
        terminated = jnp.logical_not(healthy) & self.terminate_when_unhealthy

        info = {
            **self._position_info(data),
            "x_velocity": x_velocity,
            "y_velocity": y_velocity,
            "reward_forward": forward_reward,
            "reward_ctrl": -ctrl_cost,
            "reward_contact": -contact_cost,
            "reward_survive": healthy_reward,
        }
        info = {k: jnp.asarray(v, jnp.float32) for k, v in info.items()}
        return state.replace(
            env_state=data,
            obs=self._obs(data),
            reward=jnp.asarray(reward, jnp.float32),
            terminated=terminated,
            truncated=jnp.bool_(False),
            info=info,
        )

    def _contact_forces(self, data):
        return jnp.clip(cfrc_ext(data), *self.contact_force_range)

    def _is_healthy(self, data):
        min_z, max_z = self.healthy_z_range
        finite = jnp.isfinite(data.qpos).all() & jnp.isfinite(data.qvel).all()
        z = data.qpos[2]
        return finite & (min_z <= z) & (z <= max_z)

    def _position_info(self, data):
        return {
            "x_position": data.qpos[0],
            "y_position": data.qpos[1],
            "distance_from_origin": jnp.linalg.norm(data.qpos[:2]),
        }

    def _obs(self, data):
        qpos = data.qpos[2:] if self.exclude_current_positions_from_observation else data.qpos
        parts = [qpos, data.qvel]
        if self.include_cfrc_ext_in_observation:
            parts.append(self._contact_forces(data)[1:].ravel())
        return jnp.concatenate(parts).astype(jnp.float32)
