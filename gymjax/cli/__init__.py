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
import sys
import threading
from typing import NoReturn

from gymjax import compile_cache
from gymjax.program import SWALLOWED_INTERRUPT_GRACE_S, guard_the_start, starts_the_program  # noqa: F401
from gymjax.program import InterruptGuard as _InterruptGuard
from gymjax.program import flush as _flush
from gymjax.program import take_started as _take_started


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


