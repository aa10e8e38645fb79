"""JaxInvertedPendulum-v0: Gymnasium's InvertedPendulum-v5 on MuJoCo C or MJX (``backend=``; default ``"auto"``).

Source matched: ``gymnasium/envs/mujoco/inverted_pendulum_v5.py``. The
observation is ``[cart x, pole hinge angle, cart x_dot, hinge angular velocity]``,
read straight from ``qpos``/``qvel`` of Gymnasium's ``inverted_pendulum.xml``;
the pole angle (``obs[1]``) decides termination (``|angle| > 0.2`` rad).
"""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

from gymjax.core import State
from gymjax.envs import options, spec
from gymjax.envs.mujoco.base import MujocoEnv


class InvertedPendulum(MujocoEnv):
    """Cart-pole on MuJoCo: 4-dim observation, one force action in ``[-3, 3]``."""

    max_episode_steps = spec("JaxInvertedPendulum-v0").max_episode_steps

    def __init__(
        self,
        xml_file: str = "inverted_pendulum.xml",
        frame_skip: int = 2,
        reset_noise_scale: float = 0.01,
        solver: str | tuple[int, int] | None = None,
        backend: str = "auto",
        camera_id: int | None = None,
        camera_name: str | None = None,
        max_geom: int = 1000,
        visual_options: dict[int, bool] | None = None,
    ):
        camera = {"trackbodyid": 0, "distance": 2.04}
        render = dict(camera_id=camera_id, camera_name=camera_name, max_geom=max_geom, visual_options=visual_options)
        super().__init__(xml_file, frame_skip, solver=solver, camera=camera, backend=backend, render=render)
        self.reset_noise_scale = options.real(self, "reset_noise_scale", reset_noise_scale, minimum=0.0)
        m = self.mj_model
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (m.nq + m.nv,), np.float32)

    def reset(self, key, params=None):
        key_pos, key_vel = jax.random.split(key)
        noise = self.reset_noise_scale
        m = self.mj_model
        qpos = self.init_qpos + jax.random.uniform(key_pos, (m.nq,), jnp.float32, -noise, noise)
        qvel = self.init_qvel + jax.random.uniform(key_vel, (m.nv,), jnp.float32, -noise, noise)
        return self.reset_to(qpos, qvel, params)

    def reset_to(self, qpos, qvel, params=None):
        data = self.physics_init(params, qpos, qvel)
        return State(
            env_state=data,
            obs=self._obs(data),
            reward=jnp.float32(0.0),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            info={"reward_survive": jnp.float32(0.0)},
        )

    def step(self, state, action, params=None):
        data = self.physics_step(params, state.env_state, action)
        obs = self._obs(data)
        terminated = jnp.logical_not(jnp.isfinite(obs).all()) | (jnp.abs(obs[1]) > 0.2)
        reward = jnp.where(terminated, 0.0, 1.0).astype(jnp.float32)
        return state.replace(
            env_state=data,
            obs=obs,
            reward=reward,
            terminated=terminated,
            truncated=jnp.bool_(False),
            info={"reward_survive": reward},
        )

    @staticmethod
    def _obs(data):
        return jnp.concatenate([data.qpos, data.qvel]).astype(jnp.float32)
