"""The best evaluated policy, kept beside the last one (rl-zoo's ``best_model.zip``).

A run's evaluations rise and fall: the newest checkpoint holds the last policy, which may be
worse than one evaluated earlier (Hopper passes its target at 12 minutes and ends below it).
:class:`KeepBest` keeps the best one in the checkpoint directory::

    checkpoints/<epoch>/      the training checkpoints (gymjax.trainers.store.checkpoint)
    checkpoints/best/<n>/     the best policy: the ``policy`` and ``meta`` items of the checkpoint
                              of the best evaluation so far, its meta adding
                              "best": {"metric", "value", "step"} (the checkpoint step it came from)

``best`` is read as a checkpoint root (:func:`gymjax.trainers.store.checkpoint.restore`, with its
guards and its fallback past a damaged newest step); ``<n>`` counts the times the best was
replaced, not epochs, so the newest is always the best even after a resume went back in time.

- **Chosen like rl-zoo's EvalCallback**: by the trainer's own evaluation (``eval/episode_return``,
  the mean return of its deterministic evaluation episodes), a value strictly above the best so far.
  An evaluation counts when its epoch is saved: every epoch unless ``save_every_epochs`` says less.
- **Written atomically**: the items are copied to ``best/<n>.writing`` and renamed to
  ``best/<n>``, and only then are the older ones removed; a kill at any moment leaves the previous
  best readable (a ``.writing`` leftover is removed by the next write, and readers ignore it).
- **Checked when the run starts** (:func:`check_layout`): ``best`` must be a directory and every
  entry named as gymjax names its own (``<n>``, ``<n>.writing``) a directory; anything else there
  (a file called ``best``, a file called ``7.writing``) is refused in one line before any work,
  never removed: gymjax removes only what it can tell is its own, a ``<n>.writing`` directory (a
  copy a kill interrupted: its version was never renamed into place, so no reader has used it).
  Entries with other names are left alone, by readers and writers alike.
- **Surviving resume**: the best so far is read back from the newest ``best/<n>`` whenever an
  evaluation could replace it, so a resumed run never replaces a better best with a worse one, and
  a run killed and resumed keeps the best that an uninterrupted one keeps (a replayed epoch evaluates
  the same and is not above itself). A best from epochs that a resume went back before is kept while
  nothing beats it: that policy was evaluated, its return is real.
- **Never mixed**: a fresh run refuses a directory that holds a best, and a resumed run one that
  another run wrote (its ``run_id``).
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import shutil
import stat
from typing import Any

from gymjax.trainers.hooks import Hook, Metrics, Progress
from gymjax.trainers.store import checkpoint as ckpt
from gymjax.trainers.store import files

BEST = "best"  # its directory, inside the checkpoint directory
METRIC = "eval/episode_return"  # the trainer's evaluation, as rl-zoo's EvalCallback's mean reward
POLICIES = ("last", "best")
_TRAINING_ONLY = {ckpt.STATE, ckpt.HOOKS}  # a step's items that a policy does not need (the state is most of it)
_WRITING = ".writing"  # the suffix of a version being written: not an integer, so no reader lists it
_OURS = re.compile(r"[0-9]+(\.writing)?")  # the names gymjax gives the entries of ``best``, all directories


def directory(checkpoints: str | os.PathLike) -> pathlib.Path:
    return pathlib.Path(checkpoints) / BEST


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(map(repr, POLICIES))}, got {policy!r}")
    return policy


def entry(meta: dict[str, Any]) -> dict[str, Any]:
    """The ``"best"`` entry of a best snapshot's meta, checked; DamagedCheckpoint naming what is wrong."""
    best = meta.get(BEST)
    ok = (
        isinstance(best, dict)
        and set(best) == {"metric", "value", "step"}
        and isinstance(best["metric"], str)
        and isinstance(best["value"], (int, float)) and not isinstance(best["value"], bool)
        and math.isfinite(best["value"])
        and type(best["step"]) is int and best["step"] >= 0
    )  # fmt: skip
    if not ok:
        shown = repr(best) if len(repr(best)) <= 80 else repr(best)[:77] + "..."
        raise ckpt.DamagedCheckpoint(
            f'the best policy\'s metadata has best={shown}; expected {{"metric": str, "value": a finite number, '
            f'"step": an int >= 0}}'
        )
    return best


def check_layout(checkpoints: str | os.PathLike) -> None:
    """Refuses, in one line (a :class:`CheckpointError`), a ``best`` in ``checkpoints`` that a save
    would fail on after an epoch of work: ``best`` not a directory, or an entry named as gymjax
    names its own (``<n>``, ``<n>.writing``) that is not one. Read-only: whatever is there was
    saved by someone, and is theirs to move (see the module's docstring)."""
    path = directory(checkpoints)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise ckpt.CheckpointError(f"cannot read {path}: {e.strerror}") from None
    if not stat.S_ISDIR(mode):
        raise ckpt.CheckpointError(
            f"{path} is {_kind(mode)}, not gymjax's: the run keeps its best policy in a directory there "
            f"({BEST}/<n>/); move it away"
        )
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as e:
        raise ckpt.CheckpointError(f"cannot read {path}: {e.strerror}") from None
    for entry in entries:
        if _OURS.fullmatch(entry.name) and not entry.is_dir(follow_symlinks=False):
            kind = _kind(entry.stat(follow_symlinks=False).st_mode)
            raise ckpt.CheckpointError(
                f"{path / entry.name} is {kind}, not gymjax's: gymjax names its best policy's versions "
                f"<n> and <n>{_WRITING}, each a directory; move it away"
            )


