"""Composable JAX wrappers: time limit, action repeat, domain randomization,
vmap batching and auto-reset, plus the train/eval env builders.

The usual stack, innermost first (what :func:`wrap_for_training` builds)::

    env -> DomainRandomization -> ActionRepeat -> EpisodeWrapper -> VmapWrapper -> AutoReset

Every wrapper is pure: it never writes to an env object, so the same base env
can back a training batch, an eval batch and a Gymnasium adapter at once.

The builders, one composition and its two batched uses:

- :func:`single_env_stack`: the unbatched layers (randomization, action repeat,
  time limit); a single Gymnasium/torch env and the CLI's renderer step it.
- :func:`wrap_for_training`: that stack vmapped and auto-reset; what a trainer
  and every vector adapter step.
- :func:`make_eval_env`: that stack vmapped without auto-reset, on a copy of
  the env and nominal physics unless asked; what an evaluator steps.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from gymjax.core import AutoResetState, Env, EpisodeStatistics, State, Wrapper, field_names, prng, with_fields
from gymjax.core import where as _where


def next_reset_key(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Splits ``key`` into ``(key to keep, key for this reset)``.

    The one rule every reset in gymjax follows, so a single env seeded ``s`` and
    env ``i`` of a vector env seeded ``s - i`` draw the same episodes.
    """
    keep, use = prng.split(key)
    return keep, use


class EpisodeWrapper(Wrapper):
    """Truncates at ``max_episode_steps`` agent steps (Gymnasium's ``TimeLimit``).

    Keeps the running episode statistics in ``state.episode``
    (:class:`~gymjax.core.EpisodeStatistics`). ``terminated`` and ``truncated`` stay
    apart; both are set when a terminal state is reached on the last allowed step.
    """

    def __init__(self, env: Env, max_episode_steps: int):
        super().__init__(env)
        if max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps}")
        self._max_episode_steps = int(max_episode_steps)

    max_episode_steps = property(lambda self: self._max_episode_steps)

    def reset(self, key, params=None):
        state = self.env.reset(key, params)
        return state.replace(episode=EpisodeStatistics(jnp.float32(0.0), jnp.int32(0)))

    def step(self, state, action, params=None):
        out = self.env.step(state, action, params)
        length = state.episode.episode_length + 1
        return out.replace(
            truncated=out.truncated | (length >= self._max_episode_steps),
            episode=EpisodeStatistics(state.episode.episode_return + out.reward, length),
        )

    def step_or_reset(self, state, action, reset, key, params=None):
        out = self.env.step_or_reset(state, action, reset, key, params)
        length = jnp.where(reset, 0, state.episode.episode_length + 1)
        return out.replace(
            truncated=out.truncated | (~reset & (length >= self._max_episode_steps)),
            episode=EpisodeStatistics(jnp.where(reset, 0.0, state.episode.episode_return + out.reward), length),
        )

    def restart(self, state, reset, key, params=None):
        out = self.env.restart(state, reset, key, params)
        fresh = EpisodeStatistics(jnp.float32(0.0), jnp.int32(0))
        return out.replace(episode=_where(reset, fresh, state.episode))


class ActionRepeat(Wrapper):
    """Applies each action ``repeat`` times, summing rewards.

    Stops stepping once the episode ends inside the repeat: the terminal state
    is kept, not stepped past (Brax keeps stepping and summing).
    """

    def __init__(self, env: Env, repeat: int):
        super().__init__(env)
        if repeat < 1:
            raise ValueError(f"action repeat must be >= 1, got {repeat}")
        self.repeat = int(repeat)

    @property
    def dt(self) -> float:
        return self.env.dt * self.repeat

    def step(self, state, action, params=None):
        if self.repeat == 1:
            return self.env.step(state, action, params)
        first = self.env.step(state, action, params)
        return self._repeat(first, first.terminated | first.truncated, action, params)

    def step_or_reset(self, state, action, reset, key, params=None):
        first = self.env.step_or_reset(state, action, reset, key, params)
        if self.repeat == 1:
            return first
        return self._repeat(first, reset | first.terminated | first.truncated, action, params)

    def restart(self, state, reset, key, params=None):
        return self.env.restart(state, reset, key, params)

    def _repeat(self, first, ended, action, params):
        """The ``repeat - 1`` steps after ``first``, none of them past an env's end (or its reset)."""

        def once(carry, _):
            state, total, ended = carry
            nxt = self.env.step(state, action, params)
            nxt = _where(ended, state, nxt)
            total = total + jnp.where(ended, 0.0, nxt.reward)
            return (nxt, total, ended | nxt.terminated | nxt.truncated), None

        (last, total, _), _ = jax.lax.scan(once, (first, first.reward, ended), None, length=self.repeat - 1)
        return last.replace(reward=total.astype(jnp.float32))


