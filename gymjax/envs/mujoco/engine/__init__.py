"""The engines that run a MuJoCo env's physics, one face for all three (:class:`PhysicsEngine`).

- :mod:`.contract`: the face, :class:`HostData` and its row layout, the field checks, what the two
  C engines share (:class:`BatchedEngine`), MuJoCo's warnings as Python ones;
- :mod:`.native`: MuJoCo's batch engine through one typed XLA FFI call (``csrc/engine.cc``);
- :mod:`.callback`: the same batch engine under a ``jax.pure_callback`` (``mujoco.batch``), where the
  native extension is not built;
- :mod:`.mjx`: MJX, pure JAX.

``engine="mujoco"`` runs the native engine, or the callback one where the extension is missing;
``engine="mjx"`` runs MJX (:func:`make`).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import mujoco

from gymjax.envs.mujoco.engine import callback, native
from gymjax.envs.mujoco.engine.callback import CallbackEngine
from gymjax.envs.mujoco.engine.contract import (  # noqa: F401 (the package's names)
    KINEMATIC_FIELDS,
    POST_CONSTRAINT_FIELDS,
    STATE_SPEC,
    BatchedEngine,
    HostData,
    MuJoCoWarning,
    NotDifferentiableError,
    PhysicsEngine,
    route_mujoco_warnings,
)
from gymjax.envs.mujoco.engine.native import NativeEngine, NativeUnavailable


def make(name: str, mj_model: mujoco.MjModel, frame_skip: int, fields: tuple[str, ...] = (),
         residuals: tuple[str, ...] = (), mjx: Callable[[], Any] | None = None) -> PhysicsEngine:
    """The engine ``name`` (``"mujoco"`` or ``"mjx"``) for one env's physics. ``"mujoco"``: the native
    engine where it runs, else the callback engine (said once per process). ``"mjx"``: ``mjx()``,
    which builds the MJX engine from the env's MJX model (made lazily, on first use)."""
    if name == "mjx":
        return mjx()
    try:
        native.library()
    except NativeUnavailable as e:
        if callback.batch is None:
            raise NativeUnavailable(f'{e}, and MuJoCo {mujoco.__version__} has no batch engine to fall back '
                                    'to: install mujoco>=4.0, or use engine="mjx"') from None
        _say_fallback(str(e))
        return CallbackEngine(mj_model, frame_skip, fields, residuals)
    return NativeEngine(mj_model, frame_skip, fields, residuals)


@functools.cache
def _say_fallback(reason: str) -> None:
    warnings.warn(f"{reason}; MuJoCo envs run on MuJoCo's batch engine under a callback (mujoco.batch), "
                  "slower than the native engine. Reinstall gymjax with a C++ compiler present "
                  "(pip install -e .) to build it.", RuntimeWarning, stacklevel=3)
