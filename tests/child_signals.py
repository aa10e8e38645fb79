"""How a test starts a process it sends signals to: with the dispositions it means, not its launcher's.

A process inherits ignored signals: a suite started as a background job of a shell without job
control (a script's ``cmd &``, some CI runners) hands every child SIGINT ignored, and Python, and
gymjax, then keep it ignored, so a Ctrl-C a test sends would never arrive. ``preexec_fn`` would
set it after the fork, but is unsafe in a process with threads (JAX's), so the child is started
through a tiny Python that sets the dispositions and then ``exec``s the command in its own pid
(``Popen.pid`` and ``send_signal`` reach the command itself).
"""

import sys

_EXEC = (
    "import os, signal, sys; "
    "[signal.signal(getattr(signal, name), getattr(signal, how)) for name, how in "
    "(pair.split('=') for pair in sys.argv[1].split(',') if pair)]; "
    "os.execvp(sys.argv[2], sys.argv[2:])"
)


def _with(dispositions: str, command) -> list[str]:
    return [sys.executable, "-c", _EXEC, dispositions, *map(str, command)]


def from_a_terminal(command) -> list[str]:
    """``command`` (a list, its first item a program path or a name on PATH) started with SIGINT and
    SIGTERM at their defaults, as a terminal starts a program, whatever this process inherited."""
    return _with("SIGINT=SIG_DFL,SIGTERM=SIG_DFL", command)


def with_sigint_ignored(command) -> list[str]:
    """``command`` started with SIGINT ignored, as a background job of a non-interactive shell is."""
    return _with("SIGINT=SIG_IGN,SIGTERM=SIG_DFL", command)