def _kind(mode: int) -> str:
    return ("a regular file" if stat.S_ISREG(mode) else "a symbolic link" if stat.S_ISLNK(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a special file")


def root(checkpoints: str | os.PathLike) -> pathlib.Path:
    """The best policy's root in ``checkpoints`` (a checkpoint directory), for a reader.

    Refused in one line, naming what the directory holds instead: no best yet (a
    :class:`FileNotFoundError`), or a symbolic link at or under it (a :class:`CheckpointError`:
    gymjax makes none, and a reader would follow it out of the run directory)."""
    checkpoints = pathlib.Path(checkpoints)
    path = directory(checkpoints)
    links = ([path] if path.is_symlink() else []) or (files.symlinks_under(path) if path.is_dir() else [])
    if links:
        raise ckpt.CheckpointError(f"{links[0]} is a symbolic link; gymjax makes none and reads through none "
                                   "(remove it)")
    if not ckpt.step_dirs(path):
        steps = ckpt.step_dirs(checkpoints)
        holds = f"checkpoint steps {', '.join(map(str, steps))}" if steps else "no checkpoint step either"
        raise FileNotFoundError(
            f"{checkpoints} holds no best policy yet ({holds}): it is kept once an evaluation is saved with its "
            f"checkpoint; load the last policy instead (policy='last', --policy last)"
        )
    return path


def recorded(checkpoints: pathlib.Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(meta, its best entry)`` of the newest best whose metadata reads, or None when there is none.
    A best whose every version is damaged counts as none: the next evaluation replaces it."""
    path = directory(checkpoints)
    if not ckpt.step_dirs(path):
        return None
    try:
        meta = ckpt.read_meta(path)
        return meta, entry(meta)
    except ckpt.CheckpointError:
        return None


class KeepBest(Hook):
    """Keeps the policy of the best evaluation in ``checkpoints/best`` (see the module's docstring).

    Args:
        checkpoints: the run's checkpoint directory, ``train``'s ``checkpoint_dir``.
        metric: the evaluation metric to maximize.
    """

    def __init__(self, checkpoints: str | os.PathLike, metric: str = METRIC):
        self.checkpoints = pathlib.Path(checkpoints)
        self.metric = metric
        self.evaluated: tuple[int, float] | None = None  # (epoch, value) of the latest evaluation not yet saved

    def before_training(self, progress: Progress, resumed: bool) -> None:
        check_layout(self.checkpoints)  # a run directory checked this at its start; the API's train did not
        saved = recorded(self.checkpoints)
        exists = bool(ckpt.step_dirs(directory(self.checkpoints)))
        if exists and not resumed:
            raise ckpt.CheckpointError(
                f"{directory(self.checkpoints)} holds the best policy of another run; a new run needs a checkpoint "
                f"directory without one (resume that run instead, or pick another directory)"
            )
        if saved is not None:
            meta, _ = saved
            run_id = ckpt.read_meta(self.checkpoints).get("run_id")
            if meta.get("run_id") != run_id:
                raise ckpt.CheckpointError(
                    f"{directory(self.checkpoints)} holds the best policy of run {str(meta.get('run_id'))[:8]}, not "
                    f"of run {str(run_id)[:8]} being resumed; move it away to resume"
                )

    def after_eval(self, progress: Progress, metrics: Metrics) -> None:
        value = metrics.get(self.metric)
        if isinstance(value, (int, float)) and math.isfinite(value):
            self.evaluated = (progress.epoch, float(value))

    def after_checkpoint(self, progress: Progress, path: pathlib.Path) -> None:
        evaluated, self.evaluated = self.evaluated, None
        if evaluated is None or evaluated[0] != progress.epoch:
            return  # no evaluation of this epoch (one of an unsaved epoch is not kept: its policy is gone)
        saved = recorded(self.checkpoints)
        if saved is None or evaluated[1] > saved[1]["value"]:
            save(pathlib.Path(path),
                 {"metric": self.metric, "value": evaluated[1], "step": int(pathlib.Path(path).name)})


def save(step: pathlib.Path, best: dict[str, Any]) -> pathlib.Path:
    """Copies checkpoint ``step``'s policy and meta (``best`` added to it) to a new version of the
    best beside it, then removes the older versions; returns the new version's directory."""
    path = directory(step.parent)
    path.mkdir(exist_ok=True)
    for leftover in path.iterdir():  # a kill's, mid-copy: only the directories gymjax names so
        if leftover.name.endswith(_WRITING) and _OURS.fullmatch(leftover.name) and not leftover.is_symlink() \
                and leftover.is_dir():
            shutil.rmtree(leftover)
    versions = ckpt.step_dirs(path)
    version = path / str(versions[-1] + 1 if versions else 1)
    writing = version.with_name(version.name + _WRITING)
    try:
        # Links copied as links, never followed: a link planted in the step is refused by every reader.
        shutil.copytree(step, writing, symlinks=True, ignore=lambda where, names: _TRAINING_ONLY & set(names)
                        if pathlib.Path(where) == step else ())
        meta_file = writing / ckpt.META / "metadata"
        meta = files.loads_json(files.read_text(meta_file, files.JSON_LIMIT))
        files.replace_text(meta_file, json.dumps({**meta, BEST: best}))
        os.rename(writing, version)  # the moment the new best exists, whole
    except BaseException:
        shutil.rmtree(writing, ignore_errors=True)
        raise
    for old in versions:
        shutil.rmtree(path / str(old), ignore_errors=True)
    return version