@dataclasses.dataclass(frozen=True)
class BraxRandomization:
    """States that ``fn`` has Brax's batched form, ``fn(params, keys[B]) -> (params_batched,
    in_axes)`` (``in_axes`` a params-shaped tree of 0 for the drawn fields, None elsewhere), so a
    Brax randomization function can be given wherever a ``randomization_fn`` is taken:
    ``randomization_fn=BraxRandomization(fn)``. A plain function is gymjax's form,
    ``fn(params, key) -> params``."""

    fn: Callable[[Any, jax.Array], tuple[Any, Any]]

    def __post_init__(self):
        if not callable(self.fn):
            raise TypeError(f"BraxRandomization takes fn(params, keys[B]) -> (params, in_axes), got {self.fn!r}")


RandomizationFn = Callable[[Any, jax.Array], Any] | BraxRandomization

_BRAX_HINT = (
    "randomization_fn is called as fn(params, key) -> params, gymjax's form; for Brax's batched form "
    "fn(params, keys[B]) -> (params, in_axes), pass BraxRandomization(fn) "
    "(from gymjax.wrappers.training import BraxRandomization)"
)
_OURS_HINT = (
    "BraxRandomization(fn) calls fn(params, keys[B]) -> (params_batched, in_axes), Brax's form; for "
    "gymjax's form fn(params, key) -> params, pass fn itself"
)


def _call_stating_form(fn: Callable, hint: str, *args: Any) -> Any:
    """``fn(*args)``; an error inside it carries ``hint``: a function of the other form, called in
    this one, mostly fails inside (a batch of keys where one was expected, or the reverse)."""
    try:
        return fn(*args)
    except Exception as e:
        e.add_note(hint)
        raise


