"""The host runtime under every adapter: one batch of jitted envs, driven from Python.

A :class:`Session` owns what the Gymnasium, torch, SB3 and PettingZoo adapters
share, so each rule is written once:

- the JAX stack (domain randomization, action repeat, time limit, vmap,
  auto-reset) and its two jitted functions;
- the one seeding policy: env ``i`` of a batch reset with ``seed=s`` gets the
  key of ``s + i`` (or of ``seeds[i]``; :func:`seed_words`), and then draws the
  episodes a single env reset with that seed draws; an env reset without a seed
  continues its own key stream, or starts a random one;
- one transfer to the host per step (:meth:`fetch`), with the info keys split
  into those a reset reports and the step-only ones;
- episode statistics (kept in JAX by the time limit, ``state.episode``),
  rendering, ``set_state`` and closing.

Adapters only present its results in their framework's types. A session is
either batched (``num_envs=N``: ``[N, ...]`` arrays, auto-reset) or a single env
(``num_envs=None``: unbatched, no auto-reset, as Gymnasium's ``Env``).

Compiling reset and step costs a third of a second for CartPole; sessions with
the same description (env id and options, batch size, wrapper options) share
one :class:`_Program` (its jitted functions and JAX env), so that a hundred
``gymnasium.make(id)`` compile once (:func:`_program_key`).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import os
import sys
import threading
from typing import Any, NamedTuple

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

from gymjax import envs
from gymjax.core import Env, EpisodeStatistics, State
from gymjax.core.memory import available_bytes, host_available_bytes, refuse_if_short, tree_bytes
from gymjax.envs import options as checks
from gymjax.wrappers.training import (
    AutoResetMode,
    BraxRandomization,
    RandomizationFn,
    next_reset_key,
    single_env_stack,
    wrap_for_training,
)

# Unseeded resets draw their seeds here (32 bits: each becomes ``PRNGKey(seed)``), one generator
# for every adapter.
MAX_FRESH_SEED = 2**32 - 1
_fresh = np.random.default_rng()

_WORD = 2**32


def check_seed(seed: Any) -> int:
    """A seed as Gymnasium's envs take one: any non-negative int (Minari draws 60-bit seeds)."""
    is_int = isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_))
    if not is_int or seed < 0:
        raise ValueError(f"seed must be a non-negative int (of any size, as Gymnasium's), got {seed!r}")
    return int(seed)


