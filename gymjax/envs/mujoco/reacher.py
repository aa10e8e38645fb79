"""JaxReacher-v0: Gymnasium's Reacher-v5 on MuJoCo C or MJX (``engine=``; default ``"auto"``).

Source matched: ``gymnasium/envs/mujoco/reacher_v5.py``, on its ``reacher.xml``: a two-joint
arm whose fingertip should reach a target; the target's x, y are the last two ``qpos``.
Observation ``cos``/``sin`` of the two arm angles, the target's position, the arm's joint
velocities and ``fingertip - target`` (x, y): 10 numbers. Reward ``-|fingertip - target| *
reward_dist_weight - sum(a^2) * reward_control_weight``; never terminates; reset info empty.

The target's reset draw is Gymnasium's rejection loop (uniform on ``[-0.2, 0.2]^2`` until
inside the disc of radius 0.2) as a ``lax.while_loop``: the same distribution, under
``jit`` and ``vmap``.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import mujoco

from gymjax.core import prng
from gymjax.envs import options
from gymjax.envs.mujoco.base import MujocoEnv, control_cost, field, rejection_sample

DEFAULT_CAMERA_CONFIG = {"trackbodyid": 0}


class Reacher(MujocoEnv):
    """Reaching a random target: 10-dim observation, 2 torque actions in ``[-1, 1]``."""

    data_fields = ("xpos",)

    def __init__(
        self,
        xml_file: str = "reacher.xml",
        frame_skip: int = 2,
        default_camera_config: dict[str, Any] = DEFAULT_CAMERA_CONFIG,
        reward_dist_weight: float = 1.0,
        reward_control_weight: float = 1.0,
        **kwargs: Any,
    ):
        super().__init__(xml_file, frame_skip, default_camera_config, **kwargs)
        self.reward_dist_weight = options.real(self, "reward_dist_weight", reward_dist_weight)
        self.reward_control_weight = options.real(self, "reward_control_weight", reward_control_weight)
        m = self.mj_model
        self._fingertip = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "fingertip")
        self._target = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "target")
        if min(self._fingertip, self._target) < 0:
            raise ValueError(f"Reacher: {self.xml_path} has no bodies 'fingertip' and 'target'")
        self.observation_space = self.observation_box(10)

    def initial_state(self, key):
        key_pos, key_goal, key_vel = prng.split(key, 3)
        m = self.mj_model
        qpos = self.init_qpos + prng.uniform(key_pos, (m.nq,), jnp.float32, -0.1, 0.1)
        goal = rejection_sample(
            key_goal,
            lambda k: prng.uniform(k, (2,), jnp.float32, -0.2, 0.2),
            lambda goal: jnp.linalg.norm(goal) < 0.2,
        )
        qvel = self.init_qvel + prng.uniform(key_vel, (m.nv,), jnp.float32, -0.005, 0.005)
        return qpos.at[-2:].set(goal), qvel.at[-2:].set(0.0)

    def _to_target(self, data):
        xpos = field(data, "xpos")
        return xpos[self._fingertip] - xpos[self._target]

    def outcome(self, before, after, action):
        reward_dist = -jnp.linalg.norm(self._to_target(after)) * self.reward_dist_weight
        reward_ctrl = -control_cost(self.reward_control_weight, action)
        return reward_dist + reward_ctrl, False, {"reward_dist": reward_dist, "reward_ctrl": reward_ctrl}

    def observation(self, data):
        theta = data.qpos[:2]
        return jnp.concatenate(
            [jnp.cos(theta), jnp.sin(theta), data.qpos[2:], data.qvel[:2], self._to_target(data)[:2]]
        )
