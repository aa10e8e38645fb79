"""Checkpoints with orbax-checkpoint's ``CheckpointManager``, kept safe around it.

A checkpoint has four items, each in its own subdirectory of a step directory
``<root>/<step>/``:

- ``state``: a pytree of everything needed to continue training bit for bit;
- ``policy``: a pytree of just what the policy needs, so a policy loads without
  the env or the trainer;
- ``meta``: JSON, with the ``run_id`` of the run that wrote it;
- ``hooks``: JSON, the training hooks' states (:mod:`gymjax.trainers.hooks`). Steps
  written before it existed lack it (their meta lacks ``"hook_state"``) and still
  load; a policy load never reads it.

What they hold for PPO is defined once, in :mod:`gymjax.trainers.ppo.saved`.

What this module guarantees on top of orbax:

- **A half-written step is invisible.** Orbax writes a step into a temporary
  directory and renames it when complete; a kill during a save leaves the
  earlier steps intact.
- **One writer per directory.** A :class:`Checkpointer` holds an exclusive
  ``fcntl`` lock on ``<root>/.lock`` while it is open; a second writer is
  refused with the holder's pid and command. The kernel drops the lock when
  the holder dies, so a killed run never leaves a stale lock.
- **No run's steps are deleted or mixed by another.** A fresh run refuses a
  directory that already holds steps; a resumed run refuses steps written by
  another run (their ``run_id`` differs), since ``max_to_keep`` would delete
  them and ``latest_step`` would mix them in.
- **Nothing is lost when a run goes back in time.** Steps newer than the one a
  run resumes from (damaged ones, or a branch's future) are renamed to
  ``<step>.damaged-N`` / ``<step>.superseded-N``, which orbax ignores, not deleted.
- **Readers fall back.** :func:`restore` tries the newest step first and, when
  it is damaged (a truncated file, an item missing, an empty directory), warns
  with the step and the reason and takes the next older one. A step deleted
  under a reader by the writer's ``max_to_keep`` is skipped without a warning.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import pathlib
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import orbax.checkpoint as ocp

from gymjax.trainers import distributed
from gymjax.trainers.hooks import check_saved_state
from gymjax.trainers.store import files, quiet

STATE, POLICY, META, HOOKS = "state", "policy", "meta", "hooks"


class CheckpointError(RuntimeError):
    """A checkpoint cannot be used; the message names the directory, the step and the reason."""


class DamagedCheckpoint(CheckpointError, ValueError):
    """A step's contents read but are malformed (a metadata field missing or of the wrong type):
    damage, so :func:`restore` falls back to an older step."""


class IncompatibleCheckpoint(CheckpointError, ValueError):
    """The checkpoint is intact but belongs to another env, space or network shape."""


class DirectoryInUse(CheckpointError, files.DirectoryInUse):
    """Another process holds the checkpoint directory's writer lock (:class:`files.DirectoryLock`)."""


@dataclasses.dataclass
class Checkpoint:
    """One checkpoint's contents. ``state`` and ``policy`` are pytrees of arrays; ``meta`` and
    ``hooks`` are JSON (``hooks`` None: not saved, or read from a step written without it)."""

    state: Any
    policy: Any
    meta: dict[str, Any]
    hooks: dict[str, Any] | None = None
    step: int | None = None  # the step it was read from
    damaged: tuple[int, ...] = ()  # newer steps that could not be read


def new_run_id() -> str:
    return uuid.uuid4().hex


# -- the directory's steps, read without orbax -----------------------------------------


def step_dirs(root: pathlib.Path) -> list[int]:
    """The steps under ``root``: directories named by an integer (orbax's temporary ones excluded)."""
    if not root.is_dir():
        return []
    return sorted(int(p.name) for p in root.iterdir() if p.name.isdigit() and p.is_dir())


def _json_item(directory: pathlib.Path, item: str) -> Any:
    """A step's JSON item (``meta``, ``hooks``: the file orbax's JsonSave writes), read by gymjax, not
    orbax: a FIFO planted there is refused rather than waited on, a file larger than any gymjax
    writes is not read, and JSON nested too deep is bad JSON. Raises DamagedCheckpoint naming it."""
    path = directory / item / "metadata"
    try:
        return files.loads_json(files.read_text(path, files.JSON_LIMIT))
    except files.UnsafePath as e:
        raise DamagedCheckpoint(e.strerror) from None
    except (OSError, ValueError) as e:
        raise DamagedCheckpoint(f"{path}: {_reason(e)}") from None


def _step_meta(root: pathlib.Path, step: int) -> dict[str, Any] | None:
    """A step's ``meta`` JSON, or None when it cannot be read (a damaged step)."""
    try:
        meta = _json_item(root / str(step), META)
    except DamagedCheckpoint:
        return None
    return meta if isinstance(meta, dict) else None


