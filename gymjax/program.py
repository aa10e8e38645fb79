"""The ``gymjax`` program's hold on its process: its Ctrl-C guard, from its first instant.

Standard library only: the root package imports this module to start the guard while ``gymjax``
itself imports, when the import is the start of the program (:func:`starts_the_program`), and
the command line (:mod:`gymjax.cli`) takes the guard from there (:func:`take_started`). Imported
by any other program, nothing here touches its process.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import NoReturn

# A Ctrl-C whose KeyboardInterrupt was swallowed (raised inside a garbage-collector callback,
# such as JAX's, Python prints "Exception ignored" and goes on) ends the process after this long.
SWALLOWED_INTERRUPT_GRACE_S = 2.0
_started: InterruptGuard | None = None  # the guard guard_the_start began, for the entry point to take


def starts_the_program() -> bool:
    """Whether the ``import gymjax`` under way is the start of the gymjax program, rather than an
    import by another program: ``python -m gymjax`` (runpy imports the package before running its
    ``__main__``, with ``sys.argv == ["-m"]`` as for any module run with ``-m``: ``sys.orig_argv``
    says which), or the ``gymjax`` script that installing gymjax made for its entry point."""
    if sys.argv[:1] == ["-m"]:
        argv = sys.orig_argv
        module = argv[argv.index("-m") + 1 :][:1] if "-m" in argv else []
        return module in (["gymjax"], ["gymjax.__main__"])
    return _is_the_installed_script(getattr(sys.modules["__main__"], "__file__", None))


def _is_the_installed_script(main_file: str | None) -> bool:
    """Whether ``main_file`` is the ``gymjax`` script an installer wrote for gymjax's entry point:
    one a gymjax distribution lists among its installed files (its RECORD). A name is not enough:
    a user's own script called ``gymjax`` that imports gymjax is another program, whose Ctrl-C
    the guard would swallow (it never calls :func:`run_program`, which ends the guard's start)."""
    if not main_file or os.path.basename(main_file) != "gymjax":
        return False  # every other program, at the cost of a string comparison
    from importlib import metadata

    try:
        main_stat = os.stat(main_file)
        # Every gymjax distribution on the path: a source tree's gymjax.egg-info, found first when
        # the tree is on PYTHONPATH, lists its sources, not the installed script.
        for dist in metadata.distributions(name="gymjax"):
            for file in dist.files or ():
                if file.name == "gymjax" and _same_file(main_stat, file.locate()):
                    return True
    except (OSError, ValueError):  # an unreadable main file or metadata: not known to be the script
        return False
    return False


def _same_file(main_stat: os.stat_result, path: os.PathLike) -> bool:
    try:
        listed = os.stat(path)
    except OSError:
        return False
    return (listed.st_dev, listed.st_ino) == (main_stat.st_dev, main_stat.st_ino)


def guard_the_start() -> None:
    """Starts the program's Ctrl-C guard now, while ``gymjax`` itself imports (when
    :func:`starts_the_program`): a Ctrl-C from then on is noted, and ends the command with 130."""
    global _started
    if _started is None and threading.current_thread() is threading.main_thread():
        _started = InterruptGuard()


def take_started() -> InterruptGuard | None:
    global _started
    guard, _started = _started, None
    return guard


def flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or full output: the status still says how it ended
            pass


class InterruptGuard:
    """SIGINT handling around a command (training installs its own, which stops at an epoch).

    - While the commands load, a Ctrl-C is noted, not raised: a KeyboardInterrupt inside a C
      extension's initialization (JAX's MLIR) aborts the process with SIGABRT. It ends the command
      once they have loaded.
    - Afterwards it raises KeyboardInterrupt as always; one swallowed (raised inside a garbage
      collector callback, such as JAX's: Python prints "Exception ignored" and goes on) ends the
      process at once, and one caught elsewhere after :data:`SWALLOWED_INTERRUPT_GRACE_S`.
    - Once the command has ended (:meth:`ending`, the program's last steps), a Ctrl-C ends the
      process at once.
    """

    def __init__(self):
        self.loading, self.interrupted, self.done = True, threading.Event(), threading.Event()
        # A process started with SIGINT ignored (a background job of a shell without job control, a
        # scheduler's, nohup-like launchers) was told that Ctrl-C is not for it: Python keeps it
        # ignored, and so does the guard, which then changes nothing in the process.
        self.active = signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
        if self.active:
            self.previous = signal.signal(signal.SIGINT, self.on_interrupt)
            self.previous_unraisable = sys.unraisablehook
            sys.unraisablehook = self.unraisable

    def on_interrupt(self, signum, frame):
        first = not self.interrupted.is_set()
        self.interrupted.set()
        if self.done.is_set():
            self.end(say=first)
        if self.loading:
            return
        if first:
            threading.Thread(target=self.end_if_swallowed, daemon=True).start()
        raise KeyboardInterrupt

    def loaded(self) -> None:
        self.loading = False
        if self.interrupted.is_set():
            raise KeyboardInterrupt

    def ending(self) -> None:
        self.done.set()

    def unraisable(self, unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and not self.done.is_set():
            self.end()
        self.previous_unraisable(unraisable)

    def end_if_swallowed(self) -> None:
        if not self.done.wait(SWALLOWED_INTERRUPT_GRACE_S):
            self.end()

    @staticmethod
    def end(say: bool = True) -> NoReturn:
        if say:  # else the command said it as it ended
            print("gymjax: interrupted", file=sys.stderr)
        flush()
        os._exit(130)

    def close(self) -> None:
        if not self.active:
            self.done.set()
            return
        signal.signal(signal.SIGINT, self.previous)  # first: a Ctrl-C once done is set ends the process
        self.done.set()
        if sys.unraisablehook == self.unraisable:  # else one laid over it since, which calls it: kept
            sys.unraisablehook = self.previous_unraisable


def start_ticks(pid: int | str = "self") -> int | None:
    """When process ``pid`` started, in clock ticks after boot (``/proc/<pid>/stat``'s 22nd field, as
    ``/proc/uptime`` counts); None where unknown (not Linux, or no such process). With the pid it
    names one process: a pid is reused, a (pid, start) pair is not."""
    try:
        # The 2nd field, the command's name, may hold spaces and parentheses: split after its last ")".
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def started_at() -> float | None:
    """This process's start as a ``time.time()``; None where unknown."""
    ticks = start_ticks()
    try:
        uptime = float(open("/proc/uptime").read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return None if ticks is None else time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
