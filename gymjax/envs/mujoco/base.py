"""Shared machinery for envs simulated by MuJoCo: MJX, or MuJoCo C from inside jit.

The physics parameters of these envs are an ``mjx.Model`` whatever the backend:
``randomization_fn`` receives it and returns a modified copy
(``model.replace(body_mass=...)``); ``reset`` and ``step`` also take the changed
fields by name, ``{"body_mass": masses}``, which is how the ``"mujoco"`` backend
learns which ``MjModel`` fields to write.

Backends (the ``backend`` option):

- ``"mjx"``: MuJoCo MJX, pure JAX; differentiable; the fast path on GPU/TPU.
- ``"mujoco"``: MuJoCo's C engine through one ``jax.pure_callback`` per batch
  (:mod:`gymjax.envs.mujoco.host`); still jittable and vmappable, the faster
  engine on a CPU and exactly Gymnasium's physics; not differentiable.
- ``"auto"`` (the default): ``"mjx"`` when JAX runs on a GPU/TPU, ``"mujoco"`` on a CPU,
  where MJX is several times slower and at a thousand envs on two cores does not finish.
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import numbers
import os
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from gymjax.core import Env, State
from gymjax.envs import options
from gymjax.envs.mujoco.host import CallbackEngine, HostData

logger = logging.getLogger(__name__)

BACKENDS = ("mjx", "mujoco", "auto")

# Solver presets: (constraint solver iterations, line-search iterations).
#   "accurate"  (4, 8):    the fewest iterations whose error against MuJoCo C (from the same
#                          states) more iterations no longer reduce; the parity tests bound it.
#   "fast"      (1, 4):    several times the throughput; fine for learning, parity suffers.
#   "reference" (100, 50): MuJoCo's and MJX's defaults, the slowest.
# Throughput of each: the env suite of benchmarks/ (benchmarks/results/README.md).
SOLVER_PRESETS: dict[str, tuple[int, int]] = {
    "accurate": (4, 8),
    "fast": (1, 4),
    "reference": (100, 50),
}


def gymnasium_asset(xml_file: str) -> str:
    """Resolves a bare file name to the copy Gymnasium ships in its MuJoCo assets."""
    if os.path.isabs(xml_file) or os.path.exists(xml_file):
        return xml_file
    path = importlib.resources.files("gymnasium.envs.mujoco") / "assets" / xml_file
    if not path.is_file():
        raise FileNotFoundError(
            f"no MuJoCo model {xml_file!r}: expected an existing path or a file name "
            f"from gymnasium/envs/mujoco/assets"
        )
    return str(path)


def resolve_backend(backend: str) -> str:
    """``"mjx"`` or ``"mujoco"``; ``"auto"`` picks by the platform JAX runs on."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    return _auto_backend(jax.default_backend()) if backend == "auto" else backend


@functools.cache
def _auto_backend(platform: str) -> str:
    chosen = "mujoco" if platform == "cpu" else "mjx"
    logger.info('backend="auto": JAX runs on %s, so MuJoCo envs use backend=%r', platform, chosen)
    return chosen


def solver_iterations(solver: str | tuple[int, int]) -> tuple[int, int]:
    if isinstance(solver, str):
        if solver not in SOLVER_PRESETS:
            raise ValueError(
                f"solver must be one of {sorted(SOLVER_PRESETS)} or a tuple "
                f"(iterations, ls_iterations), got {solver!r}"
            )
        return SOLVER_PRESETS[solver]
    pair = tuple(solver) if isinstance(solver, (tuple, list)) else ()
    if len(pair) != 2 or any(isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1 for n in pair):
        raise ValueError(
            f"solver must be one of {sorted(SOLVER_PRESETS)} or a pair (iterations, ls_iterations) of ints "
            f">= 1, got {solver!r}"
        )
    return int(pair[0]), int(pair[1])


def cfrc_ext(data: mjx.Data) -> jax.Array:
    """External contact forces per body ``[nbody, 6]``, filled by ``rne_postconstraint``.

    MJX 3.3+ keeps this JAX-backend field in ``data._impl`` and warns on ``data.cfrc_ext``;
    the ``"mujoco"`` backend's :class:`HostData` has it as a plain field.
    """
    impl = getattr(data, "_impl", None)
    return impl.cfrc_ext if hasattr(impl, "cfrc_ext") else data.cfrc_ext