def _summary(root: pathlib.Path, steps: list[int]) -> str:
    """``steps 1, 2, 3 (env step 1,536, run 1a2b3c4d)``: what a directory holds, for error messages."""
    latest = _step_meta(root, steps[-1]) or {}
    detail = f"env step {latest['env_steps']:,}" if "env_steps" in latest else "unreadable metadata"
    if latest.get("run_id"):
        detail += f", run {latest['run_id'][:8]}"
    return f"step{'s' if len(steps) > 1 else ''} {', '.join(map(str, steps))} ({detail})"


def _set_aside(root: pathlib.Path, step: int, why: str) -> pathlib.Path:
    """Renames step ``step`` to ``<step>.<why>-N`` (orbax lists only integer names): kept, not deleted."""
    n = 1
    while (target := root / f"{step}.{why}-{n}").exists():
        n += 1
    os.replace(root / str(step), target)
    return target


# -- writing -----------------------------------------------------------------------------


class Checkpointer:
    """Saves numbered checkpoints under ``directory``, keeping the last ``max_to_keep``.

    Args:
        directory: the checkpoint root; created if missing.
        max_to_keep: steps kept (None: all).
        run_id: the id written into every step's meta; steps in ``directory``
            with another id are refused. Default: a new id (a fresh run).
        resumed_from: the step this run continues from, or None for a fresh run.
            A fresh run refuses a directory that holds any step; a resumed run
            sets aside the steps after ``resumed_from``.
        damaged: steps known to be unreadable (named ``.damaged`` when set aside).

    Raises:
        DirectoryInUse: another process writes to ``directory``.
        CheckpointError: ``directory`` holds another run's steps.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        max_to_keep: int | None = 3,
        *,
        run_id: str | None = None,
        resumed_from: int | None = None,
        damaged: tuple[int, ...] = (),
    ):
        self.directory = pathlib.Path(directory).absolute()
        if self.directory.exists() and not self.directory.is_dir():
            raise CheckpointError(f"checkpoint directory {self.directory} is a file")
        self.run_id = run_id or new_run_id()
        # With several processes, process 0 locks and checks the directory; all of them then
        # open orbax's manager, which coordinates their saves.
        primary = distributed.is_primary()
        try:
            self.lock = files.DirectoryLock(self.directory, "checkpoint directory") if primary else None
        except files.DirectoryInUse as e:
            raise DirectoryInUse(str(e)) from None
        except files.LockError as e:
            raise CheckpointError(str(e)) from None
        try:
            refused = None
            try:
                self.set_aside = self._claim(resumed_from, damaged) if primary else []
            except CheckpointError as e:
                refused = e
            if distributed.any_process(refused is not None):
                raise refused or CheckpointError(f"process 0 refused the checkpoint directory {self.directory}")
            options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True, cleanup_tmp_directories=True)
            self.manager = ocp.CheckpointManager(self.directory, options=options, handler_registry=_handlers())
        except BaseException:
            if self.lock:
                self.lock.release()
            raise

    def _claim(self, resumed_from: int | None, damaged: tuple[int, ...]) -> list[pathlib.Path]:
        """Checks that the directory's steps are this run's; sets aside those after ``resumed_from``."""
        try:
            files.refuse_symlinks(self.directory)  # orbax would write through them
        except files.UnsafePath as e:
            raise CheckpointError(e.strerror) from None
        steps = step_dirs(self.directory)
        if resumed_from is None:
            if steps:
                raise CheckpointError(
                    f"{self.directory} already holds checkpoint {_summary(self.directory, steps)} of another "
                    f"run; a new run needs an empty directory (resume that run instead, or pick another directory)"
                )
            return []
        foreign = []
        for step in steps:
            meta = _step_meta(self.directory, step)
            if meta is not None and meta.get("run_id") != self.run_id:
                foreign.append(step)
        if foreign:
            raise CheckpointError(
                f"{self.directory} holds checkpoint {_summary(self.directory, foreign)} written by another run "
                f"than the one being resumed; resume into an empty directory or that run's own"
            )
        moved = []
        for step in steps:
            if step > resumed_from:
                unreadable = step in damaged or _step_meta(self.directory, step) is None
                why = "damaged" if unreadable else "superseded"
                moved.append(_set_aside(self.directory, step, why))
        if moved:
            warnings.warn(
                f"resuming from step {resumed_from}: set aside the later checkpoints as "
                f"{', '.join(p.name for p in moved)} in {self.directory} (kept, not deleted)",
                stacklevel=3,
            )
        return moved

    def save(self, step: int, checkpoint: Checkpoint) -> pathlib.Path:
        """Writes ``checkpoint`` as step ``step`` and waits until it is complete on disk.

        Raises :class:`CheckpointError` naming the step and the intact steps
        when the disk is full or not writable.
        """
        meta = {**checkpoint.meta, "run_id": self.run_id}
        items = {
            STATE: ocp.args.StandardSave(checkpoint.state),
            POLICY: ocp.args.StandardSave(checkpoint.policy),
        }
        if checkpoint.hooks is not None:
            # JSON items are written by process 0 alone; every process passes the item (the same
            # item names everywhere), the others' values are ignored.
            items[HOOKS] = ocp.args.JsonSave(checkpoint.hooks)
            meta["hook_state"] = True  # so a step that lost its hooks item reads as damaged, not as old
        args = ocp.args.Composite(**items, **{META: ocp.args.JsonSave(meta)})
        threads = set(threading.enumerate())
        failure = cause = None
        with quiet.held_logs() as held:
            try:
                self.manager.save(step, args=args, force=True)
                self.manager.wait_until_finished()
            except Exception as e:
                failure, cause = e, disk_error(e)
                if cause is not None:
                    # Orbax raises the first failure while the save's other threads still write
                    # (another item's arrays, its metadata) and log their own failure: held until
                    # they end. Not for other failures: with a process of several gone, a wait here
                    # outlasts the heartbeat timeout, and JAX's runtime aborts before the error is said.
                    _join_started_since(threads, SAVE_THREADS_WAIT_S)
        if cause is None:
            quiet.emit(held)
            if failure is not None:
                raise failure
            return self.directory / str(step)
        intact = [s for s in step_dirs(self.directory) if s != step]
        raise CheckpointError(
            f"could not write checkpoint step {step} to {self.directory}: {os.strerror(cause.errno)}"
            f"{' (' + cause.filename + ')' if cause.filename else ''}; intact checkpoints: "
            f"{', '.join(map(str, intact)) or 'none'}"
        ) from None

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a close after a failed save must not hide that failure
            self.manager.close()
        if self.lock:
            self.lock.release()


# How long a failed save waits for orbax's other threads of that save to end (they end within
# milliseconds of the first failure; a thread that is not orbax's is waited on no longer).
SAVE_THREADS_WAIT_S = 10.0


def _join_started_since(threads: set[threading.Thread], wait_s: float) -> None:
    """Waits, ``wait_s`` at most, for the threads started since ``threads`` was taken to end."""
    deadline = time.monotonic() + wait_s
    for thread in set(threading.enumerate()) - threads:
        if thread is threading.current_thread():
            continue
        while True:
            try:
                # Thread's own join: orbax's threads override theirs to raise the thread's failure.
                threading.Thread.join(thread, max(0.0, deadline - time.monotonic()))
                break
            except RuntimeError:  # listed while it starts, not yet joinable (seen in CI): a moment later
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.001)


def _handlers() -> ocp.CheckpointHandlerRegistry:
    """The handlers of a step's array items (:func:`quiet.array_handler`); the JSON items' are orbax's.
    Every orbax object gymjax builds takes these, so its log filter goes on here, first."""
    quiet.filter_missing_metadata()
    registry = ocp.DefaultCheckpointHandlerRegistry()
    for item in (STATE, POLICY):
        handler = quiet.array_handler()
        registry.add(item, ocp.args.StandardSave, handler)
        registry.add(item, ocp.args.StandardRestore, handler)
    return registry


def disk_error(error: BaseException) -> OSError | None:
    """The disk-level cause (disk full, quota, read-only, permission) inside an orbax/tensorstore error."""
    disk = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in disk:
            return seen
        text = str(seen)
        for code in disk:
            if os.strerror(code) in text:
                return OSError(code, os.strerror(code))
        seen = seen.__cause__ or seen.__context__
    return None


# -- reading -----------------------------------------------------------------------------


Targets = Callable[[dict[str, Any]], tuple[Any, Any]]


def resolve(path: str | os.PathLike) -> tuple[pathlib.Path, list[int]]:
    """``(root, candidate steps, newest first)`` for a checkpoint root or one step's directory."""
    path = pathlib.Path(path).absolute()
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    if not path.is_dir():
        raise CheckpointError(f"{path} is a file; expected a checkpoint directory or one step's directory")
    if path.name.isdigit() and not step_dirs(path) and (path / META).exists():
        return path.parent, [int(path.name)]
    steps = step_dirs(path)
    if not steps:
        raise FileNotFoundError(f"{path} holds no complete checkpoint (expected numbered step directories)")
    return path, steps[::-1]


