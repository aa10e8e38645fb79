"""Composable JAX wrappers: time limit, action repeat, domain randomization,
vmap batching and same-step auto-reset, plus the train/eval env builders.

The usual stack, innermost first (what :func:`wrap_for_training` builds)::

    env -> DomainRandomization -> ActionRepeat -> EpisodeWrapper -> VmapWrapper -> AutoReset

Every wrapper is pure: it never writes to an env object, so the same base env
can back a training batch, an eval batch and a Gymnasium adapter at once.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from gymjax.core import Env, State, Wrapper

RandomizationFn = Callable[[Any, jax.Array], Any]


def next_reset_key(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Splits ``key`` into ``(key to keep, key for this reset)``.

    The one rule every reset in gymjax follows, so a single env seeded ``s`` and
    env ``i`` of a vector env seeded ``s - i`` draw the same episodes.
    """
    keep, use = jax.random.split(key)
    return keep, use


def _where(mask: jax.Array, on_true: Any, on_false: Any) -> Any:
    """``jnp.where`` over matching pytrees, ``mask`` broadcast from the leading axes."""

    def pick(a, b):
        m = jnp.reshape(mask, mask.shape + (1,) * (a.ndim - mask.ndim))
        return jnp.where(m, a, b)

    return jax.tree.map(pick, on_true, on_false)


class EpisodeWrapper(Wrapper):
    """Truncates at ``max_episode_steps`` agent steps (Gymnasium's ``TimeLimit``).

    Adds ``info["steps"]`` (int32, steps since reset) and keeps running episode
    statistics in ``metrics["episode_return"]`` and ``metrics["episode_length"]``.
    ``terminated`` and ``truncated`` stay apart; both are set when a terminal
    state is reached on the last allowed step.
    """

    def __init__(self, env: Env, max_episode_steps: int):
        super().__init__(env)
        if max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps}")
        self._max_episode_steps = int(max_episode_steps)

    max_episode_steps = property(lambda self: self._max_episode_steps)

    def reset(self, key, params=None):
        state = self.env.reset(key, params)
        metrics = {"episode_return": jnp.float32(0.0), "episode_length": jnp.int32(0)}
        return state.replace(
            info={**state.info, "steps": jnp.int32(0)},
            metrics={**state.metrics, **metrics},
        )

    def step(self, state, action, params=None):
        steps = state.info["steps"] + 1
        out = self.env.step(state, action, params)
        episode_return = state.metrics["episode_return"] + out.reward
        metrics = {"episode_return": episode_return, "episode_length": steps}
        return out.replace(
            truncated=out.truncated | (steps >= self._max_episode_steps),
            info={**out.info, "steps": steps},
            metrics={**out.metrics, **metrics},
        )


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

        def once(carry, _):
            state, total, ended = carry
            nxt = self.env.step(state, action, params)
            nxt = _where(ended, state, nxt)
            total = total + jnp.where(ended, 0.0, nxt.reward)
            return (nxt, total, ended | nxt.terminated | nxt.truncated), None

        first = self.env.step(state, action, params)
        carry = (first, first.reward, first.terminated | first.truncated)
        (last, total, _), _ = jax.lax.scan(once, carry, None, length=self.repeat - 1)
        return last.replace(reward=total.astype(jnp.float32))


class DomainRandomization(Wrapper):
    """Gives each env its own physics parameters, drawn at every reset.

    Args:
        env: the unbatched env whose ``default_params`` are randomized.
        randomization_fn: either ``fn(params, key) -> params`` for one env (gymjax's
            form), or Brax's batched form ``fn(params, keys[B]) -> (params_batched,
            in_axes)``; the form is recognized by what the function returns.

    The randomized leaves ride along in ``info["randomized_params"]``, so they
    follow the state through ``vmap``, ``scan`` and sharding; ``env`` is only ever
    read. Unlike Brax (parameters fixed per batch slot), parameters are drawn
    anew at each reset, auto-resets included.
    """

    def __init__(self, env: Env, randomization_fn: RandomizationFn):
        super().__init__(env)
        if not callable(randomization_fn):
            raise TypeError(f"randomization_fn must be callable, got {randomization_fn!r}")
        self.randomization_fn = randomization_fn
        self._default_leaves, self._treedef = jax.tree.flatten(env.default_params)
        self._brax_form, self._randomized = self._probe()

    def _probe(self) -> tuple[bool, tuple[int, ...]]:
        """Finds the function's form and which parameter leaves it changes.

        Runs under ``eval_shape`` with a traced key: nothing is computed and only
        booleans leave the trace.
        """
        defaults = self.env.default_params
        changed: list[tuple[bool, tuple[int, ...]]] = []

        def ours(key):
            out = self.randomization_fn(defaults, key)
            if isinstance(out, tuple) and len(out) == 2:
                raise _BraxForm
            changed.append((False, self._changed_leaves(out, None)))

        def brax(key):
            out, in_axes = self.randomization_fn(defaults, key[None])
            changed.append((True, self._changed_leaves(out, in_axes)))

        key = jax.random.PRNGKey(0)
        try:
            jax.eval_shape(ours, key)
        except _BraxForm:
            jax.eval_shape(brax, key)
        except Exception as ours_error:
            try:
                jax.eval_shape(brax, key)
            except Exception:
                raise ours_error from None
        brax_form, randomized = changed[0]
        if not randomized:
            warnings.warn("randomization_fn changed no parameter: every env gets the defaults")
        return brax_form, randomized

    def _changed_leaves(self, params, in_axes) -> tuple[int, ...]:
        leaves, treedef = jax.tree.flatten(params)
        if treedef != self._treedef:
            raise ValueError(
                "randomization_fn must return the params with the same structure as "
                f"env.default_params (a {type(self.env.default_params).__name__}, static "
                "fields unchanged); use params.replace(field=new_value)"
            )
        if in_axes is not None:
            axes = self._treedef.flatten_up_to(in_axes)
            return tuple(i for i, axis in enumerate(axes) if axis is not None)
        return tuple(i for i, (new, old) in enumerate(zip(leaves, self._default_leaves)) if new is not old)

    def draw(self, key: jax.Array) -> tuple[jax.Array, ...]:
        """The randomized parameter leaves for one env."""
        if self._brax_form:
            params, _ = self.randomization_fn(self.env.default_params, key[None])
            leaves = jax.tree.leaves(params)
            return tuple(leaves[i][0] for i in self._randomized)
        leaves = jax.tree.leaves(self.randomization_fn(self.env.default_params, key))
        return tuple(leaves[i] for i in self._randomized)

    def params(self, randomized: tuple[jax.Array, ...]) -> Any:
        """The full params of one env from its randomized leaves."""
        leaves = list(self._default_leaves)
        for i, leaf in zip(self._randomized, randomized):
            leaves[i] = leaf
        return self._treedef.unflatten(leaves)

    def reset(self, key, params=None):
        if params is not None:
            raise ValueError("DomainRandomization draws its own params; do not pass params")
        key_params, key_env = jax.random.split(key)
        randomized = self.draw(key_params)
        state = self.env.reset(key_env, self.params(randomized))
        return state.replace(info={**state.info, "randomized_params": randomized})

    def step(self, state, action, params=None):
        randomized = state.info["randomized_params"]
        out = self.env.step(state, action, self.params(randomized))
        return out.replace(info={**out.info, "randomized_params": randomized})


