"""The ``"mujoco"`` backend: MuJoCo's C engine, called from inside ``jit``.

``reset`` and ``step`` stay pure JAX functions: the physics is one
``jax.pure_callback`` with ``vmap_method="broadcast_all"``, so a vmapped batch of
``N`` envs is *one* host call over ``[N, ...]`` arrays, which steps the envs on a
persistent thread pool (one ``MjData`` per thread; MuJoCo releases the GIL while
it steps). Everything around the callback (observation, reward, auto-reset,
the PPO epoch's ``lax.scan``) still compiles.

Why not ``mujoco.rollout``: it returns state vectors and sensors only, while
Gymnasium's tasks read ``MjData`` fields as the step leaves them: Ant-v5 the
torso ``xpos`` of the last substep's forward pass and ``cfrc_ext`` (filled by
``mj_rnePostConstraint``), Humanoid-v5 ``cinert``, ``cvel``, ``qfrc_actuator``.
Matching them needs the ``MjData`` right after the step, so the threads here run
Gymnasium's own ``do_simulation`` sequence per env and copy out the fields the
env declared (:func:`layout`), nothing more.
"""

from __future__ import annotations

import concurrent.futures
import copy
import functools
import itertools
import os
import re
import threading
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from flax import struct

# What an env's physics state holds between steps: Gymnasium keeps all of it in
# its MjData. The warm start makes the solver's first guess the same as there.
STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS | mujoco.mjtState.mjSTATE_WARMSTART


# Fields mj_kinematics computes: a reset that needs no more can skip the rest of mj_forward.
KINEMATIC_FIELDS = frozenset({
    "xpos", "xquat", "xmat", "xipos", "ximat", "xanchor", "xaxis", "geom_xpos", "geom_xmat", "site_xpos", "site_xmat",
})
# Fields only mj_rnePostConstraint fills: zero after a reset (mj_resetData clears them and
# mj_forward does not call it without acceleration sensors), computed after a step only if read.
POST_CONSTRAINT_FIELDS = frozenset({"cacc", "cfrc_int", "cfrc_ext"})


@struct.dataclass
class HostData:
    """Physics state of the ``"mujoco"`` engine; :func:`gymjax.envs.mujoco.base.field` reads it
    like an ``mjx.Data``.

    Attributes:
        state: uint32 ``[2 * nstate]``, the float64 bits of ``mj_getState(STATE_SPEC)``.
            JAX keeps float32 by default; carrying the bits keeps the C
            trajectory exactly MuJoCo's, step after step.
        qpos: float32 ``[nq]``; qvel: float32 ``[nv]``.
        fields: float32, the ``MjData`` fields the env declared (``MujocoEnv.data_fields``),
            as the step leaves them (``xpos`` of the last substep's forward pass, as Ant-v5
            differences it).
        residual: for each field the env differences (``MujocoEnv.differenced_fields``), the
            float64 value less its float32 rounding, in float32: ``field + residual`` holds the
            float64 number to about 1e-15 relative, so a change of position 500 m from the
            origin keeps the precision it has in Gymnasium.
    """

    state: jax.Array
    qpos: jax.Array
    qvel: jax.Array
    fields: dict[str, jax.Array]
    residual: dict[str, jax.Array]


class NotDifferentiableError(TypeError):
    """Raised when a gradient is taken through the ``"mujoco"`` engine."""


NOT_DIFFERENTIABLE = (
    'the "mujoco" engine is not differentiable: MuJoCo C steps outside JAX. '
    'Use engine="mjx" to take gradients through reset/step.'
)


def _field_owner(model: mujoco.MjModel, name: str) -> tuple[Any, str]:
    """``(object, attribute)`` holding field ``name`` of an MjModel (``opt.*`` in ``model.opt``)."""
    owner, _, field = name.rpartition(".")
    return {"": model, "opt": model.opt}.get(owner), field


