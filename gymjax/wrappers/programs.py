"""What a :class:`~gymjax.wrappers.session.Session` compiles, and the cache that shares it.

A :class:`Program` is one description's JAX stack (domain randomization, action repeat, time
limit, vmap, auto-reset: :func:`stack`), its jitted reset and step, and the :class:`Packer` that
brings a step's results (a :class:`StepView`) to the host in one transfer. It holds no
session's state, so sessions of the same description (env id and options, batch size, wrapper
options: :func:`program_key`) share one: compiling reset and step costs a third of a second for
CartPole, and a hundred ``gymnasium.make(id)`` compile once. A batch that cannot fit in memory is
refused here, from the shapes alone, before anything allocates (:func:`check_batch_fits`).
"""

from __future__ import annotations

import collections
import functools
import threading
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gymjax.core import Env, EpisodeStatistics, State, prng
from gymjax.core.memory import available_bytes, host_available_bytes, refuse_if_short, tree_bytes
from gymjax.core.platform import device_for, platform
from gymjax.wrappers.options import SessionOptions
from gymjax.wrappers.training import AutoResetMode, next_reset_key, single_env_stack, wrap_for_training


class StepView(NamedTuple):
    """What one step hands to the adapters: JAX arrays on the device
    (:meth:`~gymjax.wrappers.session.Session.view`, which the torch adapters read) or the same as
    NumPy on the host (:meth:`~gymjax.wrappers.session.Session.fetch`).

    ``final_obs`` / ``final_info``: the observation and info each env's step reached
    before any same-step reset (None in next-step mode and for a single env).
    ``episode``: each env's episode statistics as of this step's end (the ended
    episode's where one ended); None without a time limit.
    """

    obs: Any
    reward: Any
    terminated: Any
    truncated: Any
    info: dict[str, Any]
    final_obs: Any = None
    final_info: dict[str, Any] | None = None
    episode: EpisodeStatistics | None = None

    @property
    def done(self) -> Any:
        return self.terminated | self.truncated


class Packer:
    """Packs a pytree of arrays into one flat buffer of 32-bit words, and back on the host.

    Fetching a step's dozen small arrays one by one cost more than the step of a small env; a
    buffer per dtype cost a result of the compiled call and a transfer each (the booleans' own
    buffer: 3 µs of InvertedPendulum's 60 µs ``gymnasium.make`` step). The leaves lie widest
    first, so that each starts at a multiple of its width and the host reads it as a view of the
    one copy it makes; booleans and other narrow leaves are bytes, padded to a whole word.
    """

    def __init__(self, shapes: Any):
        leaves, self.treedef = jax.tree.flatten(shapes)
        widths = [np.dtype(leaf.dtype).itemsize for leaf in leaves]
        self.order = sorted(range(len(leaves)), key=lambda i: -widths[i])  # stable: the tree's order within a width
        self.layout: list = [None] * len(leaves)  # per leaf: (offset in bytes, shape, dtype)
        offset = 0
        for i in self.order:
            dtype, shape = np.dtype(leaves[i].dtype), tuple(leaves[i].shape)
            self.layout[i] = (offset, shape, dtype)
            offset += int(np.prod(shape, dtype=np.int64)) * dtype.itemsize

    def pack(self, tree: Any) -> jax.Array:
        leaves = jax.tree.leaves(tree)
        words, narrow = [], []
        for i in self.order:
            leaf = jnp.asarray(leaves[i]).ravel()
            if leaf.dtype == jnp.bool_:
                narrow.append(leaf.astype(jnp.uint8))
            elif leaf.dtype.itemsize < 4:
                narrow.append(jax.lax.bitcast_convert_type(leaf, jnp.uint8).ravel())
            else:
                words.append(_as_words(leaf).ravel())
        if narrow:
            pad = -sum(part.shape[0] for part in narrow) % 4
            tail = joined(narrow + ([jnp.zeros(pad, jnp.uint8)] if pad else []))
            words.append(jax.lax.bitcast_convert_type(tail.reshape(-1, 4), jnp.uint32))
        return joined(words) if words else jnp.zeros(0, jnp.uint32)

    def unpack(self, buffer: jax.Array) -> Any:
        raw = np.array(buffer)  # one writable copy: users may write into obs
        # A view made in one call (half the time of slice, view and reshape: 15 leaves a Humanoid step).
        leaves = [np.ndarray(shape, dtype, raw, start) for start, shape, dtype in self.layout]
        return jax.tree.unflatten(self.treedef, leaves)


