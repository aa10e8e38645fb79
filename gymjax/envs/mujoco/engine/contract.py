"""The contract every MuJoCo engine keeps, and what the native and callback engines share.

:class:`PhysicsEngine` is the face :class:`~gymjax.envs.mujoco.base.MujocoEnv` calls, whichever
engine runs the physics: ``init`` (Gymnasium's reset and ``set_state``), ``step`` (its
``do_simulation``), ``init_where`` and ``step_or_reset`` (the masked resets auto-reset asks for),
``stats`` and ``close``. Three engines implement it: MJX (:mod:`.mjx`), and MuJoCo's C batch
engine reached natively through XLA FFI (:mod:`.native`) or, where that extension is not built,
through a callback (:mod:`.callback`). The last two share :class:`BatchedEngine`: the same
:class:`HostData`, laid out in one uint32 row per env (:func:`layout`), the same field checks and
the same public methods; each brings only its ``_call``.
"""

from __future__ import annotations

import functools
import re
import warnings
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from gymjax.core import pytree

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


@pytree.dataclass
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


def field_owner(model: mujoco.MjModel, name: str) -> tuple[Any, str]:
    """``(object, attribute)`` holding field ``name`` of an MjModel (``opt.*`` in ``model.opt``)."""
    owner, _, field = name.rpartition(".")
    return {"": model, "opt": model.opt}.get(owner), field


def field_size(model: mujoco.MjModel, name: str) -> int | None:
    """How many numbers MjModel's field ``name`` holds; None when it has no such field."""
    owner, field = field_owner(model, name)
    value = getattr(owner, field, None) if owner is not None else None
    if isinstance(value, np.ndarray):
        return value.size
    return 1 if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def write_field(model: mujoco.MjModel, name: str, value: np.ndarray) -> None:
    owner, field = field_owner(model, name)
    target = getattr(owner, field)
    if isinstance(target, np.ndarray):
        target.reshape(-1)[:] = np.ravel(value)
    else:
        setattr(owner, field, type(target)(np.ravel(value)[0]))


def check_randomizable(mj_model: mujoco.MjModel, name: str, shape: tuple[int, ...], dtypes=None,
                       names=None) -> None:
    """Raises unless ``name`` is an MjModel field of ``shape``'s size (and, given ``dtypes``, of one of
    them; given ``names``, one of them) that the C engine can take per env."""
    owner, field = field_owner(mj_model, name)
    value = getattr(owner, field, None) if owner is not None else None
    if (field_size(mj_model, name) != int(np.prod(shape))
            or (dtypes is not None and np.asarray(value).dtype not in dtypes)
            or (names is not None and name not in names)):
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




def assemble(where, words, reshape, as_float) -> HostData:
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




def no_gradient(fn):
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


class PhysicsEngine(Protocol):
    """What :class:`~gymjax.envs.mujoco.base.MujocoEnv` asks of an engine; ``params`` is None (the
    model's own physics), an ``mjx.Model``, or ``{field: value}`` of the fields changed."""

    def init(self, params: Any, qpos: jax.Array, qvel: jax.Array) -> Any:
        """Gymnasium's reset + ``set_state`` at ``(qpos, qvel)``: the physics state."""

    def step(self, params: Any, data: Any, ctrl: jax.Array) -> Any:
        """Gymnasium's ``do_simulation``: ``frame_skip`` substeps, then ``rnePostConstraint`` if read."""

    def init_where(self, params: Any, reset: jax.Array, qpos: jax.Array, qvel: jax.Array) -> Any:
        """:meth:`init` of the envs where ``reset`` holds; the others' state is for the caller to
        select away."""

    def step_or_reset(self, params: Any, data: Any, ctrl: jax.Array, reset: jax.Array, qpos: jax.Array,
                      qvel: jax.Array) -> tuple[Any, Any]:
        """``(reset state, stepped state)``: the envs where ``reset`` holds read the first, the others
        the second. An engine that does both in one call returns one state twice."""

    def stats(self) -> dict[str, int]:
        """What ran in this process: ``calls``, ``stepped`` and ``reset`` (zeros where not counted)."""

    def close(self) -> None:
        """Frees what the engine holds (threads, batches); the next use starts them again."""


