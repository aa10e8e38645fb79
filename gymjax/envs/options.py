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


def integer(owner: object, name: str, value: Any, *, minimum: int = 1, optional: bool = False) -> int | None:
    """An int (not a bool) of at least ``minimum``; or None, when ``optional``."""
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise invalid(owner, name, ("None or " if optional else "") + f"an int >= {minimum}", value)
    return int(value)


def flag(owner: object, name: str, value: Any) -> bool:
    if not (isinstance(value, bool) or getattr(value, "dtype", None) == bool):  # NumPy's bool too
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