class StateCodec:
    """A state (any pytree of arrays) as one flat uint32 buffer and back, inside a compiled function.

    A jitted call pays for each argument and result it hands over: a step taking and returning a
    27-leaf state spent more in that dispatch than stepping 16 HalfCheetahs' physics (measured: 92
    µs a call against 15 with one buffer). The host runtime keeps the state packed between steps and
    unpacks it only where a caller reads it. Leaves of 4 bytes travel bit for bit; of 8, as two words;
    of 1 or 2 (booleans, half floats), widened. :meth:`of` is None for a state it cannot carry.
    """

    def __init__(self, shapes: Any):
        leaves, self.treedef = jax.tree.flatten(shapes)
        self.layout = []  # per leaf: (start, words, shape, dtype)
        start = 0
        for leaf in leaves:
            dtype = np.dtype(leaf.dtype)
            size = int(np.prod(leaf.shape, dtype=np.int64)) * max(1, dtype.itemsize // 4)
            self.layout.append((start, size, tuple(leaf.shape), dtype))
            start += size
        self.words = start

    @classmethod
    def of(cls, shapes: Any) -> StateCodec | None:
        try:
            dtypes = [np.dtype(leaf.dtype) for leaf in jax.tree.leaves(shapes)]
        except TypeError:  # an extended dtype (typed PRNG keys): no bits to carry
            return None
        return cls(shapes) if dtypes and all(d.itemsize in (1, 2, 4, 8) for d in dtypes) else None

    def pack(self, tree: Any) -> jax.Array:
        return joined([_as_words(leaf).ravel() for leaf in jax.tree.leaves(tree)])

    def unpack(self, words: jax.Array) -> Any:
        leaves = [_from_words(words[start:start + size], shape, dtype) for start, size, shape, dtype in self.layout]
        return jax.tree.unflatten(self.treedef, leaves)


def joined(parts: list[jax.Array]) -> jax.Array:
    """``jnp.concatenate(parts)`` (1-D parts of one dtype), written on the CPU as a chain of in-place
    updates of one buffer.

    XLA's CPU runtime runs a program's operations as a graph: when more than eight are ready at
    once, it hands half of them to its thread pool. A concatenate of a state's dozens of leaves
    makes them all ready together, and for a host step's tiny operations the handover (a thread
    woken, a second core waited for) costs more than they do: on 2 cores, more than all the work
    of Ant's step besides its physics (``benchmarks/results/single.md``). Updates of one buffer
    conflict, so XLA runs them one after another in the caller's thread, each part's producer fused
    into its update. On a GPU one concatenate is one kernel where the chain would be many: there it
    stays.
    """
    if len(parts) == 1:
        return parts[0]

    def chained(*parts):
        out = jnp.zeros(sum(p.shape[0] for p in parts), parts[0].dtype)
        start = 0
        for part in parts:
            out = jax.lax.dynamic_update_slice(out, part, (start,))
            start += part.shape[0]
        return out

    return jax.lax.platform_dependent(*parts, cpu=chained, default=lambda *parts: jnp.concatenate(parts))


_UINTS = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32}


def _as_words(x: jax.Array) -> jax.Array:
    x = jnp.asarray(x)  # a Python number in an env's state (gymnax's, Brax's): its weak dtype, as traced
    size = x.dtype.itemsize
    if x.dtype == jnp.bool_:
        return x.astype(jnp.uint32)
    if size < 4:
        return jax.lax.bitcast_convert_type(x, _UINTS[size]).astype(jnp.uint32)
    return x if x.dtype == jnp.uint32 else jax.lax.bitcast_convert_type(x, jnp.uint32)  # 8 bytes: [..., 2]


