"""The ``gymjax`` command line (:mod:`gymjax.cli.commands` lists the commands).

:func:`main` is the entry point. It loads the commands (JAX, flax, orbax: about a second) inside
its own guard, so that a Ctrl-C at any moment, the first second included, ends the command with
status 130 and one line, never a traceback and never a run that goes on.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

# A Ctrl-C whose KeyboardInterrupt was swallowed (raised inside a garbage-collector callback,
# such as JAX's, Python prints "Exception ignored" and goes on) ends the process after this long.
SWALLOWED_INTERRUPT_GRACE_S = 2.0
_started: _InterruptGuard | None = None  # the guard guard_the_start began, for main to take over


def main(argv: list[str] | None = None) -> int:
    global _started
    guard, _started = _started, None
    if guard is None and threading.current_thread() is threading.main_thread():
        guard = _InterruptGuard()
    try:
        from gymjax.cli import commands

        if guard:
            guard.loaded()
        return commands.main(argv)
    except KeyboardInterrupt:
        print("gymjax: interrupted", file=sys.stderr)
        return 130
    finally:
        if guard:
            guard.close()


def guard_the_start() -> None:
    """Starts :func:`main`'s Ctrl-C guard now, while ``gymjax`` itself imports, when gymjax is the
    program: a Ctrl-C from the process's first instant on is noted, and ends the command with 130."""
    global _started
    if _started is None and threading.current_thread() is threading.main_thread():
        _started = _InterruptGuard()


class _InterruptGuard:
    """SIGINT handling around a command (training installs its own, which stops at an epoch).

    - While the commands load, a Ctrl-C is noted, not raised: a KeyboardInterrupt inside a C
      extension's initialization (JAX's MLIR) aborts the process with SIGABRT. It ends the command
      once they have loaded.
    - Afterwards it raises KeyboardInterrupt as always; one swallowed (raised inside a garbage
      collector callback, such as JAX's: Python prints "Exception ignored" and goes on) ends the
      process at once, and one caught elsewhere after :data:`SWALLOWED_INTERRUPT_GRACE_S`.
    """

    def __init__(self):
        self.loading, self.interrupted, self.done = True, threading.Event(), threading.Event()
        self.previous = signal.signal(signal.SIGINT, self.on_interrupt)
        self.previous_unraisable = sys.unraisablehook
        sys.unraisablehook = self.unraisable

    def on_interrupt(self, signum, frame):
        first = not self.interrupted.is_set()
        self.interrupted.set()
        if self.loading:
            return
        if first:
            threading.Thread(target=self.end_if_swallowed, daemon=True).start()
        raise KeyboardInterrupt

    def loaded(self) -> None:
        self.loading = False
        if self.interrupted.is_set():
            raise KeyboardInterrupt

    def unraisable(self, unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and not self.done.is_set():
            self.end()
        self.previous_unraisable(unraisable)

    def end_if_swallowed(self) -> None:
        if not self.done.wait(SWALLOWED_INTERRUPT_GRACE_S):
            self.end()

    @staticmethod
    def end() -> None:
        print("gymjax: interrupted", file=sys.stderr, flush=True)
        os._exit(130)

    def close(self) -> None:
        self.done.set()
        signal.signal(signal.SIGINT, self.previous)
        if sys.unraisablehook == self.unraisable:  # else one laid over it since, which calls it: kept
            sys.unraisablehook = self.previous_unraisable
