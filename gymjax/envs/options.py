"""Constructor options checked when an env is built, not at its first step deep inside JAX.

Each check returns the value in the type the env computes with (a Python
float, int, bool or pair of floats), or raises ``ValueError`` naming the env,
the option, what it takes and what it got::

    Ant: ctrl_cost_weight must be a real number, got 'x' (str)
"""

from __future__ import annotations

import math
import numbers
from typing import Any


def invalid(owner: object, name: str, wanted: str, value: Any) -> ValueError:
    """The error for a bad option: the owner, the option, what it takes and what it got."""
    return ValueError(f"{type(owner).__name__}: {name} must be {wanted}, got {value!r} ({type(value).__name__})")


def real(owner: object, name: str, value: Any, *, minimum: float | None = None) -> float:
    """A finite real number (not a bool or a string), at least ``minimum`` if given."""
    wanted = "a real number" + (f" >= {minimum:g}" if minimum is not None else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise invalid(owner, name, wanted, value)
    if minimum is not None and value < minimum:
        raise invalid(owner, name, wanted, value)
    return float(value)


# Upper bounds of the options whose size is a loop run at every step: beyond them the first step
# runs for hours or the engine fails in its own words. frame_skip: physics steps per agent step;
# Gymnasium's tasks take 2 to 5, and 1,000 of MuJoCo's default 2 ms timestep is 2 s of simulated
# time between two actions, past any control task (10**9 hung the first step, 2**40 overflowed
# MuJoCo's int). A larger value is an error, not a setting.
MAXIMA = {"frame_skip": 1000}


def integer(owner: object, name: str, value: Any, *, minimum: int = 1, maximum: int | None = None,
            optional: bool = False) -> int | None:
    """An int (not a bool) of at least ``minimum`` and at most ``maximum`` (default: the option's
    own bound in :data:`MAXIMA`, if it has one); or None, when ``optional``."""
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise invalid(owner, name, ("None or " if optional else "") + f"an int >= {minimum}", value)
    maximum = MAXIMA.get(name) if maximum is None else maximum
    if maximum is not None and value > maximum:
        raise invalid(owner, name, ("None or " if optional else "") + f"an int from {minimum} to {maximum}", value)
    return int(value)


def flag(owner: object, name: str, value: Any) -> bool:
    # NumPy's bool too: its dtype compares equal to bool but is not bool, so `is` would refuse it.
    if not (isinstance(value, bool) or getattr(value, "dtype", None) == bool):  # noqa: E721
        raise invalid(owner, name, "True or False", value)
    return bool(value)


def interval(owner: object, name: str, value: Any) -> tuple[float, float]:
    """A pair ``(low, high)`` of real numbers with ``low < high`` (infinities allowed)."""
    wanted = "a pair (low, high) of real numbers with low < high"
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise invalid(owner, name, wanted, value)
    low, high = value
    if any(isinstance(x, bool) or not isinstance(x, numbers.Real) or math.isnan(x) for x in (low, high)):
        raise invalid(owner, name, wanted, value)
    if not low < high:
        raise invalid(owner, name, wanted, value)
    return float(low), float(high)