def _from_words(words: jax.Array, shape: tuple[int, ...], dtype: np.dtype) -> jax.Array:
    if dtype == np.bool_:
        return (words != 0).reshape(shape)
    if dtype.itemsize < 4:
        return jax.lax.bitcast_convert_type(words.astype(_UINTS[dtype.itemsize]), dtype).reshape(shape)
    if dtype.itemsize == 8:
        return jax.lax.bitcast_convert_type(words.reshape(*shape, 2), dtype)
    return words.reshape(shape) if dtype == np.uint32 else jax.lax.bitcast_convert_type(words, dtype).reshape(shape)


# XLA's CPU code generator for fused loops ("fusion emitters", its MLIR path) compiles a session's
# small reset and step programs in about twice the time of the older one, and their code runs no
# faster (a Hopper step program 0.24 -> 0.13 s, a 16-env one 1.2 -> 0.65 s; steps/s within noise).
# A session compiles in every process that makes an env, before its first step: it asks for the
# older one for an env that takes it (Env.session_compiler_options: where MuJoCo's C engine computes
# the physics, the same bits either way). The two generators may fuse floating-point sums in other
# orders: Brax's physics drifts by 1e-5 in 30 steps, so another library's env keeps XLA's defaults
# and steps as the user's own jit of it does. An accelerator's compiler is left as it is.
CPU_COMPILER_OPTIONS = {"xla_cpu_use_fusion_emitters": False}


# The jaxlibs (major, minor) whose XLA the option was measured and checked on. It is an XLA debug
# option, and an XLA without it refuses every compile that names it; asking XLA would start JAX's
# runtime when an env is made (which a fork after it cannot survive), so other jaxlibs, older or
# newer, compile a session's programs with XLA's defaults.
CPU_COMPILER_OPTIONS_JAXLIBS = ((0, 10),)


@functools.cache
def _cpu_compiler_options() -> dict[str, Any] | None:
    import jaxlib

    release = tuple(int(part) for part in jaxlib.__version__.split(".")[:2] if part.isdigit())
    return CPU_COMPILER_OPTIONS if release in CPU_COMPILER_OPTIONS_JAXLIBS else None


def compiled(device: jax.Device | None, f, tuned: bool):
    """``jax.jit(f)`` run on ``device`` (:func:`on_device`); ``tuned``: with the options a session's
    programs compile with where they run on the CPU (else XLA's defaults)."""
    on_cpu = device is not None and device.platform == "cpu" or device is None and platform() == "cpu"
    options = _cpu_compiler_options() if tuned and on_cpu else None
    return on_device(device, jax.jit(f, compiler_options=options))


def on_device(device: jax.Device | None, f):
    """``f`` run with JAX's default device set to ``device`` (None: left as it is), so that the arrays
    made from host values (seeds, actions) and the compiled program are there."""
    if device is None:
        return f

    def call(*args):
        with jax.default_device(device):
            return f(*args)

    return call