def _field_size(model: mujoco.MjModel, name: str) -> int | None:
    """How many numbers MjModel's field ``name`` holds; None when it has no such field."""
    owner, field = _field_owner(model, name)
    value = getattr(owner, field, None) if owner is not None else None
    if isinstance(value, np.ndarray):
        return value.size
    return 1 if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _write_field(model: mujoco.MjModel, name: str, value: np.ndarray) -> None:
    owner, field = _field_owner(model, name)
    target = getattr(owner, field)
    if isinstance(target, np.ndarray):
        target.reshape(-1)[:] = np.ravel(value)
    else:
        setattr(owner, field, type(target)(np.ravel(value)[0]))


def check_randomizable(mj_model: mujoco.MjModel, name: str, shape: tuple[int, ...], dtypes=None) -> None:
    """Raises unless ``name`` is an MjModel field of ``shape``'s size (and, given ``dtypes``, of one of
    them) that the C engine can take per env."""
    owner, field = _field_owner(mj_model, name)
    value = getattr(owner, field, None) if owner is not None else None
    if _field_size(mj_model, name) != int(np.prod(shape)) or (dtypes is not None and np.asarray(value).dtype not in dtypes):
        raise NotImplementedError(
            f'the "mujoco" engine cannot randomize {name!r}: MjModel has no field of that '
            'name and size (randomize MjModel fields such as body_mass, geom_friction, '
            'dof_damping, actuator_gainprm, opt.gravity, or use engine="mjx")'
        )


def layout(
    mj_model: mujoco.MjModel, fields: tuple[str, ...] = (), residuals: tuple[str, ...] = ()
) -> dict[str, tuple[int, int, tuple[int, ...]]]:
    """Where each :class:`HostData` part lives in a row of the host's output buffer:
    ``name -> (start, stop, shape)`` in 32-bit words (the float64 state takes two a number).

    ``fields``: ``MjData`` array fields besides qpos/qvel; ``residuals``: those of ``qpos`` and
    ``fields`` whose float64 residual travels too, as ``"residual.<name>"``.
    """
    m = mj_model
    blank = mujoco.MjData(m)
    parts: dict[str, tuple[int, ...]] = {
        "state": (2 * mujoco.mj_stateSize(m, STATE_SPEC),),
        "qpos": (m.nq,),
        "qvel": (m.nv,),
    }
    for name in fields:
        value = getattr(blank, name, None)
        if name in parts or not isinstance(value, np.ndarray) or value.dtype != np.float64:
            raise ValueError(f"{name!r} is not a float array field of mujoco.MjData besides qpos and qvel")
        parts[name] = value.shape
    for name in residuals:
        if name not in parts or name in ("state", "qvel"):
            raise ValueError(f"residual of {name!r}: expected 'qpos' or one of the declared fields {list(fields)}")
        parts[f"residual.{name}"] = parts[name]
    out, start = {}, 0
    for name, shape in parts.items():
        size = int(np.prod(shape))
        out[name] = (start, start + size, shape)
        start += size
    return out


def _state_offset(model: mujoco.MjModel, component: int) -> int:
    """Where ``component`` (one ``mjtState`` bit of :data:`STATE_SPEC`) starts in a state vector:
    MuJoCo lays the components out in the order of their bits."""
    before = int(STATE_SPEC) & (int(component) - 1)
    return mujoco.mj_stateSize(model, before) if before else 0


class _Worker:
    """One thread's ``MjData`` and cached views of the fields read after a step.

    ``data.xpos`` builds a new NumPy view at every access; 256 envs x a few arrays of
    those cost more than the copies themselves.
    """

    def __init__(self, model: mujoco.MjModel, fields: tuple[str, ...]):
        self.data = mujoco.MjData(model)
        self.ctrl = self.data.ctrl
        self.views = {name: getattr(self.data, name) for name in fields}


