"""PPO in JAX: the whole epoch compiled, with evaluation, callbacks, checkpoints and hooks.

>>> from gymjax.trainers import ppo
>>> make_policy, params, metrics = ppo.train(ppo.PPOConfig(num_timesteps=100_000), "JaxCartPole-v0")
>>> policy = make_policy(params, deterministic=True)
>>> ppo.train(ppo.PPOConfig(), "JaxCartPole-v0", budget=ppo.Minutes(2))  # the steps this machine makes in 2 minutes
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from gymjax.trainers.ppo.budget import Minutes
from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.ppo.networks import PolicyParams, PPOParams, action_space_from, make_networks
from gymjax.trainers.ppo.saved import SavedMeta, SavedState
from gymjax.trainers.ppo.train import PPOTrainer, Run, TrainingDiverged, train
from gymjax.trainers.stopping import TrainingStopped
from gymjax.trainers.store import best
from gymjax.trainers.store import checkpoint as ckpt

__all__ = [
    "Minutes",
    "PPOConfig",
    "PPOParams",
    "PPOTrainer",
    "PolicyParams",
    "Run",
    "SavedMeta",
    "SavedState",
    "TrainingDiverged",
    "TrainingStopped",
    "load_policy",
    "load_policy_and_meta",
    "train",
]


def load_policy(
    path: str | os.PathLike, deterministic: bool = True, policy: str = "last"
) -> Callable[..., jax.Array]:
    """An inference function ``policy(obs, key=None) -> action`` from a checkpoint.

    ``path`` is a checkpoint directory (its newest intact step; a damaged one is
    skipped with a warning, one deleted meanwhile by a training run's
    ``max_to_keep`` silently) or one step's directory. ``policy="best"`` loads the
    checkpoint directory's best evaluated policy instead of its last
    (:mod:`gymjax.trainers.store.best`; refused in one line when it has none yet). Needs
    neither the env nor the trainer: the networks are rebuilt from the checkpoint's
    config and action space. ``obs`` may be one observation, ``[obs_size]``, or a batch,
    ``[..., obs_size]``; another shape is a ``ValueError`` naming the one it takes.
    A stochastic policy (``deterministic=False``) needs ``key``.
    """
    return load_policy_and_meta(path, deterministic, policy)[0]


def load_policy_and_meta(
    path: str | os.PathLike, deterministic: bool = True, policy: str = "last"
) -> tuple[Callable[..., jax.Array], dict[str, Any]]:
    """:func:`load_policy`, and the JSON metadata of the step it came from (env steps, config, ...);
    for the best policy, ``"step"`` is the checkpoint step it was copied from, and ``"best"`` says
    how it was chosen (``{"metric", "value", "step"}``)."""
    networks = None
    chosen = best.check_policy(policy) == "best"
    if chosen:
        path = best.root(path)

    def targets(meta: dict[str, Any]) -> tuple[None, PolicyParams]:
        nonlocal networks
        if chosen:
            best.entry(meta)  # a damaged entry: the next older version is read instead
        saved = SavedMeta.from_json(meta)  # refuses another trainer's checkpoint
        networks = make_networks(saved.obs_size, action_space_from(saved.action_space), saved.config)
        return None, jax.eval_shape(networks.init, jax.random.PRNGKey(0)).policy_params()

    checkpoint = ckpt.restore(path, with_state=False, targets=targets)
    inference = networks.make_policy(checkpoint.policy, deterministic=deterministic)
    act = jax.jit(lambda obs, key: inference(obs, key)[0])
    obs_size = networks.obs_size

    def checked(obs, key=None):
        # Checked here, in Python: inside the jitted call another size fails as a broadcasting error.
        shape = np.shape(obs)
        if not shape or shape[-1] != obs_size:
            raise ValueError(f"the policy takes observations of shape ({obs_size},), or a batch of them "
                             f"(N, {obs_size}) (any leading dims), got {shape}")
        return act(obs, key)

    step = checkpoint.meta[best.BEST]["step"] if chosen else checkpoint.step
    return checked, {**checkpoint.meta, "step": step}