class MujocoEnv(Env[mjx.Model]):
    """Base for MuJoCo envs: loads the model, steps ``frame_skip`` substeps, renders.

    Args:
        xml_file: path, or a file name in Gymnasium's MuJoCo assets.
        frame_skip: physics substeps per env step (Gymnasium's ``frame_skip``).
        solver: a preset name from :data:`SOLVER_PRESETS` or ``(iterations, ls_iterations)``;
            by default ``"accurate"`` for MJX and ``"reference"`` (the model's own,
            what Gymnasium runs) for MuJoCo C, whose cost barely depends on it.
        camera: free-camera settings for rendering (``distance``, ``elevation``,
            ``azimuth``, ``trackbodyid``), Gymnasium's ``default_camera_config``.
        backend: ``"mjx"``, ``"mujoco"`` or ``"auto"`` (see the module docstring).
        render: Gymnasium's ``MujocoEnv`` rendering options: ``camera_id`` or
            ``camera_name`` (a camera of the model instead of the free camera),
            ``max_geom`` (the scene's geom buffer) and ``visual_options``
            (``{mujoco.mjtVisFlag: bool}``).
    """

    # MuJoCo C must be told which MjModel fields a randomized env changes.
    params_by_name = True

    def __init__(
        self,
        xml_file: str,
        frame_skip: int,
        solver: str | tuple[int, int] | None = None,
        camera: dict[str, Any] | None = None,
        backend: str = "auto",
        render: dict[str, Any] | None = None,
    ):
        frame_skip = options.integer(self, "frame_skip", frame_skip)
        if not isinstance(xml_file, str):
            raise ValueError(f"{type(self).__name__}: xml_file must be a file name or path, got {xml_file!r}")
        self.backend = resolve_backend(backend)
        self.xml_path = gymnasium_asset(xml_file)
        self.mj_model = mujoco.MjModel.from_xml_path(self.xml_path)
        if solver is None:
            solver = "accurate" if self.backend == "mjx" else "reference"
        self.solver = solver
        try:
            self.mj_model.opt.iterations, self.mj_model.opt.ls_iterations = solver_iterations(solver)
        except ValueError as e:
            raise ValueError(f"{type(self).__name__}: {e}") from None
        self.frame_skip = frame_skip
        self.camera = dict(camera or {})
        self._render_options(**(render or {}))
        self._model = mjx.put_model(self.mj_model)
        self._host = CallbackEngine(self.mj_model, frame_skip) if self.backend == "mujoco" else None
        # A zeroed Data, like MuJoCo's mj_resetData; reset writes qpos/qvel into it.
        self._blank_data = mjx.make_data(self.mj_model) if self.backend == "mjx" else None
        self.init_qpos = jnp.asarray(self.mj_model.qpos0, jnp.float32)
        self.init_qvel = jnp.zeros(self.mj_model.nv, jnp.float32)
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}
        self._render_data: mujoco.MjData | None = None
        low, high = self.mj_model.actuator_ctrlrange.T.astype(np.float32)
        self.action_space = gymnasium.spaces.Box(low, high, dtype=np.float32)
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": int(np.round(1.0 / self.dt))}

    @property
    def default_params(self) -> mjx.Model:
        return self._model

    @property
    def dt(self) -> float:
        return float(self.mj_model.opt.timestep) * self.frame_skip

    def physics_init(self, params, qpos: jax.Array, qvel: jax.Array) -> mjx.Data | HostData:
        """Gymnasium's ``set_state``: write qpos/qvel into a reset Data, then forward.

        ``params``: None, an ``mjx.Model``, or ``{field: value}`` (see :meth:`Env.resolve_params`).
        """
        if self._host is not None:
            return self._host.init(qpos, qvel, self._host_fields(params))
        data = self._blank_data.replace(qpos=jnp.asarray(qpos), qvel=jnp.asarray(qvel))
        return mjx.forward(self.resolve_params(params), data)

    def physics_step(self, params, data: mjx.Data | HostData, ctrl: jax.Array) -> mjx.Data | HostData:
        """Gymnasium's ``do_simulation``: ``frame_skip`` steps, then ``rnePostConstraint``.

        The last call fills ``cfrc_ext``, which ``mj_step`` leaves stale.
        """
        if self._host is not None:
            return self._host.step(data, ctrl, self._host_fields(params))
        model = self.resolve_params(params)
        data = data.replace(ctrl=jnp.asarray(ctrl, data.ctrl.dtype))

        def substep(data, _):
            return mjx.step(model, data), None

        data, _ = jax.lax.scan(substep, data, None, length=self.frame_skip)
        return mjx.rne_postconstraint(model, data)

    def _host_fields(self, params) -> dict[str, jax.Array]:
        """The fields MuJoCo C must take per env: named, never guessed from a whole model.

        A whole ``mjx.Model`` says nothing about which of its hundreds of leaves
        changed, and writing them all into ``MjModel`` copies every step would
        cost more than the physics.
        """
        if params is None or params is self._model:
            return {}
        if not isinstance(params, dict):
            raise ValueError(
                'backend="mujoco" takes changed physics as a dict {field name: value}, e.g. '
                '{"body_mass": masses} (what DomainRandomization passes), not a whole '
                f"{type(params).__name__}; field names are those of gymjax.core.field_names(env.default_params)"
            )
        self._host.check_fields(params)
        return params

    def reset_to(self, qpos: jax.Array, qvel: jax.Array, params: mjx.Model | None = None) -> State:
        """A fresh state at ``(qpos, qvel)``, like Gymnasium's ``set_state``."""
        raise NotImplementedError

    # Rendering runs MuJoCo's C renderer on the host, one state at a time.

    def render(self, state: State, *, width: int = 480, height: int = 480, camera: Any = None):
        data = self.mj_data(state)
        renderer = self._renderer(width, height)
        renderer.update_scene(data, camera=self._camera(camera), scene_option=self._scene_option)
        return renderer.render()

    def mj_data(self, state: State) -> mujoco.MjData:
        """A ``mujoco.MjData`` at one (unbatched) state, forwarded; reused by the next call."""
        if self._render_data is None:
            self._render_data = mujoco.MjData(self.mj_model)
        data = self._render_data
        physics = state.env_state
        qpos, qvel = np.asarray(physics.qpos), np.asarray(physics.qvel)
        if qpos.shape != (self.mj_model.nq,):
            raise ValueError(
                f"render takes one unbatched state (qpos shape ({self.mj_model.nq},)), "
                f"got qpos of shape {qpos.shape}"
            )
        data.qpos[:], data.qvel[:] = qpos, qvel
        mujoco.mj_forward(self.mj_model, data)
        return data

    def _render_options(
        self,
        camera_id: int | None = None,
        camera_name: str | None = None,
        max_geom: int = 1000,
        visual_options: dict[int, bool] | None = None,
    ) -> None:
        name = type(self).__name__
        if camera_id is not None and camera_name is not None:
            raise ValueError(f"{name}: camera_id and camera_name cannot be given together")
        if camera_name is not None:
            camera_id = mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_CAMERA, camera_name)
            if camera_id < 0:
                raise ValueError(f"{name}: camera_name {camera_name!r} is not a camera of {self.xml_path}")
        if camera_id is not None and not (isinstance(camera_id, int) and -1 <= camera_id < self.mj_model.ncam):
            raise ValueError(f"{name}: camera_id must be an int in [-1, {self.mj_model.ncam}), got {camera_id!r}")
        self.camera_id = camera_id
        self.max_geom = options.integer(self, "max_geom", max_geom)
        self.visual_options = dict(visual_options or {})
        self._scene_option = mujoco.MjvOption()
        for flag, value in self.visual_options.items():
            self._scene_option.flags[flag] = value

    def _renderer(self, width: int, height: int) -> mujoco.Renderer:
        if (width, height) not in self._renderers:
            self.mj_model.vis.global_.offwidth = max(width, self.mj_model.vis.global_.offwidth)
            self.mj_model.vis.global_.offheight = max(height, self.mj_model.vis.global_.offheight)
            try:
                self._renderers[(width, height)] = mujoco.Renderer(self.mj_model, height, width, self.max_geom)
            except Exception as err:
                raise RuntimeError(
                    "could not create a MuJoCo renderer; for headless rendering set "
                    "MUJOCO_GL=egl (or osmesa) before Python starts"
                ) from err
        return self._renderers[(width, height)]

    def _camera(self, camera):
        if camera is not None:
            return camera
        if self.camera_id is not None and self.camera_id >= 0:
            return self.camera_id
        cam = mujoco.MjvCamera()
        mujoco.mjv_defaultFreeCamera(self.mj_model, cam)
        if "trackbodyid" in self.camera:
            cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
            cam.trackbodyid = self.camera["trackbodyid"]
        for name in ("distance", "elevation", "azimuth"):
            if name in self.camera:
                setattr(cam, name, self.camera[name])
        if "lookat" in self.camera:
            cam.lookat[:] = self.camera["lookat"]
        return cam

    def close(self) -> None:
        if self._host is not None:
            self._host.close()
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(solver={self.solver!r}, backend={self.backend!r})"

    def __getstate__(self):
        # Renderers hold GL contexts, and MjvOption is a C struct: neither pickles nor deep-copies.
        return {**self.__dict__, "_renderers": {}, "_render_data": None, "_scene_option": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._scene_option = mujoco.MjvOption()
        for flag, value in self.visual_options.items():
            self._scene_option.flags[flag] = value
