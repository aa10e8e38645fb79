"""What a :class:`~gymjax.wrappers.session.Session` is given, checked before any env is built.

- :class:`SessionOptions`: how a session runs its env, the same in every adapter;
- the one seeding policy's arithmetic: a seed is any non-negative int (:func:`check_seed`), env
  ``i`` of a batch reset with ``seed=s`` gets ``s + i`` (or ``seeds[i]``; :func:`seed_list`), and
  each seed becomes the two uint32 words of its key (:func:`seed_words`, :func:`batch_seed_words`);
- the checks of a batch size and of each step's actions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import Any

import gymnasium
import numpy as np

from gymjax.envs import options as checks
from gymjax.wrappers.training import AutoResetMode, BraxRandomization, RandomizationFn

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


def batch_seed_words(seed: int | list[int | None] | None, num_envs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each env's seed as ``[N, 2]`` uint32 words (:func:`seed_words`; a fresh random seed where none
    was given, which a session uses only before its first reset) and ``[N]`` whether one was given."""
    n = num_envs
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


def check_num_envs(num_envs: Any) -> int:
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    return int(num_envs)


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
    elif not _all_finite(array) or _past_float_range(array, space.dtype):
        held = (
            f" within {space.dtype}'s range (|x| <= {np.finfo(space.dtype).max:.4g})" if space.dtype.kind == "f" else ""
        )
        raise ValueError(f"expected {_what(space, batch)}: finite values{held}, got NaN or inf, or a value past "
                         f"that range, in {array!r}")
    # Checked on every step: the message is built only when there is an error to report.
    return array if array.dtype == space.dtype else array.astype(space.dtype)


def _what(space: gymnasium.spaces.Space, batch: int | None) -> str:
    return f"{space}" if batch is None else f"a batch of {batch} actions from {space}"


def _all_finite(array: np.ndarray) -> bool:
    """Whether no value of ``array`` is NaN or inf. A ufunc's fixed cost (2-3 µs) is most of what
    checking one env's action costs, a tenth of a small task's whole step: a few values are read
    one by one instead."""
    if array.dtype.kind != "f":
        return True
    if array.size <= 32:
        return all(map(math.isfinite, array.ravel().tolist()))
    return bool(np.isfinite(array).all())


def _past_float_range(array: np.ndarray, dtype: np.dtype) -> bool:
    """Whether a float ``array`` holds a value the narrower float ``dtype`` would make inf."""
    if array.dtype.kind != "f" or dtype.kind != "f" or array.dtype.itemsize <= dtype.itemsize:
        return False
    return bool((np.abs(array) > np.finfo(dtype).max).any())


@dataclasses.dataclass(frozen=True)
class SessionOptions:
    """How a :class:`~gymjax.wrappers.session.Session` runs its env, the same in every adapter; checked when made,
    before any env is built (what depends on the env, such as its render modes, when the env is).

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
