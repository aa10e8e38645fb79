"""The ``"mujoco"`` engine on MuJoCo's own batch engine, called from ``jit`` through typed XLA FFI.

:class:`NativeEngine` has :class:`~gymjax.envs.mujoco.engine.callback.CallbackEngine`'s face (both
are :class:`~gymjax.envs.mujoco.engine.contract.BatchedEngine`) and the same
:class:`~gymjax.envs.mujoco.engine.contract.HostData`, bit for bit, but a batched physics call is one FFI
call into ``csrc/engine.cc``: MuJoCo's ``mjb_*`` batch runs the envs on its own threads in C, with
no Python and no GIL, where the callback engine reaches the same batch engine through a
``pure_callback`` and ``mujoco.batch``'s Python face. A reset runs inside the call too, and with
:meth:`NativeEngine.step_or_reset` only the envs it names reset, in the same call as the others step.

The extension is built by ``pip install`` (``setup.py``). Where it is missing (no compiler, or a
MuJoCo whose library is not the one it was built against), :func:`gymjax.envs.mujoco.engine.make`
falls back to the callback engine and says so once; a MuJoCo before 4.0 has no batch engine for
either, and it says what to install.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from gymjax.envs.mujoco.engine.contract import (
    KINEMATIC_FIELDS,
    POST_CONSTRAINT_FIELDS,
    BatchedEngine,
    HostData,
    check_randomizable,
    field_owner,
    no_gradient,
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


class NativeEngine(BatchedEngine):
    """The JAX side of the batch engine for one env's physics, one FFI call a batched call
    (:class:`BatchedEngine`'s face and arguments)."""

    def __init__(self, mj_model: mujoco.MjModel, frame_skip: int, fields: tuple[str, ...] = (),
                 residuals: tuple[str, ...] = (), nthread: int | None = None):
        super().__init__(mj_model, frame_skip, fields, residuals, nthread)
        self.nthread = nthread or 0
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
            raise RuntimeError("gymjax's native MuJoCo engine disagrees with contract.layout on the output row")
        return key

    def _call(self, target: str, arrays: tuple[jax.Array, ...], fields: dict[str, jax.Array],
              rows: int = 0) -> HostData:
        """One FFI call; ``arrays[rows]``'s leading axes are the batch's (a row of it one env's)."""
        names = ";".join(f"{self._type(name)}:{name}" for name in fields)
        values = [jnp.asarray(v, jnp.float32) for v in fields.values()]

        def call(*args):
            out = jax.ShapeDtypeStruct((*args[rows].shape[:-1], self.words), jnp.uint32)
            ffi = jax.ffi.ffi_call(f"gymjax_mujoco_{target}", out, vmap_method="broadcast_all")
            return ffi(*args, engine=np.uint64(self.key), fields=names)

        return self.assemble(no_gradient(call)(*arrays, *values))

    def _type(self, name: str) -> str:
        value = np.asarray(getattr(*field_owner(self.mj_model, name)))
        return _TYPES[value.dtype]

    def check_field(self, name: str, shape: tuple[int, ...]) -> None:
        check_randomizable(self.mj_model, name, shape, _TYPES)

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
