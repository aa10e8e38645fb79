"""Whether a saved run can continue under a new trainer: same env, spaces, state layout and
the config fields marked ``resume="fixed"``; every other field may change on resume."""

from __future__ import annotations

import dataclasses
import warnings

from gymjax.trainers import checkpoint as ckpt
from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.ppo.saved import SavedMeta

# The PPOConfig fields a resumed run must keep, in the config's order (the first that differs is named).
FIXED_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(PPOConfig) if f.metadata["resume"] == "fixed"
)


def check_compatible(saved: SavedMeta, current: SavedMeta, env_name: str) -> None:
    """Refuses to continue ``saved`` as the trainer whose checkpoints would say ``current``
    (another env, spaces, network shape or env-state layout); warns when only the device count differs.

    ``env_name`` names the new trainer's env in the messages. Raises
    :class:`~gymjax.trainers.checkpoint.IncompatibleCheckpoint` (a ``ValueError``).
    """
    if saved.state_layout != current.state_layout:
        raise ckpt.IncompatibleCheckpoint(
            f"cannot resume: the checkpoint was written by an earlier gymjax whose env state had another "
            f"layout ({saved.state_layout}; this gymjax's is {current.state_layout}). Its policy still loads "
            "(gymjax eval, gymjax render, load_policy); to train on, start a new run"
        )
    for name in FIXED_FIELDS:
        before, now = getattr(saved.config, name), getattr(current.config, name)
        if before != now:
            raise ckpt.IncompatibleCheckpoint(
                f"cannot resume: the checkpoint has {name}={before!r}, this config {now!r}"
            )
    if saved.env_id and current.env_id and saved.env_id != current.env_id:
        raise ckpt.IncompatibleCheckpoint(
            f"cannot resume: the checkpoint was trained on {saved.env_id}, not {current.env_id}"
        )
    if saved.obs_size != current.obs_size:
        raise ckpt.IncompatibleCheckpoint(
            f"cannot resume: the checkpoint's policy takes {saved.obs_size} observations, {env_name} gives "
            f"{current.obs_size}"
        )
    if saved.action_space != current.action_space:
        raise ckpt.IncompatibleCheckpoint(
            f"cannot resume: the checkpoint's action space is {saved.action_space}, {env_name}'s "
            f"{current.action_space}"
        )
    if saved.num_devices != current.num_devices:
        warnings.warn(
            f"the checkpoint was written on {saved.num_devices} device(s), this process has "
            f"{current.num_devices}: training continues with new PRNG streams per device, so it will not "
            f"reproduce a run that kept {saved.num_devices}",
            stacklevel=4,  # past PPOTrainer.check_compatible and the restore's targets
        )
