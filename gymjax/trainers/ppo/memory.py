"""How much memory a PPO config needs, checked before anything compiles.

XLA finds out that a batch does not fit only when it allocates it, after a
compile that can take minutes (``num_envs=10**7`` on CartPole failed only
inside XLA, after compiling). This estimate is coarse on purpose, a lower
bound of what one process holds at once: the envs' states (twice: the epoch's
input and output), and one iteration's rollout with its SGD copies.
"""

from __future__ import annotations

import jax

from gymjax.core.memory import available_bytes, refuse_if_short, tree_bytes
from gymjax.trainers.ppo.config import PPOConfig

# Per agent step of each env, in float32 values beyond the observation and action: reward, two
# flags, log-prob, value, advantage, return, episode return and length, done mask.
SCALARS_PER_STEP = 10
# The rollout is held once, copied once shuffled for the minibatches, and once more as gradients'
# inputs; the observations three times (obs, final obs, normalized).
ROLLOUT_COPIES = 3


def estimate_bytes(config: PPOConfig, obs_size: int, action_size: int, env_state_bytes: int, envs: int) -> int:
    """Bytes for ``envs`` envs of this process: their states and one iteration's data."""
    per_step = (3 * obs_size + 2 * action_size + SCALARS_PER_STEP) * 4
    rollout = config.unroll_length * envs * per_step * ROLLOUT_COPIES
    return 2 * env_state_bytes * envs + rollout


def check_fits(config: PPOConfig, env, obs_size: int, action_size: int, envs: int) -> None:
    """Refuses a config whose batch cannot fit, with the estimate; nothing runs or compiles."""
    state = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
    state_bytes = tree_bytes(state)
    needed = estimate_bytes(config, obs_size, action_size, state_bytes, envs)
    refuse_if_short(
        needed, available_bytes(), f"num_envs={config.num_envs} with unroll_length={config.unroll_length}",
        f"{envs:,} envs in this process x {state_bytes:,} bytes of env state, and one iteration's rollout",
        "Lower num_envs or unroll_length, or add devices.",
    )
