"""JaxPusher-v0: Gymnasium's Pusher-v5 on MuJoCo C or MJX (``engine=``; default ``"auto"``).

Source matched: ``gymnasium/envs/mujoco/pusher_v5.py``, on its ``pusher_v5.xml``: a 7-joint
arm pushes a cylinder (``qpos[-4:-2]``) to a goal (``qpos[-2:]``, always the origin).
Observation ``qpos[:7]``, ``qvel[:7]``, then the positions of ``tips_arm``, ``object`` and
``goal``: 23 numbers, as the code builds it and declares its space (the docstring's
``(17,)`` is wrong; we follow the code). Reward ``-|object - tips_arm| * reward_near_weight
- |object - goal| * reward_dist_weight - sum(a^2) * reward_control_weight``; never
terminates; reset info empty.

The cylinder's reset draw is Gymnasium's rejection loop (x uniform in ``[-0.3, 0]``, y in
``[-0.2, 0.2]``, again until farther than 0.17 from the goal) as a ``lax.while_loop``.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import mujoco

from gymjax.core import prng
from gymjax.envs import options
from gymjax.envs.mujoco.base import MujocoEnv, control_cost, field, rejection_sample

DEFAULT_CAMERA_CONFIG = {"trackbodyid": -1, "distance": 4.0}


class Pusher(MujocoEnv):
    """Pushing a cylinder to a goal: 23-dim observation, 7 torque actions in ``[-2, 2]``."""

    data_fields = ("xpos",)

    def __init__(
        self,
        xml_file: str = "pusher_v5.xml",
        frame_skip: int = 5,
        default_camera_config: dict[str, Any] = DEFAULT_CAMERA_CONFIG,
        reward_near_weight: float = 0.5,
        reward_dist_weight: float = 1.0,
        reward_control_weight: float = 0.1,
        **kwargs: Any,
    ):
        super().__init__(xml_file, frame_skip, default_camera_config, **kwargs)
        self.reward_near_weight = options.real(self, "reward_near_weight", reward_near_weight)
        self.reward_dist_weight = options.real(self, "reward_dist_weight", reward_dist_weight)
        self.reward_control_weight = options.real(self, "reward_control_weight", reward_control_weight)
        ids = [mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_BODY, b) for b in ("tips_arm", "object", "goal")]
        if min(ids) < 0:
            raise ValueError(f"Pusher: {self.xml_path} has no bodies 'tips_arm', 'object' and 'goal'")
        self._tips_arm, self._object, self._goal = ids
        self.observation_space = self.observation_box(23)

    def initial_state(self, key):
        key_cylinder, key_vel = prng.split(key)
        goal = jnp.zeros(2, jnp.float32)
        low, high = jnp.array([-0.3, -0.2], jnp.float32), jnp.array([0.0, 0.2], jnp.float32)
        cylinder = rejection_sample(
            key_cylinder,
            lambda k: prng.uniform(k, (2,), jnp.float32, low, high),
            lambda c: jnp.linalg.norm(c - goal) > 0.17,
        )
        qpos = jnp.asarray(self.init_qpos).at[-4:-2].set(cylinder).at[-2:].set(goal)
        qvel = self.init_qvel + prng.uniform(key_vel, (self.mj_model.nv,), jnp.float32, -0.005, 0.005)
        return qpos, qvel.at[-4:].set(0.0)

    def outcome(self, before, after, action):
        xpos = field(after, "xpos")
        reward_near = -jnp.linalg.norm(xpos[self._object] - xpos[self._tips_arm]) * self.reward_near_weight
        reward_dist = -jnp.linalg.norm(xpos[self._object] - xpos[self._goal]) * self.reward_dist_weight
        reward_ctrl = -control_cost(self.reward_control_weight, action)
        info = {"reward_dist": reward_dist, "reward_ctrl": reward_ctrl, "reward_near": reward_near}
        return reward_dist + reward_ctrl + reward_near, False, info

    def observation(self, data):
        xpos = field(data, "xpos")
        bodies = xpos[jnp.array([self._tips_arm, self._object, self._goal])].ravel()
        return jnp.concatenate([data.qpos[:7], data.qvel[:7], bodies])
