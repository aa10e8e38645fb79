"""Whether a saved run can continue under a new trainer, and with which config.

- The env, its spaces, the env-state layout and the fields marked ``resume="fixed"`` (the saved
  arrays' shapes or meaning depend on them) never change.
- :data:`REPORTING_FIELDS` say how long to train and what to report: a resume may change them
  unasked (``num_timesteps`` is how a run trains longer).
- Every other field changes how the run trains (``learning_rate``, ``seed``, ``gamma``, ...): a
  resume with another value is refused in one line naming the fields, unless the caller names
  them as changes it means (``ppo.train(..., resume_changes=["learning_rate"])``), as SB3's
  ``load(..., custom_objects={"learning_rate": ...})`` overrides a saved value only when asked.
  A script edited between a run and its resume would otherwise continue the run with a mix of
  settings, and nothing would say so.
"""

from __future__ import annotations

import dataclasses
import warnings

from gymjax.trainers.ppo.config import PPOConfig
from gymjax.trainers.ppo.saved import SavedMeta
from gymjax.trainers.store import checkpoint as ckpt

# The PPOConfig fields a resumed run must keep, in the config's order (the first that differs is named).
FIXED_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(PPOConfig) if f.metadata["resume"] == "fixed"
)
# The fields that say how long to train and what to report, not how: changed on resume unasked.
REPORTING_FIELDS: tuple[str, ...] = (
    "num_timesteps", "epoch_iterations", "num_evals", "num_eval_envs", "deterministic_eval", "randomize_eval",
    "reference_episodes", "log_training_metrics", "training_metrics_steps", "save_every_epochs", "max_to_keep",
)
# The fields that change how a resumed run trains: changed only when named (``resume_changes``).
GUARDED_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(PPOConfig) if f.name not in (*FIXED_FIELDS, *REPORTING_FIELDS)
)


def check_changes(names) -> tuple[str, ...]:
    """``resume_changes`` as given to ``ppo.train``: field names of :data:`GUARDED_FIELDS`, else
    ``ValueError`` in one line (a fixed field can never change; a reporting field needs no naming)."""
    if isinstance(names, str):  # iterating it would name one field per character
        raise TypeError(f"resume_changes must be a sequence of PPOConfig field names, got the string {names!r}")
    names = tuple(names)
    wrong = [n for n in names if n not in GUARDED_FIELDS]
    if wrong:
        raise ValueError(
            f"resume_changes names {wrong}; it takes the fields that change how a run trains: {list(GUARDED_FIELDS)} "
            f"({list(FIXED_FIELDS)} never change on resume, the others may change unnamed)"
        )
    return names


def check_compatible(saved: SavedMeta, current: SavedMeta, env_name: str, changes: tuple[str, ...] = ()) -> None:
    """Refuses to continue ``saved`` as the trainer whose checkpoints would say ``current``
    (another env, spaces, network shape or env-state layout, or a guarded field changed and not
    among ``changes``); warns when only the device count differs.

    ``env_name`` names the new trainer's env in the messages. Raises
    :class:`~gymjax.trainers.store.checkpoint.IncompatibleCheckpoint` (a ``ValueError``).
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
    mismatch = env_mismatch(saved, current.env_id, current.obs_size, current.action_space, env_name)
    if mismatch:
        raise ckpt.IncompatibleCheckpoint(f"cannot resume: {mismatch}")
    changed = [n for n in GUARDED_FIELDS if getattr(saved.config, n) != getattr(current.config, n) and n not in changes]
    if changed:
        shown = ", ".join(f"{n} {getattr(saved.config, n)!r} -> {getattr(current.config, n)!r}" for n in changed)
        raise ckpt.IncompatibleCheckpoint(
            f"cannot resume: this config changes {shown} from the checkpoint's, which changes how the run trains; "
            f"give the checkpoint's values, or name the fields in ppo.train's resume_changes to train on with these"
        )
    if saved.num_devices != current.num_devices:
        warnings.warn(
            f"the checkpoint was written on {saved.num_devices} device(s), this process has "
            f"{current.num_devices}: training continues with new PRNG streams per device, so it will not "
            f"reproduce a run that kept {saved.num_devices}",
            stacklevel=4,  # past PPOTrainer.check_compatible and the restore's targets
        )


def env_mismatch(saved: SavedMeta, env_id: str | None, obs_size: int, action_space: dict, env_name: str) -> str | None:
    """Why the policy of ``saved`` cannot act in the env described (its registered id, None for an
    env object; its observation size; its action space as ``networks.describe_action_space`` says),
    or None when it can. ``env_name`` names that env in the reason."""
    if saved.env_id and env_id and saved.env_id != env_id:
        return f"the checkpoint was trained on {saved.env_id}, not {env_id}"
    if saved.obs_size != obs_size:
        return f"the checkpoint's policy takes {saved.obs_size} observations, {env_name} gives {obs_size}"
    if saved.action_space != action_space:
        return f"the checkpoint's action space is {saved.action_space}, {env_name}'s {action_space}"
    return None
