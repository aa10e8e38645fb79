"""The ``gymjax`` command line (:mod:`gymjax.cli.commands` lists the commands).

Two ways in:

- :func:`run_program` is the program: the ``gymjax`` script and ``python -m gymjax``. It owns the
  process's SIGINT from the program's first instant (:func:`guard_the_start`) to its last: a Ctrl-C
  at any moment ends the command with status 130 and one line, never a traceback, never a run that
  goes on. A process started with SIGINT ignored keeps ignoring it, as Python itself does.
- :func:`main` runs one command inside a process that is someone else's (tests, notebooks) and returns
  its exit status; its guard is lifted when it returns.

Both load the commands (JAX, flax, orbax: about a second) inside the guard.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import NoReturn

from gymjax import compile_cache

# A Ctrl-C whose KeyboardInterrupt was swallowed (raised inside a garbage-collector callback,
# such as JAX's, Python prints "Exception ignored" and goes on) ends the process after this long.
SWALLOWED_INTERRUPT_GRACE_S = 2.0
_started: _InterruptGuard | None = None  # the guard guard_the_start began, for the entry point to take


def main(argv: list[str] | None = None) -> int:
    guard = _take_started()
    if guard is None and threading.current_thread() is threading.main_thread():
        guard = _InterruptGuard()
    try:
        return _command(guard, argv)
    finally:
        if guard:
            guard.close()


def run_program() -> NoReturn:
    """The program's entry point: runs the command ``sys.argv`` names and ends the process with its
    status. The process ends without the interpreter's own teardown, which is where Ctrl-C went
    wrong: JAX's exit cleanup destroys its backend under a computation a Ctrl-C left running
    (a segfault), and Python resets SIGINT to its default first (a Ctrl-C then killed the
    process after its result was printed, instead of ending it with 130)."""
    guard = _take_started() or _InterruptGuard()
    try:
        try:
            status = _command(guard, None, program=True)
        finally:
            guard.ending()  # a Ctrl-C from here on ends the process at once, with 130
    except KeyboardInterrupt:  # one that landed after the command returned, before ending() (or twice)
        guard.ending()
        guard.end()
    if not guard.interrupted.is_set():
        # What Python's exit does before its teardown: wait for the threads, run the exit
        # functions. Not after a Ctrl-C: a computation may still run, under JAX's exit function.
        for thread in threading.enumerate():
            if not (thread.daemon or thread is threading.current_thread()):
                thread.join()
        atexit._run_exitfuncs()
    _flush()
    os._exit(status)


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
        _started = _InterruptGuard()


def _take_started() -> _InterruptGuard | None:
    global _started
    guard, _started = _started, None
    return guard


def _command(guard: _InterruptGuard | None, argv: list[str] | None, program: bool = False) -> int:
    try:
        from gymjax.cli import commands

        if guard:
            guard.loaded()
        if program:  # the program's own process: it keeps what it compiles (gymjax.compile_cache)
            try:
                compile_cache.enable_from_env(default_on=True)
            except ValueError as e:
                print(f"gymjax: {e}", file=sys.stderr)
                return 2
        return commands.main(argv)
    except KeyboardInterrupt:
        if guard:
            guard.interrupted.set()
        print("gymjax: interrupted", file=sys.stderr)
        return 130


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or full output: the status still says how it ended
            pass


class _InterruptGuard:
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
        _flush()
        os._exit(130)

    def close(self) -> None:
        if not self.active:
            self.done.set()
            return
        signal.signal(signal.SIGINT, self.previous)  # first: a Ctrl-C once done is set ends the process
        self.done.set()
        if sys.unraisablehook == self.unraisable:  # else one laid over it since, which calls it: kept
            sys.unraisablehook = self.previous_unraisable
