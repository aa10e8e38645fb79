"""Hook points of the training loop (torchrl's trainer idea, kept small).

A hook subclasses :class:`Hook` and overrides the points it cares about. The
trainer calls them, in the order given, from Python between compiled epochs::

    before_training -> before_epoch -> [compiled epoch] -> after_eval (if an eval ran) -> after_epoch
                 -> after_checkpoint (if a checkpoint was written) ... -> close

Loggers (:mod:`gymjax.trainers.loggers`) are hooks that write ``after_epoch``'s
metrics somewhere.

**State.** A hook that defines ``state_dict() -> dict`` and ``load_state_dict(state)``
(torchrl's names) has that state saved with every checkpoint, as JSON in the
checkpoint's ``hooks`` item, taken after ``after_epoch`` (before ``after_checkpoint``).
A resumed run hands each hook its saved state before ``before_training``, so a
run killed and resumed ends with the same hook state as an uninterrupted one.
The state must be a JSON object of JSON values (no NaN or infinity: it is read
back as standard JSON, never unpickled); tuples come back as lists. Saved states
are keyed by the hook's position among the hooks that have state and its class
name (``0:EarlyStopping``), so stateless hooks, loggers included, may come and go.
A resume whose stateful hooks differ warns in one line: hooks that match by
position and class get their state back, the others start fresh (as when a run
resumes on another device count, the run goes on but may not reproduce).
Checkpoints written before hook state was saved resume with every hook fresh.

**Stopping.** A hook ends training early by raising :class:`StopTraining` from any
point. The other hooks are still called at that point; the trainer then stops at
its next safe point (before the next epoch; a stop raised in ``before_epoch``
prevents that epoch), saves the epoch it reached, and returns normally: the run
is complete, not interrupted. :class:`EarlyStopping` does this on a metric that
stopped improving; resumed after it stopped, it stops the run again at once.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import warnings
from collections.abc import Sequence
from typing import Any

Metrics = dict[str, Any]

HOOK_STATE_FORMAT = 1  # the "format" of a checkpoint's hooks item


@dataclasses.dataclass(frozen=True)
class Progress:
    """Where training stands when a hook is called.

    Attributes:
        epoch: epochs finished so far (0 before the first).
        env_steps: environment steps so far; a Python int, so it never wraps.
        num_epochs: epochs in the whole run.
    """

    epoch: int
    env_steps: int
    num_epochs: int


class StopTraining(Exception):
    """Raised by a hook to end training cleanly at the trainer's next safe point (saved, complete)."""


class HookStateError(ValueError):
    """A hook's saved state does not fit the hook (one line naming the hook and the reason)."""


class Hook:
    """Does nothing at every point; override the ones you need.

    Define ``state_dict()`` and ``load_state_dict(state)`` to have the hook's state checkpointed.
    """

    def before_training(self, progress: Progress, resumed: bool) -> None:
        """Once, before the first epoch; ``resumed``: the run continues a checkpoint at ``progress``."""

    def before_epoch(self, progress: Progress) -> None:
        pass

    def after_eval(self, progress: Progress, metrics: Metrics) -> None:
        pass

    def after_epoch(self, progress: Progress, metrics: Metrics) -> None:
        pass

    def after_checkpoint(self, progress: Progress, path: pathlib.Path) -> None:
        pass

    def close(self) -> None:
        pass


def _stateful(hook: Hook) -> bool:
    return callable(getattr(hook, "state_dict", None)) and callable(getattr(hook, "load_state_dict", None))


def _show(keys) -> str:
    return ", ".join(f"{i}:{n}" for i, n in sorted(keys)) or "none"


def _label(index: int, name: str) -> str:
    return f"hook {index} ({name})"


