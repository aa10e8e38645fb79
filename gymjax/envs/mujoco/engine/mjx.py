"""The ``"mjx"`` engine: MuJoCo MJX, pure JAX, differentiable; the fast path on a GPU or TPU.

The one module that imports MJX, which takes seconds: the MuJoCo envs import it here on first use
(an env on MJX, or the ``mjx.Model`` an env's ``default_params`` is), so a fresh process that runs
the C engine never pays for it."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from mujoco import mjx


class MjxEngine:
    """:class:`~gymjax.envs.mujoco.engine.contract.PhysicsEngine` on MJX, for ``env`` (a
    :class:`~gymjax.envs.mujoco.base.MujocoEnv`): its ``resolve_params`` (``params`` as the
    ``mjx.Model`` to run), its zeroed ``mjx.Data`` (like ``mj_resetData``; a reset writes qpos and qvel
    in), its ``frame_skip``, and whether a step ends with ``rne_postconstraint`` (the task reads what
    it fills). The env, not closures over it: an env pickles with its engine."""

    def __init__(self, env: Any):
        self.env = env

    def init(self, params: Any, qpos: jax.Array, qvel: jax.Array) -> mjx.Data:
        data = self.env._blank_data.replace(qpos=jnp.asarray(qpos), qvel=jnp.asarray(qvel))
        return mjx.forward(self.env.resolve_params(params), data)

    def step(self, params: Any, data: mjx.Data, ctrl: jax.Array) -> mjx.Data:
        model = self.env.resolve_params(params)
        data = data.replace(ctrl=jnp.asarray(ctrl, data.ctrl.dtype))

        def substep(data, _):
            return mjx.step(model, data), None

        data, _ = jax.lax.scan(substep, data, None, length=self.env.frame_skip)
        return mjx.rne_postconstraint(model, data) if self.env._post_constraint else data

    def init_where(self, params: Any, reset: jax.Array, qpos: jax.Array, qvel: jax.Array) -> mjx.Data:
        """Every env's :meth:`init`: in pure JAX a masked reset costs what a whole one does."""
        return self.init(params, qpos, qvel)

    def step_or_reset(self, params: Any, data: mjx.Data, ctrl: jax.Array, reset: jax.Array, qpos: jax.Array,
                      qvel: jax.Array) -> tuple[mjx.Data, mjx.Data]:
        """Both, for the caller to select: MJX computes every env's either way."""
        return self.init(params, qpos, qvel), self.step(params, data, ctrl)

    def stats(self) -> dict[str, int]:
        return {"calls": 0, "stepped": 0, "reset": 0}  # nothing counted: the calls are XLA's own ops

    def close(self) -> None:
        """Nothing held outside JAX."""