class Program:
    """What a session compiles: its JAX stack, the jitted reset and step, the step's packer.

    It holds no session's state, so sessions of one description share it (see :func:`program_key`):
    the hundredth ``gymnasium.make("JaxCartPole-v0")`` reuses the first one's compiled functions.
    """

    def __init__(self, base: Env, jax_env: Env, num_envs: int, batched: bool, autoreset_mode: AutoResetMode,
                 limited: bool):
        self.base, self.jax_env, self.num_envs, self.batched = base, jax_env, num_envs, batched
        self.autoreset_mode, self.limited = autoreset_mode, limited
        self.held: list = []  # what its cache key names by identity (keep_program)
        # Where the env runs: JAX's default device, or the CPU for an env that runs there only (the C
        # engine) while the default is an accelerator.
        self.device = device_for(base)
        self.tuned = bool(getattr(base, "session_compiler_options", False))  # see CPU_COMPILER_OPTIONS
        self.step = self.compiled(jax_env.step)
        self.start = self.compiled(self._start_episodes)
        n = num_envs
        starts = jax.eval_shape(
            self._start_episodes,
            jax.ShapeDtypeStruct((n, 2), jnp.uint32),
            jax.ShapeDtypeStruct((n,), jnp.bool_),
            jax.ShapeDtypeStruct(stream_shape(n, batched), jnp.uint32),
        )
        self.start_shapes = starts[0]
        fetched = jax.eval_shape(self.view, starts[0])
        check_batch_fits(n, starts[0], fetched, starts[0].obs)
        self.packer = Packer(fetched)
        self.step_host = self.compiled(self._step_and_pack)
        # The host runtime's step: the state packed in one buffer in and out (StateCodec).
        self.codec = StateCodec.of(starts[0])
        if self.codec is not None:
            self.start_words = self.compiled(self._start_words)
            self.step_words = self.compiled(self._step_words)
            self.pack_state = self.compiled(self.codec.pack)  # compiled where a state is written
            self.unpack_state = self.compiled(self.codec.unpack)  # and where one is read

    def compiled(self, f):
        """``f`` jitted as this program's functions are (:func:`compiled`)."""
        return compiled(self.device, f, self.tuned)

    def _start_episodes(self, seeds: jax.Array, given: jax.Array, stream: jax.Array):
        """One compiled reset: each env's seed key (:func:`~gymjax.wrappers.options.seed_words`:
        ``seeds[i]`` holds its low and high words) where ``given``, else the env's stream (a single
        env's: its one key, as it keeps it, so that a reset runs no JAX operation outside this program)."""
        low, high = seeds[:, 0], seeds[:, 1]
        keyed = jax.vmap(jax.random.PRNGKey)(low)
        folded = jax.vmap(prng.fold_in)(keyed, high)
        keyed = jnp.where((high != 0)[:, None], folded, keyed)
        keys = jnp.where(given[:, None], keyed, stream)
        if self.batched:
            return self.jax_env.reset(keys), keys
        keep, use = next_reset_key(keys[0])
        return self.jax_env.reset(use), keep

    def view(self, s: State) -> StepView:
        """What the adapters read of a stepped state, on the device; packed for the host in the step."""
        if not self.batched:
            return StepView(s.obs, s.reward, s.terminated, s.truncated, s.info, episode=s.episode)
        a = s.autoreset
        if self.autoreset_mode is AutoResetMode.SAME_STEP:
            return StepView(s.obs, s.reward, s.terminated, s.truncated, s.info, a.final_obs, a.final_info,
                            a.final_episode)
        return StepView(s.obs, s.reward, s.terminated, s.truncated, s.info, episode=a.final_episode)

    def _step_and_pack(self, state: State, actions):
        state = self.jax_env.step(state, actions)
        return state, self.packer.pack(self.view(state))

    def _start_words(self, seeds: jax.Array, given: jax.Array, stream: jax.Array):
        """:meth:`_start_episodes` with the state packed, and what a reset reports beside it: the host
        runtime's reset and step then compile nothing else."""
        state, keys = self._start_episodes(seeds, given, stream)
        return self.codec.pack(state), keys, state.obs, state.info

    def _step_words(self, words: jax.Array, actions):
        state, packed = self._step_and_pack(self.codec.unpack(words), actions)
        return self.codec.pack(state), packed


def key_shape() -> tuple[int, ...]:
    return jax.eval_shape(jax.random.PRNGKey, 0).shape


def stream_shape(num_envs: int, batched: bool) -> tuple[int, ...]:
    """The shape of the keys a session's next reset draws from: one per env, or a single env's one."""
    return (num_envs, *key_shape()) if batched else key_shape()


def stack(base: Env, batched: bool, options: SessionOptions) -> tuple[Env, bool]:
    """The JAX env a session steps, and whether it has a time limit."""
    if batched:
        return wrap_for_training(
            base,
            episode_length=options.max_episode_steps,
            action_repeat=options.action_repeat,
            randomization_fn=options.randomization_fn,
            autoreset_mode=options.autoreset_mode,
        ), True
    limit = options.max_episode_steps
    if limit is None and options.time_limit:
        limit = base.max_episode_steps
        if limit is None:
            raise ValueError(f"{base!r} has no max_episode_steps; pass max_episode_steps")
    return single_env_stack(base, limit, options.action_repeat, options.randomization_fn), limit is not None


# A step's input and output states are both alive while it runs: the batch is held twice.
STATE_COPIES = 2
# On the host, a step's results arrive once packed and once unpacked; and Gymnasium's batched
# observation space holds a low and a high bound per observation value.
HOST_COPIES = 2
OBS_BOUNDS = 2


