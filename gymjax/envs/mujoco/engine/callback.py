"""The ``"mujoco"`` engine's fallback: MuJoCo's batch engine under a callback.

:class:`CallbackEngine` is what :func:`gymjax.envs.mujoco.engine.make` falls back to where
the native extension is not built (no compiler). ``reset`` and ``step`` stay pure JAX functions:
the physics is one ``jax.pure_callback`` with ``vmap_method="broadcast_all"``, so a vmapped batch
of ``N`` envs is *one* host call over ``[N, ...]`` arrays. There :class:`HostPhysics` runs them on
``mujoco.batch.Batch`` (the Python face of the batch engine that ``csrc/engine.cc`` calls in C):
the JAX state rows are written into the batch's state rows, the batch steps them on its own C
threads (``nstep=frame_skip``), and NumPy copies rows and bound fields out, once for the batch.
Masked resets (``step_or_reset``, ``init_where``) run only the envs they name, as natively, and the
trajectories are the native engine's bit for bit (``tests/envs/test_native_engine.py``).

The one piece that loops over the envs in Python is ``mj_rnePostConstraint`` after a step, for the
tasks that read what it fills (Ant's and Humanoid's ``cfrc_ext``): the batch's Python face has no
``mjb_apply``, and none of its calls runs it after the last substep (see :meth:`HostPhysics._post`).
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from gymjax.core.errors import SimulationError
from gymjax.envs.mujoco.engine.contract import (
    KINEMATIC_FIELDS,
    POST_CONSTRAINT_FIELDS,
    STATE_SPEC,
    BatchedEngine,
    HostData,
    assemble,
    check_randomizable,
    field_owner,
    layout,
    no_gradient,
    route_mujoco_warnings,
    write_field,
)

try:
    from mujoco import batch
except ImportError:  # MuJoCo before 4.0 has no batch engine; engine.make says what to do
    batch = None

def _state_offset(model: mujoco.MjModel, component: int, spec: int = STATE_SPEC) -> int:
    """Where ``component`` (one ``mjtState`` bit of ``spec``) starts in a state vector of ``spec``:
    MuJoCo lays the components out in the order of their bits."""
    before = int(spec) & (int(component) - 1)
    return mujoco.mj_stateSize(model, before) if before else 0


def _span(model: mujoco.MjModel, component: int, spec: int) -> slice:
    start = _state_offset(model, component, spec)
    return slice(start, start + mujoco.mj_stateSize(model, int(component)))


class _Sims:
    """One ``mujoco.batch.Batch`` of ``n`` simulations and what a call reads off it."""

    def __init__(self, physics: HostPhysics, n: int):
        m = physics.mj_model
        # A persistent batch keeps each simulation's MjData after a step, where mj_rnePostConstraint
        # then runs (see HostPhysics._post); one env alone runs on the caller's thread, as natively.
        self.batch = batch.Batch(m, n, 1 if n == 1 else physics.nthread, persistent=physics.post_constraint)
        # Bound before the first call: the batch copies a field out only once it is bound.
        self.outputs = {name: self.batch.bind(name) for name in physics.fields}
        self.expanded: set[str] = set()  # model fields that have per-simulation values
        if physics.post_constraint:
            self.data = mujoco.MjData(m)
            self.model = copy.copy(m)  # a simulation's model, its randomized fields written in
            self.post_views = {name: getattr(self.data, name) for name in physics.fields
                               if name in POST_CONSTRAINT_FIELDS}


class HostPhysics:
    """Steps batches of envs of one ``MjModel`` on MuJoCo's batch engine (``mujoco.batch``).

    Args:
        mj_model: the model, solver settings included.
        frame_skip: ``mj_step`` substeps per env step.
        nthread: the batch's threads, the caller's included; default: one per CPU.
        fields: the ``MjData`` fields returned besides the state, qpos and qvel.
        residuals: those of ``qpos`` and ``fields`` whose float64 residual is returned too.

    The same physics as ``csrc/engine.cc`` through the batch engine's Python face: each call writes
    the JAX state rows into a batch's state rows (so the batch keeps nothing a call needs), runs the
    envs on the batch's C threads, and copies rows and bound fields out in NumPy, once for the batch.
    Randomized model fields arrive as ``{name: [N, ...]}`` and become the batch's per-simulation
    values (``Batch.expand``). One batch per batch size, made on first use.
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
        self.nthread = nthread or 0
        self.fields, self.residuals = tuple(fields), tuple(residuals)
        self.layout = layout(mj_model, self.fields, self.residuals)
        self.words = max(stop for _, stop, _ in self.layout.values())
        # Gymnasium's do_simulation always calls mj_rnePostConstraint; it changes no state, only
        # the fields it fills, so it runs only when one of them is read.
        self.post_constraint = bool(POST_CONSTRAINT_FIELDS & set(self.fields))
        # A reset may stop at the position stage when nothing read depends on more (see _reset).
        self._kinematics_resets = (set(self.fields) <= KINEMATIC_FIELDS | POST_CONSTRAINT_FIELDS
                                   and not mj_model.nsensor and not mj_model.nplugin)
        # Where our state's components, and qpos, qvel, ctrl, lie in the batch's rows.
        rows = mujoco.mjtState.mjSTATE_INTEGRATION
        bits = [1 << k for k in range(int(STATE_SPEC).bit_length()) if int(STATE_SPEC) & (1 << k)]
        self._components = [(_span(mj_model, bit, STATE_SPEC), _span(mj_model, bit, rows)) for bit in bits
                            if mujoco.mj_stateSize(mj_model, bit)]
        self._qpos_at = _span(mj_model, mujoco.mjtState.mjSTATE_QPOS, rows)
        self._qvel_at = _span(mj_model, mujoco.mjtState.mjSTATE_QVEL, rows)
        self._ctrl_at = _span(mj_model, mujoco.mjtState.mjSTATE_CTRL, rows)
        # A row before a call writes the env's state into it: mj_resetData's.
        blank = mujoco.MjData(mj_model)
        mujoco.mj_resetData(mj_model, blank)
        self._blank = np.empty(mujoco.mj_stateSize(mj_model, rows))
        mujoco.mj_getState(mj_model, blank, self._blank, rows)
        self._lock = threading.Lock()  # the batches are shared by concurrent callbacks
        self._sims: dict[int, _Sims] = {}
        self._stats = {"calls": 0, "stepped": 0, "reset": 0}

    def check_randomizable(self, name: str, shape: tuple[int, ...]) -> None:
        check_randomizable(self.mj_model, name, shape, names=batch.MODEL_FIELDS)

    def stats(self) -> dict[str, int]:
        """What ran: ``calls`` (batched calls), ``stepped`` and ``reset`` (simulations)."""
        return dict(self._stats)

    # One call over the whole batch: arrays are [N, ...], as the native engine's handlers take them.

    def init(self, qpos: np.ndarray, qvel: np.ndarray, fields: dict[str, np.ndarray]) -> np.ndarray:
        """Gymnasium's reset + ``set_state``: reset the data, write qpos/qvel, forward."""
        return self._run(len(qpos), fields, qpos=qpos, qvel=qvel)

    def init_where(self, reset: np.ndarray, qpos: np.ndarray, qvel: np.ndarray,
                   fields: dict[str, np.ndarray]) -> np.ndarray:
        """:meth:`init` of the envs where ``reset`` holds; the others' rows are zeros."""
        return self._run(len(qpos), fields, reset=reset, qpos=qpos, qvel=qvel)

    def step(self, state: np.ndarray, ctrl: np.ndarray, fields: dict[str, np.ndarray]) -> np.ndarray:
        """Gymnasium's ``do_simulation``: ``frame_skip`` ``mj_step`` s, then ``rnePostConstraint``."""
        return self._run(len(ctrl), fields, state=state, ctrl=ctrl)

    def step_or_reset(self, state: np.ndarray, ctrl: np.ndarray, reset: np.ndarray, qpos: np.ndarray,
                      qvel: np.ndarray, fields: dict[str, np.ndarray]) -> np.ndarray:
        """:meth:`step`, or where ``reset`` holds :meth:`init` at ``(qpos, qvel)``, in one call."""
        return self._run(len(ctrl), fields, state, ctrl, reset, qpos, qvel)

    def _run(self, n, fields, state=None, ctrl=None, reset=None, qpos=None, qvel=None) -> np.ndarray:
        """Steps the rows of ``state`` where ``reset`` does not hold, resets those where it does
        (all rows when there is no state); returns one uint32 ``[n, words]`` buffer (:func:`layout`)."""
        if n == 0:  # a batch of no simulations cannot be made
            return np.zeros((0, self.words), np.uint32)
        reset = np.full(n, state is None) if reset is None else np.asarray(reset, bool)
        stepping = np.flatnonzero(~reset) if state is not None else np.empty(0, np.intp)
        resetting = np.flatnonzero(reset)
        with self._lock, _typed(n):
            if n not in self._sims:
                self._sims[n] = _Sims(self, n)
            sims = self._sims[n]
            self._write_fields(sims, fields)
            post = {}
            if stepping.size:
                at = _rows(stepping, n)
                rows, ours = sims.batch.state, np.ascontiguousarray(state).view(np.float64)
                rows[at] = self._blank
                for mine, theirs in self._components:
                    rows[at, theirs] = ours[at, mine]
                rows[at, self._ctrl_at] = ctrl[at]
                sims.batch.step(_ids(stepping, n), nstep=self.frame_skip)
                if self.post_constraint:
                    post = self._post(sims, stepping)
            if resetting.size:
                self._reset(sims, resetting, qpos, qvel)
            self._stats["calls"] += 1
            self._stats["stepped"] += stepping.size
            self._stats["reset"] += resetting.size
            return self._output(sims, n, stepping, resetting, post)

    def _write_fields(self, sims: _Sims, fields: dict[str, np.ndarray]) -> None:
        """This call's randomized fields, and the nominal values of those an earlier call randomized
        and this one does not (a training and an evaluation env may share this object)."""
        per_sim = sims.batch.expand
        for name in sims.expanded - fields.keys():
            per_sim(name)[...] = np.asarray(getattr(*field_owner(self.mj_model, name)))
        for name, values in fields.items():
            target = per_sim(name)
            target.reshape(len(target), -1)[...] = values.reshape(len(target), -1)
        sims.expanded |= fields.keys()

    def _post(self, sims: _Sims, stepping: np.ndarray) -> dict[str, np.ndarray]:
        """``mj_rnePostConstraint`` after the step, one env at a time, on a copy of its MjData.

        The batch's Python face has no ``mjb_apply`` (which runs a C function per simulation on its
        threads, as ``csrc/engine.cc`` does), and no stage of its calls runs it after the last
        substep: this is the one part that loops over the envs in Python.
        """
        b, data = sims.batch, sims.data
        out = {name: np.zeros((b.nsim, *view.shape)) for name, view in sims.post_views.items()}
        randomized = {name: b.expand(name) for name in sorted(sims.expanded)}
        model = sims.model if randomized else self.mj_model
        for i in stepping.tolist():
            b.get_data(i, data)
            for name, values in randomized.items():
                write_field(model, name, values[i])
            mujoco.mj_rnePostConstraint(model, data)
            for name, view in sims.post_views.items():
                out[name][i] = view
        return out

    def _reset(self, sims: _Sims, resetting: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Gymnasium's reset + ``set_state`` of the rows named.

        When every field read is a kinematic one (and the model has no sensors or plugins, nor
        randomized mocap bodies, which mj_resetData places), the row is written in NumPy and the
        forward pass stops at its position stage: ``mj_forward`` changes none of the state (MuJoCo
        saves the warm start only when it integrates), and without sensors it leaves the
        post-constraint fields zero.
        """
        b, n = sims.batch, sims.batch.nsim
        at, ids = _rows(resetting, n), _ids(resetting, n)
        kinematics = self._kinematics_resets and not (self.mj_model.nmocap and sims.expanded)
        if kinematics:
            b.state[at] = self._blank
        else:
            b.reset(ids, stage=mujoco.mjtStage.mjSTAGE_NONE)
        b.state[at, self._qpos_at], b.state[at, self._qvel_at] = qpos[at], qvel[at]
        b.forward(ids, stage=mujoco.mjtStage.mjSTAGE_POS if kinematics else mujoco.mjtStage.mjSTAGE_ACC)

    def _output(self, sims: _Sims, n: int, stepping: np.ndarray, resetting: np.ndarray,
                post: dict[str, np.ndarray]) -> np.ndarray:
        """The rows run and their fields in one uint32 buffer; rows not run are zeros.

        One buffer, not an array per field: each array a ``pure_callback`` returns has a fixed cost in
        JAX of its own, more than stepping one Ant's physics.
        """
        words = np.empty((n, self.words), np.uint32)
        floats = words.view(np.float32)
        views = {name: floats[:, a:b].reshape(n, *shape) for name, (a, b, shape) in self.layout.items()}
        rows = sims.batch.state
        ours = words[:, slice(*self.layout["state"][:2])].view(np.float64)
        for mine, theirs in self._components:
            ours[:, mine] = rows[:, theirs]
        exact = {"qpos": rows[:, self._qpos_at], "qvel": rows[:, self._qvel_at]}
        for name in self.fields:
            exact[name] = sims.outputs[name]
            if name in POST_CONSTRAINT_FIELDS:
                # A reset leaves them as mj_forward does: zero, unless a sensor made it fill them.
                exact[name] = post.get(name, np.zeros(exact[name].shape))
                if self.mj_model.nsensor:
                    exact[name][resetting] = sims.outputs[name][resetting]
        for name, value in exact.items():
            views[name][:] = value
        for name in self.residuals:
            views[f"residual.{name}"][:] = exact[name] - views[name]
        if stepping.size + resetting.size < n:
            ran = np.zeros(n, bool)
            ran[stepping], ran[resetting] = True, True
            words[~ran] = 0
        return words

    def split(self, words: np.ndarray) -> HostData:
        """:meth:`init`'s and :meth:`step`'s buffer as NumPy views, part by part (for tests and tools)."""
        return assemble(self.layout, words, lambda part, shape: part.reshape(len(words), *shape),
                         lambda part: part.view(np.float32))

    def close(self) -> None:
        with self._lock:
            self._sims.clear()


@contextlib.contextmanager
def _typed(n: int) -> Iterator[None]:
    """MuJoCo's ``SimulationError`` of a call as gymjax's, which crosses JAX as the same text the
    native engine writes (:mod:`gymjax.core.errors`)."""
    try:
        yield
    except batch.SimulationError as e:
        ids = [int(i) for i in e.ids]
        first = str(e).split("; ", 1)[-1] if "; " in str(e) else str(e)
        raise SimulationError(ids, f"MuJoCo raised an error; {first}", n) from None


def _rows(ids: np.ndarray, n: int) -> np.ndarray | slice:
    """An index of rows ``ids`` of ``n``: a slice when it is all of them (cheaper than a gather)."""
    return slice(None) if len(ids) == n else ids


def _ids(ids: np.ndarray, n: int) -> np.ndarray | None:
    """``ids`` as the batch takes them: None for all ``n`` simulations."""
    return None if len(ids) == n else ids.astype(np.int32)


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
    """``x`` (uint32 or float32, bit for bit; or one bool an env, as a word of its own) as uint32."""
    if x.dtype == jnp.bool_:
        return x[..., None].astype(jnp.uint32)
    return x if x.dtype == jnp.uint32 else jax.lax.bitcast_convert_type(x, jnp.uint32)


def _from_words(words: np.ndarray, dtype) -> np.ndarray:
    """:func:`_as_words` undone on the host, ``[N, width]`` (a bool: ``[N]``)."""
    if dtype == jnp.bool_:
        return words[:, 0] != 0
    return words.view(np.float32) if dtype == jnp.float32 else words


class CallbackEngine(BatchedEngine):
    """The JAX side of :class:`HostPhysics` for one env's physics (:class:`BatchedEngine`'s face)."""

    def __init__(self, mj_model: mujoco.MjModel, frame_skip: int, fields: tuple[str, ...] = (),
                 residuals: tuple[str, ...] = (), nthread: int | None = None):
        super().__init__(mj_model, frame_skip, fields, residuals, nthread)
        self._physics: HostPhysics | None = None  # started on first use, never pickled

    @property
    def physics(self) -> HostPhysics:
        if self._physics is None:
            self._physics = HostPhysics(self.mj_model, self.frame_skip, self.nthread, self.fields, self.residuals)
        return self._physics

    def stats(self) -> dict[str, int]:
        """:meth:`HostPhysics.stats` of this engine's physics (zeros before it ran)."""
        return self._physics.stats() if self._physics is not None else {"calls": 0, "stepped": 0, "reset": 0}

    def _call(self, target: str, arrays: tuple[jax.Array, ...], fields: dict[str, jax.Array],
              rows: int = 0) -> HostData:
        """One callback of ``target(*arrays, fields)``, each array one env's (a vmapped batch's rows).

        The arrays (uint32, float32, a bool each) travel as one uint32 array, bit for bit: JAX
        device-puts each argument of a ``pure_callback`` before calling it, which at small batches
        costs more than the physics.
        """
        names = tuple(fields)
        dtypes = [a.dtype for a in arrays]

        def call(*args):
            columns = [_as_words(a) for a in args[:len(arrays)]]
            cuts = np.cumsum([c.shape[-1] for c in columns])[:-1]

            def host(n, packed, *values):
                # A copy: MuJoCo reads arrays that view XLA's buffers at half speed
                # (measured: 256 Ant steps took 2x as long); a copy costs microseconds.
                packed = np.array(packed).reshape(n, -1)
                parts = [_from_words(part, dtype) for part, dtype in zip(np.split(packed, cuts, axis=1), dtypes)]
                return getattr(self.physics, target)(*parts, self._fields(n, names, values))

            return _batched_callback(host, self.words, jnp.concatenate(columns, axis=-1), *args[len(arrays):])

        return self.assemble(no_gradient(call)(*arrays, *fields.values()))

    def _fields(self, n: int, names: tuple[str, ...], values) -> dict[str, np.ndarray]:
        return {name: np.array(v).reshape(n, -1) for name, v in zip(names, values)}

    def check_field(self, name: str, shape: tuple[int, ...]) -> None:
        self.physics.check_randomizable(name, shape)

    def close(self) -> None:
        if self._physics is not None:
            self._physics.close()
            self._physics = None

    def __getstate__(self):
        # A batch's threads cannot be pickled or deep-copied; a copy starts its own.
        return {**self.__dict__, "_physics": None}