def seed_words(seed: int) -> tuple[int, int]:
    """``(low, high)`` uint32 words a seed becomes: the env's key is ``PRNGKey(low)``, with ``high``
    folded in (``jax.random.fold_in``) when it is not 0.

    A seed below 2**32 is ``PRNGKey(seed)``, as always; one below 2**64 is its two words, exactly
    (no two such seeds share a key). A larger seed is hashed (BLAKE2b) into 64 bits first:
    distinct in practice, as 64-bit seeds are."""
    if seed >= _WORD * _WORD:
        digest = hashlib.blake2b(seed.to_bytes((seed.bit_length() + 7) // 8, "little"), digest_size=8)
        seed = int.from_bytes(digest.digest(), "little")
    return seed % _WORD, seed // _WORD


def check_num_envs(num_envs: Any) -> int:
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    return int(num_envs)


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


def check_action(space: gymnasium.spaces.Space, action: Any, batch: int | None = None) -> np.ndarray:
    """Validates an action (or a batch of ``batch`` actions) against ``space``.

    Returns it as a NumPy array of the space's dtype; raises ``ValueError`` naming
    the expected shape and space otherwise. Out-of-range Box values are allowed
    (the simulator clips controls, as in Gymnasium); NaN and inf are not, nor a value
    that the space's dtype cannot hold (a float64 past float32's largest would become inf).
    The torch adapters apply the same rule (:func:`gymjax.wrappers.torch.check_torch_action`).
    """
    try:
        array = np.asarray(action)
    except Exception as err:
        raise ValueError(f"expected {_what(space, batch)}, got {type(action).__name__}: {err}") from err
    expected = space.shape if batch is None else (batch, *space.shape)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"expected {_what(space, batch)}, got an action of dtype {array.dtype}")
    if array.shape != expected:
        raise ValueError(f"expected {_what(space, batch)} of shape {expected}, got shape {array.shape}")
    if isinstance(space, gymnasium.spaces.Discrete):
        if array.dtype.kind not in "iu" and not np.all(np.mod(array, 1) == 0):
            raise ValueError(f"expected {_what(space, batch)}: integers, got {array!r}")
        if array.min() < space.start or array.max() >= space.start + space.n:
            raise ValueError(
                f"expected {_what(space, batch)}: integers in [{space.start}, {space.start + space.n}), "
                f"got {array!r}"
            )
    elif not np.isfinite(array).all() or _past_float_range(array, space.dtype):
        held = f" within {space.dtype}'s range (|x| <= {np.finfo(space.dtype).max:.4g})" if space.dtype.kind == "f" else ""
        raise ValueError(f"expected {_what(space, batch)}: finite values{held}, got NaN or inf, or a value past "
                         f"that range, in {array!r}")
    # Checked on every step: the message is built only when there is an error to report.
    return array if array.dtype == space.dtype else array.astype(space.dtype)


def _what(space: gymnasium.spaces.Space, batch: int | None) -> str:
    return f"{space}" if batch is None else f"a batch of {batch} actions from {space}"


def _past_float_range(array: np.ndarray, dtype: np.dtype) -> bool:
    """Whether a float ``array`` holds a value the narrower float ``dtype`` would make inf."""
    if array.dtype.kind != "f" or dtype.kind != "f" or array.dtype.itemsize <= dtype.itemsize:
        return False
    return bool((np.abs(array) > np.finfo(dtype).max).any())


def seed_list(seed: int | list[int | None] | None, num_envs: int) -> list[int | None]:
    """One seed (or None: continue the stream) per env: ``seed + i``, or ``seed[i]``."""
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, (list, tuple, np.ndarray)):
        if len(seed) != num_envs:
            raise ValueError(f"expected {num_envs} seeds, one per env, got {len(seed)}")
        return [None if s is None else check_seed(s) for s in seed]
    seed = check_seed(seed)
    return [seed + i for i in range(num_envs)]


@dataclasses.dataclass(frozen=True)
class SessionOptions:
    """How a :class:`Session` runs its env, the same in every adapter; checked when made, before
    any env is built (what depends on the env, such as its render modes, when the env is).

    Attributes:
        max_episode_steps: time limit in agent steps, applied in JAX; None: the registered one for
            a batch, none for a single env unless ``time_limit``.
        time_limit: a single env gets the registered time limit, in JAX (a batch always has one).
        action_repeat: each agent step is ``action_repeat`` env steps.
        randomization_fn: domain randomization, ``fn(params, key) -> params``, or Brax's batched form
            stated as ``BraxRandomization(fn)``; drawn per env at each reset (see
            :class:`~gymjax.wrappers.training.DomainRandomization`).
        autoreset_mode: when a batch's ended episodes restart: an
            :class:`~gymjax.wrappers.training.AutoResetMode`, Gymnasium's ``AutoresetMode``, or
            ``"same_step"`` / ``"next_step"`` (kept as an ``AutoResetMode``). A single env has no
            auto-reset.
        render_mode: None or one of the env's render modes.
        width, height: size of rendered frames (None: the env's own, Gymnasium's: 480 x 480 for
            MuJoCo, CartPole's 600 x 400, ...).

    Each adapter starts from its own ``DEFAULTS`` (Gymnasium's vector env: ``NEXT_STEP``, as
    ``SyncVectorEnv``; the torch single env: ``time_limit``); an options object given to an adapter
    replaces them, and option keywords replace its fields (:meth:`split`).
    """

    max_episode_steps: int | None = None
    time_limit: bool = False
    action_repeat: int = 1
    randomization_fn: RandomizationFn | None = None
    autoreset_mode: AutoResetMode = AutoResetMode.SAME_STEP
    render_mode: str | None = None
    width: int | None = None
    height: int | None = None

    def __post_init__(self):
        checked = {
            "max_episode_steps": checks.integer(self, "max_episode_steps", self.max_episode_steps, optional=True),
            "time_limit": checks.flag(self, "time_limit", self.time_limit),
            "action_repeat": checks.integer(self, "action_repeat", self.action_repeat),
            "autoreset_mode": AutoResetMode.of(self.autoreset_mode),
            "width": checks.integer(self, "width", self.width, optional=True),
            "height": checks.integer(self, "height", self.height, optional=True),
        }
        if self.randomization_fn is not None and not (
            callable(self.randomization_fn) or isinstance(self.randomization_fn, BraxRandomization)
        ):
            raise checks.invalid(self, "randomization_fn", "None, a function (params, key) -> params or "
                                 "BraxRandomization(fn)", self.randomization_fn)
        if self.render_mode is not None and not isinstance(self.render_mode, str):
            raise checks.invalid(self, "render_mode", "None or a mode's name, such as 'rgb_array'", self.render_mode)
        for name, value in checked.items():  # frozen: the checked values are set as the dataclass sets fields
            object.__setattr__(self, name, value)

    @classmethod
    def split(cls, options: SessionOptions | None, defaults: SessionOptions,
              kwargs: dict[str, Any]) -> tuple[SessionOptions, dict[str, Any]]:
        """An adapter's arguments as its session's options and the env's: ``options`` (None: the
        adapter's ``defaults``) with the fields ``kwargs`` names replaced, and the other keywords
        (``ctrl_cost_weight=...``)."""
        options = defaults if options is None else cls.check(options)
        names = {field.name for field in dataclasses.fields(cls)}
        given = {k: v for k, v in kwargs.items() if k in names}
        return dataclasses.replace(options, **given), {k: v for k, v in kwargs.items() if k not in names}

    @classmethod
    def check(cls, options: Any) -> SessionOptions:
        if not isinstance(options, cls):
            raise TypeError(f"options must be a {cls.__name__}, got {options!r} ({type(options).__name__})")
        return options

    def refuse_next_step(self, adapter: str) -> None:
        """For the adapters whose step reports the ended episode's last observation (SB3's and
        PettingZoo's vector envs): they reset an env in the step that ends its episode."""
        if self.autoreset_mode is not AutoResetMode.SAME_STEP:
            raise ValueError(f"{adapter} resets an env in the step that ends its episode: autoreset_mode must be "
                             f"'same_step', got {self.autoreset_mode.name.lower()!r}")