class Hooks(Hook):
    """Calls each of ``hooks`` in order (nested :class:`Hooks` are flattened).

    A :class:`StopTraining` from one hook does not skip the others: the first is kept in
    :attr:`stop` and the trainer polls it.
    """

    def __init__(self, hooks: Sequence[Hook] = ()):
        flat: list[Hook] = []
        for hook in hooks:
            if isinstance(hook, Hooks):
                flat.extend(hook.hooks)  # one list of positions, for the saved states' keys
            elif isinstance(hook, Hook):
                flat.append(hook)
            else:
                raise TypeError(f"hooks must be gymjax.trainers.hooks.Hook instances, got {hook!r}")
        self.hooks = tuple(flat)
        self.stop: StopTraining | None = None

    def _each(self, point: str, *args) -> None:
        for hook in self.hooks:
            try:
                getattr(hook, point)(*args)
            except StopTraining as e:
                self.stop = self.stop or e

    def before_training(self, progress, resumed):
        self._each("before_training", progress, resumed)

    def before_epoch(self, progress):
        self._each("before_epoch", progress)

    def after_eval(self, progress, metrics):
        self._each("after_eval", progress, metrics)

    def after_epoch(self, progress, metrics):
        self._each("after_epoch", progress, metrics)

    def after_checkpoint(self, progress, path):
        self._each("after_checkpoint", progress, path)

    def close(self):
        for hook in self.hooks:
            hook.close()

    # -- state, for checkpoints ----------------------------------------------------------

    def _with_state(self) -> dict[tuple[int, str], Hook]:
        """The hooks with state, keyed by (position among them, class name)."""
        with_state = [h for h in self.hooks if _stateful(h)]
        return {(i, type(h).__name__): h for i, h in enumerate(with_state)}

    def state_dict(self) -> dict[str, Any]:
        """Every stateful hook's state, keyed by position and class: a checkpoint's ``hooks`` item."""
        entries = []
        for (index, _), hook in self._with_state().items():
            name = type(hook).__name__
            state = hook.state_dict()
            try:
                # Round-tripped now, so what a resume reads back is what was saved (no tuples, no NaN).
                state = json.loads(json.dumps(state, allow_nan=False))
            except (TypeError, ValueError) as e:
                raise TypeError(f"{_label(index, name)}.state_dict() must return JSON values: {e}") from None
            if not isinstance(state, dict):
                raise TypeError(f"{_label(index, name)}.state_dict() must return a dict, got {type(state).__name__}")
            entries.append({"index": index, "class": name, "state": state})
        return {"format": HOOK_STATE_FORMAT, "hooks": entries}

    def load_state_dict(self, saved: dict[str, Any] | None, where: str = "the checkpoint") -> None:
        """Hands each hook its state from ``saved`` (a ``hooks`` item; None: none saved, all fresh).

        Warns in one line when the saved hooks differ from these; raises :class:`HookStateError`
        naming the hook whose ``load_state_dict`` refuses its state.
        """
        current = self._with_state()
        if saved is None:
            if current:
                warnings.warn(f"{where} holds no hook state (an earlier gymjax wrote it): every hook starts fresh",
                              stacklevel=2)
            return
        entries = {(e["index"], e["class"]): e["state"] for e in check_saved_state(saved)}
        if set(entries) != set(current):
            matched = sorted(set(entries) & set(current))
            warnings.warn(
                f"the hooks differ from those that wrote {where} (saved: {_show(entries)}; now: {_show(current)}): "
                f"{_show(matched)} get their state back, the others start fresh",
                stacklevel=2,
            )
        for key, hook in current.items():
            if key in entries:
                try:
                    hook.load_state_dict(entries[key])
                except (TypeError, ValueError, KeyError) as e:
                    raise HookStateError(
                        f"{_label(*key)} cannot load its state from {where}: {type(e).__name__}: {e}"
                    ) from None


