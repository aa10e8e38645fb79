"""PPO in JAX: the whole epoch compiled, with evaluation, callbacks, checkpoints and hooks.

>>> from gymjax.trainers import ppo
>>> make_policy, params, metrics = ppo.train(ppo.PPOConfig(num_timesteps=100_000), "JaxCartPole-v0")
>>> policy = make_policy(params, deterministic=True)
"""

from __future__ import annotations

import os
from collections.abc import Callable

import jax

from gymjax.trainers import checkpoint as ckpt
from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.ppo.networks import PolicyParams, PPOParams, action_space_from, make_networks
from gymjax.trainers.ppo.train import PPOTrainer, Run, TrainingDiverged, train

__all__ = [
    "PPOConfig",
    "PPOParams",
    "PPOTrainer",
    "PolicyParams",
    "Run",
    "TrainingDiverged",
    "load_policy",
    "train",
]


def load_policy(path: str | os.PathLike, deterministic: bool = True) -> Callable[..., jax.Array]:
    """An inference function ``policy(obs, key=None) -> action`` from a checkpoint.

    ``path`` is a checkpoint directory (its latest complete step) or one step's
    directory. Needs neither the env nor the trainer: the networks are rebuilt
    from the checkpoint's config and action space. ``obs`` may be one
    observation or a batch; a stochastic policy (``deterministic=False``)
    needs ``key``.
    """
    meta = ckpt.read_meta(path)
    if meta.get("trainer") != "ppo":
        raise ValueError(f"{path} is not a gymjax PPO checkpoint (trainer={meta.get('trainer')!r})")
    config = PPOConfig.from_dict(meta["config"])
    networks = make_networks(int(meta["obs_size"]), action_space_from(meta["action_space"]), config)
    target = jax.eval_shape(networks.init, jax.random.PRNGKey(0)).policy_params()
    params = ckpt.restore(path, policy_target=target, with_state=False).policy
    policy = networks.make_policy(params, deterministic=deterministic)
    return jax.jit(lambda obs, key=None: policy(obs, key)[0])