class BatchedEngine:
    """The JAX side of MuJoCo's batch engine for one env's physics: what the native and the callback
    engine share. Each call is one batched call over the vmapped envs; a subclass sends it
    (``_call``) and says what it can randomize (``check_field``).

    Args:
        mj_model: the model, solver settings included.
        frame_skip: ``mj_step`` substeps per env step.
        fields: the ``MjData`` fields returned besides the state, qpos and qvel.
        residuals: those of ``qpos`` and ``fields`` whose float64 residual is returned too.
        nthread: the batch's threads, the caller's included; default: one per CPU.
    """

    def __init__(self, mj_model: mujoco.MjModel, frame_skip: int, fields: tuple[str, ...] = (),
                 residuals: tuple[str, ...] = (), nthread: int | None = None):
        route_mujoco_warnings()
        self.mj_model = mj_model
        self.frame_skip = frame_skip
        self.fields, self.residuals = tuple(fields), tuple(residuals)
        self.nthread = nthread
        self.layout = layout(mj_model, self.fields, self.residuals)
        self.words = max(stop for _, stop, _ in self.layout.values())

    def init(self, params: Any, qpos, qvel) -> HostData:
        return self._call("init", (jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32)),
                          self.changed_fields(params))

    def init_where(self, params: Any, reset, qpos, qvel) -> HostData:
        """:meth:`init` of the envs where ``reset`` holds; the others' physics is not run, and their
        :class:`HostData` is zeros."""
        arrays = (jnp.asarray(reset, jnp.bool_), jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32))
        return self._call("init_where", arrays, self.changed_fields(params), rows=1)

    def step(self, params: Any, data: HostData, ctrl) -> HostData:
        return self._call("step", (data.state, jnp.asarray(ctrl, jnp.float32)), self.changed_fields(params))

    def step_or_reset(self, params: Any, data: HostData, ctrl, reset, qpos, qvel) -> tuple[HostData, HostData]:
        """:meth:`step`, or where ``reset`` holds :meth:`init` at ``(qpos, qvel)``, in one call."""
        arrays = (data.state, jnp.asarray(ctrl, jnp.float32), jnp.asarray(reset, jnp.bool_),
                  jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32))
        out = self._call("step_or_reset", arrays, self.changed_fields(params))
        return out, out

    def changed_fields(self, params: Any) -> dict[str, jax.Array]:
        """The fields MuJoCo C must take per env: named, never guessed from a whole model.

        A whole ``mjx.Model`` says nothing about which of its hundreds of leaves changed, and writing
        them all into ``MjModel`` copies every step would cost more than the physics.
        """
        if params is None:
            return {}
        if not isinstance(params, dict):
            raise ValueError(
                'engine="mujoco" takes changed physics as a dict {field name: value}, e.g. '
                '{"body_mass": masses} (what DomainRandomization passes), not a whole '
                f"{type(params).__name__}; field names are those of gymjax.core.field_names(env.default_params)"
            )
        for name, value in params.items():
            self.check_field(name, np.shape(value))
        return params

    def _call(self, target: str, arrays: tuple[jax.Array, ...], fields: dict[str, jax.Array],
              rows: int = 0) -> HostData:
        """One batched call of ``target``; ``arrays[rows]``'s leading axes are the batch's."""
        raise NotImplementedError

    def check_field(self, name: str, shape: tuple[int, ...]) -> None:
        raise NotImplementedError

    def assemble(self, words: jax.Array) -> HostData:
        """A call's uint32 rows as :class:`HostData`: slices and bit casts, in JAX."""
        return assemble(self.layout, words, lambda part, shape: part.reshape(*words.shape[:-1], *shape),
                        lambda part: jax.lax.bitcast_convert_type(part, jnp.float32))