def check_saved_state(saved: Any) -> list[dict[str, Any]]:
    """The entries of a ``hooks`` item read from disk; ``ValueError`` in one line for any other shape."""
    expected = '{"format": 1, "hooks": [{"index": int, "class": str, "state": {...}}, ...]}'
    if (
        not isinstance(saved, dict)
        or saved.get("format") != HOOK_STATE_FORMAT
        or not isinstance(saved.get("hooks"), list)
    ):
        raise ValueError(f"the hooks item is not {expected}")
    for entry in saved["hooks"]:
        ok = (
            isinstance(entry, dict)
            and isinstance(entry.get("index"), int)
            and not isinstance(entry.get("index"), bool)
            and entry["index"] >= 0
            and isinstance(entry.get("class"), str)
            and isinstance(entry.get("state"), dict)
        )
        if not ok:
            shown = repr(entry) if len(repr(entry)) <= 80 else repr(entry)[:77] + "..."
            raise ValueError(f"the hooks item has the entry {shown}; expected {expected}")
    return saved["hooks"]


# -- hooks -----------------------------------------------------------------------------------


class EarlyStopping(Hook):
    """Stops training once ``metric`` has not improved for ``patience`` measurements.

    A measurement is an epoch whose metrics hold ``metric`` as a finite number (evaluation
    metrics appear only after the epochs that evaluate). An improvement is a value above the
    best by more than ``min_delta`` (``mode="max"``), or below it (``mode="min"``). The best
    value, the measurements since and the epoch it stopped at are its checkpointed state.
    """

    def __init__(self, metric: str = "eval/episode_return", patience: int = 5, min_delta: float = 0.0,
                 mode: str = "max"):
        if mode not in ("max", "min"):
            raise ValueError(f"EarlyStopping mode must be 'max' or 'min', got {mode!r}")
        if not isinstance(patience, int) or isinstance(patience, bool) or patience < 1:
            raise ValueError(f"EarlyStopping patience must be an int >= 1, got {patience!r}")
        if not (isinstance(min_delta, (int, float)) and math.isfinite(min_delta) and min_delta >= 0):
            raise ValueError(f"EarlyStopping min_delta must be a finite number >= 0, got {min_delta!r}")
        self.metric, self.patience, self.min_delta, self.mode = metric, patience, float(min_delta), mode
        self.best: float | None = None
        self.waited = 0  # measurements since the best
        self.stopped_epoch: int | None = None

    def _reason(self) -> str:
        return (f"{self.metric} did not improve on {self.best:.6g} by more than {self.min_delta:g} "
                f"in {self.patience} measurement(s)")

    def before_training(self, progress, resumed):
        if self.stopped_epoch is not None:  # a resume of a run this hook already ended
            raise StopTraining(f"stopped early at epoch {self.stopped_epoch}: {self._reason()}")

    def after_epoch(self, progress, metrics):
        value = metrics.get(self.metric)
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            return  # not measured this epoch
        value = float(value)
        if self.best is None or (value - self.best if self.mode == "max" else self.best - value) > self.min_delta:
            self.best, self.waited = value, 0
            return
        self.waited += 1
        if self.waited >= self.patience:
            self.stopped_epoch = progress.epoch
            raise StopTraining(self._reason())

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "waited": self.waited, "stopped_epoch": self.stopped_epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        best, waited, stopped = state.get("best"), state.get("waited"), state.get("stopped_epoch")
        if set(state) != {"best", "waited", "stopped_epoch"}:
            raise ValueError(f"expected the keys best, waited, stopped_epoch; got {', '.join(sorted(state)) or 'none'}")
        if best is not None and not (isinstance(best, (int, float)) and not isinstance(best, bool)):
            raise ValueError(f"expected best to be a number or null, got {best!r}")
        for name, v in (("waited", waited), ("stopped_epoch", stopped)):
            if v is not None and not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
                raise ValueError(f"expected {name} to be an int >= 0, got {v!r}")
        if waited is None:
            raise ValueError("expected waited to be an int >= 0, got None")
        self.best = None if best is None else float(best)
        self.waited, self.stopped_epoch = waited, stopped
