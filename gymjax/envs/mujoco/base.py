"""Shared machinery for envs simulated by MuJoCo: MJX, or MuJoCo C from inside jit.

A task (``ant.py``, ``hopper.py``, ...) is one subclass of :class:`MujocoEnv` that says
what Gymnasium's ``*_v5.py`` says: its options, the ``MjData`` fields it reads
(:attr:`MujocoEnv.data_fields`), its observation, and its reward, termination and
``info`` over one step (:meth:`MujocoEnv.outcome`). The base does the rest the same way
for every task: reset noise, ``reset_to`` (Gymnasium's ``set_state``), the step, the
zero-filled step-only ``info`` keys at reset, rendering.

The physics parameters of these envs are an ``mjx.Model`` whatever the engine:
``randomization_fn`` receives it and returns a modified copy
(``model.replace(body_mass=...)``); ``reset`` and ``step`` also take the changed
fields by name, ``{"body_mass": masses}``, which is how the ``"mujoco"`` engine
learns which ``MjModel`` fields to write.

Engines (the ``engine`` option), each a :class:`~gymjax.envs.mujoco.engine.PhysicsEngine` that the
env holds as :attr:`MujocoEnv.physics_engine` and calls without asking which it is:

- ``"mjx"``: MuJoCo MJX, pure JAX; differentiable; the fast path on GPU/TPU.
- ``"mujoco"``: MuJoCo's C engine, its batch engine called through one typed XLA FFI call
  per batched step (:mod:`gymjax.envs.mujoco.engine.native`; where that extension is not built,
  a ``jax.pure_callback`` over a thread pool, :mod:`gymjax.envs.mujoco.engine.callback`); still
  jittable and vmappable, the faster engine on a CPU and exactly Gymnasium's physics;
  not differentiable.
- ``"auto"`` (the default): ``"mjx"`` when JAX runs on a GPU/TPU, ``"mujoco"`` on a CPU,
  where MJX is several times slower and at a thousand envs on two cores does not finish.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
import logging
import numbers
import os
import warnings
from typing import TYPE_CHECKING, Any

import gymnasium
import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from gymjax.core import Env, State, prng, where_env
from gymjax.core.platform import platform
from gymjax.envs import options
from gymjax.envs.mujoco import engine as engines
from gymjax.envs.mujoco.engine import (
    POST_CONSTRAINT_FIELDS,
    STATE_SPEC,
    HostData,
    MuJoCoWarning,
    PhysicsEngine,
    route_mujoco_warnings,
)

if TYPE_CHECKING:
    from mujoco import mjx

logger = logging.getLogger(__name__)

ENGINES = ("mjx", "mujoco", "auto")

# Gymnasium's MuJoCo render modes drawn into an array ("human" is the adapters' window).
RENDER_MODES = ("rgb_array", "depth_array", "rgbd_tuple")
DEFAULT_SIZE = 480  # frames' width and height unless asked: Gymnasium's MujocoEnv's

# Solver presets: (constraint solver iterations, line-search iterations).
#   "accurate"  (4, 8):    the fewest iterations whose error against MuJoCo C (from the same
#                          states) more iterations no longer reduce; the parity tests bound it.
#   "fast"      (1, 4):    several times the throughput; fine for learning, parity suffers.
#   "reference" (100, 50): MuJoCo's and MJX's defaults, the slowest.
# and "model": the XML's own settings, what Gymnasium runs (Humanoid's 50 iterations, Pusher's 20).
# Throughput of each: the env suite of benchmarks/ (benchmarks/results/README.md).
SOLVER_PRESETS: dict[str, tuple[int, int]] = {
    "accurate": (4, 8),
    "fast": (1, 4),
    "reference": (100, 50),
}
MODEL_SOLVER = "model"

# Constraint solvers MJX lacks, and what it runs instead. Newton converges to the same
# constrained optimum as PGS (Humanoid-v5's solver) and is MJX's default.
MJX_SOLVER_FOR = {mujoco.mjtSolver.mjSOL_PGS: mujoco.mjtSolver.mjSOL_NEWTON}


def _mjx():
    """:mod:`gymjax.envs.mujoco.engine.mjx`, imported on first use: MJX takes seconds to import."""
    from gymjax.envs.mujoco.engine import mjx as engine_mjx

    return engine_mjx


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


def resolve_engine(engine: str) -> str:
    """``"mjx"`` or ``"mujoco"``; ``"auto"`` picks by the platform JAX runs on."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    return _auto_engine(platform()) if engine == "auto" else engine