class HostPhysics:
    """Steps batches of envs of one ``MjModel`` with MuJoCo C on ``nthread`` threads.

    Args:
        mj_model: the model, solver settings included.
        frame_skip: ``mj_step`` substeps per env step.
        nthread: threads (the caller's included); default: all CPUs.
        fields: the ``MjData`` fields returned besides the state, qpos and qvel.
        residuals: those of ``qpos`` and ``fields`` whose float64 residual is returned too.

    Randomized model fields arrive as ``{name: [N, ...]}`` and are written into
    per-env ``MjModel`` copies; only the fields of an ``mjx.Model`` that
    ``MjModel`` has under the same name can be randomized.

    The threads take envs one at a time from a shared counter rather than a fixed
    half each: envs in contact cost several times those in the air, and on a
    shared machine one thread may be descheduled; a fixed split waits for the
    slower half.
    """

    def __init__(
        self,
        mj_model: mujoco.MjModel,
        frame_skip: int,
        nthread: int | None = None,
        fields: tuple[str, ...] = (),
        residuals: tuple[str, ...] = (),
    ):
        route_mujoco_warnings()
        self.mj_model = mj_model
        self.frame_skip = frame_skip
        self.nthread = max(1, nthread or os.cpu_count() or 1)
        self.fields, self.residuals = tuple(fields), tuple(residuals)
        self.nstate = mujoco.mj_stateSize(mj_model, STATE_SPEC)
        self.layout = layout(mj_model, self.fields, self.residuals)
        self.words = max(stop for _, stop, _ in self.layout.values())
        # Gymnasium's do_simulation always calls mj_rnePostConstraint; it changes no state, only
        # the fields it fills, so it runs only when one of them is read.
        self._post_constraint = bool(POST_CONSTRAINT_FIELDS & set(self.fields))
        # A reset may skip mj_forward's dynamics when nothing read depends on them (see init).
        self._kinematics_resets = set(self.fields) <= KINEMATIC_FIELDS | POST_CONSTRAINT_FIELDS
        qpos = _state_offset(mj_model, mujoco.mjtState.mjSTATE_QPOS)
        qvel = _state_offset(mj_model, mujoco.mjtState.mjSTATE_QVEL)
        self._qpos_at, self._qvel_at = slice(qpos, qpos + mj_model.nq), slice(qvel, qvel + mj_model.nv)
        self._lock = threading.Lock()  # the MjData are shared by concurrent callbacks
        self._workers = [_Worker(mj_model, self.fields) for _ in range(self.nthread)]
        # A reset's state vector before qpos/qvel are written: mj_resetData's.
        blank = self._workers[0].data
        mujoco.mj_resetData(mj_model, blank)
        self._blank = np.empty(self.nstate)
        mujoco.mj_getState(mj_model, blank, self._blank, STATE_SPEC)
        self._pool = (
            concurrent.futures.ThreadPoolExecutor(self.nthread - 1, thread_name_prefix="gymjax-mujoco")
            if self.nthread > 1
            else None
        )
        self._models: list[mujoco.MjModel] = []  # per-env copies, for randomized fields
        self._written: set[str] = set()  # the fields the copies hold randomized values of

    def check_randomizable(self, name: str, shape: tuple[int, ...]) -> None:
        check_randomizable(self.mj_model, name, shape)

    # One call over the whole batch: arrays are [N, ...].

    def init(self, qpos: np.ndarray, qvel: np.ndarray, fields: dict[str, np.ndarray]):
        """Gymnasium's reset + ``set_state``: reset the data, write qpos/qvel, forward.

        ``mj_forward`` changes none of the state (MuJoCo saves the warm start only
        when it integrates), and without sensors it leaves the post-constraint fields
        (``cfrc_ext``) zero; so when every field read is a kinematic one, and the model has
        no sensors or plugins (nor randomized mocap bodies), the state is written in
        NumPy and ``mj_kinematics`` alone runs. Auto-reset resets a whole batch each time
        one of its envs ends (most steps at 256 Ants), so this is on the hot path
        (``python -m benchmarks throughput --profile`` times the step around it).
        """
        n = len(qpos)
        m = self.mj_model
        # mj_resetData puts mocap bodies where the (maybe randomized) model says: that case,
        # like sensors and plugins, keeps the full sequence.
        if not self._kinematics_resets or m.nsensor or m.nplugin or (m.nmocap and fields):

            def one(model, worker, i):
                data = worker.data
                mujoco.mj_resetData(model, data)
                data.qpos[:], data.qvel[:] = qpos[i], qvel[i]
                mujoco.mj_forward(model, data)

            return self._run(n, fields, one)

        full = np.broadcast_to(self._blank, (n, self.nstate)).copy()
        full[:, self._qpos_at], full[:, self._qvel_at] = qpos, qvel

        def kinematics(model, worker, i):
            mujoco.mj_setState(model, worker.data, full[i], STATE_SPEC)
            mujoco.mj_kinematics(model, worker.data)

        # One thread: the kinematics of one env costs about what passing the GIL between two
        # threads would.
        return self._run(n, fields, kinematics, state=full, nthread=1)

    def step(self, state: np.ndarray, ctrl: np.ndarray, fields: dict[str, np.ndarray]):
        """Gymnasium's ``do_simulation``: ``frame_skip`` ``mj_step`` s, then ``rnePostConstraint``."""
        full = np.ascontiguousarray(state).view(np.float64)
        frame_skip, post_constraint = self.frame_skip, self._post_constraint

        def one(model, worker, i):
            data = worker.data
            mujoco.mj_setState(model, data, full[i], STATE_SPEC)
            worker.ctrl[:] = ctrl[i]
            mujoco.mj_step(model, data, nstep=frame_skip)
            if post_constraint:
                mujoco.mj_rnePostConstraint(model, data)

        return self._run(len(ctrl), fields, one)

    def _run(self, n, fields, one, state: np.ndarray | None = None, nthread: int | None = None) -> np.ndarray:
        """Runs ``one`` for every env; returns one uint32 ``[n, words]`` buffer (see :func:`layout`).

        One buffer, not an array per field: each array a ``pure_callback`` returns has a
        fixed cost in JAX of its own, more than stepping one Ant's physics. ``state``: the
        state vectors ``[n, nstate]`` of a reset that ``one`` only runs the kinematics of
        (the post-constraint fields are then zero, as ``mj_resetData`` leaves them). qpos
        and qvel are read from the state vectors afterwards, in one NumPy operation for the
        batch (the same float64 numbers as ``data.qpos``).
        """
        words = np.empty((n, self.words), np.uint32)
        floats = words.view(np.float32)
        views = {name: floats[:, a:b].reshape(n, *shape) for name, (a, b, shape) in self.layout.items()}
        full = words[:, slice(*self.layout["state"][:2])].view(np.float64)
        read = self.fields
        if state is not None:
            full[:] = state
            read = tuple(name for name in self.fields if name not in POST_CONSTRAINT_FIELDS)
            for name in set(self.fields) - set(read):
                views[name][:] = 0.0
        # A differenced field is copied whole in float64 and split into float32 and residual once
        # for the batch: per env, the subtraction cost about what stepping a small model does.
        exact = {name: np.empty((n, *views[name].shape[1:])) for name in read if name in self.residuals}
        copies = [(exact.get(name, views[name]), name) for name in read]
        next_env = itertools.count()  # next() on it is atomic under the GIL

        def work(worker):
            while (i := next(next_env)) < n:
                model = models[i] if models else self.mj_model
                one(model, worker, i)
                if state is None:
                    mujoco.mj_getState(model, worker.data, full[i], STATE_SPEC)
                for out, name in copies:
                    out[i] = worker.views[name]

        with self._lock:
            models = self._randomized_models(n, fields)
            helpers = self._workers[1 : min(nthread or self.nthread, n)]
            futures = [self._pool.submit(work, worker) for worker in helpers]
            work(self._workers[0])
            for future in futures:
                future.result()
        exact["qpos"] = full[:, self._qpos_at]
        views["qpos"][:] = exact["qpos"]
        views["qvel"][:] = full[:, self._qvel_at]
        for name in self.residuals:
            if name in exact:
                views[name][:] = exact[name]
                views[f"residual.{name}"][:] = exact[name] - views[name]
            else:  # a post-constraint field after a reset: zero, as is its float32 part
                views[f"residual.{name}"][:] = 0.0
        return words

    def split(self, words: np.ndarray) -> HostData:
        """:meth:`init`'s and :meth:`step`'s buffer as NumPy views, part by part (for tests and tools)."""
        return _assemble(self.layout, words, lambda part, shape: part.reshape(len(words), *shape),
                         lambda part: part.view(np.float32))

    def _randomized_models(self, n: int, fields: dict[str, np.ndarray]) -> list[mujoco.MjModel]:
        # Fields an earlier call randomized and this one does not go back to nominal
        # (a training and an evaluation env may share this object).
        for name in self._written - fields.keys():
            nominal = np.asarray(getattr(*_field_owner(self.mj_model, name)))
            for model in self._models:
                _write_field(model, name, nominal)
        self._written = set(fields)
        if not fields:
            return []
        while len(self._models) < n:
            self._models.append(copy.copy(self.mj_model))
        for name, values in fields.items():
            for i in range(n):
                _write_field(self._models[i], name, values[i])
        return self._models[:n]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _assemble(where, words, reshape, as_float) -> HostData:
    """A :class:`HostData` of the buffer's parts (NumPy or JAX: ``reshape`` and ``as_float`` say how)."""
    parts, fields, residual = {}, {}, {}
    for name, (start, stop, shape) in where.items():
        part = words[..., start:stop]
        part = reshape(part if name == "state" else as_float(part), shape)
        if name in ("state", "qpos", "qvel"):
            parts[name] = part
        elif name.startswith("residual."):
            residual[name.removeprefix("residual.")] = part
        else:
            fields[name] = part
    return HostData(**parts, fields=fields, residual=residual)