class DomainRandomization(Wrapper):
    """Gives each env its own physics parameters, drawn at every reset.

    Args:
        env: the unbatched env whose ``default_params`` are randomized.
        randomization_fn: ``fn(params, key) -> params`` for one env (gymjax's form), or
            :class:`BraxRandomization` holding Brax's batched form ``fn(params, keys[B]) ->
            (params_batched, in_axes)``. The form is stated, never inferred: a plain
            function that returns Brax's pair is an error saying so.
        fields: the dotted names of the fields the function draws
            (``("body_mass", "opt.gravity")``). By default: Brax's ``in_axes`` name
            them; for gymjax's form, the fields whose values differ from the
            defaults for either of two probe keys.

    The drawn values ride along in ``state.randomized`` (``{field: value}``), so they
    follow the state through ``vmap``, ``scan`` and sharding, and the env receives
    them by name; ``env`` is only ever read. Unlike Brax (parameters fixed per batch
    slot), parameters are drawn anew at each reset, auto-resets included.
    """

    def __init__(self, env: Env, randomization_fn: RandomizationFn, fields: tuple[str, ...] | None = None):
        super().__init__(env)
        self.randomization_fn = randomization_fn
        self._names = field_names(env.default_params)
        self._treedef = jax.tree.structure(env.default_params)
        # The function is checked once under eval_shape (nothing is computed), before any work.
        if isinstance(randomization_fn, BraxRandomization):
            self._brax_axes: list | None = self._check_brax(randomization_fn.fn)
        elif callable(randomization_fn):
            self._brax_axes = None
            self._check_ours(randomization_fn)
        else:
            raise TypeError(f"randomization_fn must be a function; {_BRAX_HINT}; got {randomization_fn!r}")
        if fields is None:
            fields = self._drawn_fields()
        unknown = sorted(set(fields) - set(self._names))
        if unknown:
            raise ValueError(f"fields {unknown} are not fields of the params; they are {self._names}")
        self.fields = tuple(name for name in self._names if name in set(fields))
        if not self.fields:
            warnings.warn("randomization_fn changed no parameter: every env gets the defaults", stacklevel=2)

    def _check_ours(self, fn: Callable[[Any, jax.Array], Any]) -> None:
        def one(key):
            out = _call_stating_form(fn, _BRAX_HINT, self.env.default_params, key)
            if isinstance(out, tuple) and len(out) == 2 and jax.tree.structure(out[0]) == self._treedef:
                raise TypeError(f"randomization_fn returned a pair (params, in_axes); {_BRAX_HINT}")
            self._check_structure(out)

        jax.eval_shape(one, jax.random.PRNGKey(0))

    def _check_brax(self, fn: Callable[[Any, jax.Array], tuple[Any, Any]]) -> list:
        """Brax's ``in_axes``, one per params leaf."""
        axes = []

        def batched(key):
            out = _call_stating_form(fn, _OURS_HINT, self.env.default_params, key[None])
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError(f"the function returned a {type(out).__name__}; {_OURS_HINT}")
            self._check_structure(out[0])
            axes.extend(self._treedef.flatten_up_to(out[1]))

        jax.eval_shape(batched, jax.random.PRNGKey(0))
        odd = sorted({repr(axis) for axis in axes if axis not in (None, 0)})
        if odd:
            raise ValueError(f"Brax's in_axes must be 0 (a drawn field) or None (shared), got {', '.join(odd)}")
        return axes

    def _check_structure(self, params) -> None:
        if jax.tree.structure(params) != self._treedef:
            raise ValueError(
                "randomization_fn must return the params with the same structure as "
                f"env.default_params (a {type(self.env.default_params).__name__}, static "
                "fields unchanged); use params.replace(field=new_value)"
            )

    def _drawn_fields(self) -> tuple[str, ...]:
        if self._brax_axes is not None:
            return tuple(n for n, axis in zip(self._names, self._brax_axes) if axis is not None)
        keys = jax.random.split(jax.random.PRNGKey(0))
        drawn = jax.jit(jax.vmap(lambda k: self.randomization_fn(self.env.default_params, k)))(keys)
        changed = []
        for name, new, old in zip(self._names, jax.tree.leaves(drawn), jax.tree.leaves(self.env.default_params)):
            new = np.asarray(new)
            if not np.array_equal(new, np.broadcast_to(np.asarray(old, new.dtype), new.shape)):
                changed.append(name)
        return tuple(changed)

    def draw(self, key: jax.Array) -> dict[str, jax.Array]:
        """The drawn fields of one env, by name."""
        if self._brax_axes is not None:
            params, _ = self.randomization_fn.fn(self.env.default_params, key[None])
            leaves = dict(zip(self._names, jax.tree.leaves(params)))
            return {name: leaves[name][0] for name in self.fields}
        leaves = dict(zip(self._names, jax.tree.leaves(self.randomization_fn(self.env.default_params, key))))
        return {name: leaves[name] for name in self.fields}

    def reset(self, key, params=None):
        if params is not None:
            raise ValueError("DomainRandomization draws its own params; do not pass params")
        key_params, key_env = prng.split(key)
        randomized = self.draw(key_params)
        return self.env.reset(key_env, self._params(randomized)).replace(randomized=randomized)

    def step(self, state, action, params=None):
        return self.env.step(state, action, self._params(state.randomized))

    def step_or_reset(self, state, action, reset, key, params=None):
        randomized, key_env = self._redraw(reset, key, state, params)
        out = self.env.step_or_reset(state, action, reset, key_env, self._params(randomized))
        return out.replace(randomized=randomized)

    def restart(self, state, reset, key, params=None):
        randomized, key_env = self._redraw(reset, key, state, params)
        return self.env.restart(state, reset, key_env, self._params(randomized)).replace(randomized=randomized)

    def _redraw(self, reset, key, state, params):
        """Where ``reset`` holds, the fields :meth:`reset` would draw from ``key``; elsewhere the
        state's. And the key the env's own reset takes, as :meth:`reset` splits it."""
        if params is not None:
            raise ValueError("DomainRandomization draws its own params; do not pass params")
        key_params, key_env = prng.split(key)
        return _where(reset, self.draw(key_params), state.randomized), key_env

    def _params(self, randomized: dict[str, jax.Array]):
        """The fields by name to an env that takes them so (``params_by_name``), else the full params."""
        if self.env.unwrapped.params_by_name:
            return randomized
        return with_fields(self.env.default_params, randomized)


