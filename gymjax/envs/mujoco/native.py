"""The ``"mujoco"`` engine on MuJoCo's own batch engine, called from ``jit`` through typed XLA FFI.

:class:`NativeEngine` has :class:`~gymjax.envs.mujoco.host.CallbackEngine`'s face and the same
:class:`~gymjax.envs.mujoco.host.HostData`, bit for bit, but a batched physics call is one FFI
call into ``csrc/engine.cc``: MuJoCo's ``mjb_*`` batch runs the envs on its own threads in C, with
no Python and no GIL, where the callback engine reaches the same batch engine through a
``pure_callback`` and ``mujoco.batch``'s Python face. A reset runs inside the call too, and with
:meth:`NativeEngine.step_or_reset` only the envs it names reset, in the same call as the others step.

The extension is built by ``pip install`` (``setup.py``). Where it is missing (no compiler, or a
MuJoCo whose library is not the one it was built against), :func:`make_engine` falls back to the
callback engine and says so once; a MuJoCo before 4.0 has no batch engine for either, and
:func:`make_engine` says what to install.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
import warnings

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from gymjax.envs.mujoco import host
from gymjax.envs.mujoco.host import (
    KINEMATIC_FIELDS,
    POST_CONSTRAINT_FIELDS,
    CallbackEngine,
    HostData,
    _assemble,
    _field_owner,
    _no_gradient,
    check_randomizable,
    layout,
    route_mujoco_warnings,
)

_TARGETS = {"init": "GymjaxMujocoInit", "init_where": "GymjaxMujocoInitWhere", "step": "GymjaxMujocoStep",
            "step_or_reset": "GymjaxMujocoStepOrReset"}
_POST_CONSTRAINT, _KINEMATIC_RESETS = 1, 2  # gymjax_register's flags
_TYPES = {np.dtype(np.float64): "d", np.dtype(np.float32): "f", np.dtype(np.int32): "i", np.dtype(np.uint8): "b"}


class NativeUnavailable(RuntimeError):
    """The native engine's extension is not built, or cannot load here."""


@functools.cache
def library() -> ctypes.CDLL:
    """The extension, loaded once, its handlers registered with XLA; raises :class:`NativeUnavailable`."""
    spec = importlib.util.find_spec("gymjax.envs.mujoco._native")
    if spec is None or not spec.origin:
        raise NativeUnavailable("gymjax's native MuJoCo engine is not built (no C++ compiler at install?)")
    try:
        # ``import mujoco`` has loaded libmujoco, which the extension names by its soname.
        lib = ctypes.CDLL(spec.origin)
    except OSError as e:
        raise NativeUnavailable(f"gymjax's native MuJoCo engine does not load: {e}") from None
    lib.gymjax_register.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                    ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
    lib.gymjax_register.restype = ctypes.c_int
    lib.gymjax_words.argtypes = [ctypes.c_uint64]
    lib.gymjax_words.restype = ctypes.c_int
    lib.gymjax_stats.argtypes = [ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)]
    lib.gymjax_stats.restype = ctypes.c_int
    for target, symbol in _TARGETS.items():
        jax.ffi.register_ffi_target(f"gymjax_mujoco_{target}", jax.ffi.pycapsule(getattr(lib, symbol)), platform="cpu")
    return lib


def available() -> bool:
    """Whether the native engine can run in this process."""
    try:
        library()
    except NativeUnavailable:
        return False
    return True


@functools.cache
def _say_fallback(reason: str) -> None:
    warnings.warn(f"{reason}; MuJoCo envs run on MuJoCo's batch engine under a callback (mujoco.batch), "
                  "slower than the native engine. Reinstall gymjax with a C++ compiler present "
                  "(pip install -e .) to build it.", RuntimeWarning, stacklevel=3)


def make_engine(mj_model: mujoco.MjModel, frame_skip: int, fields: tuple[str, ...] = (),
                residuals: tuple[str, ...] = ()) -> NativeEngine | CallbackEngine:
    """The native engine where it runs, else the callback engine (said once per process)."""
    try:
        library()
    except NativeUnavailable as e:
        if host.batch is None:
            raise NativeUnavailable(f'{e}, and MuJoCo {mujoco.__version__} has no batch engine to fall back '
                                    'to: install mujoco>=4.0, or use engine="mjx"') from None
        _say_fallback(str(e))
        return CallbackEngine(mj_model, frame_skip, fields, residuals)
    return NativeEngine(mj_model, frame_skip, fields, residuals)


