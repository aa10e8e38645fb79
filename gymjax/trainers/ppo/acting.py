"""Rollouts (``lax.scan`` over an unroll) and the evaluator."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from gymjax.core import Env, State
from gymjax.trainers.ppo.networks import Policy


@struct.dataclass
class Transition:
    """One step of a batch of envs; a rollout stacks them to ``[T, B, ...]``.

    Attributes:
        obs: float32 ``[B, obs_dim]``, the observation acted on.
        raw_action: ``[B, ...]``, the policy's sample (before tanh or clipping, for Box).
        log_prob: float32 ``[B]``.
        reward: float32 ``[B]``, unscaled.
        terminated, truncated: bool ``[B]``.
        final_obs: float32 ``[B, obs_dim]``, the observation reached (before any
            auto-reset); GAE bootstraps from its value.
        episode_return, episode_length: ``[B]`` statistics of the episode that
            ended at this step, zero where none ended.
    """

    obs: jax.Array
    raw_action: jax.Array
    log_prob: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: jax.Array
    episode_return: jax.Array
    episode_length: jax.Array


def rollout(env: Env, state: State, policy: Policy, key: jax.Array, length: int) -> tuple[State, Transition]:
    """Steps the auto-resetting batch ``length`` times; returns the last state and ``[T, B]`` transitions."""

    def step(state, key):
        action, extras = policy(state.obs, key)
        nxt = env.step(state, action)
        done = nxt.terminated | nxt.truncated
        final = nxt.autoreset.final_episode
        transition = Transition(
            obs=state.obs,
            raw_action=extras["raw_action"],
            log_prob=extras["log_prob"],
            reward=nxt.reward,
            terminated=nxt.terminated,
            truncated=nxt.truncated,
            final_obs=nxt.autoreset.final_obs,
            episode_return=jnp.where(done, final.episode_return, 0.0),
            episode_length=jnp.where(done, final.episode_length, 0),
        )
        return nxt, transition

    return jax.lax.scan(step, state, jax.random.split(key, length))


@struct.dataclass
class EvalResult:
    """Per-env results of one evaluation: float32 ``[N]`` return, int32 ``[N]`` length (agent steps)."""

    episode_return: jax.Array
    episode_length: jax.Array


def evaluate(env: Env, policy: Policy, key: jax.Array, num_envs: int, max_steps: int) -> EvalResult:
    """Plays one episode in each of ``num_envs`` envs of the batched, non-resetting ``env``.

    Steps ``max_steps`` times (the eval env's time limit ends every episode by
    then) and counts each env's rewards up to its first ``done``.
    """
    reset_key, act_key = jax.random.split(key)
    state = env.reset(jax.random.split(reset_key, num_envs))

    def step(carry, key):
        state, total, length, alive = carry
        action, _ = policy(state.obs, key)
        nxt = env.step(state, action)
        total = total + jnp.where(alive, nxt.reward, 0.0)
        length = length + alive.astype(jnp.int32)
        alive = alive & ~(nxt.terminated | nxt.truncated)
        return (nxt, total, length, alive), None

    init = (state, jnp.zeros(num_envs, jnp.float32), jnp.zeros(num_envs, jnp.int32), jnp.ones(num_envs, bool))
    (_, total, length, _), _ = jax.lax.scan(step, init, jax.random.split(act_key, max_steps))
    return EvalResult(episode_return=total, episode_length=length)
