"""Hook points of the training loop (torchrl's trainer idea, kept small).

A hook subclasses :class:`Hook` and overrides the points it cares about. The
trainer calls them, in the order given, from Python between compiled epochs::

    before_training -> before_epoch -> [compiled epoch] -> after_eval (if an eval ran) -> after_epoch
                 -> after_checkpoint (if a checkpoint was written) ... -> close

Loggers (:mod:`gymjax.trainers.loggers`) are hooks that write ``after_epoch``'s
metrics somewhere.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Sequence
from typing import Any

Metrics = dict[str, Any]


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


class Hook:
    """Does nothing at every point; override the ones you need."""

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


class Hooks(Hook):
    """Calls each of ``hooks`` in order."""

    def __init__(self, hooks: Sequence[Hook] = ()):
        for hook in hooks:
            if not isinstance(hook, Hook):
                raise TypeError(f"hooks must be gymjax.trainers.hooks.Hook instances, got {hook!r}")
        self.hooks = tuple(hooks)

    def before_training(self, progress, resumed):
        for hook in self.hooks:
            hook.before_training(progress, resumed)

    def before_epoch(self, progress):
        for hook in self.hooks:
            hook.before_epoch(progress)

    def after_eval(self, progress, metrics):
        for hook in self.hooks:
            hook.after_eval(progress, metrics)

    def after_epoch(self, progress, metrics):
        for hook in self.hooks:
            hook.after_epoch(progress, metrics)

    def after_checkpoint(self, progress, path):
        for hook in self.hooks:
            hook.after_checkpoint(progress, path)

    def close(self):
        for hook in self.hooks:
            hook.close()