def _batched_callback(host_fn, words: int, *args) -> jax.Array:
    """One ``pure_callback`` over however many vmapped axes; the host sees ``[N, ...]``
    and returns ``[N, words]`` uint32.

    ``args[0]`` is one-dimensional for one env, so its leading axes are the batch's.
    """

    def flat(*arrays):
        batch = arrays[0].shape[:-1]
        n = int(np.prod(batch, dtype=np.int64))
        return host_fn(n, *arrays).reshape(*batch, words)

    out_shape = jax.ShapeDtypeStruct((words,), jnp.uint32)
    return jax.pure_callback(flat, out_shape, *args, vmap_method="broadcast_all")


def _as_words(x: jax.Array) -> jax.Array:
    """``x`` (uint32 or float32) as uint32, bit for bit."""
    return x if x.dtype == jnp.uint32 else jax.lax.bitcast_convert_type(x, jnp.uint32)


def _no_gradient(fn):
    """``fn`` with a JVP rule that raises :class:`NotDifferentiableError`.

    ``pure_callback`` has no JVP rule; JAX's own error would not say what to do.
    """
    wrapped = jax.custom_jvp(fn)

    @wrapped.defjvp
    def _jvp(primals, tangents):
        raise NotDifferentiableError(NOT_DIFFERENTIABLE)

    return wrapped