class VmapWrapper(Wrapper):
    """Batches an unbatched env: ``reset(keys[N])``, ``step(states[N], actions[N])``.

    ``params``, when given, are shared by the whole batch.
    """

    def reset(self, keys, params=None):
        return jax.vmap(self.env.reset, in_axes=(0, None))(keys, params)

    def step(self, state, action, params=None):
        return jax.vmap(self.env.step, in_axes=(0, 0, None))(state, action, params)

    def step_or_reset(self, state, action, reset, key, params=None):
        return jax.vmap(self.env.step_or_reset, in_axes=(0, 0, 0, 0, None))(state, action, reset, key, params)

    def restart(self, state, reset, key, params=None):
        return jax.vmap(self.env.restart, in_axes=(0, 0, 0, None))(state, reset, key, params)


class AutoResetMode(str, enum.Enum):
    """When an ended episode restarts; the values are Gymnasium's ``AutoresetMode`` values."""

    SAME_STEP = "SameStep"  # the ending step returns the new episode's first obs
    NEXT_STEP = "NextStep"  # the ending step returns the last obs; the next step resets

    @classmethod
    def of(cls, mode: Any) -> AutoResetMode:
        """Accepts this enum, Gymnasium's ``AutoresetMode``, or their values / names."""
        value = getattr(mode, "value", mode)
        for member in cls:
            if value in (member.value, member.name, member.name.lower(), member.name.lower().replace("_", "-")):
                return member
        choices = [m.name.lower() for m in cls]
        raise ValueError(
            f"autoreset_mode must be one of {choices} (or gymnasium.vector.AutoresetMode.SAME_STEP / "
            f"NEXT_STEP), got {mode!r}"
        )


class AutoReset(Wrapper):
    """Auto-reset for a batched env, in either of Gymnasium's two modes.

    ``mode=SAME_STEP`` (the default, and what trainers use): when an env's episode
    ends, the returned state holds the *reset* observation, env state and info,
    while ``reward``, ``terminated`` and ``truncated`` are those of the ending step.
    What the reset replaced is kept in ``state.autoreset.final_obs``, ``final_info``
    and ``final_episode``. Brax's auto-reset drops them and restarts every episode
    from one fixed state.

    ``mode=NEXT_STEP`` (``SyncVectorEnv``'s default): the ending step returns the
    episode's last observation; the env's next step ignores its action and returns
    the reset, with reward 0 and both flags False.

    Each env carries its own key in ``state.autoreset.key`` and consumes it with
    :func:`next_reset_key`, as a single env does across its resets. Resets are
    computed only on steps where some env needs one.
    """

    def __init__(self, env: Env, mode: AutoResetMode | str = AutoResetMode.SAME_STEP):
        super().__init__(env)
        self.mode = AutoResetMode.of(mode)

    def reset(self, keys, params=None):
        with prng.unrolled():  # the batch's draws, written out (gymjax.core.prng)
            keep, use = jax.vmap(next_reset_key)(keys)
            state = self.env.reset(use, params)
        return self._record(state, state, keep, jnp.zeros(state.reward.shape, bool))

    def step(self, state, action, params=None):
        with prng.unrolled():
            return self._step(state, action, params)

    def _step(self, state, action, params):
        keys, pending = state.autoreset.key, state.autoreset.pending
        inner = state.replace(autoreset=None)
        if self.mode is AutoResetMode.NEXT_STEP:
            # What ended last time resets, the others step: one physics call where the env can
            # (step_or_reset); only a plain step while nothing is pending.
            def step_or_reset(keys):
                keep, use = jax.vmap(next_reset_key)(keys)
                return self.env.step_or_reset(inner, action, pending, use, params), _where(pending, keep, keys)

            merged, keys = jax.lax.cond(
                pending.any(), step_or_reset, lambda keys: (self.env.step(inner, action, params), keys), keys
            )
            return self._record(merged, merged, keys, merged.done)
        stepped = self.env.step(inner, action, params)
        resetting = stepped.done  # same step: reset what just ended, only those envs (restart)

        def reset_some(operand):
            stepped, keys = operand
            keep, use = jax.vmap(next_reset_key)(keys)
            fresh = self.env.restart(stepped, resetting, use, params)
            # The flags and reward stay the ending step's.
            fresh = fresh.replace(reward=stepped.reward, terminated=stepped.terminated, truncated=stepped.truncated)
            return fresh, _where(resetting, keep, keys)

        merged, keys = jax.lax.cond(resetting.any(), reset_some, lambda op: op, (stepped, keys))
        return self._record(merged, stepped, keys, pending)

    @staticmethod
    def _record(state: State, final: State, keys: jax.Array, pending: jax.Array) -> State:
        return state.replace(
            autoreset=AutoResetState(
                key=keys,
                final_obs=final.obs,
                final_info=final.info,
                final_episode=final.episode,
                pending=pending,
            )
        )


