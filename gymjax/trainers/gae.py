"""Generalized advantage estimation (Schulman et al. 2016), in two flavours.

All arrays are time-major ``[T, B]``. ``next_values[t]`` is the value of the
observation reached by step ``t``: for a step that ended an episode, the value of
its *final* observation (``info["final_obs"]``), before any reset. With
same-step auto-reset that observation is not ``obs[t + 1]``, which is why the
bootstrap values are an argument of their own rather than ``values[1:]``.

``mode="standard"``
    The textbook recursion, as SB3's ``RolloutBuffer`` with its timeout
    bootstrap computes it::

        delta[t] = r[t] + gamma * (1 - term[t]) * next_values[t] - values[t]
        adv[t]   = delta[t] + gamma * lambda * (1 - done[t]) * adv[t + 1]
        returns  = adv + values

    A step cut by the time limit (truncated, not terminated) bootstraps from the
    value of its final observation; the recursion stops at every episode end.

``mode="brax"``
    Brax's ``compute_gae`` and PPO advantage (``brax/training/agents/ppo/losses.py``)::

        delta[t] = (r[t] + gamma * (1 - term[t]) * next_values[t] - values[t]) * (1 - trunc[t])
        acc[t]   = delta[t] + gamma * lambda * (1 - term[t]) * (1 - trunc[t]) * acc[t + 1]
        vs       = acc + values                                   # value targets
        adv[t]   = (r[t] + gamma * (1 - term[t]) * vs[t + 1] - values[t]) * (1 - trunc[t])
        returns  = vs

    Differences from standard: truncated steps get advantage 0 and value target
    ``values[t]`` (they are masked out rather than bootstrapped), and the
    advantage is a one-step TD error against the lambda-returns ``vs`` rather
    than the lambda-weighted sum of TD errors. With ``lambda = 1`` and no
    truncation the two modes agree exactly. (Brax reads ``values[t + 1]``, the
    value of the next *reset* observation; it only ever multiplies it by
    ``1 - term`` or masks it, so ``next_values`` gives Brax's numbers.)
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

GaeMode = Literal["standard", "brax"]
GAE_MODES: tuple[str, ...] = ("standard", "brax")


def compute_gae(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminations: jax.Array,
    truncations: jax.Array,
    *,
    gamma: float,
    gae_lambda: float,
    mode: GaeMode = "standard",
) -> tuple[jax.Array, jax.Array]:
    """Advantages and value targets for a ``[T, B]`` rollout.

    Args:
        rewards: float ``[T, B]``, reward of step ``t``.
        values: float ``[T, B]``, ``V(obs[t])``, the observation step ``t`` acted on.
        next_values: float ``[T, B]``, ``V`` of the observation step ``t`` reached
            (its final observation where the episode ended).
        terminations: bool or float ``[T, B]``, step ``t`` reached a terminal state.
        truncations: bool or float ``[T, B]``, step ``t`` was cut by the time limit.
        gamma: discount.
        gae_lambda: GAE's lambda.
        mode: ``"standard"`` or ``"brax"`` (see the module docstring).

    Returns:
        ``(advantages, returns)``, both float ``[T, B]``; ``returns`` are the
        value-function targets.
    """
    if mode not in GAE_MODES:
        raise ValueError(f"mode must be one of {GAE_MODES}, got {mode!r}")
    shape = jnp.shape(rewards)
    for name, array in (
        ("values", values),
        ("next_values", next_values),
        ("terminations", terminations),
        ("truncations", truncations),
    ):
        if jnp.shape(array) != shape:
            raise ValueError(f"{name} must have the rewards' shape {shape} ([T, B]), got {jnp.shape(array)}")
    dtype = jnp.result_type(rewards, values, jnp.float32)
    rewards, values, next_values = (jnp.asarray(x, dtype) for x in (rewards, values, next_values))
    alive = 1.0 - jnp.asarray(terminations, dtype)
    kept = 1.0 - jnp.asarray(truncations, dtype)
    if mode == "standard":
        return _standard(rewards, values, next_values, alive, kept, gamma, gae_lambda)
    return _brax(rewards, values, next_values, alive, kept, gamma, gae_lambda)


def _reverse_scan(deltas: jax.Array, decay: jax.Array) -> jax.Array:
    """``acc[t] = deltas[t] + decay[t] * acc[t + 1]``, ``acc[T] = 0``."""

    def back(acc, xs):
        delta, d = xs
        acc = delta + d * acc
        return acc, acc

    _, out = jax.lax.scan(back, jnp.zeros_like(deltas[0]), (deltas, decay), reverse=True)
    return out


def _standard(rewards, values, next_values, alive, kept, gamma, gae_lambda):
    deltas = rewards + gamma * alive * next_values - values
    continuing = alive * kept  # the recursion stops at any episode end
    advantages = _reverse_scan(deltas, gamma * gae_lambda * continuing)
    return advantages, advantages + values


def _brax(rewards, values, next_values, alive, kept, gamma, gae_lambda):
    deltas = (rewards + gamma * alive * next_values - values) * kept
    vs = _reverse_scan(deltas, gamma * gae_lambda * alive * kept) + values
    # vs[t + 1], and the bootstrap value after the last step. Where step t ended,
    # vs[t + 1] belongs to the next episode, but (1 - term) or the truncation
    # mask zeroes its term there, as in Brax.
    vs_next = jnp.concatenate([vs[1:], next_values[-1:]], axis=0)
    advantages = (rewards + gamma * alive * vs_next - values) * kept
    return advantages, vs