class UnsupportedRenderMode(TypeError, ValueError):
    """A render mode the env does not draw. A ValueError as gymjax's other bad values; a TypeError as
    a constructor's unexpected argument, which is what clients that ask for frames just in case catch:
    SB3 makes an env by id with ``render_mode="rgb_array"`` and, on a TypeError, again without."""


def build(env: Env | str, env_kwargs: dict[str, Any], make=None) -> Env:
    """The functional env: ``env`` itself, or the registered id built with its options."""
    if isinstance(env, str):
        return (make or envs.make)(env, **env_kwargs)
    if env_kwargs:
        raise TypeError(f"keyword arguments {sorted(env_kwargs)} apply only when env is an id")
    return env


def env_row(obs: Any, i: int) -> Any:
    """Env ``i``'s observation from a batch of them: an array, or a dict of arrays (a Dict space,
    as Playground's tasks have), as a writable copy."""
    return {k: env_row(v, i) for k, v in obs.items()} if isinstance(obs, dict) else np.array(obs[i])


class StepView(NamedTuple):
    """What one step hands to the adapters: JAX arrays on the device (:meth:`Session.view`, which
    the torch adapters read) or the same as NumPy on the host (:meth:`Session.fetch`).

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


class _Packer:
    """Packs a pytree of arrays into one flat buffer per dtype, and back on the host.

    Fetching a step's dozen small arrays one by one cost more than the step of a
    small env; a few buffers cost one transfer each (measured in
    the adapter row of ``benchmarks/results/throughput-ceiling.md``).
    """

    def __init__(self, shapes: Any):
        leaves, self.treedef = jax.tree.flatten(shapes)
        self.dtypes = sorted({np.dtype(leaf.dtype) for leaf in leaves}, key=str)
        self.layout = []  # per leaf: (buffer, offset, size, shape)
        ends = dict.fromkeys(range(len(self.dtypes)), 0)
        for leaf in leaves:
            group, size = self.dtypes.index(np.dtype(leaf.dtype)), int(np.prod(leaf.shape, dtype=np.int64))
            self.layout.append((group, ends[group], size, tuple(leaf.shape)))
            ends[group] += size

    def pack(self, tree: Any) -> tuple[jax.Array, ...]:
        leaves = jax.tree.leaves(tree)
        groups = [[jnp.ravel(leaf) for leaf, (g, *_) in zip(leaves, self.layout) if g == i] for i in range(len(self.dtypes))]
        return tuple(jnp.concatenate(parts) for parts in groups)

    def unpack(self, buffers: tuple[jax.Array, ...]) -> Any:
        host = [np.array(b) for b in buffers]  # writable copies: users may write into obs
        leaves = [host[g][start : start + size].reshape(shape) for g, start, size, shape in self.layout]
        return jax.tree.unflatten(self.treedef, leaves)


class _Window:
    """Shows frames in a pygame window at the env's ``render_fps`` ("human" rendering)."""

    def __init__(self, fps: int):
        try:
            import pygame  # noqa: F401
        except ImportError as e:
            raise ImportError('render_mode="human" shows frames with pygame: pip install pygame') from e
        self.fps = fps
        self._screen = None
        self._clock = None

    def show(self, frame: np.ndarray) -> None:
        import pygame

        if self._screen is None:
            pygame.init()
            self._screen = pygame.display.set_mode(frame.shape[1::-1])
            self._clock = pygame.time.Clock()
        self._screen.blit(pygame.surfarray.make_surface(np.swapaxes(frame, 0, 1)), (0, 0))
        pygame.event.pump()
        self._clock.tick(self.fps)
        pygame.display.flip()

    def close(self) -> None:
        if self._screen is not None:
            import pygame

            pygame.display.quit()
            self._screen = None

    def __getstate__(self):
        return {"fps": self.fps, "_screen": None, "_clock": None}