def single_env_stack(
    env: Env,
    episode_length: int | None,
    action_repeat: int,
    randomization_fn: RandomizationFn | None,
) -> Env:
    """One unbatched env with randomization, action repeat and a time limit of ``episode_length``
    agent steps (none when it is None)."""
    if randomization_fn is not None:
        env = DomainRandomization(env, randomization_fn)
    if action_repeat != 1:
        env = ActionRepeat(env, action_repeat)
    return env if episode_length is None else EpisodeWrapper(env, episode_length)


def wrap_for_training(
    env: Env,
    *,
    episode_length: int | None = None,
    action_repeat: int = 1,
    randomization_fn: RandomizationFn | None = None,
    autoreset_mode: AutoResetMode | str = AutoResetMode.SAME_STEP,
) -> Env:
    """The batched, auto-resetting env a trainer steps.

    ``reset(keys[N])`` starts ``N`` envs; ``step`` advances all of them and resets
    the ones whose episode ended, in the same call (``autoreset_mode`` may defer
    that to the next call, as Gymnasium's ``SyncVectorEnv`` does). ``episode_length``
    defaults to the env's registered ``max_episode_steps``.
    """
    episode_length = episode_length or env.max_episode_steps
    if episode_length is None:
        raise ValueError(f"{env!r} has no max_episode_steps; pass episode_length")
    return AutoReset(
        VmapWrapper(single_env_stack(env, episode_length, action_repeat, randomization_fn)), autoreset_mode
    )


def make_eval_env(
    env: Env,
    *,
    eval_env: Env | None = None,
    randomization_fn: RandomizationFn | None = None,
    randomize_eval: bool = False,
    episode_length: int | None = None,
    action_repeat: int = 1,
) -> Env:
    """The batched env an evaluator steps, built the same way for every trainer.

    - ``eval_env`` given: it is used as it is (randomized only if asked).
    - no ``eval_env``: a fresh copy of ``env``; since wrappers never write to an
      env, the copy is exactly the env the user built, whatever training did.
    - ``randomize_eval=True`` applies ``randomization_fn`` to evaluation too; by
      default evaluation runs on the nominal physics.

    The result is batched (``reset(keys[N])``) with a time limit and no
    auto-reset: each env plays one episode, and an evaluator reads it up to the
    first ``done``.
    """
    if randomize_eval and randomization_fn is None:
        raise ValueError("randomize_eval=True needs a randomization_fn")
    base = eval_env if eval_env is not None else copy.copy(env)
    episode_length = episode_length or base.max_episode_steps
    if episode_length is None:
        raise ValueError(f"{base!r} has no max_episode_steps; pass episode_length")
    fn = randomization_fn if randomize_eval else None
    return VmapWrapper(single_env_stack(base, episode_length, action_repeat, fn))
