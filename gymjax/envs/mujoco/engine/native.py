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
_FUNCTIONS = ("gymjax_register", "gymjax_register_fields", "gymjax_words", "gymjax_stats")
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
    missing = [name for name in (*_TARGETS.values(), *_FUNCTIONS) if not hasattr(lib, name)]
    if missing:  # built by another version of gymjax (an editable install not rebuilt since)
        raise NativeUnavailable(f"gymjax's native MuJoCo engine at {spec.origin} was built by another version of "
                                f"gymjax (it lacks {', '.join(missing)})")
    lib.gymjax_register.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                    ctypes.c_int, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_char_p),
                                    ctypes.c_char_p, ctypes.c_int]
    lib.gymjax_register.restype = ctypes.c_int
    lib.gymjax_register_fields.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.c_int]
    lib.gymjax_register_fields.restype = ctypes.c_int
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
        self._field_sets: dict[tuple[str, ...], int] = {}  # registered with the engine, by their names

    def _register(self) -> int:
        """Registers the native engine (idempotent) and returns its key.

        The key is a digest of everything the physics depends on: a program compiled in one
        process and read from JAX's disk cache by another then finds the same engine there. The
        output row's layout crosses typed, once: a row ``{start, size, residual, post}`` a part, the
        state, qpos and qvel first, then each field, resolved by name to its ``mjData`` member in C.
        """
        model = self.mj_model
        names = [name for name in self.layout if name not in ("state", "qpos", "qvel") and
                 not name.startswith("residual.")]
        rows = []
        for name in ("state", "qpos", "qvel", *names):
            start, stop, _ = self.layout[name]
            residual = self.layout.get(f"residual.{name}", (-1,))[0]
            rows.append((start, stop - start, residual, int(name in POST_CONSTRAINT_FIELDS)))
        flags = (_POST_CONSTRAINT if POST_CONSTRAINT_FIELDS & set(self.fields) else 0) | (
            _KINEMATIC_RESETS if set(self.fields) <= KINEMATIC_FIELDS | POST_CONSTRAINT_FIELDS else 0)
        buffer = np.empty(mujoco.mj_sizeModel(model), np.uint8)
        mujoco.mj_saveModel(model, None, buffer)
        key = _digest(buffer.tobytes(), repr((self.frame_skip, self.nthread, flags, rows, names)).encode())
        error = ctypes.create_string_buffer(512)
        layout = np.ascontiguousarray(rows, np.int32)
        fields = (ctypes.c_char_p * max(len(names), 1))(*(n.encode() for n in names))
        lib = library()
        if lib.gymjax_register(key, model._address, self.frame_skip, self.nthread, flags, len(rows),
                               layout.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), fields, error, len(error)):
            raise RuntimeError(f"gymjax's native MuJoCo engine: {error.value.decode()}")
        if lib.gymjax_words(key) != self.words:
            raise RuntimeError("gymjax's native MuJoCo engine disagrees with contract.layout on the output row")
        return key

    def _field_set(self, names: tuple[str, ...]) -> int:
        """The digest a call names its randomized fields by (0: none), registered with the engine the
        first time (at trace time): the names and their MjModel types cross to C once."""
        if not names:
            return 0
        if names not in self._field_sets:
            types = "".join(self._type(name) for name in names)
            set_key = _digest(repr((names, types)).encode()) or 1  # 0 names no set
            error = ctypes.create_string_buffer(512)
            c_names = (ctypes.c_char_p * len(names))(*(n.encode() for n in names))
            if library().gymjax_register_fields(self.key, set_key, len(names), c_names, types.encode(), error,
                                                len(error)):
                raise RuntimeError(f"gymjax's native MuJoCo engine: {error.value.decode()}")
            self._field_sets[names] = set_key
        return self._field_sets[names]

    def _call(self, target: str, arrays: tuple[jax.Array, ...], fields: dict[str, jax.Array],
              rows: int = 0) -> HostData:
        """One FFI call; ``arrays[rows]``'s leading axes are the batch's (a row of it one env's)."""
        field_set = np.uint64(self._field_set(tuple(fields)))
        values = [jnp.asarray(v, jnp.float32) for v in fields.values()]

        def call(*args):
            out = jax.ShapeDtypeStruct((*args[rows].shape[:-1], self.words), jnp.uint32)
            ffi = jax.ffi.ffi_call(f"gymjax_mujoco_{target}", out, vmap_method="broadcast_all")
            return ffi(*args, engine=np.uint64(self.key), fields=field_set)

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
        # A new process (pickle, spawn) has no native engines yet: register this one there, and its
        # field sets again as programs trace them.
        self.__dict__.update(state)
        self.key = self._register()
        self._field_sets = {}


def _digest(*parts: bytes) -> int:
    """A 63-bit key of ``parts`` (a uint64 attribute in C, a positive int in Python), the same in
    every process: what a program cached on disk names an engine or a field set by."""
    digest = hashlib.blake2b(digest_size=8)
    for part in parts:
        digest.update(part)
    return int.from_bytes(digest.digest(), "little") >> 1