_TIME = re.compile(r"\s*Time = [0-9.eE+-]+\.?")


class MuJoCoWarning(RuntimeWarning):
    """A warning of MuJoCo's C engine (an unstable simulation, a full contact buffer, ...)."""


@functools.cache
def route_mujoco_warnings() -> None:
    """MuJoCo's warnings become Python warnings (once per process, when the C backend is first built).

    MuJoCo's own handler prints every warning and appends it to ``MUJOCO_LOG.TXT``
    in the working directory; 256 unstable envs flooded stderr and wrote into
    the user's folder. As Python warnings, each kind shows once (Python's default
    filter) and can be filtered or made an error like any other. The handler is
    process-wide: MuJoCo has one.
    """

    def handler(text: str) -> None:
        # The time varies with every occurrence; without it, repeats are recognised as such.
        message = _TIME.sub("", text).strip()
        warnings.warn(f"MuJoCo: {message}", MuJoCoWarning, stacklevel=2)

    mujoco.set_mju_user_warning(handler)


class CallbackEngine:
    """The JAX side of :class:`HostPhysics` for one env: builds and reads :class:`HostData`."""

    def __init__(
        self,
        mj_model: mujoco.MjModel,
        frame_skip: int,
        fields: tuple[str, ...] = (),
        residuals: tuple[str, ...] = (),
        nthread: int | None = None,
    ):
        self.mj_model = mj_model
        self.frame_skip = frame_skip
        self.fields, self.residuals = tuple(fields), tuple(residuals)
        self.nthread = nthread
        self._physics: HostPhysics | None = None  # started on first use, never pickled
        self.layout = layout(mj_model, self.fields, self.residuals)
        self.words = max(stop for _, stop, _ in self.layout.values())

    @property
    def physics(self) -> HostPhysics:
        if self._physics is None:
            self._physics = HostPhysics(self.mj_model, self.frame_skip, self.nthread, self.fields, self.residuals)
        return self._physics

    def init(self, qpos, qvel, fields: dict[str, jax.Array]) -> HostData:
        """:meth:`HostPhysics.init` for one env (or a vmapped batch)."""
        return self._call("init", jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32), fields)

    def step(self, data: HostData, ctrl, fields: dict[str, jax.Array]) -> HostData:
        """:meth:`HostPhysics.step` for one env (or a vmapped batch)."""
        return self._call("step", data.state, jnp.asarray(ctrl, jnp.float32), fields)

    def _call(self, method: str, first: jax.Array, second: jax.Array, fields: dict[str, jax.Array]):
        """One callback of ``method(first, second, fields)``.

        ``first`` (uint32 or float32) and ``second`` (float32) travel as one uint32 array,
        bit for bit: JAX device-puts each argument of a ``pure_callback`` before calling it,
        which at small batches costs more than the physics.
        """
        names = tuple(fields)
        width = first.shape[-1]
        first_is_float = first.dtype == jnp.float32

        def host(n, packed, *values):
            # A copy: MuJoCo reads arrays that view XLA's buffers at half speed
            # (measured: 256 Ant steps took 2x as long); a copy costs microseconds.
            packed = np.array(packed).reshape(n, -1)
            head, tail = packed[:, :width], packed[:, width:].view(np.float32)
            head = head.view(np.float32) if first_is_float else head
            return getattr(self.physics, method)(head, tail, self._fields(n, names, values))

        def call(first, second, *values):
            packed = jnp.concatenate([_as_words(first), _as_words(second)], axis=-1)
            return _batched_callback(host, self.words, packed, *values)

        words = _no_gradient(call)(first, second, *fields.values())
        # Slices and bit casts, in JAX.
        return _assemble(self.layout, words, lambda part, shape: part.reshape(*words.shape[:-1], *shape),
                         lambda part: jax.lax.bitcast_convert_type(part, jnp.float32))

    def _fields(self, n: int, names: tuple[str, ...], values) -> dict[str, np.ndarray]:
        return {name: np.array(v).reshape(n, -1) for name, v in zip(names, values)}

    def check_fields(self, fields: dict[str, jax.Array]) -> None:
        for name, value in fields.items():
            self.physics.check_randomizable(name, np.shape(value))

    def close(self) -> None:
        if self._physics is not None:
            self._physics.close()
            self._physics = None

    def __getstate__(self):
        # Threads cannot be pickled or deep-copied; a copy starts its own.
        return {**self.__dict__, "_physics": None}
