"""How much memory a process can use, and how much a pytree of arrays takes: shared by the
checks that refuse a batch too large before anything allocates (the trainer's and the envs')."""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np

GIB = 2**30


def available_bytes() -> tuple[int, str] | None:
    """Memory this process can use, and where it is: the first local device's limit, or the host's."""
    device = jax.local_devices()[0]
    if device.platform == "cpu":
        return host_available_bytes()
    stats = device.memory_stats() or {}
    if "bytes_limit" in stats:
        return int(stats["bytes_limit"]), f"{device.device_kind} memory"
    return None


def host_available_bytes() -> tuple[int, str] | None:
    """The host memory available now (Linux's MemAvailable), and the words that name it."""
    try:
        with open("/proc/meminfo") as f:
            fields = dict(line.split(":", 1) for line in f)
        return int(fields["MemAvailable"].split()[0]) * 1024, "available host memory"
    except (OSError, KeyError, ValueError):
        pages = os.sysconf("SC_AVPHYS_PAGES") if hasattr(os, "sysconf") else None
        return (pages * os.sysconf("SC_PAGE_SIZE"), "available host memory") if pages else None


def tree_bytes(shapes: Any) -> int:
    """Bytes of a pytree of arrays or ``jax.ShapeDtypeStruct`` s (from ``jax.eval_shape``)."""
    return sum(int(np.prod(x.shape, dtype=np.int64)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(shapes))


def refuse_if_short(needed: int, have: tuple[int, str] | None, what: str, detail: str, advice: str) -> None:
    """Raises ``ValueError`` (``"<what> needs at least N GiB (<detail>); <where> is M GiB. <advice>"``)
    when ``needed`` bytes exceed what is available (``have``, from :func:`available_bytes`)."""
    if have is not None and needed > have[0]:
        raise ValueError(
            f"{what} needs at least {needed / GIB:,.1f} GiB ({detail}); {have[1]} is {have[0] / GIB:.1f} GiB. {advice}"
        )