# -- Forks: JAX's runtime threads do not survive a fork; a child that touches JAX hangs for good.

_forked_after_jax = False


def _after_fork_in_child() -> None:
    global _forked_after_jax
    from jax._src import xla_bridge

    _forked_after_jax = _forked_after_jax or xla_bridge.backends_are_initialized()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def refuse_forked_child() -> None:
    """Raises in a process forked after JAX started: there, the first JAX call would hang."""
    if _forked_after_jax:
        raise RuntimeError(
            "gymjax envs cannot start in a process forked after JAX started (JAX's threads do not "
            "survive a fork, and the first JAX call would hang). Start worker processes with "
            "'spawn' or 'forkserver': gymnasium.make_vec(id, n, vectorization_mode='async', "
            "vector_kwargs={'context': 'spawn'}), SB3's SubprocVecEnv(..., start_method='spawn'), "
            "or multiprocessing.set_start_method('spawn'). A gymjax vector env needs no "
            "subprocesses: vectorization_mode='vector_entry_point' runs the batch in one jitted call."
        )


class Presenter:
    """What every adapter shows of its :class:`Session`: the JAX env it steps and that env's state."""

    session: Session

    @property
    def jax_env(self) -> Env:
        """The JAX env the adapter steps: the base env and the wrappers its options asked for."""
        return self.session.jax_env

    @property
    def jax_state(self) -> State | None:
        """The batch's (or the single env's) JAX state; None before the first reset.

        Not ``state``: PettingZoo's ``state()`` is the global observation, and Gymnasium's
        classic envs keep their physics in ``state``."""
        return self.session.state


class _Program:
    """What a session compiles: its JAX stack, the jitted reset and step, the step's packer.

    It holds no session's state, so sessions of one description share it (see :func:`_program_for`):
    the hundredth ``gymnasium.make("JaxCartPole-v0")`` reuses the first one's compiled functions.
    """

    def __init__(self, base: Env, jax_env: Env, num_envs: int, batched: bool, autoreset_mode: AutoResetMode,
                 limited: bool):
        self.base, self.jax_env, self.num_envs, self.batched = base, jax_env, num_envs, batched
        self.autoreset_mode, self.limited = autoreset_mode, limited
        self.step = jax.jit(jax_env.step)
        self.start = jax.jit(self._start_episodes)
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
        self.packer = _Packer(fetched)
        self.step_host = jax.jit(self._step_and_pack)

    def _start_episodes(self, seeds: jax.Array, given: jax.Array, stream: jax.Array):
        """One compiled reset: each env's seed key (:func:`seed_words`: ``seeds[i]`` holds its low and
        high words) where ``given``, else the env's stream (a single env's: its one key, as it keeps it,
        so that a reset runs no JAX operation outside this program)."""
        low, high = seeds[:, 0], seeds[:, 1]
        keyed = jax.vmap(jax.random.PRNGKey)(low)
        folded = jax.vmap(jax.random.fold_in)(keyed, high)
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