def restore(
    path: str | os.PathLike,
    state_target: Any = None,
    policy_target: Any = None,
    *,
    with_state: bool = True,
    targets: Targets | None = None,
) -> Checkpoint:
    """Reads the newest intact checkpoint at ``path`` (a checkpoint root, or one step's directory).

    ``state_target`` and ``policy_target`` give the pytree structure to restore
    into (arrays or ``jax.ShapeDtypeStruct`` s); or ``targets(meta)`` returns
    both from the step's metadata. ``with_state=False`` skips the training
    state, which is all a policy needs.

    A damaged newest step (truncated file, missing item, empty directory) is
    skipped with a warning naming it; a step deleted while reading (the
    writer's ``max_to_keep``) is skipped silently. One step's directory is
    read as it is, or fails with a :class:`CheckpointError` naming it.
    """
    root, candidates = resolve(path)
    # A root is listed again after each failure: a writer's max_to_keep may have deleted the
    # steps listed, and saved newer ones meanwhile. One step's directory is that step alone.
    one_step = pathlib.Path(path).absolute() != root
    failures: list[str] = []
    damaged: list[int] = []
    tried: set[int] = set()
    while pending := [s for s in candidates if s not in tried]:
        step = pending[0]
        tried.add(step)
        try:
            checkpoint = _restore_step(root, step, state_target, policy_target, with_state, targets)
        except IncompatibleCheckpoint:
            raise  # not damage: an older step of the same run would not fit either
        except Exception as e:  # orbax, tensorstore and JSON errors alike: the step is unusable
            candidates = candidates if one_step else step_dirs(root)[::-1]
            if _being_deleted(root, step):
                continue  # a writer's max_to_keep: a newer step exists
            reason = _reason(e)
            failures.append(f"step {step}: {reason}")
            damaged.append(step)
            if any(s not in tried for s in candidates):
                warnings.warn(f"checkpoint {root / str(step)} is damaged ({reason}); trying an older step",
                              stacklevel=2)
            continue
        if failures:
            warnings.warn(f"using checkpoint step {step} of {root}: the newer steps are damaged", stacklevel=2)
        return dataclasses.replace(checkpoint, damaged=tuple(damaged))
    raise CheckpointError(f"no intact checkpoint in {root}: " + "; ".join(failures or ["every step vanished"]))


