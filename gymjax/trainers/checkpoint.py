"""Checkpoints with orbax-checkpoint's ``CheckpointManager``.

A checkpoint has three items, each in its own subdirectory of a step directory
``<root>/<step>/``:

- ``state``: everything needed to continue training bit for bit (parameters,
  optimizer state, observation statistics, the envs' states, the PRNG keys);
- ``policy``: just what the policy needs, so a policy loads without the env or
  the trainer;
- ``meta``: JSON with the config, counters (the env-step counter as a JSON
  integer: 64-bit and beyond) and the action space.

Orbax writes a step into a temporary directory and renames it when complete,
so a run killed during a save leaves the previous checkpoints intact and the
half-written one invisible: restoring picks the latest *complete* step.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Any

import orbax.checkpoint as ocp

STATE, POLICY, META = "state", "policy", "meta"
# Reading opens a manager that creates and deletes nothing.
_READ = ocp.CheckpointManagerOptions(create=False)


@dataclasses.dataclass
class Checkpoint:
    """One checkpoint's contents. ``state`` and ``policy`` are pytrees of arrays; ``meta`` is JSON."""

    state: Any
    policy: Any
    meta: dict[str, Any]


class Checkpointer:
    """Saves numbered checkpoints under ``directory``, keeping the last ``max_to_keep``."""

    def __init__(self, directory: str | os.PathLike, max_to_keep: int | None = 3):
        self.directory = pathlib.Path(directory).absolute()
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True, cleanup_tmp_directories=True)
        self.manager = ocp.CheckpointManager(self.directory, options=options)

    def save(self, step: int, checkpoint: Checkpoint) -> pathlib.Path:
        """Writes ``checkpoint`` as step ``step`` and waits until it is complete on disk."""
        args = ocp.args.Composite(
            **{
                STATE: ocp.args.StandardSave(checkpoint.state),
                POLICY: ocp.args.StandardSave(checkpoint.policy),
                META: ocp.args.JsonSave(checkpoint.meta),
            }
        )
        self.manager.save(step, args=args, force=True)
        self.manager.wait_until_finished()
        return self.directory / str(step)

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def close(self) -> None:
        self.manager.close()


def resolve(path: str | os.PathLike) -> tuple[pathlib.Path, int]:
    """``(root, step)`` for a checkpoint root (its latest complete step) or one step's directory."""
    path = pathlib.Path(path).absolute()
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    if path.name.isdigit() and (path / META).exists():
        return path.parent, int(path.name)
    manager = ocp.CheckpointManager(path, options=_READ)
    step = manager.latest_step()
    manager.close()
    if step is None:
        raise FileNotFoundError(f"{path} holds no complete checkpoint (expected numbered step directories)")
    return path, step


def restore(
    path: str | os.PathLike, state_target: Any = None, policy_target: Any = None, *, with_state: bool = True
) -> Checkpoint:
    """Reads a checkpoint (see :func:`resolve` for ``path``).

    ``state_target`` and ``policy_target`` give the pytree structure to restore
    into (arrays or ``jax.ShapeDtypeStruct`` s); ``with_state=False`` skips the
    training state, which is all a policy needs.
    """
    root, step = resolve(path)
    items: dict[str, Any] = {
        POLICY: ocp.args.StandardRestore(policy_target),
        META: ocp.args.JsonRestore(),
    }
    if with_state:
        items[STATE] = ocp.args.StandardRestore(state_target)
    manager = ocp.CheckpointManager(root, options=_READ)
    try:
        restored = manager.restore(step, args=ocp.args.Composite(**items))
    finally:
        manager.close()
    return Checkpoint(state=restored.get(STATE) if with_state else None, policy=restored[POLICY], meta=restored[META])


def read_meta(path: str | os.PathLike) -> dict[str, Any]:
    """Only the JSON metadata of a checkpoint."""
    root, step = resolve(path)
    manager = ocp.CheckpointManager(root, options=_READ)
    try:
        return manager.restore(step, args=ocp.args.Composite(**{META: ocp.args.JsonRestore()}))[META]
    finally:
        manager.close()
