"""How a test starts a process it sends signals to: with the dispositions it means, not its launcher's.

A process inherits ignored signals: a suite started as a background job of a shell without job
control (a script's ``cmd &``, some CI runners) hands every child SIGINT ignored, and Python, and
gymjax, then keep it ignored, so a Ctrl-C a test sends would never arrive.

A signal this process *handles* reaches a child at its default instead: ``exec`` resets every
caught signal to SIG_DFL (and CPython's ``_posixsubprocess`` resets them in the child before
``exec``). So, around the spawn only, an ignored signal is caught by a handler that does nothing:
this process goes on ignoring it, and the child starts with its default, as a terminal starts a
program. No wrapper process (whose own start a signal sent early could land in) and no
``preexec_fn`` (unsafe in a process with threads, JAX's).

    with from_a_terminal():
        proc = subprocess.Popen(command, ...)
"""

import contextlib
import signal
from collections.abc import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)  # the ones tests send to stop a process cleanly


def _ignore(signum, frame) -> None:
    """SIG_IGN, as a handler: the signal is caught (so a child's exec resets it), and dropped."""


@contextlib.contextmanager
def from_a_terminal() -> Iterator[None]:
    """Processes started inside the block get SIGINT and SIGTERM at their defaults, whatever this
    process inherited; this process keeps its own dispositions. Main thread only."""
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    ignored = [s for s, handler in previous.items() if handler is signal.SIG_IGN]
    for s in ignored:
        signal.signal(s, _ignore)
    try:
        yield
    finally:
        for s in ignored:
            signal.signal(s, signal.SIG_IGN)


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Processes started inside the block get SIGINT ignored, as a background job of a
    non-interactive shell does (and SIGTERM at its default). Main thread only."""
    with from_a_terminal():
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
