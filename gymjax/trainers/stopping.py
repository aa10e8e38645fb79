"""Stopping a training loop cleanly on Ctrl-C (SIGINT) or SIGTERM (what schedulers send).

A compiled epoch cannot be interrupted: the signal arrives while XLA runs and
Python sees it only when the epoch returns. So the first signal asks the loop
to stop at its next safe point (after the epoch in flight, and after the
checkpoint that follows it); the loop then saves, if an epoch finished since
the last save, and raises :class:`TrainingStopped`. A second signal stops at
once (:class:`KeyboardInterrupt`), losing the epoch in flight.
"""

from __future__ import annotations

import contextlib
import pathlib
import signal
import sys
import threading
from collections.abc import Iterator

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}  # 128 + signal number, as shells report


class TrainingStopped(KeyboardInterrupt):
    """Training stopped at a safe point on a signal; what it had done is saved.

    Attributes:
        signum: the signal (``signal.SIGINT`` or ``signal.SIGTERM``).
        epoch, env_steps: where training stopped.
        checkpoint: the step directory holding that point, or None when the
            run has no checkpoint directory.
    """

    def __init__(self, signum: int, epoch: int, env_steps: int, checkpoint: pathlib.Path | None):
        self.signum, self.epoch, self.env_steps, self.checkpoint = signum, epoch, env_steps, checkpoint
        where = f"; saved in {checkpoint}" if checkpoint else ""
        super().__init__(f"stopped by {signal.Signals(signum).name} at epoch {epoch}, env step {env_steps:,}{where}")

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.signum, 1)


class StopRequest:
    """Set by the first SIGINT/SIGTERM; the loop polls :attr:`signum` at its safe points."""

    def __init__(self):
        self.signum: int | None = None

    def _handle(self, signum, frame):
        if self.signum is not None:
            raise KeyboardInterrupt(f"second {signal.Signals(signum).name}: stopping now, without saving")
        self.signum = signum
        print(
            f"\n{signal.Signals(signum).name}: stopping after the epoch in flight and saving "
            f"(send it again to stop at once, without saving)",
            file=sys.stderr,
            flush=True,
        )


@contextlib.contextmanager
def stop_on_signals() -> Iterator[StopRequest]:
    """Handles SIGINT and SIGTERM inside the block (main thread only; elsewhere nothing changes).

    A signal the process ignores stays ignored: a process started with SIGINT ignored (a background
    job of a shell without job control, some schedulers) was told that Ctrl-C is not for it, and
    Python keeps it so; handling it here would let a Ctrl-C meant for others stop the run."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request  # signal handlers can only be set from the main thread
        return
    handled = [s for s in EXIT_CODES if signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, request._handle) for s in handled}
    try:
        yield request
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