class NativeEngine:
    """The JAX side of the batch engine for one env: builds and reads :class:`HostData`.

    Args:
        mj_model: the model, solver settings included (copied by the native side).
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
        self.nthread = nthread or 0
        self.layout = layout(mj_model, self.fields, self.residuals)
        self.words = max(stop for _, stop, _ in self.layout.values())
        self.key = self._register()

    def _register(self) -> int:
        """Registers the native engine (idempotent) and returns its key.

        The key is a digest of everything the physics depends on: a program compiled in one
        process and read from JAX's disk cache by another then finds the same engine there.
        """
        model = self.mj_model
        parts = []
        for name, (start, _, shape) in self.layout.items():
            if name.startswith("residual."):
                continue
            size = int(np.prod(shape)) // (2 if name == "state" else 1)
            residual = self.layout.get(f"residual.{name}", (-1,))[0]
            parts.append(f"{name}:{start}:{size}:{residual}:{int(name in POST_CONSTRAINT_FIELDS)}")
        flags = (_POST_CONSTRAINT if POST_CONSTRAINT_FIELDS & set(self.fields) else 0) | (
            _KINEMATIC_RESETS if set(self.fields) <= KINEMATIC_FIELDS | POST_CONSTRAINT_FIELDS else 0)
        size = mujoco.mj_sizeModel(model)
        buffer = np.empty(size, np.uint8)
        mujoco.mj_saveModel(model, None, buffer)
        digest = hashlib.blake2b(buffer.tobytes(), digest_size=8)
        digest.update(repr((self.frame_skip, self.nthread, flags, parts)).encode())
        key = int.from_bytes(digest.digest(), "little") >> 1
        error = ctypes.create_string_buffer(512)
        lib = library()
        if lib.gymjax_register(key, model._address, self.frame_skip, self.nthread, flags,
                               ";".join(parts).encode(), error, len(error)):
            raise RuntimeError(f"gymjax's native MuJoCo engine: {error.value.decode()}")
        if lib.gymjax_words(key) != self.words:
            raise RuntimeError("gymjax's native MuJoCo engine disagrees with host.layout on the output row")
        return key

    def init(self, qpos, qvel, fields: dict[str, jax.Array]) -> HostData:
        """Gymnasium's reset + ``set_state`` for one env (or a vmapped batch)."""
        return self._call("init", (jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32)), fields)

    def init_where(self, reset, qpos, qvel, fields: dict[str, jax.Array]) -> HostData:
        """:meth:`init` of the envs where ``reset`` holds; the others' physics is not run, and their
        :class:`HostData` is zeros, for the caller to select away."""
        arrays = (jnp.asarray(reset, jnp.bool_), jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32))
        return self._call("init_where", arrays, fields, rows=1)

    def step(self, data: HostData, ctrl, fields: dict[str, jax.Array]) -> HostData:
        """Gymnasium's ``do_simulation`` for one env (or a vmapped batch)."""
        return self._call("step", (data.state, jnp.asarray(ctrl, jnp.float32)), fields)

    def step_or_reset(self, data: HostData, ctrl, reset, qpos, qvel, fields: dict[str, jax.Array]) -> HostData:
        """:meth:`step`, or where ``reset`` holds :meth:`init` at ``(qpos, qvel)``, in one call."""
        arrays = (data.state, jnp.asarray(ctrl, jnp.float32), jnp.asarray(reset, jnp.bool_),
                  jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32))
        return self._call("step_or_reset", arrays, fields)

    def _call(self, target: str, arrays: tuple[jax.Array, ...], fields: dict[str, jax.Array],
              rows: int = 0) -> HostData:
        """One FFI call; ``arrays[rows]``'s leading axes are the batch's (a row of it one env's)."""
        names = ";".join(f"{self._type(name)}:{name}" for name in fields)
        values = [jnp.asarray(v, jnp.float32) for v in fields.values()]

        def call(*args):
            out = jax.ShapeDtypeStruct((*args[rows].shape[:-1], self.words), jnp.uint32)
            ffi = jax.ffi.ffi_call(f"gymjax_mujoco_{target}", out, vmap_method="broadcast_all")
            return ffi(*args, engine=np.uint64(self.key), fields=names)

        words = _no_gradient(call)(*arrays, *values)
        return _assemble(self.layout, words, lambda part, shape: part.reshape(*words.shape[:-1], *shape),
                         lambda part: jax.lax.bitcast_convert_type(part, jnp.float32))

    def _type(self, name: str) -> str:
        value = np.asarray(getattr(*_field_owner(self.mj_model, name)))
        return _TYPES[value.dtype]

    def check_fields(self, fields: dict[str, jax.Array]) -> None:
        for name, value in fields.items():
            check_randomizable(self.mj_model, name, np.shape(value), _TYPES)

    def stats(self) -> dict[str, int]:
        """What the native engine of this physics ran in this process: ``calls`` (batched calls),
        ``stepped`` and ``reset`` (simulations). Envs of the same physics share one native engine."""
        out = (ctypes.c_uint64 * 3)()
        library().gymjax_stats(self.key, out)
        return {"calls": out[0], "stepped": out[1], "reset": out[2]}

    def close(self) -> None:
        """Nothing to free per env: the native engine is shared by every env of the same physics."""

    def __setstate__(self, state):
        # A new process (pickle, spawn) has no native engines yet: register this one there.
        self.__dict__.update(state)
        self.key = self._register()