# How long a reader waits for a step that failed to read to vanish. Orbax deletes a step file by
# file from a thread pool, and the directory last: a step being deleted is still there, half
# empty, for a while (at most 14 ms in 1,000 reads of small steps racing max_to_keep=1).
DELETE_WAIT_S = 1.0


def _being_deleted(root: pathlib.Path, step: int) -> bool:
    """Whether ``step``, which failed to read, is gone or going rather than damaged.

    ``max_to_keep`` deletes a step only once a newer one is complete; without a newer
    step nothing deletes it, and a damaged newest step is reported at once."""
    directory = root / str(step)
    if not directory.exists():
        return True
    if not any(s > step for s in step_dirs(root)):
        return False
    deadline = time.monotonic() + DELETE_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(0.01)
        if not directory.exists():
            return True
    return False


def _restore_step(root, step, state_target, policy_target, with_state, targets) -> Checkpoint:
    # The step's directory alone: a CheckpointManager over the root would read every step's
    # metadata, and fail on another step that a writer deletes meanwhile.
    directory = root / str(step)
    meta = _json_item(directory, META)
    if not isinstance(meta, dict):
        raise CheckpointError(f"{META} item is not a JSON object")
    if targets is not None:
        state_target, policy_target = targets(meta)
    items: dict[str, Any] = {POLICY: ocp.args.StandardRestore(policy_target)}
    if with_state:
        items[STATE] = ocp.args.StandardRestore(state_target)
    with ocp.Checkpointer(ocp.CompositeCheckpointHandler(handler_registry=_handlers())) as reader:
        restored = reader.restore(directory, args=ocp.args.Composite(**items))
    hooks = None
    if with_state and meta.get("hook_state") is True:
        hooks = _json_item(directory, HOOKS)  # a missing item is then damage, not an old step
        try:
            check_saved_state(hooks)
        except ValueError as e:
            raise DamagedCheckpoint(str(e)) from None
    state = restored[STATE] if with_state else None
    return Checkpoint(state=state, policy=restored[POLICY], meta=meta, hooks=hooks, step=step)


def _reason(error: BaseException) -> str:
    """One line for a failed read: the exception's first line, file paths kept, tracebacks dropped."""
    first = (str(error).strip().splitlines() or [""])[0]
    if len(first) > 300:
        first = first[:300] + "..."
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def read_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON metadata of the newest checkpoint at ``path`` whose metadata reads."""
    root, candidates = resolve(path)
    for step in candidates:
        meta = _step_meta(root, step)
        if meta is not None:
            return {**meta, "step": step}
    try:  # why the newest is unreadable, in the message
        _json_item(root / str(candidates[0]), META)
        why = f"{META} item is not a JSON object"
    except DamagedCheckpoint as e:
        why = str(e)
    raise CheckpointError(f"no readable checkpoint metadata in {root} (steps {', '.join(map(str, candidates))}; "
                          f"step {candidates[0]}: {why})")
