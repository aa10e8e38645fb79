"""A reader of W&B's offline transaction logs (``run-<id>.wandb``), which W&B ships no Python reader
for: the claim and the last step an offline run holds are read from them. The format is W&B's
private one, so the reader is fenced here and guarded by version: a log whose header is not the one
this reader knows (:data:`KNOWN_HEADER`) is refused by name, never half-read."""

from __future__ import annotations

import glob
import json
import os
import pathlib
import struct
from collections.abc import Iterator
from typing import Any

from gymjax.trainers.runs.trackers.base import WANDB_ID

# The header of the logs this reader knows: ident, magic (uint16) and format version (uint8), as the
# W&B releases it was written against (0.18 to 0.31, the one tested here) write them.
KNOWN_HEADER = (b":W&B", 0xBEE1, 0)


def log_ended(log: pathlib.Path) -> bool:
    """Whether a ``.wandb`` log holds its run's exit record."""
    try:
        return any(record.WhichOneof("record_type") == "exit" for record in wandb_records(log))
    except (OSError, ValueError):
        return False


def offline_segments(wandb_dir: str | os.PathLike, run_id: str) -> list[pathlib.Path]:
    """The ``.wandb`` files of run ``run_id``'s offline segments under ``wandb_dir`` (one a start), oldest first."""
    if not WANDB_ID.fullmatch(run_id):  # a validated id has no glob or path characters
        raise ValueError(f"not a W&B run id: {run_id!r}")
    return sorted(pathlib.Path(p) for p in glob.glob(os.path.join(glob.escape(str(wandb_dir)),
                                                                  f"offline-run-*-{run_id}", f"run-{run_id}.wandb")))


def wandb_records(path: str | os.PathLike) -> Iterator[Any]:
    """The records (``wandb_internal_pb2.Record``) of a ``.wandb`` file, which W&B has no public Python reader for.

    Its framing is LevelDB's log: a 7-byte header (``:W&B``, magic, version), then 32 KiB blocks of
    chunks, each ``crc32c:u32 length:u16 type:u8`` (1 whole, 2 first, 3 middle, 4 last) and its
    bytes. A torn tail (a killed writer) ends the iteration.
    """
    from wandb.proto import wandb_internal_pb2

    data = pathlib.Path(path).read_bytes()
    if data[:4] != KNOWN_HEADER[0]:
        raise ValueError(f"{path} is not a W&B transaction log")
    magic, version = struct.unpack("<HB", data[4:7])
    if (magic, version) != KNOWN_HEADER[1:]:
        raise ValueError(f"{path} is a W&B log of format {magic:#x} version {version}; this reader knows "
                         f"{KNOWN_HEADER[1]:#x} version {KNOWN_HEADER[2]} only (a newer W&B changed it)")
    pos, pending, block = 7, b"", 32768
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # too little room left in the block for a header: padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0 or len(chunk) < length:
            return
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def wandb_history(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(step, {metric: value})`` of each history row in a ``.wandb`` file."""
    for record in wandb_records(path):
        if record.WhichOneof("record_type") == "history":
            items = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            yield record.history.step.num, {k: v for k, v in items.items() if not k.startswith("_")}


