"""A trained policy on Gymnasium's own env: the proof that the JAX env is the real task.

Each registered single-agent id names the Gymnasium env whose task it reproduces
(``JaxAnt-v0`` -> ``Ant-v5``, ``JaxInvertedPendulum-v0`` -> ``InvertedPendulum-v5``,
``JaxCartPole-v0`` -> ``CartPole-v1``, ``JaxPendulum-v0`` -> ``Pendulum-v1``; the registry's
``reference_id``). :func:`evaluate_on_reference` plays a policy there: MuJoCo C in float64
for the MuJoCo envs, Gymnasium's NumPy code for classic control, Gymnasium's own time limit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gymjax import envs

# Options that say how gymjax simulates a task, not what the task is: Gymnasium's env takes none.
ENGINE_OPTIONS = ("engine", "backend", "solver")


def reference_id(env_id: str | None) -> str:
    """The Gymnasium id of ``env_id``'s task; ValueError (naming the ids that have one) if it has none."""
    have = [i for i in envs.registered_ids() if envs.spec(i).reference_id]
    if env_id is None:
        raise ValueError(
            f"the env was not built by id, so its Gymnasium reference is unknown; build it with "
            f"gymjax.make(id) or pass the id (ids with a reference: {have})"
        )
    spec = envs.spec(env_id)  # names the registered ids if env_id is not one
    if spec.reference_id is None:
        raise ValueError(f"{env_id} has no Gymnasium reference env; ids with one: {have}")
    return spec.reference_id


def reference_kwargs(env_id: str, env_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """The reference env's options for ``env_id`` made with ``env_kwargs``: the registry's for the id
    (a variant's), then the JAX env's own by the same names, less :data:`ENGINE_OPTIONS`."""
    given = {k: v for k, v in (env_kwargs or {}).items() if k not in ENGINE_OPTIONS}
    return {**envs.spec(env_id).reference_kwargs, **given}


def evaluate_on_reference(
    act: Callable[[np.ndarray], Any],
    env_id: str | None,
    env_kwargs: dict[str, Any] | None = None,
    *,
    episodes: int = 10,
    seed: int = 0,
    action_repeat: int = 1,
) -> dict[str, Any]:
    """Plays one episode in each of ``episodes`` copies of ``env_id``'s Gymnasium env.

    Args:
        act: a batch of float32 observations ``[episodes, obs_dim]`` -> a batch of actions
            (a loaded policy, ``jax.jit``-ed).
        env_id, env_kwargs: the gymjax id and options the policy was trained on; the options go
            to the reference env too (less :data:`ENGINE_OPTIONS`), so a changed task stays changed.
        episodes: episodes, env ``i`` reset with seed ``seed + i``.
        action_repeat: env steps per action, as in training.

    Returns ``{"reference_env", "episodes", "episode_return_mean", "episode_return_std",
    "episode_length_mean" (env steps), "eval_s"}``.
    """
    import gymnasium

    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an int >= 1, got {episodes!r}")
    ref = reference_id(env_id)
    kwargs = reference_kwargs(env_id, env_kwargs)
    start = time.perf_counter()
    try:
        venv = gymnasium.vector.SyncVectorEnv(
            [lambda: gymnasium.make(ref, **kwargs)] * episodes,
            # Gymnasium 1.0 has no AutoresetMode: next-step is its SyncVectorEnv's only mode.
            **({"autoreset_mode": gymnasium.vector.AutoresetMode.NEXT_STEP}
               if hasattr(gymnasium.vector, "AutoresetMode") else {}),
        )
    except TypeError as e:
        raise ValueError(f"{ref} does not take the options {kwargs} the policy was trained with: {e}") from None
    try:
        obs, _ = venv.reset(seed=seed)
        total = np.zeros(episodes)
        length = np.zeros(episodes, np.int64)
        alive = np.ones(episodes, bool)
        while alive.any():
            action = np.asarray(act(np.asarray(obs, np.float32)))
            for _ in range(action_repeat):
                obs, reward, terminated, truncated, _ = venv.step(action)
                total += np.where(alive, reward, 0.0)
                length += alive
                alive &= ~(terminated | truncated)
                if not alive.any():
                    break
    finally:
        venv.close()
    return {
        "reference_env": ref,
        "episodes": episodes,
        "episode_return_mean": float(total.mean()),
        "episode_return_std": float(total.std()),
        "episode_length_mean": float(length.mean()),
        "eval_s": time.perf_counter() - start,
    }