def check_batch_fits(num_envs: int, states: Any, fetched: Any, obs: Any) -> None:
    """Refuses a batch that cannot fit, before anything allocates, from the shapes ``jax.eval_shape``
    gives its ``states``, a step's ``fetched`` results and one ``obs`` of each env: XLA finds out
    only at the first reset, after the host has grown by gigabytes (10**8 CartPoles: past 6 GiB)."""
    on_device = STATE_COPIES * tree_bytes(states)
    on_host = HOST_COPIES * tree_bytes(fetched) + OBS_BOUNDS * tree_bytes(obs)
    from jax._src import xla_bridge

    host = host_available_bytes()
    if not xla_bridge.backends_are_initialized():
        # Asking for the device would start JAX's runtime, and a process forked after that (an
        # AsyncVectorEnv's workers, whose parent builds one env for its spaces) cannot use JAX.
        needs = [(on_device + on_host, host)]
    elif jax.local_devices()[0].platform == "cpu":  # one memory for both
        needs = [(on_device + on_host, host)]
    else:
        needs = [(on_device, available_bytes()), (on_host, host)]
    for needed, have in needs:
        detail = (f"{num_envs:,} envs x {-(-needed // num_envs):,} bytes: env states held {STATE_COPIES} times, "
                  f"a step's results {HOST_COPIES} times on the host, and observation bounds")
        refuse_if_short(needed, have, f"num_envs={num_envs:,}", detail, "Lower num_envs.")


# -- Sharing compiled programs between sessions of one description.

# The most recent programs kept (each holds its compiled functions and the env they step).
PROGRAM_CACHE_SIZE = 32
_programs: collections.OrderedDict[tuple, Program] = collections.OrderedDict()
_programs_lock = threading.Lock()
_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def _frozen(value: Any, held: list) -> Any:
    """``value`` as a hashable description: plain values and containers by content (``1``, ``1.0``
    and ``True`` apart), arrays by dtype, shape and bytes, anything else (a function, an env, an
    enum) by identity, held in ``held`` so that its id is not reused while the program is cached."""
    if isinstance(value, _PLAIN):
        return (type(value).__name__, value)
    if isinstance(value, np.generic):
        return (type(value).__name__, value.item())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(v, held) for v in value))
    if isinstance(value, dict):
        return ("dict", frozenset((_frozen(k, held), _frozen(v, held)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.shape, value.tobytes())
    held.append(value)
    return ("id", id(value))


def program_key(env, env_kwargs, make, num_envs, batched, options: SessionOptions) -> tuple[tuple, list]:
    """What a session's program depends on: the env (an id and its options, or the Env object by
    identity), the builder, batch size, time limit, action repeat, randomization (the function by
    identity), autoreset mode and JAX's 64-bit flag. Rendering is done on the host from the state,
    so ``render_mode``, ``width`` and ``height`` are not part of it; render options the env takes
    (``camera_name``, ``max_geom``, ...) are, as options."""
    held: list = []
    key = (
        _frozen(env, held), _frozen(env_kwargs, held), _frozen(make, held), num_envs, batched,
        options.max_episode_steps, options.time_limit, options.action_repeat,
        _frozen(options.randomization_fn, held), options.autoreset_mode if batched else None,
        bool(jax.config.jax_enable_x64),
    )
    return key, held


def cached_program(key: tuple) -> Program | None:
    """The kept program of ``key``'s description (:func:`program_key`), now the most recent; None
    if none is kept."""
    with _programs_lock:
        program = _programs.get(key)
        if program is not None:
            _programs.move_to_end(key)
    return program


def keep_program(key: tuple, held: list, program: Program) -> None:
    """Shares ``program`` with the next sessions of ``key``'s description, forgetting the least recent
    beyond :data:`PROGRAM_CACHE_SIZE`; ``held``, the objects ``key`` names by identity, lives as long."""
    program.held = held
    with _programs_lock:
        _programs[key] = program
        while len(_programs) > PROGRAM_CACHE_SIZE:
            _programs.popitem(last=False)


def clear_program_cache() -> None:
    """Forgets every shared program (the next session of each description compiles anew)."""
    with _programs_lock:
        _programs.clear()
