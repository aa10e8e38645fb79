"""What a PPO checkpoint holds, defined once for saving and restoring.

:mod:`gymjax.trainers.store.checkpoint` writes three items per step; for PPO they are

- ``state``: a :class:`SavedState`, the arrays that continue training bit for bit;
- ``policy``: :attr:`SavedState.policy`, what :func:`~gymjax.trainers.ppo.load_policy`
  reads without the env or the trainer;
- ``meta``: a :class:`SavedMeta` as JSON: the config, the counters, what the policy
  takes and gives, and the layout of the env state.

:meth:`PPOTrainer.to_checkpoint <gymjax.trainers.ppo.train.PPOTrainer.to_checkpoint>` builds
both from a run; a restore reads into the same classes. Orbax stores a dataclass's fields
under their names, as it stores a dict's keys, so these classes read the checkpoints written
before them (string-keyed dicts with the same names).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import optax
from flax import struct

from gymjax.core import State
from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.ppo.networks import PolicyParams, PPOParams
from gymjax.trainers.ppo.normalization import RewardNormalizer
from gymjax.trainers.store import checkpoint as ckpt

TRAINER = "ppo"  # the meta's "trainer": load_policy refuses checkpoints of other trainers


@struct.dataclass
class SavedState:
    """A run's training state in one layout whatever the device count.

    ``env_state`` and ``reward_norm.returns`` hold every env, ``[num_envs, ...]``;
    the parameters, optimizer state and return statistics once; ``keys`` is
    ``[D, 2]``, one PRNG key per device of the run that saved it.
    """

    params: PPOParams
    opt_state: optax.OptState
    env_state: State
    reward_norm: RewardNormalizer
    keys: jax.Array

    @property
    def policy(self) -> PolicyParams:
        """The checkpoint's ``policy`` item."""
        return self.params.policy_params()


# Meta keys that checkpoints of earlier gymjax versions lack, and the value each stands for.
_UNRECORDED = {
    "elapsed_s": 0.0,
    "num_processes": 1,  # before several processes
    "env_id": None,
    "state_layout": 1,  # before the env state's layout was recorded (see gymjax.core.env.STATE_LAYOUT)
    "run_id": None,  # before run ids
}


def _count(least: int) -> tuple[Any, str]:
    return (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= least), f"an int >= {least}"


def _optional_str(v: Any) -> bool:
    return v is None or isinstance(v, str)


# What each meta field must hold, and how the error names it: a field of another type would
# otherwise pass through a load and fail later, far from the checkpoint (env_steps="lots").
_EXPECTED: dict[str, tuple[Any, str]] = {
    "config": (lambda v: isinstance(v, dict), "a JSON object of PPOConfig fields"),
    "env_steps": _count(0),
    "epoch": _count(0),
    "elapsed_s": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0,
        "a finite number >= 0",
    ),
    "num_devices": _count(1),
    "num_processes": _count(1),
    "obs_size": _count(1),
    "action_space": (
        lambda v: isinstance(v, dict) and v.get("type") in ("Box", "Discrete"),
        'a JSON object with "type": "Box" or "Discrete"',
    ),
    "env_id": (_optional_str, "a string or null"),
    "state_layout": _count(1),
    "run_id": (_optional_str, "a string or null"),
}


def _checked(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta``'s fields, defaults filled in; raises DamagedCheckpoint naming a field missing or wrong."""
    values = {**_UNRECORDED, **meta}
    for name, (test, expected) in _EXPECTED.items():
        if name not in values:
            raise ckpt.DamagedCheckpoint(f"the checkpoint's metadata lacks {name!r} (expected {expected})")
        if not test(values[name]):
            got = repr(values[name])
            got = got if len(got) <= 80 else got[:77] + "..."
            raise ckpt.DamagedCheckpoint(
                f"the checkpoint's metadata has {name}={got} ({type(values[name]).__name__}); expected {expected}"
            )
    return values


@dataclasses.dataclass(frozen=True)
class SavedMeta:
    """A checkpoint's ``meta`` item, written as JSON by :meth:`to_json`, read by :meth:`from_json`."""

    config: PPOConfig
    env_steps: int  # a JSON integer: 64-bit and beyond
    epoch: int
    elapsed_s: float  # wall time spent training, over all resumed sessions
    num_devices: int
    num_processes: int
    obs_size: int
    action_space: dict[str, Any]  # networks.describe_action_space
    env_id: str | None  # the registered id, None for an env object
    state_layout: int  # gymjax.core.env.STATE_LAYOUT of the gymjax that saved it
    # The run that wrote it. The Checkpointer writes its own run_id over this one, since it
    # guards the directory against other runs' steps.
    run_id: str | None

    def to_json(self) -> dict[str, Any]:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {"trainer": TRAINER, **fields, "config": self.config.to_dict()}

    @classmethod
    def from_json(cls, meta: dict[str, Any]) -> SavedMeta:
        """The metadata of a checkpoint of this or an earlier gymjax; keys it does not know are ignored.

        Raises :class:`~gymjax.trainers.store.checkpoint.IncompatibleCheckpoint` for another trainer's,
        and :class:`~gymjax.trainers.store.checkpoint.DamagedCheckpoint` (a reader then falls back to an
        older step) for a field missing or of the wrong type, naming it and what it should hold.
        """
        if meta.get("trainer") != TRAINER:
            raise ckpt.IncompatibleCheckpoint(
                f"not a gymjax PPO checkpoint (its metadata has trainer={meta.get('trainer')!r})"
            )
        values = _checked(meta)
        try:
            config = PPOConfig.from_dict(values["config"])
        except (TypeError, ValueError) as e:
            raise ckpt.DamagedCheckpoint(f"the checkpoint's metadata has a bad config: {e}") from None
        fields = {f.name: values[f.name] for f in dataclasses.fields(cls)}
        return cls(**{**fields, "config": config})
