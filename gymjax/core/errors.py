"""Errors a simulator raises inside a compiled step, typed again on the host.

An engine that runs outside JAX (MuJoCo's C engine, through FFI or a callback) can only fail a
compiled call with text; JAX then raises ``JaxRuntimeError`` with that text inside its own. The
engines write the text in one form, ``gymjax.SimulationError: simulations [i, j] of n: <message>``,
and :func:`simulation_error` reads it back as a :class:`SimulationError` that names the envs (their
rows in the failed call). The host runtime raises it in place of JAX's error
(:func:`typed_simulation_errors`); a user of the functional API can call :func:`simulation_error`
on the ``JaxRuntimeError`` they catch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MARKER = "gymjax.SimulationError: "
_FORM = re.compile(re.escape(MARKER) + r"simulations \[([\d, ]*)\] of (\d+): ([^\n]*)")


class SimulationError(RuntimeError):
    """The simulator raised an error in some envs of a call. ``ids``: their rows in the call (a
    vmapped batch's env indices); ``message``: the first one's error. Those envs kept the state they
    had before the call (MuJoCo's batch engine); the call's results are not returned."""

    def __init__(self, ids: Sequence[int], message: str, size: int | None = None):
        self.ids, self.message, self.size = tuple(int(i) for i in ids), message, size
        # The engines' own form, readable as it is: a callback that raises this crosses JAX as its text.
        super().__init__(self.text())

    def text(self) -> str:
        """This error in the form the engines write and :func:`simulation_error` reads."""
        return f"{MARKER}simulations [{', '.join(map(str, self.ids))}] of {self.size or 0}: {self.message}"


def simulation_error(error: BaseException) -> SimulationError | None:
    """The :class:`SimulationError` whose text ``error`` carries (a ``JaxRuntimeError`` from a failed
    compiled call), or None when it carries none."""
    found = _FORM.search(str(error))
    if found is None:
        return None
    ids = [int(i) for i in found[1].split(",") if i.strip()]
    return SimulationError(ids, found[3].strip(), int(found[2]))


class _TypedSimulationErrors:
    """A context that raises a :class:`SimulationError` in place of a JAX runtime error that carries
    one. A class, not a generator: it wraps every step of the host runtime, and entering a
    ``contextlib.contextmanager`` costs a few microseconds, a tenth of a small env's step."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, error, traceback) -> bool:
        if kind is None:
            return False
        import jax  # an error was raised by a caller that has started JAX; importing core must not

        if not issubclass(kind, jax.errors.JaxRuntimeError):
            return False
        typed = simulation_error(error)
        if typed is None:
            return False
        raise typed from error


_TYPED = _TypedSimulationErrors()


def typed_simulation_errors() -> _TypedSimulationErrors:
    """``with typed_simulation_errors():`` raises a :class:`SimulationError` in place of a JAX runtime
    error that carries one."""
    return _TYPED