@functools.cache
def _auto_engine(where: str) -> str:
    chosen = "mujoco" if where == "cpu" else "mjx"
    logger.info('engine="auto": JAX runs on %s, so MuJoCo envs use engine=%r', where, chosen)
    return chosen


# The adapters (gymnasium.make, make_vec, SB3, torch, PettingZoo) step their envs from the host, a
# call a step. On an accelerator MJX launches its kernels at every step whatever the batch, so below
# thousands of envs the host's C engine is the faster one. On an H200 beside 16 CPU cores
# (benchmarks/results/gpu.md): one gymnasium.make("JaxHopper-v0") stepped 59 times a second on MJX
# and 5,778 on the C engine; make_vec of JaxAnt-v0 was faster on the C engine at 256 and 1,024 envs
# (6.2x, 2.3x) and on MJX at 4,096 (1.24x).
ADAPTER_MJX_MIN_ENVS = 4096


def adapter_engine(num_envs: int) -> str:
    """What ``engine="auto"`` means on an accelerator for an adapter stepping ``num_envs`` envs from
    the host (on a CPU it means the C engine whatever the batch; see ``sized_engine``, its caller)."""
    return "mjx" if num_envs >= ADAPTER_MJX_MIN_ENVS else "mujoco"


def solver_iterations(solver: str | tuple[int, int]) -> tuple[int, int] | None:
    """The iterations a solver option asks for; None for ``"model"`` (the XML's own)."""
    names = sorted([*SOLVER_PRESETS, MODEL_SOLVER])
    if isinstance(solver, str):
        if solver not in names:
            raise ValueError(f"solver must be one of {names} or a tuple (iterations, ls_iterations), got {solver!r}")
        return SOLVER_PRESETS.get(solver)
    pair = tuple(solver) if isinstance(solver, (tuple, list)) else ()
    if len(pair) != 2 or any(isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1 for n in pair):
        raise ValueError(
            f"solver must be one of {names} or a pair (iterations, ls_iterations) of ints "
            f">= 1, got {solver!r}"
        )
    return int(pair[0]), int(pair[1])


def field(data: mjx.Data | HostData, name: str) -> jax.Array:
    """``MjData`` field ``name`` of either engine's physics state (``"qpos"``, ``"xpos"``, ``"cfrc_ext"``).

    MJX 3.3+ keeps some JAX-engine fields (``cfrc_ext``, ``cinert``) in ``data._impl`` and
    warns on ``data.cfrc_ext``; the C engine's :class:`HostData` holds the fields its env
    declared in :attr:`MujocoEnv.data_fields`.
    """
    if isinstance(data, HostData):
        if name in ("qpos", "qvel"):
            return getattr(data, name)
        if name not in data.fields:
            raise KeyError(f"MjData field {name!r} was not declared: add it to the env's data_fields")
        return data.fields[name]
    impl = getattr(data, "_impl", None)
    return getattr(impl, name) if hasattr(impl, name) else getattr(data, name)


def change(before: mjx.Data | HostData, after: mjx.Data | HostData, name: str) -> jax.Array:
    """``after.<name> - before.<name>``; on the C engine, the difference of the float64 values.

    A float32 position 500 m from the origin moves in steps of 6e-5 m: differenced over
    HalfCheetah's 0.05 s, that is 1e-3 m/s of reward noise Gymnasium does not have. The
    C engine carries each differenced field's float64 residual (``HostData.residual``),
    and the difference of residuals restores what float32 rounded away.
    """
    delta = field(after, name) - field(before, name)
    if isinstance(after, HostData):
        if name not in after.residual:
            raise KeyError(f"{name!r} is differenced but not in the env's differenced_fields")
        delta = delta + (after.residual[name] - before.residual[name])
    return delta


