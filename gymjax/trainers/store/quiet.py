"""The noise orbax and tensorstore make around gymjax's checkpoints, stopped or silenced where it
is made; no process hook (``sys.excepthook``, ``sys.unraisablehook``) is touched.

- **"Event loop is closed" tracebacks** (5 to 70 after a save that found the disk full, up to 16
  when a reader falls back from a damaged step). Orbax reads and writes a batch of arrays under
  one ``asyncio.gather`` on an event loop that it closes as soon as the first array fails; the
  batch's other tensorstore operations end a moment later, on tensorstore's threads, and their
  callbacks find the loop closed, which Python prints as unraisable exceptions. The checkpoint
  handler here (:func:`array_handler`) awaits every array of a batch before raising the first
  failure, so no operation outlives its loop: the tracebacks are never made.
- **Orbax's absl log records** (filters on the ``absl`` logger, none on any other). A WARNING for
  every step directory without its metadata file (an empty or damaged step, which
  :mod:`gymjax.trainers.store.checkpoint` reports itself, once); and the records of a save, with
  tracebacks from its background threads when the disk is full, held back (:func:`held_logs`)
  so that a disk error is reported in one line and anything else is logged as orbax wrote it.
  A failed save waits for its threads to end inside :func:`held_logs`, so none logs after it.
- **"Waiting for previous save to complete took N seconds"**, dropped from a save's records
  (:func:`emit`). gymjax's save waits for its own write to end before it returns, so a save never
  finds a previous one in flight; orbax counts that wait, made after the save, as the next save's
  wait for the previous one, and warns when it took over a second (a loaded machine, a slow disk):
  advice to checkpoint less often about a wait that is the write itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Iterator
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

ABSL = logging.getLogger("absl")


def _not_missing_metadata(record: logging.LogRecord) -> bool:
    return "Metadata file does not exist" not in record.getMessage()


def filter_missing_metadata() -> None:
    """Drops orbax's WARNING for a step directory without its metadata file (checkpoint.py reports
    such a step itself, once) from the ``absl`` logger; once, when gymjax first builds an orbax
    object, never at import: importing a module leaves the process's logging as it was."""
    if _not_missing_metadata not in ABSL.filters:
        ABSL.addFilter(_not_missing_metadata)


# -- the arrays of a batch, all awaited ------------------------------------------------------


async def _all_ended(calls: list[Awaitable[Any]]) -> list[Any]:
    """The results of ``calls``, awaited to the last even when one fails; then the first failure is raised."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    failed = next((r for r in results if isinstance(r, BaseException)), None)
    if failed is not None:
        raise failed
    return results


class _EachReadAwaited:
    """Mixed into an orbax ``TypeHandler``: each array's read is a batch of one, and every batch is
    awaited (orbax's own batch returns at its first failure and leaves the others to a closed loop)."""

    async def metadata(self, infos):
        base = super()  # not inside the comprehensions: they are scopes of their own
        return _flat(await _all_ended([base.metadata([info]) for info in infos]))

    async def deserialize(self, infos, args=None):
        base, args = super(), args or [None] * len(infos)
        return _flat(await _all_ended([
            base.deserialize([info], None if arg is None else [arg]) for info, arg in zip(infos, args, strict=True)
        ]))  # fmt: skip


def _flat(batches: list[list[Any]]) -> list[Any]:
    return [x for batch in batches for x in batch]


class _NumpyArrays(_EachReadAwaited, ocp.type_handlers.NumpyHandler):
    """What gymjax's checkpoints hold (the state is gathered to the host): its writes awaited too."""

    async def _background_serialize(self, values, infos, args):
        # The one coroutine of a save's commit thread: the arrays' writes stay concurrent, in one
        # OCDBT commit (a thread per array writes a fifth more bytes, in more files).
        base = super()
        await _all_ended([
            base._background_serialize([value], [info], [arg])
            for value, info, arg in zip(values, infos, args, strict=True)
        ])  # fmt: skip


class _JaxArrays(_EachReadAwaited, ocp.type_handlers.ArrayHandler):
    """What a reader restores into (``jax.ShapeDtypeStruct`` targets)."""


class _ArrayHandler(ocp.StandardCheckpointHandler):
    """Orbax's StandardCheckpointHandler, reading and writing numpy and jax arrays through
    :class:`_EachArrayAwaited`. Its checkpoints are StandardCheckpointHandler's, named as its."""

    def __init__(self):
        super().__init__()
        # StandardCheckpointHandler takes no registry of its own; the PyTree handler it wraps does.
        registry = ocp.type_handlers.create_type_handler_registry(
            *[(t, ocp.type_handlers.get_type_handler(t)) for t in ocp.type_handlers.supported_types()],
            (np.ndarray, _NumpyArrays()),
            (jax.Array, _JaxArrays()),
        )
        # Orbax's private seams, checked so that an orbax that moved them fails here, loudly.
        if not isinstance(self._impl, ocp.PyTreeCheckpointHandler):
            raise TypeError(
                f"orbax's StandardCheckpointHandler wraps {type(self._impl)}, not a PyTreeCheckpointHandler"
            )
        if not hasattr(ocp.type_handlers.NumpyHandler, "_background_serialize"):
            raise TypeError("orbax's NumpyHandler has no _background_serialize")
        self._impl = ocp.PyTreeCheckpointHandler(type_handler_registry=registry)

    @classmethod
    def typestr(cls) -> str:
        return ocp.StandardCheckpointHandler.typestr()


def array_handler() -> ocp.StandardCheckpointHandler:
    """The handler for a checkpoint's array items (``ocp.args.StandardSave`` / ``StandardRestore``)."""
    return _ArrayHandler()


# -- orbax's log records -----------------------------------------------------------------------


@contextlib.contextmanager
def held_logs() -> Iterator[list[logging.LogRecord]]:
    """Holds back the absl records orbax logs inside the block (on a full disk, four tracebacks from
    its background threads); the caller reports a disk error in one line, or :func:`emit` s them."""
    held: list[logging.LogRecord] = []

    def hold(record: logging.LogRecord) -> bool:
        held.append(record)
        return False

    ABSL.addFilter(hold)
    try:
        yield held
    finally:
        ABSL.removeFilter(hold)


def _misattributed_wait(record: logging.LogRecord) -> bool:
    return record.getMessage().startswith("Waiting for previous save to complete took")


def emit(records: list[logging.LogRecord]) -> None:
    """Logs a save's held records as orbax made them, less its wait for a previous save (there is none)."""
    for record in records:
        if not _misattributed_wait(record):
            ABSL.handle(record)