# -- Sharing compiled programs between sessions of one description.

# The most recent programs kept (each holds its compiled functions and the env they step).
PROGRAM_CACHE_SIZE = 32
_programs: collections.OrderedDict[tuple, _Program] = collections.OrderedDict()
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


def _program_key(env, env_kwargs, make, num_envs, batched, options: SessionOptions) -> tuple[tuple, list]:
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


def clear_program_cache() -> None:
    """Forgets every shared program (the next session of each description compiles anew)."""
    with _programs_lock:
        _programs.clear()


class Session:
    """``num_envs`` jitted envs (or one, unbatched) and their host-side state.

    Args:
        env: a gymjax env, or a registered id.
        num_envs: batch size, or None for one unbatched env without auto-reset.
        options: time limit, action repeat, randomization, autoreset and render settings
            (:class:`SessionOptions`); the render mode must be one of the env's.
        env_kwargs: the env's options, when ``env`` is an id.
        make: the builder for ids (``envs.make``, or ``envs.make_multi``).

    Sessions of one description share their base env, JAX stack and compiled functions
    (:class:`_Program`); each keeps its own state, key streams and render window.
    """

    def __init__(
        self,
        env: Env | str,
        num_envs: int | None = None,
        options: SessionOptions = SessionOptions(),
        *,
        env_kwargs: dict[str, Any] | None = None,
        make=None,
    ):
        refuse_forked_child()
        self.options = options = SessionOptions.check(options)
        self.batched = num_envs is not None
        self.num_envs = check_num_envs(num_envs) if self.batched else 1
        env_kwargs = dict(env_kwargs or {})
        key, held = _program_key(env, env_kwargs, make, self.num_envs, self.batched, options)
        with _programs_lock:
            program = _programs.get(key)
            if program is not None:
                _programs.move_to_end(key)
        self.base = program.base if program is not None else build(env, env_kwargs, make)
        modes = self.render_modes()
        if self.render_mode is not None and self.render_mode not in modes:
            raise UnsupportedRenderMode(f"render_mode must be None or one of {modes}, got {self.render_mode!r}")
        human = self.render_mode == "human"
        self._window = _Window(self.base.metadata.get("render_fps", 30)) if human else None
        if program is None:
            jax_env, limited = stack(self.base, self.batched, options)
            program = _Program(self.base, jax_env, self.num_envs, self.batched, self.autoreset_mode, limited)
            program.held = held
            with _programs_lock:
                _programs[key] = program
                while len(_programs) > PROGRAM_CACHE_SIZE:
                    _programs.popitem(last=False)
        self._use(program)
        self.max_episode_steps = getattr(self.jax_env, "max_episode_steps", None) if self._limited else None
        # info holds the env's own keys only: the traced start shows them all.
        self.info_keys = tuple(program.start_shapes.info)
        reset_keys = self.info_keys if self.base.reset_info_keys is None else self.base.reset_info_keys
        self.reset_info_keys = tuple(k for k in self.info_keys if k in reset_keys)
        self.step_only_keys = tuple(k for k in self.info_keys if k not in reset_keys)
        self.state: State | None = None
        self._key: jax.Array | None = None  # a single env's key stream (a batch keeps its own in JAX)
        # As of the last fetch(): the envs whose obs and info are a reset's.
        self.restarted = np.zeros(self.num_envs, bool)
        self._ended = np.zeros(self.num_envs, bool)  # next-step mode: ended at the last step
        self._packed = None  # the last step's results, packed for fetch()

    def _use(self, program: _Program) -> None:
        self._program = program
        self.jax_env, self._limited = program.jax_env, program.limited
        self._step, self._start, self._step_host = program.step, program.start, program.step_host
        self._packer = program.packer
        self._set_state = None

    @property
    def autoreset_mode(self) -> AutoResetMode:
        return self.options.autoreset_mode

    @property
    def render_mode(self) -> str | None:
        return self.options.render_mode

    @property
    def size(self) -> tuple[int | None, int | None]:
        """Rendered frames' (width, height), None for the env's own (the simulator view reads it too)."""
        return self.options.width, self.options.height

    def render_modes(self, single: bool | None = None) -> list[str]:
        """The env's modes; a single env that draws frames also shows them in a window ("human").

        ``single=True`` gives a single env's modes whatever this session is (what each env of
        a batch reports where a framework asks them one by one, as SB3's DummyVecEnv does).
        """
        modes = list(self.base.metadata.get("render_modes", []))
        single = not self.batched if single is None else single
        if single and "rgb_array" in modes and "human" not in modes:
            modes.append("human")
        return modes

    # -- Reset and step

    def reset(self, seed: int | list[int | None] | None = None) -> None:
        """Starts every env's next episode; nothing leaves the device (see :meth:`fetch_reset`)."""
        words, given = self._seed_words(seed)
        stream = self._stream()
        if stream is None:  # the first reset: unseeded envs start a random stream
            stream, given = np.zeros(stream_shape(self.num_envs, self.batched), np.uint32), np.ones_like(given)
        self.state, keys = self._start(words, given, stream)
        if not self.batched:
            self._key = keys
        self._ended = np.zeros(self.num_envs, bool)
        self._packed = None

    def _seed_words(self, seed) -> tuple[np.ndarray, np.ndarray]:
        """Each env's seed as ``[N, 2]`` uint32 words (:func:`seed_words`; a fresh random seed where none
        was given, used only before the first reset) and ``[N]`` whether one was given."""
        n = self.num_envs
        if seed is not None and not isinstance(seed, (list, tuple, np.ndarray)):
            seed = check_seed(seed)
            if seed + n <= _WORD * _WORD:  # seed + i for every env, in NumPy (10**6 envs: no Python loop)
                ints = np.uint64(seed) + np.arange(n, dtype=np.uint64)
                words = np.stack([ints & np.uint64(_WORD - 1), ints >> np.uint64(32)], 1).astype(np.uint32)
                return words, np.ones(n, bool)
        seeds = seed_list(seed, n)
        given = np.array([s is not None for s in seeds])
        fresh = np.stack([_fresh.integers(MAX_FRESH_SEED + 1, size=n, dtype=np.uint32), np.zeros(n, np.uint32)], 1)
        for i in np.flatnonzero(given):
            fresh[i] = seed_words(seeds[i])
        return fresh, given

    def _stream(self) -> jax.Array | None:
        """Each env's key for its next reset (:func:`stream_shape`); None before the first reset."""
        if self.state is None:
            return None
        return self.state.autoreset.key if self.batched else self._key

    def step(self, actions: Any, host: bool = True) -> None:
        """Dispatches one step of every env; JAX computes while the caller goes on.

        ``host=False`` skips packing the results for :meth:`fetch`, for a caller that
        reads ``state`` on the device (the torch bridge).
        """
        if self.state is None:
            raise gymnasium.error.ResetNeeded("call reset() before step(): this env has no state yet")
        if host:
            self.state, self._packed = self._step_host(self.state, actions)
        else:
            self.state, self._packed = self._step(self.state, actions), None

    def view(self) -> StepView:
        """The last step's results on the device, where :meth:`fetch` would bring them to the host."""
        return self._program.view(self.state)

    def fetch(self) -> StepView:
        """The last step's results on the host: one transfer per dtype (see :class:`_Packer`).

        Sets :attr:`restarted`: the ended envs in same-step mode, those that ended the step before
        in next-step mode, none for a single env."""
        if self._packed is None:
            raise RuntimeError("fetch() follows step(actions) (with host=True)")
        out = self._packer.unpack(self._packed)
        if self.batched and self.autoreset_mode is AutoResetMode.SAME_STEP:
            self.restarted = out.done
        elif self.batched:
            self.restarted, self._ended = self._ended, out.done
        return out

    def reset_view(self) -> tuple[Any, dict[str, jax.Array]]:
        """``(obs, reset info)`` after :meth:`reset`, on the device: the info keys a reset reports."""
        return self.state.obs, {k: self.state.info[k] for k in self.reset_info_keys}

    def fetch_reset(self) -> tuple[Any, dict[str, np.ndarray]]:
        """:meth:`reset_view` as writable NumPy."""
        # Copies, as a step's results are: NumPy's view of a JAX buffer is read-only, and users (and
        # Gymnasium's vector FlattenObservation) write into observations.
        return jax.tree.map(np.array, self.reset_view())

    def set_state(self, qpos: Any, qvel: Any) -> None:
        """A single env's simulator put at ``(qpos, qvel)``, as Gymnasium's MuJoCo envs do."""
        base = self.base
        if self.batched or not _simulated_by_mujoco(base):
            raise TypeError(f"{base!r} has no simulator state to set" if not self.batched
                            else "set_state works on a single env")
        nq, nv = np.shape(base.init_qpos)[0], np.shape(base.init_qvel)[0]
        qpos, qvel = np.asarray(qpos, np.float32), np.asarray(qvel, np.float32)
        if qpos.shape != (nq,) or qvel.shape != (nv,):
            raise ValueError(
                f"expected qpos of shape ({nq},) and qvel of shape ({nv},), got {qpos.shape} and {qvel.shape}"
            )
        if self._set_state is None:
            self._set_state = jax.jit(self._reset_to)
        previous = self.state
        randomized = None if previous is None else previous.randomized
        episode = None if previous is None else previous.episode
        state = self._set_state(qpos, qvel, randomized)
        if self._limited:
            # The time limit runs on: an episode's steps do not restart with the simulator.
            episode = episode if episode is not None else EpisodeStatistics(jnp.float32(0.0), jnp.int32(0))
        self.state = state.replace(randomized=randomized, episode=episode)

    def _reset_to(self, qpos, qvel, randomized):  # MujocoEnv.reset_to: its set_state
        return self.base.reset_to(qpos, qvel, randomized)

    # -- Rendering and closing

    def render(self):
        """One frame (single env), a tuple of one frame per env (batch), or None without a mode.

        In ``"human"`` mode the frame goes to a window and None is returned; the
        adapters call this after every reset and step, as Gymnasium's envs do.
        """
        if self.render_mode is None:
            gymnasium.logger.warn("render() called with render_mode=None; make the env with render_mode='rgb_array'")
            return None
        if self.state is None:
            raise gymnasium.error.ResetNeeded("call reset() before render()")
        size = {k: v for k, v in zip(("width", "height"), self.size) if v is not None}  # else the env's own
        host = jax.device_get(self.state)
        if self._window is not None:
            self._window.show(self.base.render(host, **size))
            return None
        if not self.batched:
            return self.base.render(host, **size)
        return tuple(self.base.render(jax.tree.map(lambda x, i=i: x[i], host), **size) for i in range(self.num_envs))

    def close(self) -> None:
        if self._window is not None:
            self._window.close()
        close = getattr(self.base, "close", None)
        if close is not None:
            close()

    # -- Pickling: the env and its state travel, the compiled functions are rebuilt.

    def __getstate__(self):
        state = dict(self.__dict__)
        for name in ("_program", "_start", "_step", "_step_host", "_set_state", "_packer", "_packed"):
            state.pop(name)
        state["_window"] = None if self._window is None else _Window(self._window.fps)
        state["state"] = jax.device_get(self.state)
        state["_key"] = None if self._key is None else np.asarray(self._key)
        return state

    def __setstate__(self, state):
        refuse_forked_child()
        self.__dict__.update(state)
        self._packed = None
        # A program of its own: the unpickled env is another object than any cached program's.
        self._use(_Program(self.base, self.jax_env, self.num_envs, self.batched, self.autoreset_mode, self._limited))


def _simulated_by_mujoco(env: Env) -> bool:
    """Whether ``env`` is a :class:`~gymjax.envs.mujoco.MujocoEnv`, whose ``reset_to(qpos, qvel)``
    is Gymnasium's ``set_state``; an env of a module not yet imported cannot be one, and a
    classic-control session does not load MuJoCo to find that out."""
    base = sys.modules.get("gymjax.envs.mujoco.base")
    return base is not None and isinstance(env, base.MujocoEnv)