def control_cost(weight: float, action: jax.Array) -> jax.Array:
    """``weight * sum(action ** 2)`` as Gymnasium prices it, saturating at float32's largest.

    Gymnasium computes in float64, so a huge action costs a huge but finite amount
    (-4e40 for 1e20 per joint on Ant); float32 would overflow to -inf.
    """
    largest = jnp.finfo(jnp.float32).max
    cost = jnp.clip(weight * jnp.sum(jnp.square(action)), -largest, largest)
    return jnp.where(weight == 0, 0.0, cost)  # 0 * inf is NaN


def strictly_inside(x: jax.Array, interval: tuple[float, float]) -> jax.Array:
    """Whether every number of ``x`` lies in the open interval, as Gymnasium's health checks ask."""
    low, high = interval
    return jnp.all((low < x) & (x < high))


def rejection_sample(key: jax.Array, draw, accept) -> jax.Array:
    """``draw(key)`` again with fresh keys until ``accept`` holds: a Python rejection loop in JAX."""

    def again(carry):
        key, _ = carry
        key, sub = prng.split(key)
        return key, draw(sub)

    key, sub = prng.split(key)
    _, sample = jax.lax.while_loop(lambda carry: ~accept(carry[1]), again, (key, draw(sub)))
    return sample


class MujocoEnv(Env["mjx.Model"]):  # MJX is imported on first use (engine/mjx.py)
    """Base for the MuJoCo tasks: loads the model, resets, steps ``frame_skip`` substeps, renders.

    A task sets, as class attributes:

    - ``data_fields``: the ``MjData`` fields it reads besides ``qpos``/``qvel`` (the C engine
      returns those only, and runs ``mj_rnePostConstraint`` only if ``cfrc_ext`` is one);
    - ``differenced_fields``: those of ``qpos`` and ``data_fields`` whose change over a step
      enters the reward (read with :func:`change`);
    - ``reset_noise``: the distributions (``"uniform"`` or ``"normal"``) of Gymnasium's
      ``reset_model`` for qpos and qvel, scaled by the ``reset_noise_scale`` attribute;
    - ``reset_info_keys``: the ``info`` keys Gymnasium's reset reports;

    and implements :meth:`observation`, :meth:`outcome` and, if Gymnasium's reset reports
    info, :meth:`reset_info`; tasks whose reset draws more than noise (a goal) override
    :meth:`initial_state`.

    Args:
        xml_file: path, or a file name in Gymnasium's MuJoCo assets.
        frame_skip: physics substeps per env step (Gymnasium's ``frame_skip``).
        default_camera_config: free-camera settings for rendering (``distance``, ``elevation``,
            ``azimuth``, ``lookat``, ``trackbodyid``), Gymnasium's option of that name.
        engine: ``"mjx"``, ``"mujoco"`` or ``"auto"`` (see the module docstring).
        solver: a preset name from :data:`SOLVER_PRESETS`, ``"model"`` (the XML's own
            settings) or ``(iterations, ls_iterations)``; by default ``"accurate"`` for MJX
            and ``"model"`` (what Gymnasium runs) for MuJoCo C.
        camera_id, camera_name, max_geom, visual_options: Gymnasium's ``MujocoEnv``
            rendering options (a camera of the model instead of the free camera, the
            scene's geom buffer, ``{mujoco.mjtVisFlag: bool}``).
        extra_data_fields: ``MjData`` fields to return besides the task's own ``data_fields``,
            for code that reads the physics state beyond the task (the multi-agent layer's
            observation categories, a reward of your own): the C engine returns only those.
    """

    # MuJoCo C must be told which MjModel fields a randomized env changes.
    params_by_name = True
    data_fields: tuple[str, ...] = ()
    differenced_fields: tuple[str, ...] = ()
    reset_noise: tuple[str, str] = ("uniform", "uniform")
    reset_info_keys: tuple[str, ...] = ()
    reset_noise_scale: float = 0.0

    def __init__(
        self,
        xml_file: str,
        frame_skip: int,
        default_camera_config: dict[str, Any] | None = None,
        engine: str = "auto",
        solver: str | tuple[int, int] | None = None,
        camera_id: int | None = None,
        camera_name: str | None = None,
        max_geom: int = 1000,
        visual_options: dict[int, bool] | None = None,
        extra_data_fields: tuple[str, ...] = (),
    ):
        name = type(self).__name__
        frame_skip = options.integer(self, "frame_skip", frame_skip)
        if not isinstance(xml_file, str):
            raise ValueError(f"{name}: xml_file must be a file name or path, got {xml_file!r}")
        if default_camera_config is not None and not isinstance(default_camera_config, dict):
            raise ValueError(f"{name}: default_camera_config must be a dict, got {default_camera_config!r}")
        self.engine = resolve_engine(engine)
        self.cpu_only = self.engine == "mujoco"
        self.session_compiler_options = self.engine == "mujoco"
        self.xml_path = gymnasium_asset(xml_file)
        route_mujoco_warnings()
        with warnings.catch_warnings():
            # Gymnasium's humanoidstandup.xml uses it; nothing a user of the env can or need change.
            warnings.filterwarnings("ignore", message=".*'settotalmass' is deprecated", category=MuJoCoWarning)
            self.mj_model = mujoco.MjModel.from_xml_path(self.xml_path)
        if solver is None:
            solver = "accurate" if self.engine == "mjx" else MODEL_SOLVER
        self.solver = solver
        try:
            iterations = solver_iterations(solver)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        if iterations is not None:
            self.mj_model.opt.iterations, self.mj_model.opt.ls_iterations = iterations
        self.frame_skip = frame_skip
        if isinstance(extra_data_fields, str) or not all(isinstance(f, str) for f in extra_data_fields):
            raise ValueError(
                f"{name}: extra_data_fields must be a tuple of MjData field names, got {extra_data_fields!r}"
            )
        own = type(self).data_fields
        self.data_fields = (*own, *(f for f in extra_data_fields if f not in own))
        self.camera = dict(default_camera_config or {})
        self._render_options(camera_id, camera_name, max_geom, visual_options)
        self._post_constraint = bool(POST_CONSTRAINT_FIELDS & set(self.data_fields))
        self.physics_engine: PhysicsEngine = engines.make(
            self.engine, self.mj_model, frame_skip, self.data_fields, self.differenced_fields,
            mjx=lambda: _mjx().MjxEngine(self),
        )
        # Gymnasium's init_qpos/init_qvel: a fresh MjData's, the model's qpos0 and zeros. NumPy: making
        # an env starts no JAX runtime (see gymjax.core.platform), and so neither do its params (default_params).
        self.init_qpos = np.asarray(self.mj_model.qpos0, np.float32)
        self.init_qvel = np.zeros(self.mj_model.nv, np.float32)
        self._renderers: dict[tuple[int, int], Any] = {}  # Gymnasium's MujocoRenderer, by size
        self._render_data: mujoco.MjData | None = None
        self._step_info: dict[str, jax.ShapeDtypeStruct] | None = None
        low, high = self.mj_model.actuator_ctrlrange.T.astype(np.float32)
        self.action_space = gymnasium.spaces.Box(low, high, dtype=np.float32)
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": int(np.round(1.0 / self.dt))}

    def _mjx_model(self) -> mujoco.MjModel:
        """The model MJX runs: the XML's, with a solver MJX lacks replaced (:data:`MJX_SOLVER_FOR`).

        A copy: the C engine and rendering keep the XML's own settings. On the C engine the
        ``mjx.Model`` is only the params pytree randomization reads and writes by name.
        """
        if self.mj_model.opt.solver not in MJX_SOLVER_FOR:
            return self.mj_model
        model = copy.copy(self.mj_model)  # MjModel's copy is a deep one
        model.opt.solver = MJX_SOLVER_FOR[self.mj_model.opt.solver]
        return model

    def observation_box(self, size: int) -> gymnasium.spaces.Box:
        """Gymnasium's unbounded observation space of ``size`` numbers, in float32."""
        return gymnasium.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    # Made on first use, which may come inside a trace: computed eagerly all the same, never a tracer.

    @functools.cached_property
    def _model(self) -> mjx.Model:
        with jax.ensure_compile_time_eval():
            return _mjx().mjx.put_model(self._mjx_model())

    @functools.cached_property
    def _blank_data(self) -> mjx.Data:
        """A zeroed Data, like MuJoCo's mj_resetData; an MJX reset writes qpos/qvel into it."""
        with jax.ensure_compile_time_eval():
            return _mjx().mjx.make_data(self._mjx_model())

    @property
    def default_params(self) -> mjx.Model:
        return self._model

    @property
    def dt(self) -> float:
        return float(self.mj_model.opt.timestep) * self.frame_skip

    # -- What a task implements

    def observation(self, data: mjx.Data | HostData) -> jax.Array:
        """Gymnasium's ``_get_obs`` (cast to float32 by the caller)."""
        raise NotImplementedError

    def outcome(self, before, after, action) -> tuple[jax.Array, jax.Array, dict[str, jax.Array]]:
        """``(reward, terminated, info)`` of the step from physics state ``before`` to ``after``."""
        raise NotImplementedError

    def reset_info(self, data: mjx.Data | HostData) -> dict[str, jax.Array]:
        """Gymnasium's ``_get_reset_info``: the keys of :attr:`reset_info_keys`."""
        return {}

    def initial_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(qpos, qvel)`` of a reset: Gymnasium's ``reset_model`` draw around init_qpos/init_qvel."""
        key_pos, key_vel = prng.split(key)
        qpos = self.init_qpos + self._noise(key_pos, self.reset_noise[0], self.mj_model.nq)
        qvel = self.init_qvel + self._noise(key_vel, self.reset_noise[1], self.mj_model.nv)
        return qpos, qvel

    def _noise(self, key: jax.Array, kind: str, size: int) -> jax.Array:
        scale = self.reset_noise_scale
        if kind == "normal":
            return scale * prng.normal(key, (size,), jnp.float32)
        return prng.uniform(key, (size,), jnp.float32, -scale, scale)

    # -- The same for every task

    def reset(self, key: jax.Array, params: mjx.Model | None = None) -> State:
        qpos, qvel = self.initial_state(key)
        return self.reset_to(qpos, qvel, params)

    def reset_to(self, qpos: jax.Array, qvel: jax.Array, params: mjx.Model | None = None) -> State:
        """A fresh state at ``(qpos, qvel)``, like Gymnasium's ``set_state`` after a reset.

        ``info`` has every key a step reports: the reset's own, and zeros of the right shape
        for the step-only ones, so that a State has one pytree structure (auto-reset selects
        between a stepped and a reset state).
        """
        return self._started(self.physics_init(params, qpos, qvel))

    def _started(self, data) -> State:
        """The State a reset leaves at physics state ``data`` (see :meth:`reset_to`)."""
        reported = self.reset_info(data)
        if set(reported) != set(self.reset_info_keys):
            raise ValueError(
                f"{type(self).__name__}.reset_info gives {sorted(reported)}, but reset_info_keys "
                f"says {sorted(self.reset_info_keys)}"
            )
        step_info = self._step_info_shapes(data)
        missing = sorted(set(reported) - set(step_info))
        if missing:
            raise ValueError(f"{type(self).__name__}: reset info keys {missing} are not reported by step")
        info = {
            k: jnp.asarray(reported[k], jnp.float32) if k in reported else jnp.zeros(s.shape, jnp.float32)
            for k, s in step_info.items()
        }
        return State(
            env_state=data,
            obs=jnp.asarray(self.observation(data), jnp.float32),
            reward=jnp.float32(0.0),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            info=info,
        )

    def step(self, state: State, action: jax.Array, params: mjx.Model | None = None) -> State:
        return self._stepped(state, self.physics_step(params, state.env_state, action), action)

    def step_or_reset(self, state: State, action: jax.Array, reset: jax.Array, key: jax.Array,
                      params: mjx.Model | None = None) -> State:
        """One physics call on MuJoCo's batch engine: the envs that reset do so in the call that
        steps the others (see :meth:`gymjax.core.Env.step_or_reset`); MJX computes both."""
        qpos, qvel = self.initial_state(key)
        reset_data, stepped = self.physics_engine.step_or_reset(self._changed(params), state.env_state, action, reset,
                                                                qpos, qvel)
        return where_env(reset, self._started(reset_data), self._stepped(state, stepped, action))

    def restart(self, state: State, reset: jax.Array, key: jax.Array, params: mjx.Model | None = None) -> State:
        """On MuJoCo's batch engine, only the envs that reset run their physics."""
        qpos, qvel = self.initial_state(key)
        data = self.physics_engine.init_where(self._changed(params), reset, qpos, qvel)
        return where_env(reset, self._started(data), state)

    def _stepped(self, state: State, data, action: jax.Array) -> State:
        """``state`` stepped to physics state ``data`` by ``action``."""
        reward, terminated, info = self.outcome(state.env_state, data, action)
        return state.replace(
            env_state=data,
            obs=jnp.asarray(self.observation(data), jnp.float32),
            reward=jnp.asarray(reward, jnp.float32),
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=jnp.bool_(False),
            info={k: jnp.asarray(v, jnp.float32) for k, v in info.items()},
        )

    def _step_info_shapes(self, data) -> dict[str, jax.ShapeDtypeStruct]:
        """The shapes of :meth:`outcome`'s info, traced once without running anything."""
        if self._step_info is None:
            abstract = jax.tree.map(lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x)), data)
            action = jax.ShapeDtypeStruct((self.mj_model.nu,), jnp.float32)
            self._step_info = jax.eval_shape(lambda d, a: self.outcome(d, d, a)[2], abstract, action)
        return self._step_info

    def physics_init(self, params, qpos: jax.Array, qvel: jax.Array) -> mjx.Data | HostData:
        """Gymnasium's ``set_state``: write qpos/qvel into a reset Data, then forward.

        ``params``: None, an ``mjx.Model``, or ``{field: value}`` (see :meth:`Env.resolve_params`).
        """
        return self.physics_engine.init(self._changed(params), qpos, qvel)

    def physics_step(self, params, data: mjx.Data | HostData, ctrl: jax.Array) -> mjx.Data | HostData:
        """Gymnasium's ``do_simulation``: ``frame_skip`` steps, then ``rnePostConstraint``
        (which fills ``cfrc_ext``, left stale by ``mj_step``) if the task reads what it fills."""
        return self.physics_engine.step(self._changed(params), data, ctrl)

    def _changed(self, params):
        """``params`` as an engine takes it: None for the model's own physics."""
        return None if params is None or params is self._model else params

    # Rendering runs Gymnasium's own MuJoCo renderer on the host, one state at a time: the same
    # camera (a free camera looking at the median of the geoms when it first draws, at
    # stat.extent, azimuth 90, elevation -45, then default_camera_config's settings, which
    # set trackbodyid without making the camera track), the same modes, the same pixels.

    def render(self, state: State, *, width: int = DEFAULT_SIZE, height: int = DEFAULT_SIZE, camera: Any = None,
               mode: str = "rgb_array"):
        """A frame of one (unbatched) state, as Gymnasium's ``MujocoEnv.render`` draws it.

        ``mode``: ``"rgb_array"`` (uint8 ``[height, width, 3]``), ``"depth_array"`` (float32
        ``[height, width]``, the depth buffer in [0, 1] as Gymnasium returns it: 0 at the near
        plane, 1 at the far one) or ``"rgbd_tuple"`` (both). ``camera``: a camera id or an
        ``mujoco.MjvCamera`` used for this frame instead of the env's own.
        """
        if mode not in RENDER_MODES:
            raise ValueError(f"mode must be one of {list(RENDER_MODES)}, got {mode!r}")
        self.mj_data(state)
        return self._draw(width, height, mode, camera)

    def _draw(self, width: int, height: int, mode: str, camera: Any = None):
        """Draws the render data as it is (see :meth:`mj_data`)."""
        renderer = self.gymnasium_renderer(width, height)
        viewer = renderer._get_viewer(mode)
        viewer.make_context_current()  # another size's, or another env's, context may be current
        if camera is None:
            return renderer.render(mode)
        saved = viewer.cam
        try:
            if isinstance(camera, mujoco.MjvCamera):
                viewer.cam = camera
                return viewer.render(render_mode=mode)
            viewer.cam = mujoco.MjvCamera()
            return viewer.render(render_mode=mode, camera_id=int(camera))
        finally:
            viewer.cam = saved

    def gymnasium_renderer(self, width: int = DEFAULT_SIZE, height: int = DEFAULT_SIZE):
        """The ``MujocoRenderer`` (Gymnasium's class) that draws this env's frames of that size.

        It draws :meth:`mj_data`'s ``MjData``; Gymnasium's envs hold it as ``mujoco_renderer``.
        """
        from gymnasium.envs.mujoco.mujoco_rendering import MujocoRenderer

        key = (int(width), int(height))
        if key not in self._renderers:
            m = self.mj_model
            m.vis.global_.offwidth = max(width, m.vis.global_.offwidth)
            m.vis.global_.offheight = max(height, m.vis.global_.offheight)
            config = {k: np.asarray(v, np.float64) if isinstance(v, (tuple, list)) else v
                      for k, v in self.camera.items()}
            self._renderers[key] = MujocoRenderer(
                m, self._mj_data(), config or None, key[0], key[1], self.max_geom,
                self.camera_id, None, self.visual_options,
            )
        return self._renderers[key]

    def _mj_data(self) -> mujoco.MjData:
        if self._render_data is None:
            self._render_data = mujoco.MjData(self.mj_model)
        return self._render_data

    def mj_data(self, state: State | None, out: mujoco.MjData | None = None) -> mujoco.MjData:
        """A ``mujoco.MjData`` at one (unbatched) state, as Gymnasium's reset or set_state leaves
        its own: reset data, the state written, forwarded. ``out`` (default: the data the
        renderers draw, reused by the next call) is written in place.

        The C engine's state is copied whole, in float64 (qpos, qvel, act, warm start, time);
        MJX's float32 qpos and qvel are written. ``state`` None: a fresh ``MjData``'s, as
        Gymnasium's env holds before its first reset (not forwarded).
        """
        data = self._mj_data() if out is None else out
        mujoco.mj_resetData(self.mj_model, data)
        if state is None:
            return data
        physics = state.env_state
        qpos, qvel = np.asarray(physics.qpos), np.asarray(physics.qvel)
        if qpos.shape != (self.mj_model.nq,):
            raise ValueError(
                f"render takes one unbatched state (qpos shape ({self.mj_model.nq},)), "
                f"got qpos of shape {qpos.shape}"
            )
        if isinstance(physics, HostData):
            full = np.ascontiguousarray(np.asarray(physics.state)).view(np.float64)
            mujoco.mj_setState(self.mj_model, data, full, STATE_SPEC)
        else:
            data.qpos[:], data.qvel[:] = qpos, qvel
        mujoco.mj_forward(self.mj_model, data)
        return data

    def _render_options(self, camera_id, camera_name, max_geom, visual_options) -> None:
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

    def close(self) -> None:
        self.physics_engine.close()
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(solver={self.solver!r}, engine={self.engine!r})"

    def __getstate__(self):
        # Renderers hold GL contexts, and MjData is rebuilt: neither pickles.
        return {**self.__dict__, "_renderers": {}, "_render_data": None}