class _BraxForm(Exception):
    """Raised inside the probe when the function returned ``(params, in_axes)``."""


class VmapWrapper(Wrapper):
    """Batches an unbatched env: ``reset(keys[N])``, ``step(states[N], actions[N])``.

    ``params``, when given, are shared by the whole batch.
    """

    def reset(self, keys, params=None):
        return jax.vmap(self.env.reset, in_axes=(0, None))(keys, params)

    def step(self, state, action, params=None):
        return jax.vmap(self.env.step, in_axes=(0, 0, None))(state, action, params)


class AutoReset(Wrapper):
    """Same-step auto-reset for a batched env, keeping the final observation.

    When an env's episode ends, the returned state holds the *reset* observation,
    env state, info and metrics, while ``reward``, ``terminated`` and ``truncated``
    are those of the ending step (Gymnasium's ``AutoresetMode.SAME_STEP``). What
    the reset replaced is kept in ``info["final_obs"]``, ``info["final_info"]`` and
    ``info["final_metrics"]`` (equal to the live values where nothing ended).
    Brax's auto-reset drops them and restarts every episode from one fixed state.

    Each env carries its own key in ``info["autoreset_key"]`` and consumes it
    with :func:`next_reset_key`, as a single env does across its resets. Resets
    are computed only on steps where some episode ended.
    """

    def reset(self, keys, params=None):
        keep, use = jax.vmap(next_reset_key)(keys)
        state = self.env.reset(use, params)
        return self._record(state, state, keep)

    _OWN_KEYS = ("autoreset_key", "final_obs", "final_info", "final_metrics")

    def step(self, state, action, params=None):
        keys = state.info["autoreset_key"]
        inner_info = {k: v for k, v in state.info.items() if k not in self._OWN_KEYS}
        stepped = self.env.step(state.replace(info=inner_info), action, params)
        done = stepped.terminated | stepped.truncated

        def reset_ended(operand):
            stepped, keys = operand
            keep, use = jax.vmap(next_reset_key)(keys)
            fresh = self.env.reset(use, params)
            live = (stepped.env_state, stepped.obs, stepped.info, stepped.metrics)
            reset = (fresh.env_state, fresh.obs, fresh.info, fresh.metrics)
            env_state, obs, info, metrics = _where(done, reset, live)
            merged = stepped.replace(env_state=env_state, obs=obs, info=info, metrics=metrics)
            return merged, _where(done, keep, keys)

        merged, keys = jax.lax.cond(done.any(), reset_ended, lambda op: op, (stepped, keys))
        return self._record(merged, stepped, keys)

    @staticmethod
    def _record(state: State, final: State, keys: jax.Array) -> State:
        info = {
            **state.info,
            "autoreset_key": keys,
            "final_obs": final.obs,
            "final_info": dict(final.info),
            "final_metrics": dict(final.metrics),
        }
        return state.replace(info=info)


def single_env_stack(
    env: Env,
    episode_length: int,
    action_repeat: int,
    randomization_fn: RandomizationFn | None,
) -> Env:
    """One unbatched env with randomization, action repeat and a time limit of ``episode_length`` agent steps."""
    if randomization_fn is not None:
        env = DomainRandomization(env, randomization_fn)
    if action_repeat != 1:
        env = ActionRepeat(env, action_repeat)
    return EpisodeWrapper(env, episode_length)


def wrap_for_training(
    env: Env,
    *,
    episode_length: int | None = None,
    action_repeat: int = 1,
    randomization_fn: RandomizationFn | None = None,
) -> Env:
    """The batched, auto-resetting env a trainer steps.

    ``reset(keys[N])`` starts ``N`` envs; ``step`` advances all of them and resets
    the ones whose episode ended, in the same call. ``episode_length`` defaults to
    the env's registered ``max_episode_steps``.
    """
    episode_length = episode_length or env.max_episode_steps
    if episode_length is None:
        raise ValueError(f"{env!r} has no max_episode_steps; pass episode_length")
    return AutoReset(VmapWrapper(single_env_stack(env, episode_length, action_repeat, randomization_fn)))


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
